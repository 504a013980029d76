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

// TestRenderKeepsConstraints: a catalog rendered again (a catalog image, a mirror) keeps
// each bundle's olm.constraint, olm.label.required and the properties constraints read,
// failureMessages included, so the resolver decides the same on the copy.
func TestRenderKeepsConstraints(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml", "cache-operator/1.2.0/caches.crd.yaml"} {
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
	src, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fbc, err := RenderFBCWithObjects(src, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
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
