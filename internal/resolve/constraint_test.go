package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// constraintCatalog writes a File-Based Catalog of one package per entry of pkgs (name ->
// its bundles' extra properties by version, each a YAML flow list of properties) and
// loads it.
func constraintCatalog(t *testing.T, pkgs map[string]map[string]string) *catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	for pkg, versions := range pkgs {
		var b strings.Builder
		fmt.Fprintf(&b, "---\nschema: olm.package\nname: %s\ndefaultChannel: stable\n---\nschema: olm.channel\nname: stable\npackage: %s\nentries:\n", pkg, pkg)
		var names []string
		for v := range versions {
			names = append(names, v)
		}
		for _, v := range names {
			fmt.Fprintf(&b, "- name: %s.v%s\n", pkg, v)
		}
		for _, v := range names {
			fmt.Fprintf(&b, "---\nschema: olm.bundle\nname: %s.v%s\npackage: %s\nimage: example.com/%s@sha256:%064d\nproperties:\n- {type: olm.package, value: {packageName: %s, version: %s}}\n",
				pkg, v, pkg, pkg, len(v), pkg, v)
			for _, p := range strings.Split(versions[v], "\n") {
				if p = strings.TrimSpace(p); p != "" {
					fmt.Fprintf(&b, "- %s\n", p)
				}
			}
		}
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pkg, "catalog.yaml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Rejections) > 0 {
		t.Fatalf("rejections: %v", cat.Rejections)
	}
	return cat
}

// TestResolveConstraints: olm.label and olm.constraint dependencies are met as OLM meets
// them, by one bundle of any package (newest first, the default channel's first), or by an
// installed operator; an unmet one is reported with the author's failureMessage and the
// constraint written out, and a rule that fails on the bundles it reads says so.
func TestResolveConstraints(t *testing.T) {
	const storeV1 = "{type: olm.gvk, value: {group: store.example.com, version: v1, kind: Store}}"
	const storeV2 = "{type: olm.gvk, value: {group: store.example.com, version: v2, kind: Store}}"
	cat := constraintCatalog(t, map[string]map[string]string{
		"app": {
			"1.0.0": `{type: olm.constraint, value: {failureMessage: needs a Store, any: {constraints: [{gvk: {group: store.example.com, version: v1, kind: Store}}, {gvk: {group: store.example.com, version: v2, kind: Store}}]}}}`,
			"2.0.0": `{type: olm.label.required, value: {label: cache}}`,
			"3.0.0": `{type: olm.constraint, value: {all: {constraints: [{package: {packageName: db, versionRange: ">=1.0.0"}}, {not: {constraints: [{package: {packageName: db, versionRange: "=1.2.0"}}]}}]}}}`,
			"4.0.0": `{type: olm.constraint, value: {cel: {rule: "properties.exists(p, p.type == 'certified' && p.value == true)"}}}`,
			"5.0.0": `{type: olm.constraint, value: {failureMessage: a Store v3 is needed, gvk: {group: store.example.com, version: v3, kind: Store}}}`,
			"6.0.0": `{type: olm.constraint, value: {failureMessage: a Store v9 is needed, any: {constraints: [{gvk: {group: store.example.com, version: v9, kind: Store}}]}}}`,
			"7.0.0": `{type: olm.constraint, value: {cel: {rule: "properties.all(p, p.value.label == 'cache')"}}}`,
		},
		"store-a": {"1.0.0": storeV1},
		"store-b": {"2.0.0": storeV2},
		"redis":   {"6.0.0": "{type: olm.label, value: {label: cache}}"},
		"db":      {"1.0.0": "", "1.2.0": ""},
		"certdb":  {"1.0.0": "{type: certified, value: true}"},
	})
	cats := []CatalogRef{{"main", 0, cat}}
	runResolveCases(t, cats, []resolveCase{
		{
			name: "any of two APIs: the newest provider", root: "app.v1.0.0",
			want: []string{`install store-b.v2.0.0 from main: meets "needs a Store" (olm.constraint any of (gvk Store.v1.store.example.com, gvk Store.v2.store.example.com)) required by app.v1.0.0`},
		},
		{
			name: "any of two APIs: an installed provider is kept", root: "app.v1.0.0",
			installed: []Installed{installed("store-a", "1.0.0", "main", catalog.GVK{Group: "store.example.com", Version: "v1", Kind: "Store"})},
			want:      []string{`satisfied "needs a Store" (olm.constraint any of (gvk Store.v1.store.example.com, gvk Store.v2.store.example.com)) of app.v1.0.0 by store-a.v1.0.0`},
		},
		{
			name: "label", root: "app.v2.0.0",
			want: []string{`install redis.v6.0.0 from main: meets olm.label "cache" required by app.v2.0.0`},
		},
		{
			// The installed operator's labels are read from its bundle in its catalog.
			name: "label of an installed operator", root: "app.v2.0.0",
			installed: []Installed{installed("redis", "6.0.0", "main")},
			want:      []string{`satisfied olm.label "cache" of app.v2.0.0 by redis.v6.0.0`},
		},
		{
			name: "all with not: the excluded version is passed over", root: "app.v3.0.0",
			want: []string{`install db.v1.0.0 from main: meets olm.constraint all of (package db >=1.0.0, none of (package db =1.2.0)) required by app.v3.0.0`},
		},
		{
			name: "cel over a property of the catalog's own", root: "app.v4.0.0",
			want: []string{`install certdb.v1.0.0 from main: meets olm.constraint cel "properties.exists(p, p.type == 'certified' && p.value == true)" required by app.v4.0.0`},
		},
		{
			// A top-level gvk constraint is resolved as olm.gvk, keeping its failureMessage.
			name: "unmet gvk constraint", root: "app.v5.0.0",
			wantErr: `cannot install app.v5.0.0: app.v5.0.0 requires "a Store v3 is needed" (olm.gvk Store.v3.store.example.com), but no bundle in the catalogs owns Store.v3.store.example.com. Catalogs searched: main (priority 0).`,
		},
		{
			name: "unmet compound constraint", root: "app.v6.0.0",
			wantErr: `cannot install app.v6.0.0: app.v6.0.0 requires "a Store v9 is needed" (olm.constraint any of (gvk Store.v9.store.example.com)), but no bundle in the catalogs meets it. Catalogs searched: main (priority 0).`,
		},
		{
			name: "a rule that fails on the bundles", root: "app.v7.0.0",
			wantErr: `cannot install app.v7.0.0: app.v7.0.0 requires olm.constraint cel "properties.all(p, p.value.label == 'cache')", but no bundle in the catalogs meets it (its rule could not be evaluated on 13 of them; the first: cel rule "properties.all(p, p.value.label == 'cache')" on app 1.0.0: no such key: label). Catalogs searched: main (priority 0).`,
		},
	})
}
