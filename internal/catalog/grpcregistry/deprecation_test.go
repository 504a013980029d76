package grpcregistry

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
	"github.com/operator-manager/operator-manager/test/registryserver"
)

// TestFetchKeepsDeprecations: what a registry server says is deprecated (the package, a
// channel, a bundle: operator-registry's Deprecation of GetPackage and ListBundles) is in
// the catalog read from it.
func TestFetchKeepsDeprecations(t *testing.T) {
	src, err := catalog.Load(filepath.Join("..", "..", "..", "samples", "catalog"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fbc, err := imagecatalog.RenderFBCWithObjects(src, func(b *catalog.Bundle) string { return "example.com/bundle:" + b.CSVName })
	if err != nil {
		t.Fatal(err)
	}
	file := imagecatalog.CatalogFile("cache-operator")
	fbc[file] = append(fbc[file], []byte(`{"schema":"olm.deprecations","package":"cache-operator","entries":[`+
		`{"reference":{"schema":"olm.package"},"message":"use new-cache"},`+
		`{"reference":{"schema":"olm.channel","name":"stable"},"message":"stable closes"},`+
		`{"reference":{"schema":"olm.bundle","name":"cache-operator.v1.0.0"},"message":"CVE-2026-0001"}]}`+"\n")...)
	dir := t.TempDir()
	if err := registryserver.Write(fbc, dir); err != nil {
		t.Fatal(err)
	}
	want, err := catalog.Load(dir, catalog.Options{})
	if err != nil || len(want.Rejections) > 0 {
		t.Fatalf("%v %v", err, want.Rejections)
	}
	addr := registryserver.ServeCatalog(t, want)
	fetched, err := Fetch(context.Background(), addr, t.TempDir(), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := catalog.Load(fetched, catalog.Options{})
	if err != nil || len(got.Rejections) > 0 {
		t.Fatalf("%v %v", err, got.Rejections)
	}
	p := got.Package("cache-operator")
	if p.Deprecation != "use new-cache" || p.Channel("stable").Deprecation != "stable closes" || got.BundleByCSV("cache-operator.v1.0.0").Deprecation != "CVE-2026-0001" {
		t.Errorf("read from the server: package %q, channel %q, bundle %q", p.Deprecation, p.Channel("stable").Deprecation, got.BundleByCSV("cache-operator.v1.0.0").Deprecation)
	}
	if got.BundleByCSV("cache-operator.v1.1.0").Deprecation != "" {
		t.Errorf("1.1.0 read as deprecated: %q", got.BundleByCSV("cache-operator.v1.1.0").Deprecation)
	}
}
