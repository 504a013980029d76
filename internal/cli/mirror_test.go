package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"github.com/operator-manager/operator-manager/internal/registry"
)

// mirrorRegistry serves an in-memory registry on loopback and returns its host.
func mirrorRegistry(t *testing.T) (string, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), srv
}

// mirrorBundleImage is a registry+v1 bundle image of one CSV and a ConfigMap.
func mirrorBundleImage(t *testing.T, pkg, version string) v1.Image {
	t.Helper()
	files := map[string]string{
		"manifests/csv.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: " + pkg + ".v" + version +
			"\nspec:\n  version: " + version + "\n  installModes:\n  - {type: AllNamespaces, supported: true}\n  install:\n    strategy: deployment\n    spec:\n      deployments: []\n",
		"manifests/config.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + pkg + "-config\ndata:\n  version: " + version + "\n",
		"metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.package.v1: " + pkg + "\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n",
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"manifests/config.yaml", "manifests/csv.yaml", "metadata/annotations.yaml"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(files[n]))
	}
	_ = tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Labels: map[string]string{"operators.operatorframework.io.bundle.manifests.v1": "manifests/"}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// mirrorSource is a catalog image with its bundle images, pushed to a registry.
type mirrorSource struct {
	host    string
	srv     *httptest.Server
	catalog string
	// images are the bundle images by package and version.
	images map[string]string
}

// pushMirrorSource pushes bundle images demo 1.0.0 and 1.1.0 and other 0.1.0, and a
// catalog image naming them: demo in YAML (with a custom schema document and
// relatedImages), other in JSON.
func pushMirrorSource(t *testing.T) *mirrorSource {
	t.Helper()
	host, srv := mirrorRegistry(t)
	src := &mirrorSource{host: host, srv: srv, catalog: host + "/org/catalog:v4", images: map[string]string{}}
	for _, b := range [][2]string{{"demo", "1.0.0"}, {"demo", "1.1.0"}, {"other", "0.1.0"}} {
		d, err := registry.Push(context.Background(), mirrorBundleImage(t, b[0], b[1]), host+"/org/"+b[0]+"-bundle:v"+b[1], registry.Options{})
		if err != nil {
			t.Fatal(err)
		}
		src.images[b[0]+"@"+b[1]] = host + "/org/" + b[0] + "-bundle@" + d
	}
	demo := `---
schema: olm.package
name: demo
defaultChannel: stable
description: a demo package
---
schema: olm.channel
package: demo
name: stable
entries:
- name: demo.v1.0.0
- name: demo.v1.1.0
  replaces: demo.v1.0.0
---
schema: olm.channel
package: demo
name: fast
entries:
- name: demo.v1.1.0
---
schema: olm.bundle
package: demo
name: demo.v1.0.0
image: ` + src.images["demo@1.0.0"] + `
properties:
- {type: olm.package, value: {packageName: demo, version: 1.0.0}}
relatedImages:
- {name: "", image: "` + src.images["demo@1.0.0"] + `"}
- {name: operator, image: "quay.io/example/demo-operator:1.0.0"}
---
schema: olm.bundle
package: demo
name: demo.v1.1.0
image: ` + src.images["demo@1.1.0"] + `
properties:
- {type: olm.package, value: {packageName: demo, version: 1.1.0}}
---
schema: example.com/notes
package: demo
note: kept with its package
`
	other := `{"schema": "olm.package", "name": "other", "defaultChannel": "alpha"}
{"schema": "olm.channel", "package": "other", "name": "alpha", "entries": [{"name": "other.v0.1.0"}]}
{"schema": "olm.bundle", "package": "other", "name": "other.v0.1.0", "image": "` + src.images["other@0.1.0"] + `",
 "properties": [{"type": "olm.package", "value": {"packageName": "other", "version": "0.1.0"}}]}
`
	img, err := registry.CatalogImageFrom(map[string][]byte{"demo/catalog.yaml": []byte(demo), "other/catalog.json": []byte(other), "README.md": []byte("not a catalog file\n")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Push(context.Background(), img, src.catalog, registry.Options{}); err != nil {
		t.Fatal(err)
	}
	return src
}

// loadMirrored loads a mirrored directory and returns the content of a bundle.
func loadMirrored(t *testing.T, dir string, opts catalog.Options) (*catalog.Catalog, func(pkg, version string) *catalog.BundleContent) {
	t.Helper()
	cat, err := catalog.Load(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Rejections) > 0 {
		t.Errorf("the mirrored catalog has rejections: %+v", cat.Rejections)
	}
	return cat, func(pkg, version string) *catalog.BundleContent {
		t.Helper()
		for _, b := range cat.Bundles() {
			if b.Package == pkg && b.Version.String() == version {
				bc, err := cat.Content(b)
				if err != nil {
					t.Fatalf("content of %s %s: %v", pkg, version, err)
				}
				return bc
			}
		}
		t.Fatalf("the mirrored catalog has no %s %s", pkg, version)
		return nil
	}
}

// TestCatalogMirrorToDir: a catalog image and its bundle images become a directory the
// loader reads, bundle manifests included, from the directory's image layout.
func TestCatalogMirrorToDir(t *testing.T) {
	src := pushMirrorSource(t)
	dir := filepath.Join(t.TempDir(), "mirror")
	out, err := runCLI(t, "catalog", "mirror", src.catalog, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PACKAGE", "demo.v1.1.0", src.images["other@0.1.0"], "2 packages, 3 bundle images"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	// The catalog's files are at their paths in the image, as they were.
	if data, err := os.ReadFile(filepath.Join(dir, "demo", "catalog.yaml")); err != nil || !bytes.Contains(data, []byte("description: a demo package")) {
		t.Errorf("demo/catalog.yaml = %s, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Errorf("a file of the catalog besides the FBC is not copied: %v", err)
	}
	images, err := ociparts.Layout{Dir: filepath.Join(dir, "images")}.Images()
	if err != nil || len(images) != 3 {
		t.Fatalf("the image layout lists %v, %v; want the 3 bundle images", images, err)
	}
	for _, ref := range src.images {
		d, _ := ociparts.DigestOf(ref)
		if images[d] != ref {
			t.Errorf("the layout lists %s as %q; want %s", d, images[d], ref)
		}
	}

	// With the registry gone, the loader reads the bundles from DIR/images.
	src.srv.Close()
	cat, content := loadMirrored(t, dir, catalog.Options{})
	if len(cat.Packages()) != 2 || len(cat.Bundles()) != 3 {
		t.Errorf("the mirrored catalog has %d packages, %d bundles; want 2, 3", len(cat.Packages()), len(cat.Bundles()))
	}
	bc := content("demo", "1.1.0")
	if bc.CSV == nil || bc.CSV.Name != "demo.v1.1.0" || len(bc.Objects) != 1 || bc.Objects[0].GetName() != "demo-config" {
		t.Errorf("the content of demo 1.1.0 = CSV %v, objects %v", bc.CSV, bc.Objects)
	}

	// DIR must be new or empty, and REF an image.
	if _, err := runCLI(t, "catalog", "mirror", src.catalog, dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("mirror into a full directory = %v", err)
	}
	if _, err := runCLI(t, "catalog", "mirror", dir, filepath.Join(t.TempDir(), "x")); exitCode(err) != ExitUsage {
		t.Errorf("mirror DIR DIR = %v; want a usage error", err)
	}
}

// TestCatalogMirrorPackages: --package keeps only those packages, and with @VERSION only
// those versions, their channels cut to the kept entries.
func TestCatalogMirrorPackages(t *testing.T) {
	src := pushMirrorSource(t)
	dir := filepath.Join(t.TempDir(), "mirror")
	out, err := runCLI(t, "catalog", "mirror", src.catalog, dir, "--package", "demo@1.0.0", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report mirrorReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(report.Packages) != 1 || len(report.Bundles) != 1 || report.Bundles[0].Image != src.images["demo@1.0.0"] || report.Dir != dir {
		t.Errorf("report = %+v", report)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the package left out is written: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "demo", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"note": "kept with its package"`, `"description": "a demo package"`, "quay.io/example/demo-operator:1.0.0"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("demo/catalog.json lost %s:\n%s", want, data)
		}
	}
	cat, content := loadMirrored(t, dir, catalog.Options{})
	p := cat.Package("demo")
	if p == nil || len(cat.Bundles()) != 1 || len(p.Channels) != 1 || p.Channels[0].Name != "stable" || p.DefaultChannel != "stable" {
		t.Fatalf("the filtered catalog = %+v", p)
	}
	if bc := content("demo", "1.0.0"); bc.CSV.Name != "demo.v1.0.0" {
		t.Errorf("content of demo 1.0.0: CSV %s", bc.CSV.Name)
	}
	if images, _ := (ociparts.Layout{Dir: filepath.Join(dir, "images")}).Images(); len(images) != 1 {
		t.Errorf("the layout holds %d images; want the one kept", len(images))
	}

	// The whole package with NAME; an unknown package or version is refused by name.
	dir2 := filepath.Join(t.TempDir(), "mirror")
	if _, err := runCLI(t, "catalog", "mirror", src.catalog, dir2, "--package", "other"); err != nil {
		t.Fatal(err)
	}
	if cat, _ := loadMirrored(t, dir2, catalog.Options{}); len(cat.Packages()) != 1 || cat.Package("other") == nil {
		t.Errorf("--package other kept %d packages", len(cat.Packages()))
	}
	_, err = runCLI(t, "catalog", "mirror", src.catalog, filepath.Join(t.TempDir(), "m"), "--package", "nosuch")
	if err == nil || !strings.Contains(err.Error(), `package "nosuch" is not in catalog`) || !strings.Contains(err.Error(), "it has: demo, other") {
		t.Errorf("unknown package = %v", err)
	}
	_, err = runCLI(t, "catalog", "mirror", src.catalog, filepath.Join(t.TempDir(), "m"), "--package", "demo@9.9.9")
	if err == nil || !strings.Contains(err.Error(), "has no version 9.9.9") || !strings.Contains(err.Error(), "1.0.0, 1.1.0") {
		t.Errorf("unknown version = %v", err)
	}
	if _, err := runCLI(t, "catalog", "mirror", src.catalog, "x", "--package", "@1.0.0"); exitCode(err) != ExitUsage {
		t.Errorf("--package @1.0.0 = %v; want a usage error", err)
	}
}

// TestCatalogMirrorToRegistry: --to copies the bundle images under the same paths and
// digests, and pushes a catalog image naming them, the same from the image as from a
// mirrored directory.
func TestCatalogMirrorToRegistry(t *testing.T) {
	src := pushMirrorSource(t)
	target, _ := mirrorRegistry(t)
	out, err := runCLI(t, "catalog", "mirror", src.catalog, "--to", target+"/mirror", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report mirrorReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	wantCatalog := target + "/mirror/org/catalog:v4"
	if report.Catalog != wantCatalog || report.CatalogDigest == "" || len(report.Bundles) != 3 {
		t.Fatalf("report = %+v; want the catalog %s", report, wantCatalog)
	}
	moved := map[string]string{}
	for _, b := range report.Bundles {
		moved[b.Image] = b.Target
		d, _ := ociparts.DigestOf(b.Image)
		want := target + "/mirror/org/" + b.Package + "-bundle@" + d
		if b.Target != want {
			t.Errorf("%s went to %s; want %s", b.Image, b.Target, want)
		}
	}

	// The pushed catalog names the copies only, and its bundles read from there.
	ci, err := registry.PullCatalog(context.Background(), wantCatalog, registry.Options{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ci.Digest != report.CatalogDigest {
		t.Errorf("the tag points at %s; the report says %s", ci.Digest, report.CatalogDigest)
	}
	files, err := readCatalogFiles(ci.Dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if strings.Contains(string(data), src.host) {
			t.Errorf("%s of the pushed catalog still names the source registry:\n%s", name, data)
		}
	}
	if !strings.Contains(string(files["demo/catalog.yaml"]), "quay.io/example/demo-operator:1.0.0") || !strings.Contains(string(files["demo/catalog.yaml"]), moved[src.images["demo@1.0.0"]]) {
		t.Errorf("demo/catalog.yaml of the pushed catalog:\n%s", files["demo/catalog.yaml"])
	}
	src.srv.Close() // from here on, only the target registry serves
	_, content := loadMirrored(t, ci.Dir, catalog.Options{Images: registry.Bundles{}})
	if bc := content("other", "0.1.0"); bc.CSV.Name != "other.v0.1.0" {
		t.Errorf("content of other 0.1.0 from the target registry: CSV %s", bc.CSV.Name)
	}

	// From a directory mirrored before: the same catalog image.
	src2 := pushMirrorSource(t)
	dir := filepath.Join(t.TempDir(), "mirror")
	if _, err := runCLI(t, "catalog", "mirror", src2.catalog, dir); err != nil {
		t.Fatal(err)
	}
	src2.srv.Close()
	target2, _ := mirrorRegistry(t)
	out, err = runCLI(t, "catalog", "mirror", dir, "--to", target2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, target2+"/org/catalog:v4@sha256:") {
		t.Errorf("mirror DIR --to does not print the catalog pushed:\n%s", out)
	}
	ci2, err := registry.PullCatalog(context.Background(), target2+"/org/catalog:v4", registry.Options{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, content = loadMirrored(t, ci2.Dir, catalog.Options{Images: registry.Bundles{}})
	if bc := content("demo", "1.1.0"); bc.CSV.Name != "demo.v1.1.0" {
		t.Errorf("content of demo 1.1.0 pushed from a directory: CSV %s", bc.CSV.Name)
	}

	if _, err := runCLI(t, "catalog", "mirror", src.catalog, "dir", "--to", target); exitCode(err) != ExitUsage {
		t.Errorf("--to with DIR = %v; want a usage error", err)
	}
}

// TestFilterPackages: the FBC filter alone, on documents spread over files.
func TestFilterPackages(t *testing.T) {
	files := map[string][]byte{
		"catalog.yaml": []byte("schema: olm.package\nname: a\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: a\nname: stable\nentries:\n- name: a.v1\n---\n" +
			"schema: olm.channel\npackage: a\nname: beta\nentries:\n- name: a.v2\n  replaces: a.v1\n---\n" +
			"schema: olm.bundle\npackage: a\nname: a.v1\nimage: r/a@sha256:1\nproperties:\n- {type: olm.package, value: {packageName: a, version: 1.0.0}}\n---\n" +
			"schema: olm.bundle\npackage: a\nname: a.v2\nimage: r/a@sha256:2\nproperties:\n- {type: olm.package, value: {packageName: a, version: 2.0.0}}\n" +
			"- {type: olm.bundle.object, value: {ref: objects/a2.yaml}}\n---\nschema: olm.package\nname: b\n"),
		"objects/a2.yaml": []byte("kind: ConfigMap\n"),
		"notes.txt":       []byte("x"),
	}
	tree, warnings := parseFBCTree(files)
	if len(warnings) != 0 || len(tree.fbc) != 1 || len(tree.other) != 2 {
		t.Fatalf("parse: %v, %d FBC files, %d others", warnings, len(tree.fbc), len(tree.other))
	}
	sel, err := parsePackageSelection([]string{"a@v2.0"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tree.filter(sel, "test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := out.files()
	if err != nil {
		t.Fatal(err)
	}
	a := string(got["a/catalog.json"])
	if len(got) != 2 || string(got["objects/a2.yaml"]) != "kind: ConfigMap\n" {
		t.Errorf("files = %v", got)
	}
	for _, want := range []string{`"defaultChannel": "beta"`, `"name": "a.v2"`, `"ref": "../objects/a2.yaml"`} {
		if !strings.Contains(a, want) {
			t.Errorf("a/catalog.json lacks %s:\n%s", want, a)
		}
	}
	for _, unwanted := range []string{`"name": "a.v1"`, `"name": "stable"`, `"name": "b"`} {
		if strings.Contains(a, unwanted) {
			t.Errorf("a/catalog.json keeps %s:\n%s", unwanted, a)
		}
	}
	if bs := out.bundles(); len(bs) != 1 || bs[0].Version != "2.0.0" || bs[0].Image != "r/a@sha256:2" {
		t.Errorf("bundles = %+v", bs)
	}
	for _, tc := range []struct {
		flags []string
		want  packageSelection
	}{
		{[]string{"a"}, packageSelection{"a": nil}},
		{[]string{"a@1.0.0", "a"}, packageSelection{"a": nil}},
		{[]string{"a@1.0.0", "a@v1.1", "b"}, packageSelection{"a": {"1.0.0": true, "1.1.0": true}, "b": nil}},
	} {
		got, err := parsePackageSelection(tc.flags)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("parsePackageSelection(%v) = %v, %v; want %v", tc.flags, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if len(got[k]) != len(v) || (v == nil) != (got[k] == nil) {
				t.Errorf("parsePackageSelection(%v)[%s] = %v; want %v", tc.flags, k, got[k], v)
			}
		}
	}
}
