package imagecatalog

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/ociparts"
)

const sampleDir = "../../samples/catalog"

// startRegistry serves an in-memory OCI registry on loopback and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func loadSample(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(sampleDir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Rejections) > 0 {
		t.Fatalf("the sample catalog has rejections: %v", cat.Rejections)
	}
	return cat
}

// pullParts pulls an image by digest reference and checks its chain of digests.
func pullParts(t *testing.T, ref string) *ociparts.Parts {
	t.Helper()
	digest, err := ociparts.DigestOf(ref)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	parts, err := ociparts.FromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := parts.Verify(digest); err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	return parts
}

// unpackCatalog pulls the catalog image and loads its /configs as a catalog.
func unpackCatalog(t *testing.T, ref string) *catalog.Catalog {
	t.Helper()
	parts := pullParts(t, ref)
	labels, err := parts.Labels()
	if err != nil {
		t.Fatal(err)
	}
	if labels[LabelConfigs] != "/configs" {
		t.Errorf("catalog image labels = %v, want %s=/configs", labels, LabelConfigs)
	}
	files, err := parts.Files("configs")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for n, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Rejections) > 0 || len(cat.Warnings) > 0 {
		t.Errorf("the published catalog loads with rejections %v, warnings %v", cat.Rejections, cat.Warnings)
	}
	return cat
}

type entryView struct {
	Name, Replaces, Skips, SkipRange string
}

// compareCatalogs checks that got (loaded from the published FBC) describes what want
// (the directory) does.
func compareCatalogs(t *testing.T, want, got *catalog.Catalog) {
	t.Helper()
	names := func(c *catalog.Catalog) []string {
		var n []string
		for _, p := range c.Packages() {
			n = append(n, p.Name)
		}
		return n
	}
	if !slices.Equal(names(want), names(got)) {
		t.Fatalf("packages = %v, want %v", names(got), names(want))
	}
	for _, wp := range want.Packages() {
		gp := got.Package(wp.Name)
		if gp.DefaultChannel != wp.DefaultChannel {
			t.Errorf("%s: default channel %q, want %q", wp.Name, gp.DefaultChannel, wp.DefaultChannel)
		}
		if gp.Layout != catalog.LayoutFBC {
			t.Errorf("%s: layout %s, want fbc", wp.Name, gp.Layout)
		}
		if len(gp.Channels) != len(wp.Channels) {
			t.Errorf("%s: %d channels, want %d", wp.Name, len(gp.Channels), len(wp.Channels))
			continue
		}
		for i, wc := range wp.Channels {
			gc := gp.Channels[i]
			if gc.Name != wc.Name || gc.Head != wc.Head {
				t.Errorf("%s: channel %s head %s, want %s head %s", wp.Name, gc.Name, gc.Head, wc.Name, wc.Head)
			}
			view := func(c *catalog.Channel) []entryView {
				var v []entryView
				for _, e := range c.Entries {
					v = append(v, entryView{e.Name, e.Replaces, strings.Join(e.Skips, ","), e.SkipRange.Raw})
				}
				return v
			}
			if !reflect.DeepEqual(view(gc), view(wc)) {
				t.Errorf("%s/%s entries:\n got %+v\nwant %+v", wp.Name, wc.Name, view(gc), view(wc))
			}
			if !reflect.DeepEqual(gc.Edges(), wc.Edges()) {
				t.Errorf("%s/%s edges:\n got %+v\nwant %+v", wp.Name, wc.Name, gc.Edges(), wc.Edges())
			}
		}
		if len(gp.Bundles) != len(wp.Bundles) {
			t.Errorf("%s: %d bundles, want %d", wp.Name, len(gp.Bundles), len(wp.Bundles))
			continue
		}
		for i, wb := range wp.Bundles {
			gb := gp.Bundles[i]
			ref := wb.Ref()
			if gb.CSVName != wb.CSVName || !gb.Version.Equals(wb.Version) {
				t.Errorf("%s: bundle %s %s, want %s %s", wp.Name, gb.CSVName, gb.Version, wb.CSVName, wb.Version)
				continue
			}
			for _, c := range []struct {
				what      string
				got, want any
			}{
				{"channels", gb.Channels, wb.Channels},
				{"owned CRDs", gb.OwnedCRDs, wb.OwnedCRDs},
				{"required CRDs", gb.RequiredCRDs, wb.RequiredCRDs},
				{"dependencies", fmt.Sprint(gb.Dependencies), fmt.Sprint(wb.Dependencies)},
				{"install modes", gb.InstallModes, wb.InstallModes},
				{"minKubeVersion", gb.MinKubeVersion, wb.MinKubeVersion},
				{"skipRange", gb.SkipRange.Raw, wb.SkipRange.Raw},
				{"related images", jsonField(t, gb, "relatedImages"), jsonField(t, wb, "relatedImages")},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s %s:\n got %v\nwant %v", ref, c.what, c.got, c.want)
				}
			}
		}
	}
}

// TestPublishSampleCatalog publishes the sample catalog (flat, package-manifest and bundle
// layouts) to a registry and reads it back as a cluster would: the catalog image's FBC
// loads to the same graph and metadata, every bundle is an image reference by digest, and
// each bundle image holds the bundle's manifests.
func TestPublishSampleCatalog(t *testing.T) {
	host := startRegistry(t)
	dirCat := loadSample(t)
	ref := host + "/om/catalog:v1"
	var events []Event
	p := &Publisher{Progress: func(e Event) { events = append(events, e) }}
	pub, err := p.Publish(context.Background(), sampleDir, ref)
	if err != nil {
		t.Fatal(err)
	}
	if pub.Tag != ref || pub.Catalog != host+"/om/catalog@"+pub.Digest {
		t.Errorf("published catalog %s (tag %s), want %s@%s (tag %s)", pub.Catalog, pub.Tag, host+"/om/catalog", pub.Digest, ref)
	}
	if len(pub.Bundles) != len(dirCat.Bundles()) || len(events) != len(dirCat.Bundles())+1 || events[len(events)-1].Kind != "catalog" {
		t.Fatalf("published %d bundles with %d events, want %d and one more for the catalog", len(pub.Bundles), len(events), len(dirCat.Bundles()))
	}
	for i, b := range dirCat.Bundles() {
		pb := pub.Bundles[i]
		if pb.Package != b.Package || pb.CSV != b.CSVName || pb.Version != b.Version.String() || !pb.Pushed {
			t.Errorf("bundle %d = %+v, want %s", i, pb, b.Ref())
		}
		if !strings.HasPrefix(pb.Image, host+"/om/catalog/"+b.Package+"@sha256:") || pb.Tag != host+"/om/catalog/"+b.Package+":"+b.Version.String() {
			t.Errorf("bundle %s: image %s, tag %s", b.Ref(), pb.Image, pb.Tag)
		}
	}

	fbcCat := unpackCatalog(t, pub.Catalog)
	compareCatalogs(t, dirCat, fbcCat)

	for i, b := range fbcCat.Bundles() {
		db := dirCat.Bundles()[i]
		// Image-only, by digest, the image Publish reported.
		if !slices.Equal(b.Files, []string{"olm.bundle.json"}) {
			t.Errorf("%s: files %v: the published bundle carries more than an image reference", b.Ref(), b.Files)
		}
		if _, err := fbcCat.Content(b); !errors.Is(err, catalog.ErrNoContent) {
			t.Errorf("%s: Content = %v, want ErrNoContent", b.Ref(), err)
		}
		if b.Image != pub.Bundles[i].Image {
			t.Errorf("%s: image %s, Publish said %s", b.Ref(), b.Image, pub.Bundles[i].Image)
		}
		digest, err := ociparts.DigestOf(b.Image)
		if err != nil {
			t.Errorf("%s: %v", b.Ref(), err)
			continue
		}

		// The bundle image holds the directory bundle's manifests.
		parts := pullParts(t, b.Image)
		if err := parts.Verify(digest); err != nil {
			t.Fatal(err)
		}
		got, err := parts.Files("manifests")
		if err != nil {
			t.Fatal(err)
		}
		files, err := dirCat.Files(db)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{}
		for _, f := range files {
			if !strings.HasPrefix(f.Name, "metadata/") {
				want[path.Base(f.Name)] = f.Data
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: manifests in the image %v, want %v", b.Ref(), slices.Sorted(mapKeys(got)), slices.Sorted(mapKeys(want)))
		}
		meta, err := parts.Files("metadata")
		if err != nil {
			t.Fatal(err)
		}
		ann, err := parseAnnotations(meta["annotations.yaml"])
		if err != nil {
			t.Fatalf("%s: metadata/annotations.yaml: %v", b.Ref(), err)
		}
		labels, _ := parts.Labels()
		if ann[AnnotationPackage] != b.Package || ann[AnnotationMediaType] != MediaTypeRegistryV1 || !reflect.DeepEqual(labels, ann) {
			t.Errorf("%s: annotations %v, labels %v", b.Ref(), ann, labels)
		}
		if ch := strings.Split(ann[AnnotationChannels], ","); !slices.Equal(ch, db.Channels) {
			t.Errorf("%s: channels annotation %v, want %v", b.Ref(), ch, db.Channels)
		}
		for _, f := range files { // the bundle layout's metadata goes as it is
			if n, ok := strings.CutPrefix(f.Name, "metadata/"); ok && !bytes.Equal(meta[n], f.Data) {
				t.Errorf("%s: %s changed in the image", b.Ref(), f.Name)
			}
		}
	}

	// The version tag names the same image.
	tagRef, err := name.ParseReference(pub.Bundles[0].Tag)
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := remote.Image(tagRef)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := tagged.Digest(); !strings.HasSuffix(pub.Bundles[0].Image, "@"+d.String()) {
		t.Errorf("tag %s names %s, not %s", pub.Bundles[0].Tag, d, pub.Bundles[0].Image)
	}

	// Publishing again gives the same digests.
	again, err := Publish(context.Background(), sampleDir, ref)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != pub.Digest || !reflect.DeepEqual(again.Bundles, pub.Bundles) {
		t.Errorf("second publish differs: %s vs %s\n%+v\n%+v", again.Digest, pub.Digest, again.Bundles, pub.Bundles)
	}
}

// jsonField is a field of v as JSON, for fields compared as the index serves them.
func jsonField(t *testing.T, v any, field string) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[field])
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestBundleImageLayout: a flat bundle's files go under /manifests/, an annotations file
// is written when the bundle has none, the layer is sorted with fixed times, and the same
// files give the same digest.
func TestBundleImageLayout(t *testing.T) {
	cat := loadSample(t)
	b := cat.Package("cache-operator").Bundles[0]
	files, err := cat.Files(b)
	if err != nil {
		t.Fatal(err)
	}
	img, err := BundleImage(files)
	if err != nil {
		t.Fatal(err)
	}
	img2, err := BundleImage(slices.Clone(files))
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("the same files gave digests %s and %s", d1, d2)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.ModTime.Unix() != 0 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v, owner %d:%d", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		names = append(names, h.Name)
	}
	want := []string{"manifests/"}
	for _, f := range files {
		want = append(want, "manifests/"+f.Name)
	}
	want = append(want, "metadata/", "metadata/annotations.yaml")
	if !slices.Equal(names, want) {
		t.Errorf("layer entries %v, want %v", names, want)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// Without the catalog, the package comes from the CSV name and the channel is stable.
	if l := cf.Config.Labels; l[AnnotationPackage] != "cache-operator" || l[AnnotationChannels] != catalog.FlatChannel || l[AnnotationManifests] != "manifests/" {
		t.Errorf("labels %v", l)
	}
	if _, err := BundleImage([]catalog.File{{Name: "../x.yaml", Data: []byte("{}")}}); err == nil {
		t.Error("a file outside the bundle was accepted")
	}
}

// TestRenderFBCImageOnly: the rendered catalog has no olm.bundle.object, and every bundle
// names the image imageFor gives.
func TestRenderFBCImageOnly(t *testing.T) {
	cat := loadSample(t)
	fbc, err := RenderFBC(cat, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	if len(fbc) != len(cat.Packages()) {
		t.Errorf("%d files for %d packages", len(fbc), len(cat.Packages()))
	}
	for n, data := range fbc {
		if bytes.Contains(data, []byte("olm.bundle.object")) {
			t.Errorf("%s holds olm.bundle.object", n)
		}
	}
	if !bytes.Contains(fbc["backup-operator/catalog.json"], []byte(`"image": "registry.example/backup-operator.v0.2.0@sha256:000`)) {
		t.Errorf("backup-operator/catalog.json:\n%s", fbc["backup-operator/catalog.json"])
	}
	again, _ := RenderFBC(cat, fakeImage)
	if !reflect.DeepEqual(fbc, again) {
		t.Error("rendering twice gave different bytes")
	}
}

func fakeImage(b *catalog.Bundle) string {
	return "registry.example/" + b.CSVName + "@sha256:" + strings.Repeat("0", 64)
}

// TestRenderFBCRelatedImages: a CSV's spec.relatedImages become the olm.bundle's
// relatedImages, and the rendered catalog loads to the same index as the directory
// (without a registry: the FBC is written to a directory and loaded).
func TestRenderFBCRelatedImages(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, sampleDir, dir)
	csvFile := filepath.Join(dir, "reloader-operator", "0.2.0", "reloader-operator.v0.2.0.clusterserviceversion.yaml")
	data, err := os.ReadFile(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	related := "spec:\n  relatedImages:\n  - {name: manager, image: registry.example/reloader:0.2.0}\n  - {name: again, image: registry.example/reloader:0.2.0}\n  - {name: proxy, image: registry.example/proxy:1}\n"
	data = bytes.Replace(data, []byte("spec:\n"), []byte(related), 1)
	if err := os.WriteFile(csvFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil || len(cat.Rejections) > 0 {
		t.Fatalf("%v %v", err, cat.Rejections)
	}
	fbc, err := RenderFBC(cat, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	want := `"relatedImages": [
    {
      "name": "manager",
      "image": "registry.example/reloader:0.2.0"
    },
    {
      "name": "proxy",
      "image": "registry.example/proxy:1"
    }
  ]`
	if !bytes.Contains(fbc["reloader-operator/catalog.json"], []byte(want)) {
		t.Errorf("reloader-operator/catalog.json lacks the related images:\n%s", fbc["reloader-operator/catalog.json"])
	}
	got, err := catalog.Load(writeFiles(t, fbc), catalog.Options{})
	if err != nil || len(got.Rejections) > 0 {
		t.Fatalf("%v %v", err, got.Rejections)
	}
	compareCatalogs(t, cat, got)
}

// TestRenderFBCWithObjects: with its objects the rendered catalog carries every
// manifest, so it loads to the same index as the directory and each bundle's content reads
// from the catalog alone (no image source), with the same CSV, CRDs and other objects.
func TestRenderFBCWithObjects(t *testing.T) {
	cat := loadSample(t)
	fbc, err := RenderFBCWithObjects(cat, fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	got, err := catalog.Load(writeFiles(t, fbc), catalog.Options{})
	if err != nil || len(got.Rejections) > 0 {
		t.Fatalf("%v %v", err, got.Rejections)
	}
	compareCatalogs(t, cat, got)
	for _, b := range cat.Bundles() {
		want, err := cat.Content(b)
		if err != nil {
			t.Fatal(err)
		}
		have, err := got.Content(got.BundleByCSV(b.CSVName))
		if err != nil {
			t.Errorf("bundle %s: %v", b.CSVName, err)
			continue
		}
		if have.CSV.Name != want.CSV.Name || !reflect.DeepEqual(have.CSV.Spec.InstallStrategy, want.CSV.Spec.InstallStrategy) ||
			len(have.CRDs) != len(want.CRDs) || len(have.Objects) != len(want.Objects) {
			t.Errorf("bundle %s read back with CSV %s, %d CRDs, %d objects; want %s, %d, %d (or its install strategy differs)",
				b.CSVName, have.CSV.Name, len(have.CRDs), len(have.Objects), want.CSV.Name, len(want.CRDs), len(want.Objects))
		}
	}
}

// TestPublishRefusesRejected: a catalog with a rejected bundle is not published unless
// allowed, since the published catalog would silently lack it.
func TestPublishRefusesRejected(t *testing.T) {
	host := startRegistry(t)
	dir := t.TempDir()
	copyDir(t, filepath.Join(sampleDir, "cache-operator"), filepath.Join(dir, "cache-operator"))
	bad := filepath.Join(dir, "broken-operator", "1.0.0")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "csv.yaml"), []byte("kind: ClusterServiceVersion\nmetadata: {name: ''}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := host + "/om/partial:v1"
	if _, err := Publish(context.Background(), dir, ref); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("Publish = %v, want a refusal naming the rejected bundle", err)
	}
	pub, err := (&Publisher{AllowRejected: true}).Publish(context.Background(), dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.Bundles) != 4 {
		t.Errorf("published %d bundles, want cache-operator's 4", len(pub.Bundles))
	}
}

// TestPublishErrorNamesReference: a registry that cannot be reached fails the publish with
// the reference in the message.
func TestPublishErrorNamesReference(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	_, err := Publish(context.Background(), sampleDir, host+"/om/catalog:v1")
	if err == nil || !strings.Contains(err.Error(), host+"/om/catalog/") {
		t.Errorf("Publish to a closed registry = %v; want the reference named", err)
	}
	if _, err := Publish(context.Background(), sampleDir, "Not A Reference"); err == nil || !strings.Contains(err.Error(), `"Not A Reference"`) {
		t.Errorf("bad reference: %v", err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeFiles writes rendered catalog files (a path in the catalog to its content) into a
// new directory and returns it.
func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	out := t.TempDir()
	for n, data := range files {
		if err := os.MkdirAll(filepath.Join(out, path.Dir(n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
