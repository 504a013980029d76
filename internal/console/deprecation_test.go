package console_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

// TestPackageDeprecations: a package's detail carries what its catalog deprecates (the
// package, a channel, a version), with the catalog's words, for the page to show.
func TestPackageDeprecations(t *testing.T) {
	src, err := catalog.Load(sample, catalog.Options{})
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
	for name, data := range fbc {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Create(context.Background(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deprecating"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
		t.Fatal(err)
	}
	ts, _ := local(t)
	var p struct {
		Deprecation string
		Channels    []struct{ Name, Deprecation string }
		Versions    []struct{ CSV, Deprecation string }
	}
	r := call(t, ts, "GET", "/api/catalogs/"+ns+"/deprecating/packages/cache-operator", nil, nil)
	ok(t, r)
	r.decode(t, &p)
	if p.Deprecation != "use new-cache" {
		t.Errorf("package deprecation %q", p.Deprecation)
	}
	for _, c := range p.Channels {
		if (c.Name == "stable") != (c.Deprecation == "stable closes") {
			t.Errorf("channel %s deprecation %q", c.Name, c.Deprecation)
		}
	}
	for _, v := range p.Versions {
		if (v.CSV == "cache-operator.v1.0.0") != (v.Deprecation == "CVE-2026-0001") {
			t.Errorf("version %s deprecation %q", v.CSV, v.Deprecation)
		}
	}
}
