package catalogsource

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/grpcregistry"
)

// GRPCCatalogsSubdir is where the catalogs of registry servers (OLM's spec.address) are
// written under the cache directory: one directory per CatalogSource, holding its
// current catalog and the one before.
const GRPCCatalogsSubdir = "grpc-catalogs"

func (r *Reconciler) grpcRoot(key types.NamespacedName) string {
	root, err := filepath.Abs(filepath.Join(r.cacheRoot(), GRPCCatalogsSubdir, key.Namespace, key.Name))
	if err != nil {
		return filepath.Join(r.cacheRoot(), GRPCCatalogsSubdir, key.Namespace, key.Name)
	}
	return root
}

// loadGRPC asks the registry server at spec.address for its catalog, written as a
// File-Based Catalog on the manager's disk (named by its digest, so an unchanged catalog
// is written once and loaded from its fingerprint), and loads it like a directory.
func (r *Reconciler) loadGRPC(ctx context.Context, key types.NamespacedName, address string, prev *catalog.Catalog) (*catalog.Catalog, bool, error) {
	keep := ""
	if prev != nil {
		keep = prev.Root
	}
	dir, err := grpcregistry.Fetch(ctx, strings.TrimSpace(address), r.grpcRoot(key), keep, grpcregistry.Options{})
	if err != nil {
		return nil, false, err
	}
	if prev != nil && prev.Root != dir {
		prev = nil
	}
	return r.Load(dir, prev)
}

// forgetGRPC removes what a CatalogSource that no longer reads a registry server wrote.
func (r *Reconciler) forgetGRPC(key types.NamespacedName) {
	_ = os.RemoveAll(r.grpcRoot(key))
}
