package grpcregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/operator-framework/operator-registry/pkg/api"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"github.com/operator-manager/operator-manager/internal/registry"
	"github.com/operator-manager/operator-manager/test/registryserver"
)

// serveSamples serves the project's sample catalog with operator-registry's own server
// and returns the catalog as read from its directory and the server's address.
func serveSamples(t *testing.T) (*catalog.Catalog, string) {
	t.Helper()
	want, err := catalog.Load(filepath.Join("..", "..", "..", "samples", "catalog"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return want, registryserver.ServeCatalog(t, want)
}

// TestFetchReadsWhatTheRegistryServes: the sample catalog served by operator-registry and
// read back through its gRPC API is the same catalog: packages, default channels,
// channel entries and their edges, bundles with their versions, dependencies, owned CRDs,
// install modes and manifests. A second fetch of the unchanged server is the same
// directory.
func TestFetchReadsWhatTheRegistryServes(t *testing.T) {
	want, addr := serveSamples(t)
	root := t.TempDir()
	dir, err := Fetch(context.Background(), addr, root, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rejections) != 0 {
		t.Fatalf("the fetched catalog has rejections: %v", got.Rejections)
	}
	if len(got.Packages()) != len(want.Packages()) || len(got.Bundles()) != len(want.Bundles()) {
		t.Fatalf("fetched %d packages and %d bundles, the catalog has %d and %d",
			len(got.Packages()), len(got.Bundles()), len(want.Packages()), len(want.Bundles()))
	}
	for _, wp := range want.Packages() {
		gp := got.Package(wp.Name)
		if gp == nil {
			t.Errorf("package %s not fetched", wp.Name)
			continue
		}
		if gp.DefaultChannel != wp.DefaultChannel {
			t.Errorf("%s: default channel %q, want %q", wp.Name, gp.DefaultChannel, wp.DefaultChannel)
		}
		if len(gp.Channels) != len(wp.Channels) {
			t.Errorf("%s: %d channels, want %d", wp.Name, len(gp.Channels), len(wp.Channels))
			continue
		}
		for i, wc := range wp.Channels {
			gc := gp.Channels[i]
			if gc.Name != wc.Name || gc.Head != wc.Head || !sameEntries(gc.Entries, wc.Entries) {
				t.Errorf("%s: channel %s head %s entries %v, want %s head %s entries %v", wp.Name, gc.Name, gc.Head, gc.Entries, wc.Name, wc.Head, wc.Entries)
			}
		}
	}
	for _, wb := range want.Bundles() {
		gb := got.BundleByCSV(wb.CSVName)
		if gb == nil {
			t.Errorf("bundle %s not fetched", wb.CSVName)
			continue
		}
		if !gb.Version.EQ(wb.Version) || gb.Package != wb.Package || gb.Replaces != wb.Replaces ||
			fmt.Sprint(gb.Dependencies) != fmt.Sprint(wb.Dependencies) || !reflect.DeepEqual(gb.OwnedCRDs, wb.OwnedCRDs) ||
			!reflect.DeepEqual(gb.InstallModes, wb.InstallModes) || gb.MinKubeVersion != wb.MinKubeVersion {
			t.Errorf("bundle %s fetched as\n%+v\nwant\n%+v", wb.CSVName, gb, wb)
		}
		gc, err := got.Content(gb)
		if err != nil {
			t.Errorf("bundle %s: %v", wb.CSVName, err)
			continue
		}
		wc, _ := want.Content(wb)
		if len(gc.CRDs) != len(wc.CRDs) || len(gc.Objects) != len(wc.Objects) ||
			!reflect.DeepEqual(gc.CSV.Spec.InstallStrategy, wc.CSV.Spec.InstallStrategy) {
			t.Errorf("bundle %s: %d CRDs, %d objects, want %d and %d (or its install strategy differs)",
				wb.CSVName, len(gc.CRDs), len(gc.Objects), len(wc.CRDs), len(wc.Objects))
		}
	}

	// The same catalog again: the same directory, nothing else left under root.
	again, err := Fetch(context.Background(), addr, root, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again != dir {
		t.Errorf("an unchanged catalog fetched into %s, then %s", dir, again)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Errorf("root holds %d entries after two fetches, want 1", len(entries))
	}
}

func sameEntries(a, b []catalog.ChannelEntry) bool {
	key := func(es []catalog.ChannelEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Name+"<"+e.Replaces+"|"+strings.Join(e.Skips, ",")+"|"+e.SkipRange.Raw)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// TestFetchNamesTheServer: no server at the address is an error naming it, within the
// timeout; a previous catalog kept is not pruned.
func TestFetchNamesTheServer(t *testing.T) {
	root := t.TempDir()
	keep := filepath.Join(root, "previous")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Fetch(context.Background(), "127.0.0.1:1", root, keep, Options{Timeout: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "registry server 127.0.0.1:1") {
		t.Fatalf("err = %v, want one naming the registry server", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the kept catalog was removed: %v", err)
	}
	if _, err := Fetch(context.Background(), "", root, "", Options{}); err == nil || !strings.Contains(err.Error(), "spec.address") {
		t.Errorf("an empty address: %v", err)
	}
}

// FuzzBundleBlob: whatever a registry server answers for a bundle (properties and
// dependencies whose values are not JSON, objects of any bytes, with or without an
// image), its olm.bundle blob encodes as JSON, names its bundle and package, and carries
// its object, or, for a made-up CSV of a bundle with an image, the image and an
// olm.csv.metadata instead.
func FuzzBundleBlob(f *testing.F) {
	f.Add("etcd.v0.9.4", "etcd", "0.9.4", "olm.gvk", `{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}`,
		"olm.package", `{"packageName":"dep","version":">=1.0.0"}`, `{"kind":"ClusterServiceVersion"}`)
	f.Add("x", "p", "", "olm.package", "not json", "olm.gvk", "{", "\xff\x00")
	f.Add("x", "p", "1.0.0", "olm.gvk", "{}", "olm.gvk", "{}", `{"kind":"ClusterServiceVersion","spec":{"installModes":[],"install":{"strategy":""}}}`)
	f.Fuzz(func(t *testing.T, csv, pkg, version, propType, propValue, depType, depValue, object string) {
		b := &api.Bundle{CsvName: csv, PackageName: pkg, Version: version, BundlePath: "registry.example/b@sha256:0",
			Properties:   []*api.Property{{Type: propType, Value: propValue}},
			Dependencies: []*api.Dependency{{Type: depType, Value: depValue}},
			Object:       []string{object}}
		out := bundleBlob(imageOnly(b))
		data, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("the blob does not encode: %v", err)
		}
		var back map[string]any
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("the blob is not JSON: %v", err)
		}
		if out.Name != csv || out.Package != pkg {
			t.Errorf("blob names %q of %q, want %q of %q", out.Name, out.Package, csv, pkg)
		}
		objects, meta := 0, 0
		for _, p := range out.Properties {
			switch p.Type {
			case "olm.bundle.object":
				objects++
			case "olm.csv.metadata":
				meta++
			}
		}
		if (objects != 1 || meta > 1) && (objects != 0 || meta == 0 || out.Image == "") {
			t.Errorf("%d olm.bundle.object and %d olm.csv.metadata properties, image %q: want the object, or the image and metadata", objects, meta, out.Image)
		}
	})
}

// TestFetchImageOnlyBundles: a registry serving a catalog as opm renders one (bundles by
// image, olm.csv.metadata, no manifests) makes up a CSV for each bundle from that
// metadata, with no install strategy and no CRDs. Fetch does not take it for the bundle:
// the index keeps the metadata (install modes, minKubeVersion, owned CRDs, dependencies)
// and each bundle's manifests are pulled from its image when read, the same as the
// directory's.
func TestFetchImageOnlyBundles(t *testing.T) {
	want, err := catalog.Load(filepath.Join("..", "..", "..", "samples", "catalog"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	pub, err := imagecatalog.Publish(context.Background(), filepath.Join("..", "..", "..", "samples", "catalog"), strings.TrimPrefix(reg.URL, "http://")+"/om/catalog:v1")
	if err != nil {
		t.Fatal(err)
	}
	images := registryserver.Images(pub)
	addr := registryserver.ServeImageOnly(t, want, images)
	dir, err := Fetch(context.Background(), addr, t.TempDir(), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := catalog.Load(dir, catalog.Options{Images: &registry.Bundles{Cache: ociparts.Layout{Dir: t.TempDir()}}})
	if err != nil || len(got.Rejections) > 0 {
		t.Fatalf("%v %v", err, got.Rejections)
	}
	for _, wb := range want.Bundles() {
		gb := got.BundleByCSV(wb.CSVName)
		if gb == nil {
			t.Errorf("bundle %s not fetched", wb.CSVName)
			continue
		}
		if gb.Image != images[wb.CSVName] || !reflect.DeepEqual(gb.InstallModes, wb.InstallModes) || gb.MinKubeVersion != wb.MinKubeVersion ||
			fmt.Sprint(gb.Dependencies) != fmt.Sprint(wb.Dependencies) || !reflect.DeepEqual(gb.OwnedCRDs, wb.OwnedCRDs) {
			t.Errorf("bundle %s indexed as\n%+v\nwant\n%+v", wb.CSVName, gb, wb)
		}
		gc, err := got.Content(gb)
		if err != nil {
			t.Errorf("bundle %s: %v", wb.CSVName, err)
			continue
		}
		wc, _ := want.Content(wb)
		if len(gc.CRDs) != len(wc.CRDs) || len(gc.Objects) != len(wc.Objects) || len(gc.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs) == 0 ||
			!reflect.DeepEqual(gc.CSV.Spec.InstallStrategy, wc.CSV.Spec.InstallStrategy) {
			t.Errorf("bundle %s read with %d CRDs, %d objects, %d Deployments; want %d, %d and its install strategy",
				wb.CSVName, len(gc.CRDs), len(gc.Objects), len(gc.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs), len(wc.CRDs), len(wc.Objects))
		}
	}
}

// TestRequiredFromOldIndex: an old (SQLite) index's dependencies, as a registry server
// answers them, become the properties a File-Based Catalog states them with, each read
// back by the catalog as the dependency it was.
func TestRequiredFromOldIndex(t *testing.T) {
	for _, tc := range []struct{ typ, value, prop, want string }{
		{"olm.package", `{"packageName":"db","version":">=1.0.0"}`, "olm.package.required", "olm.package db >=1.0.0"},
		{"olm.gvk", `{"group":"g.io","version":"v1","kind":"K"}`, "olm.gvk.required", "olm.gvk g.io/v1/K"},
		{"olm.label", `{"label":"cache"}`, "olm.label.required", `olm.label "cache"`},
		{"olm.constraint", `{"failureMessage":"m","any":{"constraints":[{"gvk":{"group":"g.io","version":"v1","kind":"K"}}]}}`, "olm.constraint", `"m" (olm.constraint any of (gvk K.v1.g.io))`},
	} {
		b := &api.Bundle{CsvName: "app.v1.0.0", PackageName: "app", Version: "1.0.0", Dependencies: []*api.Dependency{{Type: tc.typ, Value: tc.value}},
			Object: []string{`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"app.v1.0.0"},"spec":{"version":"1.0.0"}}`}}
		blob := bundleBlob(b)
		i := slices.IndexFunc(blob.Properties, func(p catalog.FBCProperty) bool { return p.Type == tc.prop })
		if i < 0 {
			t.Errorf("%s: no %s property in %+v", tc.typ, tc.prop, blob.Properties)
			continue
		}
		doc, _ := json.Marshal(catalog.FBCPackage{Schema: catalog.SchemaPackage, Name: "app"})
		bdoc, _ := json.Marshal(blob)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "catalog.json"), append(append(doc, '\n'), bdoc...), 0o644); err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.Load(dir, catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := cat.BundleByCSV("app.v1.0.0")
		if got == nil || len(got.Dependencies) != 1 || got.Dependencies[0].String() != tc.want {
			t.Errorf("%s: read back as %+v (rejections %v), want %s", tc.typ, got, cat.Rejections, tc.want)
		}
	}
}
