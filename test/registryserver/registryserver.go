// Package registryserver serves a catalog over OLM's registry gRPC API with
// operator-registry's own server (pkg/server over pkg/cache, what `opm serve` runs), so
// tests of CatalogSource spec.address talk to the real thing. Test-only: the manager
// links none of it.
package registryserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/server"
	"google.golang.org/grpc"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

type blob struct {
	Schema         string     `json:"schema"`
	Name           string     `json:"name"`
	Package        string     `json:"package,omitempty"`
	DefaultChannel string     `json:"defaultChannel,omitempty"`
	Image          string     `json:"image,omitempty"`
	Entries        []entry    `json:"entries,omitempty"`
	Properties     []property `json:"properties,omitempty"`
}

type entry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

type property struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// WriteFBC writes cat (read from any layout) into dir as the File-Based Catalog
// operator-registry reads: per package, its olm.package, olm.channel and olm.bundle
// blobs, each bundle's manifests as olm.bundle.object properties, its owned CRDs as
// olm.gvk and its dependencies as olm.package.required and olm.gvk.required.
func WriteFBC(cat *catalog.Catalog, dir string) error {
	for _, p := range cat.Packages() {
		blobs := []blob{{Schema: "olm.package", Name: p.Name, DefaultChannel: p.DefaultChannel}}
		for _, ch := range p.Channels {
			c := blob{Schema: "olm.channel", Name: ch.Name, Package: p.Name}
			for _, e := range ch.Entries {
				c.Entries = append(c.Entries, entry{Name: e.Name, Replaces: e.Replaces, Skips: e.Skips, SkipRange: e.SkipRange.Raw})
			}
			blobs = append(blobs, c)
		}
		for _, b := range p.Bundles {
			bb, err := bundleBlob(cat, b)
			if err != nil {
				return err
			}
			blobs = append(blobs, bb)
		}
		var out []byte
		for _, b := range blobs {
			data, err := json.Marshal(b)
			if err != nil {
				return err
			}
			out = append(append(out, data...), '\n')
		}
		if err := os.MkdirAll(filepath.Join(dir, p.Name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, p.Name, "catalog.json"), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func bundleBlob(cat *catalog.Catalog, b *catalog.Bundle) (blob, error) {
	content, err := cat.Content(b)
	if err != nil {
		return blob{}, err
	}
	image := b.Image
	if image == "" {
		image = "registry.example/bundles/" + b.CSVName
	}
	out := blob{Schema: "olm.bundle", Name: b.CSVName, Package: b.Package, Image: image,
		Properties: []property{{Type: "olm.package", Value: map[string]string{"packageName": b.Package, "version": b.Version.String()}}}}
	for _, crd := range b.OwnedCRDs {
		out.Properties = append(out.Properties, property{Type: "olm.gvk", Value: map[string]string{"group": crd.Group, "version": crd.Version, "kind": crd.Kind}})
	}
	for _, d := range b.Dependencies {
		switch d.Type {
		case catalog.DependencyPackage:
			out.Properties = append(out.Properties, property{Type: "olm.package.required", Value: map[string]string{"packageName": d.Package, "versionRange": d.Versions.Raw}})
		case catalog.DependencyGVK:
			out.Properties = append(out.Properties, property{Type: "olm.gvk.required", Value: d.GVK})
		}
	}
	csv := content.CSV.DeepCopy()
	csv.APIVersion, csv.Kind = "operators.coreos.com/v1alpha1", "ClusterServiceVersion"
	objects := []any{csv}
	for _, o := range content.CRDs {
		objects = append(objects, o)
	}
	for _, o := range content.Objects {
		objects = append(objects, o)
	}
	for _, o := range objects {
		data, err := json.Marshal(o)
		if err != nil {
			return blob{}, fmt.Errorf("bundle %s: %w", b.CSVName, err)
		}
		out.Properties = append(out.Properties, property{Type: "olm.bundle.object", Value: map[string]string{"data": base64.StdEncoding.EncodeToString(data)}})
	}
	return out, nil
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
