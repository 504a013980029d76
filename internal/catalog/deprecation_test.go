package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const deprecatedFBC = `---
schema: olm.package
name: old-operator
defaultChannel: stable
---
schema: olm.channel
name: stable
package: old-operator
entries:
- name: old-operator.v1.0.0
- name: old-operator.v1.1.0
  replaces: old-operator.v1.0.0
---
schema: olm.channel
name: alpha
package: old-operator
entries:
- name: old-operator.v1.0.0
---
schema: olm.bundle
name: old-operator.v1.0.0
package: old-operator
image: example.com/old-operator-bundle@sha256:1111111111111111111111111111111111111111111111111111111111111111
properties:
- {type: olm.package, value: {packageName: old-operator, version: 1.0.0}}
---
schema: olm.bundle
name: old-operator.v1.1.0
package: old-operator
image: example.com/old-operator-bundle@sha256:2222222222222222222222222222222222222222222222222222222222222222
properties:
- {type: olm.package, value: {packageName: old-operator, version: 1.1.0}}
`

func writeCatalog(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDeprecations: an olm.deprecations blob marks the package, channels and bundles it
// names, with their messages, and changes the catalog's digest; entries naming what the
// package lacks are warnings; a malformed blob is rejected naming the entry.
func TestDeprecations(t *testing.T) {
	plain, err := Load(writeCatalog(t, map[string]string{"old-operator/catalog.yaml": deprecatedFBC}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Load(writeCatalog(t, map[string]string{"old-operator/catalog.yaml": deprecatedFBC + `---
schema: olm.deprecations
package: old-operator
entries:
- reference: {schema: olm.package}
  message: old-operator is no longer maintained; use new-operator.
- reference: {schema: olm.channel, name: alpha}
  message: alpha is closed; use stable.
- reference: {schema: olm.bundle, name: old-operator.v1.0.0}
  message: 1.0.0 has CVE-2026-0001; upgrade to 1.1.0.
- reference: {schema: olm.bundle, name: old-operator.v0.9.0}
  message: pruned long ago.
`}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Rejections) != 0 {
		t.Fatalf("rejections: %v", cat.Rejections)
	}
	p := cat.Package("old-operator")
	if p.Deprecation != "old-operator is no longer maintained; use new-operator." {
		t.Errorf("package deprecation %q", p.Deprecation)
	}
	if p.Channel("alpha").Deprecation != "alpha is closed; use stable." || p.Channel("stable").Deprecation != "" {
		t.Errorf("channel deprecations: alpha %q, stable %q", p.Channel("alpha").Deprecation, p.Channel("stable").Deprecation)
	}
	if cat.BundleByCSV("old-operator.v1.0.0").Deprecation == "" || cat.BundleByCSV("old-operator.v1.1.0").Deprecation != "" {
		t.Errorf("bundle deprecations: 1.0.0 %q, 1.1.0 %q", cat.BundleByCSV("old-operator.v1.0.0").Deprecation, cat.BundleByCSV("old-operator.v1.1.0").Deprecation)
	}
	if len(cat.Warnings) != 1 || !strings.Contains(cat.Warnings[0].Reason, `entries[3] deprecates bundle "old-operator.v0.9.0"`) {
		t.Errorf("warnings %v, want the entry for a bundle the package lacks", cat.Warnings)
	}
	if cat.Digest == plain.Digest {
		t.Error("deprecations do not change the catalog's digest: a CatalogSource would not say its catalog changed")
	}

	for _, tc := range []struct{ name, blob, want string }{
		{"no message", "entries:\n- reference: {schema: olm.package}\n", "entries[0]: message is empty"},
		{"unknown schema", "entries:\n- reference: {schema: olm.thing, name: x}\n  message: m\n", `entries[0]: reference.schema "olm.thing"`},
		{"a channel without its name", "entries:\n- reference: {schema: olm.channel}\n  message: m\n", "entries[0]: reference.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, err := Load(writeCatalog(t, map[string]string{"old-operator/catalog.yaml": deprecatedFBC + "---\nschema: olm.deprecations\npackage: old-operator\n" + tc.blob}), Options{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range cat.Rejections {
				found = found || strings.Contains(r.Reason, tc.want)
			}
			if !found || len(cat.Bundles()) != 2 {
				t.Errorf("rejections %v (bundles %d): want one saying %q, the bundles loaded", cat.Rejections, len(cat.Bundles()), tc.want)
			}
		})
	}
}

// TestDeprecationsServed: a catalog's deprecations travel in the index an HTTP catalog
// serves (catalog serve): rebuilt from its JSON, the catalog has them and the same digest.
func TestDeprecationsServed(t *testing.T) {
	cat, err := Load(writeCatalog(t, map[string]string{"old-operator/catalog.yaml": deprecatedFBC + `---
schema: olm.deprecations
package: old-operator
entries:
- reference: {schema: olm.package}
  message: gone
- reference: {schema: olm.channel, name: alpha}
  message: closed
- reference: {schema: olm.bundle, name: old-operator.v1.0.0}
  message: CVE
`}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(struct {
		Packages []*Package
		Bundles  []*Bundle
	}{cat.Packages(), cat.Bundles()})
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		Packages []*Package
		Bundles  []*Bundle
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	got, err := FromIndex(cat.Digest, index.Packages, index.Bundles, func(*Bundle) ([]File, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	p := got.Package("old-operator")
	if p.Deprecation != "gone" || p.Channel("alpha").Deprecation != "closed" || got.BundleByCSV("old-operator.v1.0.0").Deprecation != "CVE" {
		t.Errorf("served: package %q, channel %q, bundle %q", p.Deprecation, p.Channel("alpha").Deprecation, got.BundleByCSV("old-operator.v1.0.0").Deprecation)
	}
}
