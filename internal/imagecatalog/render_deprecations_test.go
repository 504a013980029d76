package imagecatalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// TestRenderKeepsDeprecations: a catalog rendered again (a catalog image, a mirror) says
// what its source deprecated, with the same messages and the same digest.
func TestRenderKeepsDeprecations(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml", "cache-operator/1.1.0/caches.crd.yaml",
		"cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml", "cache-operator/1.2.0/caches.crd.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../samples/catalog", rel))
		if err != nil {
			t.Fatal(err)
		}
		write(rel, string(data))
	}
	src, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The flat layout has no deprecations of its own: render it once, add some, read it.
	fbc, err := RenderFBCWithObjects(src, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	file := CatalogFile("cache-operator")
	fbc[file] = append(fbc[file], []byte(`{"schema":"olm.deprecations","package":"cache-operator","entries":[`+
		`{"reference":{"schema":"olm.package"},"message":"moved"},`+
		`{"reference":{"schema":"olm.channel","name":"stable"},"message":"closed"},`+
		`{"reference":{"schema":"olm.bundle","name":"cache-operator.v1.1.0"},"message":"CVE"}]}`+"\n")...)
	first, err := catalog.Load(writeFiles(t, fbc), catalog.Options{})
	if err != nil || len(first.Rejections) > 0 {
		t.Fatalf("%v %v", err, first.Rejections)
	}
	again, err := RenderFBCWithObjects(first, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	second, err := catalog.Load(writeFiles(t, again), catalog.Options{})
	if err != nil || len(second.Rejections) > 0 {
		t.Fatalf("%v %v", err, second.Rejections)
	}
	p := second.Package("cache-operator")
	if p.Deprecation != "moved" || p.Channel("stable").Deprecation != "closed" || second.BundleByCSV("cache-operator.v1.1.0").Deprecation != "CVE" {
		t.Errorf("rendered again: package %q, channel %q, bundle %q", p.Deprecation, p.Channel("stable").Deprecation, second.BundleByCSV("cache-operator.v1.1.0").Deprecation)
	}
	if second.Digest != first.Digest {
		t.Errorf("digest %s rendered again is %s", first.Digest, second.Digest)
	}
}
