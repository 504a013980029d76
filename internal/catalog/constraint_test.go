package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

const constraintFBC = `---
schema: olm.package
name: app
defaultChannel: stable
---
schema: olm.channel
name: stable
package: app
entries:
- name: app.v1.0.0
- name: app.v1.1.0
  replaces: app.v1.0.0
---
schema: olm.bundle
name: app.v1.0.0
package: app
image: example.com/app-bundle@sha256:1111111111111111111111111111111111111111111111111111111111111111
properties:
- {type: olm.package, value: {packageName: app, version: 1.0.0}}
- {type: olm.label, value: {label: database}}
- {type: certified, value: "true"}
- type: olm.constraint
  value:
    failureMessage: needs a v1 or v2 store
    any:
      constraints:
      - gvk: {group: store.example.com, version: v1, kind: Store}
      - gvk: {group: store.example.com, version: v2, kind: Store}
- {type: olm.label.required, value: {label: cache}}
- {type: olm.constraint, value: {package: {packageName: db, versionRange: ">=2.0.0"}}}
---
schema: olm.bundle
name: app.v1.1.0
package: app
image: example.com/app-bundle@sha256:2222222222222222222222222222222222222222222222222222222222222222
properties:
- {type: olm.package, value: {packageName: app, version: 1.1.0}}
- {type: olm.constraint, value: {all: {constraints: [{cel: {rule: "properties.exists(p, p.type =="}}]}}}
`

// TestConstraintsLoad: a File-Based Catalog bundle's olm.constraint and olm.label.required
// properties are its dependencies (a top-level package constraint as olm.package), its
// olm.label and own property types are kept for constraints to read, the served index
// carries them, and a constraint whose rule does not compile rejects its bundle, naming
// the property and the field.
func TestConstraintsLoad(t *testing.T) {
	cat, err := Load(writeCatalog(t, map[string]string{"app/catalog.yaml": constraintFBC}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Rejections) == 0 || !strings.Contains(cat.Rejections[0].Reason, `olm.bundle "app.v1.1.0" (line 31): properties[1] (olm.constraint): all.constraints[0].cel.rule: ERROR: <input>:1:31: Syntax error`) {
		t.Errorf("rejections %v, want app.v1.1.0's rule named", cat.Rejections)
	} else if strings.Contains(cat.Rejections[0].Reason, "\n") {
		t.Errorf("the rejection spans lines (a table row, a status entry): %q", cat.Rejections[0].Reason)
	}
	b := cat.BundleByCSV("app.v1.0.0")
	if b == nil {
		t.Fatal("app.v1.0.0 not loaded")
	}
	var deps []string
	for _, d := range b.Dependencies {
		deps = append(deps, d.String())
	}
	want := []string{`"needs a v1 or v2 store" (olm.constraint any of (gvk Store.v1.store.example.com, gvk Store.v2.store.example.com))`, `olm.label "cache"`, "olm.package db >=2.0.0"}
	if !reflect.DeepEqual(deps, want) {
		t.Errorf("dependencies\n%q\nwant\n%q", deps, want)
	}
	props, _ := json.Marshal(b.Properties)
	if string(props) != `[{"type":"olm.label","value":{"label":"database"}},{"type":"certified","value":"true"}]` {
		t.Errorf("properties %s", props)
	}
	idx := overTheWire(t, cat)
	for _, wb := range idx.Bundles {
		if wb.CSVName != b.CSVName {
			continue
		}
		var served []string
		for _, d := range wb.Dependencies {
			served = append(served, d.String())
		}
		wprops, _ := json.Marshal(wb.Properties)
		if !reflect.DeepEqual(served, want) || string(wprops) != string(props) {
			t.Errorf("served index: dependencies %q properties %s", served, wprops)
		}
	}
}

// TestConstraintMatches: how one bundle meets a label or constraint, as OLM evaluates
// them: all, any and not over package, gvk and CEL rules that read the bundle's
// properties (its package and APIs included) and compare versions with semver_compare.
func TestConstraintMatches(t *testing.T) {
	sub := Subject{
		Package: "db", Version: semver.MustParse("2.1.0"),
		APIs: []GVK{{Group: "db.example.com", Version: "v1", Kind: "DB"}},
		Properties: []Property{
			{Type: PropLabel, Value: json.RawMessage(`{"label":"database"}`)},
			{Type: "certified", Value: json.RawMessage(`"true"`)},
		},
	}
	for _, tc := range []struct {
		name, dep string // dep: an olm.constraint value, or "label:X"
		want      bool
		err       string
	}{
		{name: "label present", dep: "label:database", want: true},
		{name: "label absent", dep: "label:cache"},
		{name: "package in range", dep: `{"package":{"packageName":"db","versionRange":">=2.0.0 <3.0.0"}}`, want: true},
		{name: "package out of range", dep: `{"package":{"packageName":"db","versionRange":"<2.0.0"}}`},
		{name: "gvk", dep: `{"gvk":{"group":"db.example.com","version":"v1","kind":"DB"}}`, want: true},
		{name: "gvk other version", dep: `{"gvk":{"group":"db.example.com","version":"v2","kind":"DB"}}`},
		{name: "all", dep: `{"all":{"constraints":[{"package":{"packageName":"db","versionRange":">=2.0.0"}},{"not":{"constraints":[{"package":{"packageName":"db","versionRange":"=2.1.0"}}]}}]}}`},
		{name: "all, the excluded version elsewhere", dep: `{"all":{"constraints":[{"package":{"packageName":"db","versionRange":">=2.0.0"}},{"not":{"constraints":[{"package":{"packageName":"db","versionRange":"=2.0.1"}}]}}]}}`, want: true},
		{name: "any", dep: `{"any":{"constraints":[{"gvk":{"group":"x","version":"v1","kind":"X"}},{"gvk":{"group":"db.example.com","version":"v1","kind":"DB"}}]}}`, want: true},
		{name: "any of none", dep: `{"any":{"constraints":[{"gvk":{"group":"x","version":"v1","kind":"X"}}]}}`},
		{name: "cel own property", dep: `{"cel":{"rule":"properties.exists(p, p.type == 'certified' && p.value == 'true')"}}`, want: true},
		{name: "cel package version", dep: `{"cel":{"rule":"properties.exists(p, p.type == 'olm.package' && p.value.packageName == 'db' && semver_compare(p.value.version, '2.0.0') > 0)"}}`, want: true},
		{name: "cel gvk", dep: `{"cel":{"rule":"properties.exists(p, p.type == 'olm.gvk' && p.value.kind == 'DB')"}}`, want: true},
		{name: "cel false", dep: `{"cel":{"rule":"properties.exists(p, p.type == 'stable')"}}`},
		{name: "cel error is not met", dep: `{"cel":{"rule":"properties.all(p, p.value.label == 'database')"}}`, err: "no such key"},
		{name: "any: one errs, another meets", dep: `{"any":{"constraints":[{"cel":{"rule":"properties.all(p, p.value.label == 'x')"}},{"gvk":{"group":"db.example.com","version":"v1","kind":"DB"}}]}}`, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Dependency
			var err error
			if label, ok := strings.CutPrefix(tc.dep, "label:"); ok {
				d = Dependency{Type: DependencyLabel, Label: label}
			} else if d, err = parseConstraint(json.RawMessage(tc.dep)); err != nil {
				t.Fatal(err)
			}
			got, err := d.Matches(sub)
			if got != tc.want {
				t.Errorf("%s: got %v, want %v (err %v)", d.String(), got, tc.want, err)
			}
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
}

// TestConstraintDepth: nesting is bounded, as OLM's design asks, so a catalog cannot make
// the resolver recurse without end; the error names where it stopped.
func TestConstraintDepth(t *testing.T) {
	nest := func(n int) string {
		s := `{"gvk":{"group":"g","version":"v1","kind":"K"}}`
		for range n {
			s = `{"not":{"constraints":[` + s + `]}}`
		}
		return s
	}
	if _, err := parseConstraint(json.RawMessage(nest(maxConstraintDepth))); err != nil {
		t.Errorf("%d levels: %v", maxConstraintDepth, err)
	}
	_, err := parseConstraint(json.RawMessage(nest(maxConstraintDepth + 1)))
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 10") || !strings.HasPrefix(err.Error(), "not.constraints[0].") {
		t.Errorf("%d levels: %v", maxConstraintDepth+1, err)
	}
}

// TestParseProperties: metadata/properties.yaml keeps the properties constraints read
// and checks olm.label's shape.
func TestParseProperties(t *testing.T) {
	got, err := parseProperties([]byte("properties:\n- {type: olm.package, value: {packageName: a, version: 1.0.0}}\n- {type: olm.label, value: {label: l}}\n- type: olm.maxOpenShiftVersion\n  value: 4.16\n"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(got)
	if string(data) != `[{"type":"olm.label","value":{"label":"l"}},{"type":"olm.maxOpenShiftVersion","value":4.16}]` {
		t.Errorf("got %s", data)
	}
	if _, err := parseProperties([]byte("properties:\n- {type: olm.label, value: {name: l}}\n")); err == nil || err.Error() != "properties[0] (olm.label): label: is empty" {
		t.Errorf("bad label: %v", err)
	}
}

// TestConstraintHint: the bound a constraint gives the resolver's search is a superset of
// what can meet it (all: any member's bound; any: the union, only if every member has
// one), and none where a rule, a label or a negation could be met by any bundle.
func TestConstraintHint(t *testing.T) {
	const pkg = `{"package":{"packageName":"db","versionRange":">=1.0.0"}}`
	const gvk = `{"gvk":{"group":"g","version":"v1","kind":"K"}}`
	const rule = `{"cel":{"rule":"true"}}`
	for _, tc := range []struct {
		name, value string
		want        string // "" when there is no bound
	}{
		{"package", `{"all":{"constraints":[` + pkg + `]}}`, "[db] []"},
		{"any of a gvk and a package", `{"any":{"constraints":[` + gvk + `,` + pkg + `]}}`, "[db] [g/v1/K]"},
		{"all: a rule and a package", `{"all":{"constraints":[` + rule + `,` + pkg + `]}}`, "[db] []"},
		{"any: a gvk or a rule", `{"any":{"constraints":[` + gvk + `,` + rule + `]}}`, ""},
		{"not", `{"not":{"constraints":[` + pkg + `]}}`, ""},
		{"cel", rule, ""},
	} {
		d, err := parseConstraint(json.RawMessage(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		pkgs, gvks, ok := d.Hint()
		got := ""
		if ok {
			got = fmt.Sprint(pkgs, gvks)
		}
		if got != tc.want {
			t.Errorf("%s: hint %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, _, ok := (Dependency{Type: DependencyLabel, Label: "x"}).Hint(); ok {
		t.Error("a label gave a bound: any package may carry it")
	}
}
