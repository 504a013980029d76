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
// digest. The catalog is used, and the failure still said. Without it a manager that
// restarts while its registry is down would leave every Subscription of the source
// waiting for the registry, though it holds the very catalog they were resolved from.
type keptOnDisk struct {
	cat *catalog.Catalog
	err error
}

func (e *keptOnDisk) Error() string { return e.err.Error() }
func (e *keptOnDisk) Unwrap() error { return e.err }

func keptMessage(cat *catalog.Catalog) string {
	return "; the catalog read before the manager started (digest " + cat.Digest + "), kept on its disk, is used"
}

// keptSources are the sources whose catalog in use came from the disk, not from a load
// since the manager started: their condition says so until a load succeeds.
type keptSources struct {
	mu sync.Mutex
	m  map[types.NamespacedName]bool
}

func (k *keptSources) get(key types.NamespacedName) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[key]
}

func (k *keptSources) set(key types.NamespacedName, kept bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !kept {
		delete(k.m, key)
		return
	}
	if k.m == nil {
		k.m = map[types.NamespacedName]bool{}
	}
	k.m[key] = true
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
	}
	return nil
}
