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
	"github.com/operator-manager/operator-manager/internal/catalog/grpcregistry"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"github.com/operator-manager/operator-manager/internal/registry"
)

// GRPCCatalogsSubdir is where the catalogs of registry servers (OLM's spec.address) are
// written under the cache directory: one directory per CatalogSource, holding its
// current catalog and the one before.
const GRPCCatalogsSubdir = "grpc-catalogs"

func (r *Reconciler) grpcRoot(key types.NamespacedName) string {
	return r.sourceRoot(GRPCCatalogsSubdir, key)
}

// sourceRoot is the directory under the cache directory's subdir where the manager
// writes the catalogs of the CatalogSource key (a registry server's, a ConfigMap's),
// absolute so that it compares equal to a loaded catalog's Root.
func (r *Reconciler) sourceRoot(subdir string, key types.NamespacedName) string {
	root := filepath.Join(r.cacheRoot(), subdir, key.Namespace, key.Name)
	if abs, err := filepath.Abs(root); err == nil {
		return abs
	}
	return root
}

// grpcImages is the puller of the bundle images of registry-server source key (see
// grpcPullers), with the registry options o and the settings they were made from.
func (r *Reconciler) grpcImages(key types.NamespacedName, o registry.Options, settings string) *registry.Bundles {
	return r.grpc.bundles(key, settings, func() *registry.Bundles {
		return &registry.Bundles{Options: o, Cache: ociparts.Layout{Dir: filepath.Join(r.cacheRoot(), BundleImagesSubdir)}}
	})
}

// loadGRPC asks the registry server at spec.address for its catalog, written as a
// File-Based Catalog on the manager's disk (named by its digest, so an unchanged catalog
// is written once and loaded from its fingerprint), and loads it like a directory. A
// bundle the server lists without manifests (a catalog rendered by opm, which OLM reads
// by unpacking bundle images) is pulled from its image when read, with the
// CatalogSource's registry settings and pull Secrets, as for an Image source.
func (r *Reconciler) loadGRPC(ctx context.Context, key types.NamespacedName, cs *omv1.CatalogSource, prev *catalog.Catalog) (*catalog.Catalog, bool, error) {
	o, settings, err := r.registryOptions(ctx, cs)
	if err != nil {
		return nil, false, err
	}
	keep := ""
	if prev != nil {
		keep = prev.Root
	}
	dir, err := grpcregistry.Fetch(ctx, strings.TrimSpace(cs.Spec.Address), r.grpcRoot(key), keep, grpcregistry.Options{})
	if err != nil {
		return nil, false, err
	}
	if prev != nil && prev.Root != dir {
		prev = nil
	}
	return catalog.LoadIfChanged(dir, prev, catalog.Options{Images: r.grpcImages(key, o, settings)})
}

// grpcPullers keeps, per registry-server source, the puller of its bundle images: the
// same one while the registry settings and pull Secrets are, so an unchanged catalog is
// not loaded again for a new puller at each poll.
type grpcPullers struct {
	mu sync.Mutex
	m  map[types.NamespacedName]grpcPuller
}

type grpcPuller struct {
	settings string
	bundles  *registry.Bundles
}

func (p *grpcPullers) bundles(key types.NamespacedName, settings string, newPuller func() *registry.Bundles) *registry.Bundles {
	p.mu.Lock()
	defer p.mu.Unlock()
	if got, ok := p.m[key]; ok && got.settings == settings {
		return got.bundles
	}
	if p.m == nil {
		p.m = map[types.NamespacedName]grpcPuller{}
	}
	b := newPuller()
	p.m[key] = grpcPuller{settings: settings, bundles: b}
	return b
}

func (p *grpcPullers) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}

// forgetGRPC removes what a CatalogSource that no longer reads a registry server wrote.
func (r *Reconciler) forgetGRPC(key types.NamespacedName) {
	r.grpc.forget(key)
	_ = os.RemoveAll(r.grpcRoot(key))
}
