package resolve

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/constraints"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

// communityKube is the version of the project's local control plane.
var communityKube = semver.MustParse("1.37.2")

// communityCatalog loads the shared community catalog once per test binary (the same
// once as TestBundleOnCommunity), or skips.
func communityCatalog(tb testing.TB) []CatalogRef {
	tb.Helper()
	dir := catalogtest.CommunityPath(tb)
	communityOnce.Do(func() {
		cat, err := catalog.Load(dir, catalog.Options{})
		if err != nil {
			panic(err)
		}
		community = cat
	})
	return []CatalogRef{{Name: "community", Catalog: community}}
}

// communityHeads returns the head of each package's default channel.
func communityHeads(tb testing.TB, cat *catalog.Catalog) []*catalog.Bundle {
	var heads []*catalog.Bundle
	for _, p := range cat.Packages() {
		if b, err := cat.Head(p.Name, ""); err == nil {
			heads = append(heads, b)
		} else {
			tb.Logf("package %s has no head: %v", p.Name, err)
		}
	}
	return heads
}

func TestResolveCommunityPoisonPill(t *testing.T) {
	cats := communityCatalog(t)
	for _, csv := range []string{"node-healthcheck-operator.v0.0.1", "node-healthcheck-operator.v0.0.2"} {
		p, err := Resolve(Request{Root: mustBundle(t, cats[0].Catalog, csv), Catalogs: cats, KubeVersion: communityKube})
		if err != nil {
			t.Fatal(err)
		}
		want := "provides PoisonPillRemediation.v1alpha1.poison-pill.medik8s.io required by " + csv
		if len(p.Install) != 1 || p.Install[0].Package != "poison-pill-operator" || p.Install[0].Reason != want ||
			p.Install[0].Catalog != "community" || !strings.HasPrefix(p.Install[0].Digest, "sha256:") {
			t.Fatalf("%s: %s", csv, strings.Join(summary(p), "; "))
		}
		t.Logf("%s: %s", csv, strings.Join(summary(p), "; "))
	}
	// Installed, it is kept rather than installed again.
	pp := installed("poison-pill-operator", "0.0.3", "community",
		catalog.GVK{Group: "poison-pill.medik8s.io", Version: "v1alpha1", Kind: "PoisonPillRemediation"})
	pp.CSVName = "poison-pill.v0.0.3"
	p, err := Resolve(Request{Root: mustBundle(t, cats[0].Catalog, "node-healthcheck-operator.v0.0.2"), Catalogs: cats, Installed: []Installed{pp}})
	if err != nil || len(p.Install) != 0 || len(p.Satisfied) != 1 || p.Satisfied[0].CSVName != "poison-pill.v0.0.3" {
		t.Fatalf("with poison-pill installed: %v, %v", p, err)
	}
}

// TestResolveCommunityHeads resolves every package head of the community catalog: each
// resolves or fails with a precise, bounded message. On the project's Kubernetes every head
// resolves today; the old cluster makes some refuse, to check those messages too.
func TestResolveCommunityHeads(t *testing.T) {
	cats := communityCatalog(t)
	heads := communityHeads(t, cats[0].Catalog)
	for _, kube := range []semver.Version{communityKube, semver.MustParse("1.16.0")} {
		var withDeps, installs, failed, maxSteps int
		reasons := map[string]int{}
		start := time.Now()
		for _, b := range heads {
			p, err := Resolve(Request{Root: b, Catalogs: cats, KubeVersion: kube})
			if err != nil {
				failed++
				var re *Error
				if !errors.As(err, &re) || re.Reason != ReasonUnsatisfiable {
					t.Errorf("%s: %v is not an Unsatisfiable *Error", b.CSVName, err)
					continue
				}
				kubeRefused := strings.HasPrefix(re.Message, "cannot install "+b.CSVName+": it needs Kubernetes ")
				if !strings.HasPrefix(re.Message, "cannot install "+b.CSVName+": ") || len(re.Message) > 2000 ||
					(!kubeRefused && !strings.HasSuffix(re.Message, "Catalogs searched: community (priority 0).")) {
					t.Errorf("imprecise message for %s: %s", b.CSVName, re.Message)
				}
				if kubeRefused {
					reasons["root needs a newer Kubernetes"]++
				} else {
					reasons["dependencies"]++
				}
				t.Logf("Kubernetes %s: FAIL %s", kube, re.Message)
				continue
			}
			maxSteps = max(maxSteps, p.Steps)
			if len(p.Install) > 0 {
				withDeps++
				installs += len(p.Install)
				t.Logf("Kubernetes %s: OK %s: %s", kube, b.CSVName, strings.Join(summary(p), "; "))
			}
		}
		t.Logf("Kubernetes %s: %d heads, %d resolved (%d with dependencies, %d bundles to install, at most %d search steps), %d failed %v, %s per package",
			kube, len(heads), len(heads)-failed, withDeps, installs, maxSteps, failed, reasons, time.Since(start)/time.Duration(max(len(heads), 1)))
	}
}

func BenchmarkResolveCommunity(b *testing.B) {
	cats := communityCatalog(b)
	heads := communityHeads(b, cats[0].Catalog)
	var failed int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		failed = 0
		for _, h := range heads {
			if _, err := Resolve(Request{Root: h, Catalogs: cats, KubeVersion: communityKube}); err != nil {
				failed++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(heads)), "ns/package")
	b.ReportMetric(float64(len(heads)), "packages")
	b.ReportMetric(float64(failed), "failed")
}

// BenchmarkResolveCommunityWithDependencies resolves only the community bundles (any
// version) that have dependencies or required CRDs: the heads alone are mostly trivial.
func BenchmarkResolveCommunityWithDependencies(b *testing.B) {
	cats := communityCatalog(b)
	var roots []*catalog.Bundle
	for _, r := range cats[0].Catalog.Bundles() {
		if len(r.Dependencies)+len(r.RequiredCRDs) > 0 {
			roots = append(roots, r)
		}
	}
	benchResolve(b, cats, roots)
}

// benchResolve resolves each of roots per iteration, each of which must resolve.
func benchResolve(b *testing.B, cats []CatalogRef, roots []*catalog.Bundle) {
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range roots {
			if _, err := Resolve(Request{Root: r, Catalogs: cats, KubeVersion: communityKube}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(roots)), "ns/package")
	b.ReportMetric(float64(len(roots)), "packages")
}

// BenchmarkResolveCommunityConstraints resolves the same bundles as
// BenchmarkResolveCommunityWithDependencies, each requirement written as an olm.constraint
// instead (mode "compound": any of the one gvk, all of the one package range; mode "cel":
// a rule reading the candidates' olm.gvk and olm.package properties). The plain benchmark
// is its floor: a constraint is met by scanning every bundle of the catalog and evaluating
// it on each, where olm.gvk and olm.package are looked up in the index.
func BenchmarkResolveCommunityConstraints(b *testing.B) {
	cats := communityCatalog(b)
	for _, mode := range []string{"compound", "cel"} {
		var roots []*catalog.Bundle
		for _, r := range cats[0].Catalog.Bundles() {
			if len(r.Dependencies)+len(r.RequiredCRDs) > 0 {
				roots = append(roots, asConstraints(r, mode))
			}
		}
		b.Run(mode, func(b *testing.B) { benchResolve(b, cats, roots) })
	}
}

// asConstraints returns a copy of r whose dependencies and required CRDs (not owned) are
// olm.constraint dependencies meaning the same.
func asConstraints(r *catalog.Bundle, mode string) *catalog.Bundle {
	out := *r
	out.Dependencies, out.RequiredCRDs = nil, nil
	add := func(c constraints.Constraint) {
		out.Dependencies = append(out.Dependencies, catalog.Dependency{Type: catalog.DependencyConstraint, Constraint: &c})
	}
	gvk := func(g catalog.GVK) {
		if mode == "cel" {
			add(constraints.Constraint{Cel: &constraints.Cel{Rule: fmt.Sprintf(
				"properties.exists(p, p.type == 'olm.gvk' && p.value.group == %q && p.value.version == %q && p.value.kind == %q)", g.Group, g.Version, g.Kind)}})
			return
		}
		add(constraints.Constraint{Any: &constraints.CompoundConstraint{Constraints: []constraints.Constraint{
			{GVK: &constraints.GVKConstraint{Group: g.Group, Version: g.Version, Kind: g.Kind}}}}})
	}
	for _, d := range r.Dependencies {
		switch d.Type {
		case catalog.DependencyGVK:
			gvk(d.GVK)
		case catalog.DependencyPackage:
			if mode == "cel" {
				add(constraints.Constraint{Cel: &constraints.Cel{Rule: fmt.Sprintf(
					"properties.exists(p, p.type == 'olm.package' && p.value.packageName == %q && semver_compare(p.value.version, %q) >= 0)", d.Package, lowest(d.Versions))}})
				continue
			}
			add(constraints.Constraint{All: &constraints.CompoundConstraint{Constraints: []constraints.Constraint{
				{Package: &constraints.PackageConstraint{PackageName: d.Package, VersionRange: d.Versions.Raw}}}}})
		}
	}
	for _, c := range r.RequiredCRDs {
		if !r.Provides(c.GVK()) {
			gvk(c.GVK())
		}
	}
	return &out
}

// lowest is the first version a range's text names (">=0.1.0 <0.2.0" -> "0.1.0"), for a
// CEL rule that compares versions; the community's ranges are lower bounds first.
func lowest(r catalog.VersionRange) string {
	f := strings.Fields(strings.TrimLeft(r.Raw, ">=<~^ "))
	if len(f) == 0 {
		return "0.0.0"
	}
	return f[0]
}
