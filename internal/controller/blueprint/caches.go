package blueprint

import (
	"slices"
	"sync"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdrepair"
	"github.com/operator-manager/operator-manager/internal/memo"
)

// contentCache keeps the parsed content of the few bundles being worked on, by digest, so
// a bundle is read, hashed and parsed once per revision, not on every reconcile. Bundles
// are content-addressed: an entry never goes stale.
type contentCache struct {
	bundles memo.FIFO[*bundleEntry]
}

// bundleEntry is one bundle's parsed content and its CRDs as crdrepair made them, by CRD
// name: a revision's reconciles before its CSV is applied (one per event of each of its
// CRDs: created, names accepted, Established) plan the same CRDs, and repairing one
// (decode, convert, the API server's validation with CEL) was a fifth of the manager's
// CPU with 100 installations. The repairs live and go with the content.
type bundleEntry struct {
	content *catalog.BundleContent

	mu       sync.Mutex
	repaired map[string]repairedCRD
}

// repairedCRD is one CRD of a bundle after crdrepair, and what the repair changed.
type repairedCRD struct {
	crd     *apiextensionsv1.CustomResourceDefinition
	changes []string
}

// repair returns CRD u of the bundle digest repaired: a copy of the one repaired
// before while the bundle's content is kept, else repaired now (and remembered if the
// content is kept). Refusals are not remembered: they fail the revision.
func (c *contentCache) repair(digest string, u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, []string, error) {
	e, kept := c.bundles.Get(digest)
	if kept {
		e.mu.Lock()
		prev, ok := e.repaired[u.GetName()]
		e.mu.Unlock()
		if ok {
			return prev.crd.DeepCopy(), slices.Clone(prev.changes), nil
		}
	}
	crd, changes, err := crdrepair.Repair(u)
	if err != nil {
		return nil, nil, err
	}
	if kept && digest != "" {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.repaired == nil {
			e.repaired = map[string]repairedCRD{}
		}
		e.repaired[u.GetName()] = repairedCRD{crd: crd.DeepCopy(), changes: slices.Clone(changes)}
	}
	return crd, changes, nil
}

// contentCacheSize is a few more than the default Blueprint workers: each entry holds a
// whole parsed bundle (CRD schemas as maps, its raw files), a MiB or more for large ones,
// and 64 of them were most of the manager's heap with 159 installations.
const contentCacheSize = 12

func (c *contentCache) get(digest string) *catalog.BundleContent {
	if e, ok := c.bundles.Get(digest); ok {
		return e.content
	}
	return nil
}

// forget drops a bundle no revision is parsing any more.
func (c *contentCache) forget(digest string) { c.bundles.Forget(digest) }

func (c *contentCache) put(digest string, content *catalog.BundleContent) {
	c.bundles.Put(digest, &bundleEntry{content: content}, contentCacheSize)
}

// preflightCache remembers CRD preflights that passed, keyed by the live CRD's name and
// resourceVersion and the digest of the CRD to apply: the same question is not asked (and
// every custom resource not listed) again on a requeue of the same revision. A changed
// live CRD has a new resourceVersion, and is checked again.
type preflightCache struct {
	mu     sync.Mutex
	passed map[string]bool
}

func (c *preflightCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.passed[key]
}

func (c *preflightCache) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.passed == nil || len(c.passed) > 4096 {
		c.passed = map[string]bool{}
	}
	c.passed[key] = true
}

// crdWaits remembers, per revision, the CRDs this process applied for it and now waits
// on to be Established, and what the revision's last steps need once they are
// (afterCRDs). The reconciles that the CRDs' own watch events bring (created, names
// accepted, Established: several per CRD) look here first and, while one is still not
// Established, wait again without reading, parsing and repairing the bundle. The
// reconcile that finds them all Established goes on from what the applying pass kept: it
// neither parses the bundle nor repairs its CRDs again. With 159 installations at once
// the bundle's parsed content has long left contentCache by then, and each bundle was
// parsed and its CRDs repaired twice: once to apply its CRDs, once more to apply its CSV.
type crdWaits struct {
	mu sync.Mutex
	m  map[string]crdWait
}

type crdWait struct {
	names []string
	next  *afterCRDs
	at    time.Time
}

// afterCRDs is what a revision still needs of its bundle once its CRDs are Established:
// the bundle's CSV as parsed (shared with the parsed content, never changed), every CRD
// of the bundle (for the provider records) and what repairing them changed (for the CSV's
// annotation). A few tens of KiB per revision waiting on CRDs, gone with the entry.
type afterCRDs struct {
	digest  string // the bundle's, as the applying pass knew it
	csv     *v1alpha1.ClusterServiceVersion
	crds    []string
	repairs []omv1alpha1.CRDRepair
}

// crdWaitTTL bounds how long an entry is trusted: past it, the full plan runs again.
const crdWaitTTL = 10 * time.Minute

func (c *crdWaits) set(key string, names []string, next *afterCRDs, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]crdWait{}
	}
	if len(c.m) >= 1024 {
		for k, v := range c.m {
			if now.Sub(v.at) > crdWaitTTL {
				delete(c.m, k)
			}
		}
	}
	c.m[key] = crdWait{names: names, next: next, at: now}
}

// get returns the CRDs revision key waits on, and what comes after them, if this
// process applied them recently.
func (c *crdWaits) get(key string, now time.Time) (crdWait, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[key]
	if !ok || now.Sub(w.at) > crdWaitTTL {
		delete(c.m, key)
		return crdWait{}, false
	}
	return w, true
}

func (c *crdWaits) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}
