package configmapcatalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

const samples = "../../../samples/catalog"

func read(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(samples, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func sampleData(t testing.TB) map[string]string {
	t.Helper()
	data, err := Data(
		[][]byte{read(t, "cache-operator/1.2.0/caches.crd.yaml")},
		[][]byte{
			read(t, "cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml"),
			read(t, "cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml"),
			read(t, "reloader-operator/0.1.0/reloader-operator.v0.1.0.clusterserviceversion.yaml"),
			read(t, "reloader-operator/0.2.0/reloader-operator.v0.2.0.clusterserviceversion.yaml"),
		},
		[][]byte{
			[]byte("packageName: cache-operator\nchannels: [{name: stable, currentCSV: cache-operator.v1.2.0}]\n"),
			read(t, "reloader-operator/reloader-operator.package.yaml"),
		})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func load(t *testing.T, data map[string]string, root string) *catalog.Catalog {
	t.Helper()
	cat, changed, err := Load(data, root, "", nil)
	if err != nil || !changed {
		t.Fatalf("loaded: changed %v, %v", changed, err)
	}
	return cat
}

// The ConfigMap catalog reads back as the packages, channels and bundles it lists, each
// bundle its CSV and the CRDs it owns.
func TestWriteReadsBack(t *testing.T) {
	root := t.TempDir()
	cat := load(t, sampleData(t), root)
	if len(cat.Rejections) != 0 || len(cat.Warnings) != 0 {
		t.Fatalf("rejections %v, warnings %v", cat.Rejections, cat.Warnings)
	}
	cache := cat.Package("cache-operator")
	if cache == nil || cache.DefaultChannel != "stable" || len(cache.Bundles) != 2 {
		t.Fatalf("cache-operator: %+v", cache)
	}
	head, err := cat.Head("cache-operator", "stable")
	if err != nil || head.CSVName != "cache-operator.v1.2.0" || head.Replaces != "cache-operator.v1.1.0" {
		t.Fatalf("head %v replaces %q (%v)", head, head.Replaces, err)
	}
	for _, b := range cache.Bundles {
		c, err := cat.Content(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.CRDs) != 1 || c.CRDs[0].GetName() != "caches.cache.samples.operator-manager.domain" || c.CSV.Name != b.CSVName {
			t.Errorf("%s: CSV %s, CRDs %d", b.CSVName, c.CSV.Name, len(c.CRDs))
		}
	}
	reloader := cat.Package("reloader-operator")
	if reloader == nil || len(reloader.Bundles) != 2 || reloader.Channel("stable").Head != "reloader-operator.v0.2.0" {
		t.Fatalf("reloader-operator: %+v", reloader)
	}
	if c, err := cat.Content(reloader.Bundles[0]); err != nil || len(c.CRDs) != 0 {
		t.Errorf("reloader-operator owns no CRD: %v, %v", c, err)
	}
	again, err := Write(sampleData(t), root, "")
	if err != nil || again.Dir != cat.Root {
		t.Errorf("the same data is written to %s, not %s (%v)", again.Dir, cat.Root, err)
	}
	if same, changed, err := Load(sampleData(t), root, cat.Root, cat); err != nil || changed || same != cat {
		t.Errorf("the same data loaded again over the catalog read from it: changed %v, same %v (%v)", changed, same == cat, err)
	}
}

// An old v1beta1 CRD (spec.version, no versions list) is matched to the CSV that owns it.
func TestV1beta1CRD(t *testing.T) {
	data, err := Data([][]byte{read(t, "cache-operator/1.0.0/caches.crd.yaml")},
		[][]byte{read(t, "cache-operator/1.0.0/cache-operator.v1.0.0.clusterserviceversion.yaml")},
		[][]byte{[]byte("packageName: cache-operator\nchannels: [{name: stable, currentCSV: cache-operator.v1.0.0}]\n")})
	if err != nil {
		t.Fatal(err)
	}
	cat := load(t, data, t.TempDir())
	b := cat.BundleByCSV("cache-operator.v1.0.0")
	if b == nil {
		t.Fatalf("not loaded: %v", cat.Rejections)
	}
	if c, err := cat.Content(b); err != nil || len(c.CRDs) != 1 || c.CRDs[0].GetAPIVersion() != "apiextensions.k8s.io/v1beta1" {
		t.Fatalf("content %v, %v", c, err)
	}
}

// A ConfigMap that is not a catalog fails whole, naming the key.
func TestWriteRefusesConfigMaps(t *testing.T) {
	good := sampleData(t)
	for _, tc := range []struct {
		name, key, value, want string
		remove                 bool
	}{
		{"no packages key", KeyPackages, "", "key packages: missing", true},
		{"no CRDs key", KeyCRDs, "", "key customResourceDefinitions: missing", true},
		{"a map, not a list", KeyCSVs, "a: b\n", "key clusterServiceVersions: not a YAML list", false},
		{"not YAML", KeyPackages, "- [unclosed\n", "key packages:", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string]string{}
			for k, v := range good {
				data[k] = v
			}
			if tc.remove {
				delete(data, tc.key)
			} else {
				data[tc.key] = tc.value
			}
			_, err := Write(data, t.TempDir(), "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A bad entry is left out alone, named by its key and index; the rest loads.
func TestBadEntries(t *testing.T) {
	csv11 := read(t, "cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml")
	csv12 := read(t, "cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml")
	crd := read(t, "cache-operator/1.2.0/caches.crd.yaml")
	pkg := []byte("packageName: cache-operator\nchannels: [{name: stable, currentCSV: cache-operator.v1.2.0}]\n")
	orphan := []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: stray.v1.0.0}\nspec: {version: 1.0.0}\n")
	owning := []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: owner.v1.0.0}\n" +
		"spec: {version: 1.0.0, customresourcedefinitions: {owned: [{name: things.example.com, version: v1, kind: Thing}]}}\n")
	notSemver := []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: loose.v1}\nspec: {version: v1.0}\n")
	for _, tc := range []struct {
		name             string
		crds, csvs, pkgs [][]byte
		wantAt, wantWhy  string
		wantLoaded       []string
	}{
		{"a CSV in no package", [][]byte{crd}, [][]byte{csv11, csv12, orphan}, [][]byte{pkg},
			"clusterServiceVersions[2] (stray.v1.0.0)", "in no package", []string{"cache-operator.v1.1.0", "cache-operator.v1.2.0"}},
		{"an owned CRD not listed", [][]byte{crd}, [][]byte{csv12, owning}, [][]byte{pkg, []byte("packageName: owner\nchannels: [{name: a, currentCSV: owner.v1.0.0}]\n")},
			"clusterServiceVersions[1] (owner.v1.0.0)", "owned[0] (things.example.com v1 Thing) is not in customResourceDefinitions", []string{"cache-operator.v1.2.0"}},
		{"a package name that is no name", [][]byte{crd}, [][]byte{csv12}, [][]byte{pkg, []byte("packageName: ../up\nchannels: [{name: a, currentCSV: x}]\n")},
			"packages[1] (../up)", "packageName \"../up\"", []string{"cache-operator.v1.2.0"}},
		{"the same CSV twice", [][]byte{crd}, [][]byte{csv12, csv12}, [][]byte{pkg},
			"clusterServiceVersions[1] (cache-operator.v1.2.0)", "the same CSV name as clusterServiceVersions[0]", []string{"cache-operator.v1.2.0"}},
		{"the same CRD twice", [][]byte{crd, crd}, [][]byte{csv12}, [][]byte{pkg},
			"customResourceDefinitions[1] (caches.cache.samples.operator-manager.domain)", "the same CRD version as customResourceDefinitions[0]", []string{"cache-operator.v1.2.0"}},
		{"not a CSV", [][]byte{crd}, [][]byte{csv12, crd}, [][]byte{pkg},
			"clusterServiceVersions[1] (caches.cache.samples.operator-manager.domain)", `kind is "CustomResourceDefinition"`, []string{"cache-operator.v1.2.0"}},
		{"the loader's own rejection, renamed to the entry", [][]byte{crd}, [][]byte{csv12, notSemver}, [][]byte{pkg, []byte("packageName: loose\nchannels: [{name: a, currentCSV: loose.v1}]\n")},
			"clusterServiceVersions[1] (loose.v1)", "spec.version", []string{"cache-operator.v1.2.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Data(tc.crds, tc.csvs, tc.pkgs)
			if err != nil {
				t.Fatal(err)
			}
			cat := load(t, data, t.TempDir())
			found := false
			for _, r := range cat.Rejections {
				if r.Path == tc.wantAt && strings.Contains(r.Reason, tc.wantWhy) {
					found = true
				}
			}
			if !found {
				t.Errorf("no rejection at %q saying %q: %v", tc.wantAt, tc.wantWhy, cat.Rejections)
			}
			var loaded []string
			for _, b := range cat.Bundles() {
				loaded = append(loaded, b.CSVName)
			}
			if strings.Join(loaded, ",") != strings.Join(tc.wantLoaded, ",") {
				t.Errorf("loaded %v, want %v", loaded, tc.wantLoaded)
			}
		})
	}
}

// FuzzWrite: any ConfigMap data is refused with an error or written as a catalog that
// loads, whose rejections all name a ConfigMap entry or a package.
func FuzzWrite(f *testing.F) {
	good := sampleData(f)
	f.Add(good[KeyCRDs], good[KeyCSVs], good[KeyPackages])
	f.Add("[]", "- kind: ClusterServiceVersion\n  metadata: {name: a}\n  spec: {replaces: a, skips: [a]}\n", "- packageName: p\n  channels: [{name: c, currentCSV: a}]\n")
	f.Add("- {}", "- null", "- packageName: x\n  channels: 3\n")
	f.Fuzz(func(t *testing.T, crds, csvs, pkgs string) {
		res, err := Write(map[string]string{KeyCRDs: crds, KeyCSVs: csvs, KeyPackages: pkgs}, t.TempDir(), "")
		if err != nil {
			return
		}
		cat, err := catalog.Load(res.Dir, catalog.Options{})
		if err != nil {
			t.Fatalf("written catalog does not load: %v", err)
		}
		annotate(cat, res)
		for _, r := range cat.Rejections {
			if !strings.HasPrefix(r.Path, KeyCRDs+"[") && !strings.HasPrefix(r.Path, KeyCSVs+"[") && !strings.HasPrefix(r.Path, KeyPackages+"[") {
				t.Errorf("rejection names no entry: %v", r)
			}
		}
	})
}
