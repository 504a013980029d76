package catalogsource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

// keptOnDisk is a failed load of a source whose catalog, as the CatalogSource last said
// it served it (status.digest), is still on the manager's disk from before the manager
// started: a catalog image unpacked by digest, a registry server's catalog written by
// digest, an HTTP catalog server's last index. The catalog is used, and the failure still
// said. Without it a manager that restarts while its registry is down would leave every
// Subscription of the source waiting for the registry, though it holds the very catalog
// they were resolved from.
type keptOnDisk struct {
	cat *catalog.Catalog
	err error
}

func (e *keptOnDisk) Error() string { return e.err.Error() }
func (e *keptOnDisk) Unwrap() error { return e.err }

func keptMessage(cat *catalog.Catalog) string {
	return "; the catalog read before the manager started (digest " + cat.Digest + "), kept on its disk, is used"
}

// diskState is what the manager knows of a source's catalog on its disk since it started.
type diskState int

const (
	// notLooked: the disk has not been looked at (no load has failed without a
	// catalog in use), or a load has succeeded since.
	notLooked diskState = iota
	// lookedAt: the disk was looked at once and held nothing to use. It is not looked at
	// again at each retry: loading what it holds may take seconds.
	lookedAt
	// keptFromDisk: the catalog in use came from the disk; the condition says so until
	// a load succeeds.
	keptFromDisk
)

type diskStates struct {
	mu sync.Mutex
	m  map[types.NamespacedName]diskState
}

func (d *diskStates) get(key types.NamespacedName) diskState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[key]
}

func (d *diskStates) set(key types.NamespacedName, s diskState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s == notLooked {
		delete(d.m, key)
		return
	}
	if d.m == nil {
		d.m = map[types.NamespacedName]diskState{}
	}
	d.m[key] = s
}

// onDisk looks for the catalog cs last reported, on disk. Only a catalog whose digest is
// status.digest is taken: it is the one the CatalogSource said it served, and so the one
// its Subscriptions were resolved from.
func (r *Reconciler) onDisk(ctx context.Context, key types.NamespacedName, cs *omv1.CatalogSource) *catalog.Catalog {
	if cs.Status.Digest == "" {
		return nil
	}
	switch cs.Spec.Type() {
	case omv1.SourceImage:
		resolved := cs.Status.ResolvedImage
		if resolved == "" {
			return nil
		}
		digest, ok := strings.CutPrefix(resolved[strings.LastIndex(resolved, "@")+1:], "sha256:")
		if !ok {
			return nil
		}
		if st, err := os.Stat(filepath.Join(r.cacheRoot(), ImageCatalogsSubdir, digest)); err != nil || !st.IsDir() {
			return nil // not here: loading would pull it, from the registry that just failed
		}
		o, settings, err := r.registryOptions(ctx, cs)
		if err != nil {
			return nil
		}
		cat, ci, err := LoadImage(ctx, resolved, o, r.cacheRoot())
		if err != nil || cat.Digest != cs.Status.Digest {
			return nil
		}
		// Remembered as loaded: when the registry answers with the same digest, nothing
		// is loaded again.
		r.images.set(key, &imageSource{key: resolved + " " + settings, dir: ci.Dir, cat: cat})
		return cat
	case omv1.SourceGRPC:
		entries, err := os.ReadDir(r.grpcRoot(key))
		if err != nil {
			return nil // nothing on disk: no pull Secret need be read
		}
		o, settings, err := r.registryOptions(ctx, cs)
		if err != nil {
			return nil
		}
		for _, e := range entries { // at most the current catalog and the one before
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			cat, err := catalog.Load(filepath.Join(r.grpcRoot(key), e.Name()), catalog.Options{Images: r.grpcImages(key, o, settings)})
			if err == nil && cat.Digest == cs.Status.Digest {
				return cat
			}
		}
	case omv1.SourceHTTP:
		return r.keptIndex(key, cs.Spec.URL, cs.Status.Digest)
	}
	return nil
}
