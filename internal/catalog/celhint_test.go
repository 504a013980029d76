package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/constraints"
)

// hintSubjects are bundles a CEL rule is tried on to check that its bound is sound: each
// one it holds for is inside the bound. "other" carries a property of the catalog's own
// whose value has a packageName, which a rule not asking for the type olm.package meets.
func hintSubjects() []Subject {
	prop := func(typ, value string) Property { return Property{Type: typ, Value: json.RawMessage(value)} }
	return []Subject{
		{Package: "db", Version: semver.MustParse("1.2.0"), APIs: []GVK{{Group: "g", Version: "v1", Kind: "K"}},
			Properties: []Property{prop("certified", "true")}},
		{Package: "cache", Version: semver.MustParse("2.0.0"), APIs: []GVK{{Group: "", Version: "v1", Kind: "Thing"}},
			Properties: []Property{prop(PropLabel, `{"label":"x"}`)}},
		{Package: "etcd", Version: semver.MustParse("0.9.0"), APIs: []GVK{{Group: "etcd.io", Version: "v1beta2", Kind: "EtcdCluster"}}},
		{Package: "other", Version: semver.MustParse("1.0.0"), Properties: []Property{prop("custom", `{"packageName":"db","kind":"K","group":"g"}`)}},
	}
}

// inBound says whether s is within the packages and GVKs of a hint.
func inBound(s Subject, pkgs []string, gvks []GVK) bool {
	if slices.Contains(pkgs, s.Package) {
		return true
	}
	for _, g := range gvks {
		if s.provides(g) {
			return true
		}
	}
	return false
}

// checkSoundHint fails t when a bundle of hintSubjects meets the rule outside its bound.
func checkSoundHint(t *testing.T, rule string, pkgs []string, gvks []GVK) {
	t.Helper()
	d := Dependency{Type: DependencyConstraint, Constraint: &constraints.Constraint{Cel: &constraints.Cel{Rule: rule}}}
	for _, s := range hintSubjects() {
		if ok, _ := d.Matches(s); ok && !inBound(s, pkgs, gvks) {
			t.Errorf("rule %q holds for %s %s, outside its bound %v %v: the resolver would never try it", rule, s.Package, s.Version, pkgs, gvks)
		}
	}
}

// TestCELHint: a CEL rule that cannot hold without a package's or a GVK's property on the
// bundle is bounded to those, so the resolver evaluates it on a few bundles instead of the
// whole catalog; a rule that could hold without them (a negation, all, a property of the
// catalog's own, a packageName not asked of olm.package) is not bounded. Every bound is
// checked against what the rule holds for.
func TestCELHint(t *testing.T) {
	const pkgDB = `p.type == 'olm.package' && p.value.packageName == 'db'`
	const gvkK = `p.type == 'olm.gvk' && p.value.group == 'g' && p.value.version == 'v1' && p.value.kind == 'K'`
	for _, tc := range []struct {
		name, rule string
		want       string // "" when there is no bound
	}{
		{"a package", `properties.exists(p, ` + pkgDB + `)`, "[db] []"},
		{"a package from a version on", `properties.exists(p, ` + pkgDB + ` && semver_compare(p.value.version, '1.0.0') >= 0)`, "[db] []"},
		{"a gvk", `properties.exists(p, ` + gvkK + `)`, "[] [g/v1/K]"},
		{"a gvk of any version", `properties.exists(p, p.type == 'olm.gvk' && p.value.group == 'g' && p.value.kind == 'K')`, "[] [g//K]"},
		{"a gvk of the core group", `properties.exists(p, p.type == 'olm.gvk' && p.value.group == '' && p.value.kind == 'Thing')`, "[] [/Thing]"},
		{"index syntax, literal first", `properties.exists(p, 'olm.package' == p["type"] && p["value"]["packageName"] == "db")`, "[db] []"},
		{"exists_one", `properties.exists_one(p, ` + pkgDB + `)`, "[db] []"},
		{"and: a property of the catalog's own and a package", `properties.exists(p, p.type == 'certified') && properties.exists(p, ` + pkgDB + `)`, "[db] []"},
		{"or of two packages", `properties.exists(p, ` + pkgDB + `) || properties.exists(p, p.type == 'olm.package' && p.value.packageName == 'etcd')`, "[db etcd] []"},
		{"or within the predicate", `properties.exists(p, (` + pkgDB + `) || (` + gvkK + `))`, "[db] [g/v1/K]"},
		{"or under the type asked", `properties.exists(p, p.type == 'olm.package' && (p.value.packageName == 'db' || p.value.packageName == 'etcd'))`, "[db etcd] []"},
		{"or with an unbounded side", `properties.exists(p, ` + pkgDB + `) || properties.exists(p, p.type == 'certified')`, ""},
		{"not", `!properties.exists(p, ` + pkgDB + `)`, ""},
		{"all", `properties.all(p, p.type != 'olm.package' || p.value.packageName == 'db')`, ""},
		{"a property of the catalog's own", `properties.exists(p, p.type == 'certified' && p.value == true)`, ""},
		{"a packageName of any property type", `properties.exists(p, p.value.packageName == 'db')`, ""},
		{"a kind without its group", `properties.exists(p, p.type == 'olm.gvk' && p.value.kind == 'K')`, ""},
		{"another list", `[1, 2].exists(x, x == 1)`, ""},
		{"a constant", `true`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := celProgram(tc.rule); err != nil {
				t.Fatalf("rule %q does not compile in OLM's environment: %v", tc.rule, err)
			}
			d := Dependency{Type: DependencyConstraint, Constraint: &constraints.Constraint{Cel: &constraints.Cel{Rule: tc.rule}}}
			pkgs, gvks, ok := d.Hint()
			got := ""
			if ok {
				got = fmt.Sprint(pkgs, gvks)
				checkSoundHint(t, tc.rule, pkgs, gvks)
			}
			if got != tc.want {
				t.Errorf("hint %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzCELHint: for any rule that compiles in OLM's environment, every bundle it holds for
// is inside its bound (a catalog writes the rules, so the bound must be sound for any).
func FuzzCELHint(f *testing.F) {
	for _, r := range []string{
		`properties.exists(p, p.type == 'olm.package' && p.value.packageName == 'db')`,
		`properties.exists(p, p.type == 'olm.gvk' && p.value.group == 'g' && p.value.kind == 'K')`,
		`properties.exists(p, p.type == 'olm.package' && (p.value.packageName == 'db' || p.value.packageName == 'other'))`,
		`properties.exists(p, p.type == 'olm.package') || properties.exists(p, p.value.packageName == 'db')`,
		`!properties.exists(p, p["type"] == "olm.package" && p["value"]["packageName"] == "cache")`,
	} {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		if _, err := celProgram(rule); err != nil {
			return
		}
		d := Dependency{Type: DependencyConstraint, Constraint: &constraints.Constraint{Cel: &constraints.Cel{Rule: rule}}}
		if pkgs, gvks, ok := d.Hint(); ok {
			checkSoundHint(t, rule, pkgs, gvks)
		}
	})
}
