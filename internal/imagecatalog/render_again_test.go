package imagecatalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// renderedSample renders sample cache-operator versions (flat layout) as a File-Based
// Catalog with inline objects.
func renderedSample(t *testing.T, versions ...string) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	for _, v := range versions {
		for _, name := range []string{"cache-operator.v" + v + ".clusterserviceversion.yaml", "caches.crd.yaml"} {
			rel := filepath.Join("cache-operator", v, name)
			data, err := os.ReadFile(filepath.Join("../../samples/catalog", rel))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	src, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fbc, err := RenderFBCWithObjects(src, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	return fbc
}

// loadTwice loads a rendered catalog, renders what it read again and loads that: the
// copy a catalog image or a mirror makes of it.
func loadTwice(t *testing.T, fbc map[string][]byte) (first, second *catalog.Catalog) {
	t.Helper()
	first, err := catalog.Load(writeFiles(t, fbc), catalog.Options{})
	if err != nil || len(first.Rejections) > 0 {
		t.Fatalf("%v %v", err, first.Rejections)
	}
	again, err := RenderFBCWithObjects(first, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	second, err = catalog.Load(writeFiles(t, again), catalog.Options{})
	if err != nil || len(second.Rejections) > 0 {
		t.Fatalf("%v %v", err, second.Rejections)
	}
	return first, second
}

// TestRenderKeepsDeprecations: a catalog rendered again (a catalog image, a mirror) says
// what its source deprecated, with the same messages and the same digest.
func TestRenderKeepsDeprecations(t *testing.T) {
	// The flat layout has no deprecations of its own: render it once, add some, read it.
	fbc := renderedSample(t, "1.1.0", "1.2.0")
	file := CatalogFile("cache-operator")
	fbc[file] = append(fbc[file], []byte(`{"schema":"olm.deprecations","package":"cache-operator","entries":[`+
		`{"reference":{"schema":"olm.package"},"message":"moved"},`+
		`{"reference":{"schema":"olm.channel","name":"stable"},"message":"closed"},`+
		`{"reference":{"schema":"olm.bundle","name":"cache-operator.v1.1.0"},"message":"CVE"}]}`+"\n")...)
	first, second := loadTwice(t, fbc)
	p := second.Package("cache-operator")
	if p.Deprecation != "moved" || p.Channel("stable").Deprecation != "closed" || second.BundleByCSV("cache-operator.v1.1.0").Deprecation != "CVE" {
		t.Errorf("rendered again: package %q, channel %q, bundle %q", p.Deprecation, p.Channel("stable").Deprecation, second.BundleByCSV("cache-operator.v1.1.0").Deprecation)
	}
	if second.Digest != first.Digest {
		t.Errorf("digest %s rendered again is %s", first.Digest, second.Digest)
	}
}

// TestRenderKeepsConstraints: a catalog rendered again (a catalog image, a mirror) keeps
// each bundle's olm.constraint, olm.label.required and the properties constraints read,
// failureMessages included, so the resolver decides the same on the copy.
func TestRenderKeepsConstraints(t *testing.T) {
	fbc := renderedSample(t, "1.2.0")
	// Add the properties to the rendered bundle blob, then read and render it again.
	const added = `[{"type":"olm.constraint","value":{"failureMessage":"a v1 store","gvk":{"group":"store.example.com","version":"v1","kind":"Store"}}},` +
		`{"type":"olm.constraint","value":{"any":{"constraints":[{"package":{"packageName":"db","versionRange":">=1.0.0"}},{"cel":{"rule":"properties.exists(p, p.type == 'certified')"}}]}}},` +
		`{"type":"olm.label.required","value":{"label":"cache"}},{"type":"olm.label","value":{"label":"memory"}},{"type":"certified","value":true}]`
	file := CatalogFile("cache-operator")
	var out [][]byte
	dec := json.NewDecoder(bytes.NewReader(fbc[file]))
	for dec.More() {
		var blob map[string]any
		if err := dec.Decode(&blob); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(blob)
		if blob["schema"] == catalog.SchemaBundle {
			var props []any
			if err := json.Unmarshal([]byte(added), &props); err != nil {
				t.Fatal(err)
			}
			blob["properties"] = append(blob["properties"].([]any), props...)
			line, _ = json.Marshal(blob)
		}
		out = append(out, line)
	}
	fbc[file] = append(bytes.Join(out, []byte("\n")), '\n')
	first, second := loadTwice(t, fbc)
	describe := func(c *catalog.Catalog) []string {
		b := c.BundleByCSV("cache-operator.v1.2.0")
		var s []string
		for _, d := range b.Dependencies {
			s = append(s, d.String())
		}
		for _, p := range b.Properties {
			s = append(s, fmt.Sprintf("property %s %s", p.Type, p.Value))
		}
		return s
	}
	want := []string{`"a v1 store" (olm.gvk store.example.com/v1/Store)`,
		`olm.constraint any of (package db >=1.0.0, cel "properties.exists(p, p.type == 'certified')")`,
		`olm.label "cache"`, `property olm.label {"label":"memory"}`, `property certified true`}
	if got := describe(first); !slices.Equal(got, want) {
		t.Errorf("read:\n%q\nwant\n%q", got, want)
	}
	if got := describe(second); !slices.Equal(got, want) {
		t.Errorf("rendered again:\n%q\nwant\n%q", got, want)
	}
}
