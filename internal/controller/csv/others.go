package csv

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-manager/operator-manager/internal/memo"
)

// othersMemo keeps the parsed other objects of recent bundles by digest. A CSV is
// reconciled many times while its Deployments roll out, and each pass rendered its objects
// from the bundle: read from the disk cache, decoded whole (CRDs included) and parsed, for
// the few manifests besides the CSV and CRDs, which most bundles do not even have. That
// was about 4 % of the manager's CPU in a fleet of installs. A digest names its content,
// so an entry is never stale; entries are copied in and out, as rendering sets owner
// references on them. Safe for concurrent reconciles.
type othersMemo struct {
	bundles memo.FIFO[[]*unstructured.Unstructured]
}

// othersMemoSize bounds the memo: a fleet's installations in progress at once, roughly.
// Most entries are empty (bundles without other manifests) and the rest are small.
const othersMemoSize = 256

// get returns a copy of the objects kept for digest, and whether any were.
func (o *othersMemo) get(digest string) ([]*unstructured.Unstructured, bool) {
	objs, ok := o.bundles.Get(digest)
	if !ok {
		return nil, false
	}
	return copyObjects(objs), true
}

// put keeps a copy of objs for digest, forgetting the oldest entry when full.
func (o *othersMemo) put(digest string, objs []*unstructured.Unstructured) {
	o.bundles.Put(digest, copyObjects(objs), othersMemoSize)
}

func copyObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if objs == nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		out[i] = obj.DeepCopy()
	}
	return out
}
