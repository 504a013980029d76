package catalog

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

// The community catalog is loaded once per test binary; the tests only read it.
var community struct {
	once sync.Once
	cat  *Catalog
	err  error
}

func communityCatalog(t *testing.T) (*Catalog, string) {
	t.Helper()
	dir := catalogtest.CommunityPath(t)
	community.once.Do(func() { community.cat, community.err = Load(dir, Options{}) })
	if community.err != nil {
		t.Fatal(community.err)
	}
	return community.cat, dir
}

func TestCommunityLoads(t *testing.T) {
	c, dir := communityCatalog(t)
	// Count the version directories independently of the loader.
	var versionDirs int
	pkgs, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if !p.IsDir() {
			continue
		}
		vs, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if v.IsDir() {
				versionDirs++
			}
		}
	}
	loaded := len(c.Bundles())
	t.Logf("%d of %d bundles loaded (%.2f%%), %d packages, %d rejections, %d warnings",
		loaded, versionDirs, 100*float64(loaded)/float64(versionDirs), len(c.Packages()), len(c.Rejections), len(c.Warnings))
	if float64(loaded) < 0.99*float64(versionDirs) {
		t.Errorf("only %d of %d bundles loaded", loaded, versionDirs)
	}
	for _, r := range c.Rejections {
		t.Log("rejected:", r)
		// A precise rejection names an existing path and says what is wrong with which
		// file or field, not just that something failed.
		if _, err := os.Lstat(filepath.Join(dir, r.Path)); err != nil {
			t.Errorf("rejection path %q does not exist: %v", r.Path, err)
		}
		if len(r.Reason) < 20 || !strings.ContainsAny(r.Reason, `."[:`) {
			t.Errorf("rejection of %s is vague: %q", r.Path, r.Reason)
		}
	}
	for _, w := range c.Warnings {
		t.Log("warning:", w)
	}
	if len(c.Packages()) < 160 {
		t.Errorf("%d packages", len(c.Packages()))
	}
}

// TestCommunityGraphs checks etcd's and prometheus's channels against their package files:
// each channel's head is its currentCSV, and the replaces chain walks from the head down
// to the oldest version.
func TestCommunityGraphs(t *testing.T) {
	c, dir := communityCatalog(t)
	chains := map[string]map[string][]string{
		"etcd": {
			"alpha":                 {"etcdoperator-community.v0.6.1"},
			"singlenamespace-alpha": {"etcdoperator.v0.9.4", "etcdoperator.v0.9.2", "etcdoperator.v0.9.0"},
			"clusterwide-alpha":     {"etcdoperator.v0.9.4-clusterwide", "etcdoperator.v0.9.2-clusterwide", "etcdoperator.v0.9.0"},
		},
		"prometheus": {
			"beta": {"prometheusoperator.0.47.0", "prometheusoperator.0.37.0", "prometheusoperator.0.32.0", "prometheusoperator.0.27.0", "prometheusoperator.0.22.2", "prometheusoperator.0.15.0", "prometheusoperator.0.14.0"},
		},
	}
	for pkg, want := range chains {
		t.Run(pkg, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, pkg, pkg+".package.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var pf struct {
				DefaultChannel string `json:"defaultChannel"`
				Channels       []struct{ Name, CurrentCSV string }
			}
			if err := yaml.Unmarshal(data, &pf); err != nil {
				t.Fatal(err)
			}
			p := c.Package(pkg)
			if p == nil || p.Layout != LayoutPackageManifest || len(p.Channels) != len(pf.Channels) {
				t.Fatalf("package %+v", p)
			}
			if pf.DefaultChannel != "" && p.DefaultChannel != pf.DefaultChannel {
				t.Errorf("default channel %q, package file says %q", p.DefaultChannel, pf.DefaultChannel)
			}
			for _, fc := range pf.Channels {
				ch := p.Channel(fc.Name)
				if ch == nil || ch.Head != fc.CurrentCSV {
					t.Fatalf("channel %s: %+v, package file head %s", fc.Name, ch, fc.CurrentCSV)
				}
				var chain []string
				for name := ch.Head; name != ""; {
					e, ok := ch.Entry(name)
					if !ok {
						t.Fatalf("channel %s: %s replaced but not an entry", fc.Name, name)
					}
					chain = append(chain, name)
					name = e.Replaces
				}
				if !slices.Equal(chain, want[fc.Name]) {
					t.Errorf("channel %s chain %v, want %v", fc.Name, chain, want[fc.Name])
				}
				// Versions descend along the chain.
				for i := 1; i < len(chain); i++ {
					if !c.BundleByCSV(chain[i-1]).Version.GT(c.BundleByCSV(chain[i]).Version) {
						t.Errorf("%s does not upgrade %s", chain[i-1], chain[i])
					}
				}
			}
		})
	}
	next, err := c.Successors("prometheus", "beta", semver.MustParse("0.22.2"))
	if err != nil || len(next) != 1 || next[0].CSVName != "prometheusoperator.0.27.0" {
		t.Errorf("successors of prometheus 0.22.2: %v %v", next, err)
	}
	if head, err := c.Head("etcd", ""); err != nil || head.CSVName != "etcdoperator.v0.9.4" {
		t.Errorf("etcd head: %v %v", head, err)
	}
}

func TestCommunityLookups(t *testing.T) {
	c, _ := communityCatalog(t)
	b := c.BundleByCSV("etcdoperator.v0.9.4")
	if b == nil || b.Package != "etcd" || b.Version.String() != "0.9.4" || !slices.Equal(b.Channels, []string{"singlenamespace-alpha"}) {
		t.Fatalf("etcdoperator.v0.9.4: %+v", b)
	}
	if !b.Provides(GVK{Group: "etcd.database.coreos.com", Kind: "EtcdCluster"}) {
		t.Errorf("etcd owns %v", b.OwnedCRDs)
	}
	if got := c.Bundle("etcd", semver.MustParse("0.9.4")); got != b {
		t.Errorf("by version: %v", got)
	}
	// The startingCSV forms of the original operator-manager.
	for ref, want := range map[string]string{"etcd.v0.9.4": "etcdoperator.v0.9.4", "prometheus.0.22.2": "prometheusoperator.0.22.2", "etcdoperator.v0.9.4": "etcdoperator.v0.9.4"} {
		if got, err := c.BundleByRef(ref); err != nil || got.CSVName != want {
			t.Errorf("BundleByRef(%q) = %v, %v; want %s", ref, got, err, want)
		}
	}

	// node-healthcheck-operator depends on a GVK that poison-pill-operator provides.
	ppr := GVK{Group: "poison-pill.medik8s.io", Version: "v1alpha1", Kind: "PoisonPillRemediation"}
	providers := c.ProvidersOf(ppr)
	if len(providers) == 0 {
		t.Fatal("no provider of PoisonPillRemediation")
	}
	for _, p := range providers {
		if p.Package != "poison-pill-operator" {
			t.Errorf("%s provides %v", p.Ref(), ppr)
		}
	}
	nhc := c.Package("node-healthcheck-operator")
	if nhc == nil || len(nhc.Bundles) == 0 {
		t.Fatal("node-healthcheck-operator not loaded")
	}
	for _, b := range nhc.Bundles {
		if !slices.ContainsFunc(b.Dependencies, func(d Dependency) bool { return d.Type == DependencyGVK && d.GVK == ppr }) {
			t.Errorf("%s dependencies %v", b.Ref(), b.Dependencies)
		}
	}
}

// TestCommunityContent reads every loaded bundle back: its digest still matches and its
// manifests parse, so nothing the index offers fails at install time.
func TestCommunityContent(t *testing.T) {
	c, _ := communityCatalog(t)
	bundles := c.Bundles()
	if testing.Short() {
		bundles = bundles[:len(bundles)/10]
	}
	errs := make([]error, len(bundles))
	parallel(len(bundles), runtime.GOMAXPROCS(0), func(i int) {
		bc, err := c.Content(bundles[i])
		if err == nil && (bc.CSV.Name != bundles[i].CSVName || len(bc.CRDs) == 0 && len(bundles[i].OwnedCRDs) > 0) {
			t.Errorf("%s: CSV %s with %d CRDs", bundles[i].Ref(), bc.CSV.Name, len(bc.CRDs))
		}
		errs[i] = err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", bundles[i].Ref(), err)
		}
	}
}

func TestCommunityReloadUnchanged(t *testing.T) {
	c, dir := communityCatalog(t)
	got, changed, err := LoadIfChanged(dir, c, Options{})
	if err != nil || changed || got != c {
		t.Errorf("changed=%v err=%v", changed, err)
	}
}
