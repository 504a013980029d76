package resolve

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

func load(t *testing.T, dir string) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

var (
	communityOnce sync.Once
	community     *catalog.Catalog
)

func TestBundleOnSamples(t *testing.T) {
	cat := load(t, "../../samples/catalog")
	cases := []struct {
		name    string
		in      Intent
		wantCSV string
		reason  string
		msg     []string
	}{
		{"package.version", Intent{StartingCSV: "cache-operator.1.2.0"}, "cache-operator.v1.2.0", "", nil},
		{"package.vversion", Intent{StartingCSV: "cache-operator.v1.1.0"}, "cache-operator.v1.1.0", "", nil},
		{"csv name", Intent{StartingCSV: "backup-operator.v0.1.0"}, "backup-operator.v0.1.0", "", nil},
		{"unknown version", Intent{StartingCSV: "cache-operator.1.9.0"}, "", ReasonVersionNotFound,
			[]string{`spec.startingCSV "cache-operator.1.9.0": package "cache-operator"`, `no version "1.9.0"`, "1.0.0, 1.1.0, 1.2.0, 1.3.0"}},
		{"unknown version, OLM's CSV name", Intent{StartingCSV: "cache-operator.v0.9.0"}, "", ReasonVersionNotFound,
			[]string{`spec.startingCSV "cache-operator.v0.9.0": package "cache-operator"`, `has no version "0.9.0";`}},
		{"unknown package", Intent{StartingCSV: "cache.1.0.0"}, "", ReasonPackageNotFound,
			[]string{`"cache.1.0.0"`, `package "cache" is not in catalog default`, "similar packages: cache-operator", "backup-operator"}},
		{"misspelt package", Intent{Package: "cache-operatr"}, "", ReasonPackageNotFound,
			[]string{`package "cache-operatr" is not in catalog default`, "similar packages: cache-operator;"}},
		{"package head", Intent{Package: "cache-operator"}, "cache-operator.v1.3.0", "", nil},
		{"package exact", Intent{Package: "cache-operator", Version: "1.1.0"}, "cache-operator.v1.1.0", "", nil},
		{"package range", Intent{Package: "cache-operator", Version: ">=1.0.0 <1.3.0"}, "cache-operator.v1.2.0", "", nil},
		{"empty range", Intent{Package: "cache-operator", Version: ">=2.0.0"}, "", ReasonVersionNotFound,
			[]string{`in range ">=2.0.0"`, "1.0.0, 1.1.0, 1.2.0, 1.3.0"}},
		{"bad range", Intent{Package: "cache-operator", Version: "latest"}, "", ReasonInvalidVersion, []string{`spec.version "latest"`}},
		{"unknown channel", Intent{Package: "cache-operator", Channel: "beta"}, "", ReasonChannelNotFound,
			[]string{`no channel "beta"`, "stable (default)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Bundle(cat, "default", tc.in)
			if tc.reason == "" {
				if err != nil || b.CSVName != tc.wantCSV {
					t.Fatalf("got %v, %v; want %s", b, err, tc.wantCSV)
				}
				return
			}
			var re *Error
			if !errors.As(err, &re) || re.Reason != tc.reason {
				t.Fatalf("got %v, %v; want reason %s", b, err, tc.reason)
			}
			for _, m := range tc.msg {
				if !strings.Contains(re.Message, m) {
					t.Errorf("message lacks %q: %s", m, re.Message)
				}
			}
		})
	}
}

// TestPackageNotFoundInEmptyCatalog: an empty catalog (a cluster whose installations were
// imported, a catalog still loading) is said to have no packages, with no empty list.
func TestPackageNotFoundInEmptyCatalog(t *testing.T) {
	_, err := Bundle(load(t, t.TempDir()), "default", Intent{StartingCSV: "cache-operator.1.2.0"})
	var re *Error
	if !errors.As(err, &re) || re.Reason != ReasonPackageNotFound || !strings.HasSuffix(re.Message, `package "cache-operator" is not in catalog default; it has no packages`) {
		t.Fatalf("got %v; want PackageNotFound ending in \"it has no packages\"", err)
	}
}

// TestBundleOnCommunity: the seed's forms against the real catalog.
func TestBundleOnCommunity(t *testing.T) {
	dir := catalogtest.CommunityPath(t)
	communityOnce.Do(func() { community = load(t, dir) })
	for in, want := range map[string]string{
		"prometheus.0.22.2":   "prometheusoperator.0.22.2",
		"etcd.0.9.4":          "etcdoperator.v0.9.4",
		"etcd.v0.9.4":         "etcdoperator.v0.9.4",
		"etcdoperator.v0.9.4": "etcdoperator.v0.9.4",
		"prometheus.0.14.0":   "prometheusoperator.0.14.0",
	} {
		b, err := Bundle(community, "community", Intent{StartingCSV: in})
		if err != nil || b.CSVName != want {
			t.Errorf("%s: got %v, %v; want %s", in, b, err, want)
		}
	}
}
