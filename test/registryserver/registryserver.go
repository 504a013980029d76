// Package registryserver serves a catalog over OLM's registry gRPC API with
// operator-registry's own server (pkg/server over pkg/cache, what `opm serve` runs), so
// tests of CatalogSource spec.address talk to the real thing. Test-only: the manager
// links none of it.
package registryserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/server"
	"google.golang.org/grpc"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

// WriteFBC writes cat (read from any layout) into dir as the File-Based Catalog
// operator-registry reads, every bundle's manifests in it (imagecatalog.RenderFBCWithObjects),
// so the server answers with them.
func WriteFBC(cat *catalog.Catalog, dir string) error {
	files, err := imagecatalog.RenderFBCWithObjects(cat, func(b *catalog.Bundle) string {
		if b.Image != "" {
			return b.Image
		}
		return "registry.example/bundles/" + b.CSVName
	})
	if err != nil {
		return err
	}
	return Write(files, dir)
}

// Write writes the files of a rendered File-Based Catalog (imagecatalog.RenderFBC's
// result: a path in the catalog to its content) into dir.
func Write(files map[string][]byte, dir string) error {
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Serve serves the File-Based Catalog in fbcDir (its registry cache in cacheDir) at addr
// (empty: a free port of 127.0.0.1) and returns that address and a stop function.
func Serve(ctx context.Context, fbcDir, cacheDir, addr string) (string, func(), error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	store, err := cache.New(cacheDir)
	if err != nil {
		return "", nil, err
	}
	if err := cache.LoadOrRebuild(ctx, store, os.DirFS(fbcDir)); err != nil {
		return "", nil, fmt.Errorf("operator-registry reading %s: %w", fbcDir, err)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	s := grpc.NewServer()
	api.RegisterRegistryServer(s, server.NewRegistryServer(store))
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	return lis.Addr().String(), func() {
		s.Stop()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			fmt.Fprintln(os.Stderr, "registry server:", err)
		}
		_ = store.Close()
	}, nil
}

// DropRefused removes from the File-Based Catalog in fbcDir each package operator-registry
// refuses to serve (its model validation is stricter than the catalog loader's: several
// heads in a channel, for one), checking each package's directory on its own, and
// returns why each was refused.
func DropRefused(ctx context.Context, fbcDir, scratch string) (map[string]error, error) {
	entries, err := os.ReadDir(fbcDir)
	if err != nil {
		return nil, err
	}
	refused := map[string]error{}
	for i, e := range entries {
		if !e.IsDir() {
			continue
		}
		store, err := cache.New(filepath.Join(scratch, fmt.Sprint(i)))
		if err != nil {
			return nil, err
		}
		err = cache.LoadOrRebuild(ctx, store, os.DirFS(filepath.Join(fbcDir, e.Name())))
		_ = store.Close()
		if err != nil {
			refused[e.Name()] = err
			if err := os.RemoveAll(filepath.Join(fbcDir, e.Name())); err != nil {
				return nil, err
			}
		}
	}
	return refused, nil
}

// ServeCatalog serves cat with every bundle's manifests in it (WriteFBC) on a free port
// until the test ends, and returns the address.
func ServeCatalog(t testing.TB, cat *catalog.Catalog) string {
	t.Helper()
	fbc := t.TempDir()
	if err := WriteFBC(cat, fbc); err != nil {
		t.Fatal(err)
	}
	return serve(t, fbc)
}

// ServeImageOnly serves cat as opm renders a catalog (imagecatalog.RenderFBC): each bundle
// by its image, images[CSV name], with olm.csv.metadata and no manifests, on a free port
// until the test ends, and returns the address.
func ServeImageOnly(t testing.TB, cat *catalog.Catalog, images map[string]string) string {
	t.Helper()
	files, err := imagecatalog.RenderFBC(cat, func(b *catalog.Bundle) string { return images[b.CSVName] })
	if err != nil {
		t.Fatal(err)
	}
	fbc := t.TempDir()
	if err := Write(files, fbc); err != nil {
		t.Fatal(err)
	}
	return serve(t, fbc)
}

// Images maps each bundle of a published catalog, by CSV name, to its image.
func Images(pub *imagecatalog.Published) map[string]string {
	images := map[string]string{}
	for _, b := range pub.Bundles {
		images[b.CSV] = b.Image
	}
	return images
}

func serve(t testing.TB, fbc string) string {
	t.Helper()
	addr, stop, err := Serve(context.Background(), fbc, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}
