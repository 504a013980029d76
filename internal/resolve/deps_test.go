package resolve

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

var (
	testCatalogsOnce sync.Once
	testMain         *catalog.Catalog
	testExtra        *catalog.Catalog
	testExtra2       *catalog.Catalog
)

// testCatalogs returns the three test catalogs: main (the roots' own, priority 0),
// extra (priority 10) and extra2 (priority 20).
func testCatalogs(t testing.TB) []CatalogRef {
	t.Helper()
	testCatalogsOnce.Do(func() {
		for dir, c := range map[string]**catalog.Catalog{"testdata/main": &testMain, "testdata/extra": &testExtra, "testdata/extra2": &testExtra2} {
			cat, err := catalog.Load(dir, catalog.Options{})
			if err != nil {
				panic(err)
			}
			if len(cat.Rejections) > 0 {
				panic(fmt.Sprintf("%s: %v", dir, cat.Rejections))
			}
			*c = cat
		}
	})
	return []CatalogRef{{"main", 0, testMain}, {"extra", 10, testExtra}, {"extra2", 20, testExtra2}}
}

// summary writes a plan one line per entry, for comparing whole plans.
func summary(p *Plan) []string {
	var out []string
	for _, s := range p.Install {
		line := fmt.Sprintf("install %s from %s: %s", s.CSVName, s.Catalog, s.Reason)
		if s.Upgrades != "" {
			line += " (upgrades " + s.Upgrades + ")"
		}
		out = append(out, line)
	}
	for _, s := range p.Satisfied {
		line := fmt.Sprintf("satisfied %s of %s by %s", s.Requirement, s.RequiredBy, s.CSVName)
		if s.ServedFrom != "" {
			line += " from " + s.ServedFrom
		}
		out = append(out, line)
	}
	return out
}

func installed(pkg, version, cat string, provides ...catalog.GVK) Installed {
	return Installed{Package: pkg, Version: semver.MustParse(version), CSVName: pkg + ".v" + version, Catalog: cat, Provides: provides}
}

func mustBundle(t testing.TB, cat *catalog.Catalog, csv string) *catalog.Bundle {
	t.Helper()
	b := cat.BundleByCSV(csv)
	if b == nil {
		t.Fatalf("no bundle %s", csv)
	}
	return b
}

var alertV1 = catalog.GVK{Group: "alerts.example.com", Version: "v1", Kind: "Alert"}

type resolveCase struct {
	name      string
	root      string
	catalogs  int // how many of main, extra, extra2; 0 means 1
	installed []Installed
	kube      string
	maxDepth  int
	maxSteps  int
	want      []string // summary lines
	wantErr   string   // the exact message
}

func runResolveCases(t *testing.T, cats []CatalogRef, cases []resolveCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Root: mustBundle(t, cats[0].Catalog, tc.root), Catalogs: cats[:max(tc.catalogs, 1)],
				Installed: tc.installed, MaxDepth: tc.maxDepth, MaxSteps: tc.maxSteps}
			if tc.kube != "" {
				req.KubeVersion = semver.MustParse(tc.kube)
			}
			p, err := Resolve(req)
			if tc.wantErr != "" {
				var re *Error
				if !errors.As(err, &re) || re.Reason != ReasonUnsatisfiable {
					t.Fatalf("got %v, %v; want Unsatisfiable", p, err)
				}
				if re.Message != tc.wantErr {
					t.Errorf("message:\n got %s\nwant %s", re.Message, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(p); !slices.Equal(got, tc.want) {
				t.Errorf("plan:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tc.want, "\n     "))
			}
		})
	}
}

func TestResolve(t *testing.T) {
	runResolveCases(t, testCatalogs(t), []resolveCase{
		{name: "range, default channel first, transitive gvk", root: "web.v1.0.0", want: []string{
			"install storage.v1.1.0 from main: provides Volume.v1.storage.example.com required by db.v1.4.0",
			"install db.v1.4.0 from main: required by web.v1.0.0: olm.package db >=1.0.0 <2.0.0",
		}},
		{name: "range met only in another channel", root: "web.v2.0.0", want: []string{
			"install storage.v1.1.0 from main: provides Volume.v1.storage.example.com required by db.v1.5.0",
			"install db.v1.5.0 from main: required by web.v2.0.0: olm.package db >=1.5.0 <2.0.0",
		}},
		{name: "minKubeVersion refuses the preferred version", root: "web.v1.0.0", kube: "1.28.4", want: []string{
			"install storage.v1.1.0 from main: provides Volume.v1.storage.example.com required by db.v1.0.0",
			"install db.v1.0.0 from main: required by web.v1.0.0: olm.package db >=1.0.0 <2.0.0",
		}},
		{name: "minKubeVersion of the root", root: "web.v2.0.0", kube: "1.28.0",
			wantErr: "cannot install web.v2.0.0: it needs Kubernetes 1.29.0 or newer, the cluster runs 1.28.0"},
		{name: "minKubeVersion refuses every candidate", root: "web.v1.0.0", kube: "1.22.0",
			wantErr: "cannot install web.v1.0.0: web.v1.0.0 requires olm.package db >=1.0.0 <2.0.0, and no candidate fits: " +
				"db.v1.4.0 (catalog main) needs Kubernetes 1.30.0 or newer, the cluster runs 1.22.0; " +
				"db.v1.0.0 (catalog main) needs Kubernetes 1.25.0 or newer, the cluster runs 1.22.0; " +
				"db.v1.5.0 (catalog main) needs Kubernetes 1.25.0 or newer, the cluster runs 1.22.0; " +
				"db 0.9.0, 2.0.0 (catalog main) are out of range. Catalogs searched: main (priority 0)."},
		{name: "gvk provider: default channel, then newest", root: "monitor.v1.0.0", want: []string{
			"install alerter-lite.v3.0.0 from main: provides Alert.v1.alerts.example.com required by monitor.v1.0.0",
		}},
		{name: "gvk provider owning a CRD of the root is refused", root: "pager.v1.0.0", want: []string{
			"install alerter.v1.1.0 from main: provides Alert.v1.alerts.example.com required by pager.v1.0.0",
		}},
		{name: "required CRDs, the root's own skipped", root: "dashboard.v1.0.0", want: []string{
			"install panels.v1.0.0 from main: provides Panel.v1.panels.example.com required by dashboard.v1.0.0",
		}},
		{name: "consistent cycle", root: "loop.v1.0.0", want: []string{
			"install ping.v1.0.0 from main: required by loop.v1.0.0: olm.package ping >=1.0.0",
			"install pong.v1.0.0 from main: required by ping.v1.0.0: olm.package pong >=1.0.0",
		}},
		{name: "cycle through the root", root: "ping.v1.0.0", want: []string{
			"install pong.v1.0.0 from main: required by ping.v1.0.0: olm.package pong >=1.0.0",
		}},
		{name: "cycle consistent for the newer root", root: "tick.v2.0.0", want: []string{
			"install tock.v1.0.0 from main: required by tick.v2.0.0: olm.package tock >=1.0.0",
		}},
		{name: "inconsistent cycle", root: "tick.v1.0.0",
			wantErr: "cannot install tick.v1.0.0: tick.v1.0.0 requires olm.package tock >=1.0.0, and no candidate fits: " +
				"tock.v1.0.0 (catalog main) is refused because tock.v1.0.0 requires olm.package tick >=2.0.0, " +
				"but tick 1.0.0 is already chosen (the operator being installed). Catalogs searched: main (priority 0)."},
		{name: "conflict between two dependents", root: "suite.v1.0.0",
			wantErr: "cannot install suite.v1.0.0: suite.v1.0.0 requires olm.package left >=1.0.0, and no candidate fits: " +
				"left.v1.0.0 (catalog main) is refused because right.v1.0.0 requires olm.package shared >=2.0.0, " +
				"but shared 1.5.0 is already chosen (required by left.v1.0.0: olm.package shared <2.0.0), " +
				"and no version of shared in the catalogs is in both ranges. Catalogs searched: main (priority 0)."},
		{name: "conflict resolved by backtracking to an older version", root: "suite2.v1.0.0", want: []string{
			"install shared.v1.5.0 from main: required by left.v1.0.0: olm.package shared <2.0.0",
			"install left.v1.0.0 from main: required by suite2.v1.0.0: olm.package left >=1.0.0",
			"install right.v0.9.0 from main: required by suite2.v1.0.0: olm.package right >=0.1.0",
		}},
		{name: "gvk only in another version of a chosen package", root: "combo.v1.0.0",
			wantErr: "cannot install combo.v1.0.0: combo.v1.0.0 requires olm.package widget >=1.0.0 <1.1.0, and no candidate fits: " +
				"widget.v1.0.0 (catalog main) is refused because combo.v1.0.0 requires olm.gvk Gear.v1.widget.example.com, and no candidate fits; " +
				"widget 2.0.0 (catalog main) is out of range. " +
				"First cause: combo.v1.0.0 requires olm.gvk Gear.v1.widget.example.com, and no candidate fits: " +
				"widget 2.0.0 (catalog main) is refused: widget 1.0.0 is already chosen " +
				"(required by combo.v1.0.0: olm.package widget >=1.0.0 <1.1.0). Catalogs searched: main (priority 0)."},
		{name: "missing package", root: "orphan.v1.0.0",
			wantErr: "cannot install orphan.v1.0.0: orphan.v1.0.0 requires olm.package nowhere >=1.0.0, but no catalog has package nowhere. " +
				"Catalogs searched: main (priority 0)."},
		{name: "missing gvk", root: "needy.v1.0.0", catalogs: 3,
			wantErr: "cannot install needy.v1.0.0: needy.v1.0.0 requires olm.gvk Ghost.v1.ghosts.example.com, " +
				"but no bundle in the catalogs owns Ghost.v1.ghosts.example.com. " +
				"Catalogs searched: main (priority 0), extra2 (priority 20), extra (priority 10)."},
		{name: "depth bound", root: "chain-a.v1.0.0", maxDepth: 2,
			wantErr: "cannot install chain-a.v1.0.0: chain-a.v1.0.0 requires olm.package chain-b >=1.0.0, and no candidate fits: " +
				"chain-b.v1.0.0 (catalog main) is refused because chain-c.v1.0.0 requires olm.package chain-d >=1.0.0, " +
				"but that is deeper than 2 dependencies from the operator being installed. Catalogs searched: main (priority 0)."},
		{name: "chain within the default depth", root: "chain-a.v1.0.0", want: []string{
			"install chain-d.v1.0.0 from main: required by chain-c.v1.0.0: olm.package chain-d >=1.0.0",
			"install chain-c.v1.0.0 from main: required by chain-b.v1.0.0: olm.package chain-c >=1.0.0",
			"install chain-b.v1.0.0 from main: required by chain-a.v1.0.0: olm.package chain-b >=1.0.0",
		}},
		{name: "step bound", root: "suite2.v1.0.0", maxSteps: 3,
			wantErr: "cannot install suite2.v1.0.0: gave up after trying 3 candidates (the bound); when it stopped, " +
				"left.v1.0.0 requires olm.package shared <2.0.0, and no candidate fits: " +
				"shared.v1.5.0 (catalog main) is refused because right.v1.0.0 requires olm.package shared >=2.0.0, " +
				"but shared 1.5.0 is already chosen (required by left.v1.0.0: olm.package shared <2.0.0), " +
				"and no version of shared in the catalogs is in both ranges; " +
				"shared.v1.0.0 (catalog main) was not tried (search bound reached); " +
				"shared 2.0.0 (catalog main) is out of range. Catalogs searched: main (priority 0)."},
		{name: "same catalog as the dependent, then priority", root: "app.v1.0.0", catalogs: 3, want: []string{
			"install logger.v1.0.0 from extra: required by cache.v1.0.0: olm.package logger >=1.0.0",
			"install metrics.v1.0.0 from extra2: required by app.v1.0.0: olm.package metrics >=1.0.0",
			"install cache.v1.0.0 from extra: required by app.v1.0.0: olm.package cache >=1.0.0",
		}},
		{name: "the root's catalog before a newer version elsewhere", root: "web.v1.0.0", catalogs: 3, want: []string{
			"install storage.v1.1.0 from main: provides Volume.v1.storage.example.com required by db.v1.4.0",
			"install db.v1.4.0 from main: required by web.v1.0.0: olm.package db >=1.0.0 <2.0.0",
		}},
	})
}

func TestResolveInstalled(t *testing.T) {
	pinned := installed("db", "0.9.0", "main")
	pinned.Pinned = true
	pinnedWidget := installed("widget", "1.0.0", "main")
	pinnedWidget.Pinned = true
	askedFor := func(in Installed) Installed {
		in.AskedBy = "team-a/db"
		return in
	}
	// Installed in another namespace, watching this one: kept as it is, pinned or not.
	elsewhere := func(in Installed) Installed {
		in.ServedFrom = "shared/db"
		return in
	}
	runResolveCases(t, testCatalogs(t), []resolveCase{
		{name: "installed version in range is kept", root: "web.v1.0.0",
			installed: []Installed{installed("db", "1.0.0", "main"), installed("other", "1.0.0", "main")},
			want:      []string{"satisfied olm.package db >=1.0.0 <2.0.0 of web.v1.0.0 by db.v1.0.0"}},
		{name: "installed version out of range is upgraded along its channel", root: "web.v1.0.0",
			installed: []Installed{installed("db", "0.9.0", "main")}, want: []string{
				"install storage.v1.1.0 from main: provides Volume.v1.storage.example.com required by db.v1.4.0",
				"install db.v1.4.0 from main: required by web.v1.0.0: olm.package db >=1.0.0 <2.0.0 (upgrades db.v0.9.0)",
			}},
		{name: "pinned installed version", root: "web.v1.0.0", installed: []Installed{pinned},
			wantErr: "cannot install web.v1.0.0: web.v1.0.0 requires olm.package db >=1.0.0 <2.0.0, and no candidate fits: " +
				"installed db.v0.9.0 is out of range, and its Subscription pins that version. Catalogs searched: main (priority 0)."},
		{name: "a pinned Subscription that has installed nothing yet is not called installed", root: "web.v1.0.0", installed: []Installed{askedFor(pinned)},
			wantErr: "cannot install web.v1.0.0: web.v1.0.0 requires olm.package db >=1.0.0 <2.0.0, and no candidate fits: " +
				"db.v0.9.0, which Subscription team-a/db asks for (nothing installed yet), is out of range, and its Subscription pins that version. Catalogs searched: main (priority 0)."},
		{name: "installation of another namespace watching this one meets it", root: "web.v1.0.0",
			installed: []Installed{elsewhere(installed("db", "1.0.0", "main"))},
			want:      []string{"satisfied olm.package db >=1.0.0 <2.0.0 of web.v1.0.0 by db.v1.0.0 from shared/db"}},
		{name: "installation of another namespace out of range is not upgraded from here", root: "web.v1.0.0",
			installed: []Installed{elsewhere(installed("db", "0.9.0", "main"))},
			wantErr: "cannot install web.v1.0.0: web.v1.0.0 requires olm.package db >=1.0.0 <2.0.0, and no candidate fits: " +
				"installed db.v0.9.0 is out of range, and it runs for this namespace from Subscription shared/db, which alone changes it. " +
				"Catalogs searched: main (priority 0)."},
		{name: "installation of another namespace not upgraded to provide a gvk", root: "gearbox.v1.0.0",
			installed: []Installed{elsewhere(installed("widget", "1.0.0", "main"))},
			wantErr: "cannot install gearbox.v1.0.0: gearbox.v1.0.0 requires olm.gvk Gear.v1.widget.example.com, and no candidate fits: " +
				"widget 2.0.0 (catalog main) is refused: installed widget.v1.0.0 is kept: it runs for this namespace from Subscription shared/db, which alone changes it. " +
				"Catalogs searched: main (priority 0)."},
		{name: "installed version with no upgrade in range", root: "web.v1.0.0", installed: []Installed{installed("db", "2.0.0", "main")},
			wantErr: "cannot install web.v1.0.0: web.v1.0.0 requires olm.package db >=1.0.0 <2.0.0, and no candidate fits: " +
				"installed db.v2.0.0 is out of range, and no upgrade of it is in range. Catalogs searched: main (priority 0)."},
		{name: "installed from a catalog not searched", root: "web.v1.0.0", installed: []Installed{installed("db", "0.9.0", "gone")},
			wantErr: "cannot install web.v1.0.0: web.v1.0.0 requires olm.package db >=1.0.0 <2.0.0, and no candidate fits: " +
				"installed db.v0.9.0 is out of range, and its catalog gone (package db) is not among those searched. " +
				"Catalogs searched: main (priority 0)."},
		{name: "installed gvk provider first", root: "monitor.v1.0.0",
			installed: []Installed{installed("alerter", "1.0.0", "main", alertV1)},
			want:      []string{"satisfied olm.gvk Alert.v1.alerts.example.com of monitor.v1.0.0 by alerter.v1.0.0"}},
		{name: "installed owner of a CRD refuses a second owner", root: "monitor.v1.0.0",
			installed: []Installed{installed("pager", "1.0.0", "main", catalog.GVK{Group: "pager.example.com", Version: "v1", Kind: "Page"})},
			want:      []string{"install alerter.v1.1.0 from main: provides Alert.v1.alerts.example.com required by monitor.v1.0.0"}},
		{name: "installed operator upgraded to provide a gvk", root: "gearbox.v1.0.0",
			installed: []Installed{installed("widget", "1.0.0", "main")},
			want:      []string{"install widget.v2.0.0 from main: provides Gear.v1.widget.example.com required by gearbox.v1.0.0 (upgrades widget.v1.0.0)"}},
		{name: "pinned installed operator not upgraded to provide a gvk", root: "gearbox.v1.0.0", installed: []Installed{pinnedWidget},
			wantErr: "cannot install gearbox.v1.0.0: gearbox.v1.0.0 requires olm.gvk Gear.v1.widget.example.com, and no candidate fits: " +
				"widget 2.0.0 (catalog main) is refused: installed widget.v1.0.0 is pinned by its Subscription. Catalogs searched: main (priority 0)."},
		{name: "installed version of the root's package is ignored", root: "ping.v1.0.0",
			installed: []Installed{installed("ping", "0.1.0", "main")},
			want:      []string{"install pong.v1.0.0 from main: required by ping.v1.0.0: olm.package pong >=1.0.0"}},
	})
}

// TestResolveDeterministic: the answer does not depend on the order of the non-root
// catalogs or of the installed operators.
func TestResolveDeterministic(t *testing.T) {
	cats := testCatalogs(t)
	inst := []Installed{installed("storage", "1.0.0", "main", catalog.GVK{Group: "storage.example.com", Version: "v1", Kind: "Volume"}),
		installed("zeta", "1.0.0", "main"), installed("alpha", "2.0.0", "extra"), installed("shared", "1.0.0", "main")}
	for _, root := range []string{"web.v1.0.0", "app.v1.0.0", "monitor.v1.0.0", "suite2.v1.0.0", "loop.v1.0.0", "suite.v1.0.0"} {
		var first []string
		rng := rand.New(rand.NewPCG(1, uint64(len(root))))
		for i := range 20 {
			c := slices.Clone(cats[1:])
			rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
			in := slices.Clone(inst)
			rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			p, err := Resolve(Request{Root: mustBundle(t, cats[0].Catalog, root), Catalogs: append([]CatalogRef{cats[0]}, c...), Installed: in})
			got := []string{fmt.Sprint(err)}
			if err == nil {
				got = summary(p)
			}
			if i == 0 {
				first = got
				t.Logf("%s: %s", root, strings.Join(got, "; "))
			} else if !slices.Equal(got, first) {
				t.Fatalf("%s: order %d gave\n%s\nwant\n%s", root, i, strings.Join(got, "\n"), strings.Join(first, "\n"))
			}
		}
	}
}

func TestResolveSamples(t *testing.T) {
	cat := load(t, "../../samples/catalog")
	cats := []CatalogRef{{"default", 0, cat}}
	cacheV1 := catalog.GVK{Group: "cache.samples.operator-manager.domain", Version: "v1", Kind: "Cache"}
	runResolveCases(t, cats, []resolveCase{
		{name: "backup-operator", root: "backup-operator.v0.2.0", kube: "1.37.2", want: []string{
			"install cache-operator.v1.2.0 from default: required by backup-operator.v0.2.0: olm.package cache-operator >=1.1.0 <1.3.0",
		}},
		{name: "backup-operator with cache-operator installed", root: "backup-operator.v0.2.0",
			installed: []Installed{installed("cache-operator", "1.1.0", "default", cacheV1)}, want: []string{
				"satisfied olm.package cache-operator >=1.1.0 <1.3.0 of backup-operator.v0.2.0 by cache-operator.v1.1.0",
				"satisfied required CRD Cache.v1.cache.samples.operator-manager.domain of backup-operator.v0.2.0 by cache-operator.v1.1.0",
			}},
		{name: "backup-operator with cache-operator 1.0.0 installed", root: "backup-operator.v0.2.0",
			installed: []Installed{installed("cache-operator", "1.0.0", "default", cacheV1)}, want: []string{
				"install cache-operator.v1.2.0 from default: required by backup-operator.v0.2.0: olm.package cache-operator >=1.1.0 <1.3.0 (upgrades cache-operator.v1.0.0)",
			}},
		{name: "backup-operator with the broken cache-operator installed", root: "backup-operator.v0.2.0",
			installed: []Installed{installed("cache-operator", "1.3.0", "default", cacheV1)},
			wantErr: "cannot install backup-operator.v0.2.0: backup-operator.v0.2.0 requires olm.package cache-operator >=1.1.0 <1.3.0, " +
				"and no candidate fits: installed cache-operator.v1.3.0 is out of range, and no upgrade of it is in range. " +
				"Catalogs searched: default (priority 0)."},
		{name: "backup-operator on an old cluster", root: "backup-operator.v0.2.0", kube: "1.24.0",
			wantErr: "cannot install backup-operator.v0.2.0: it needs Kubernetes 1.25.0 or newer, the cluster runs 1.24.0"},
		{name: "cache-operator has no dependencies", root: "cache-operator.v1.3.0"},
	})
}
