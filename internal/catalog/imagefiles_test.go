package catalog

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

const imageCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: pulled.v1.0.0
spec:
  version: 1.0.0
  installModes:
  - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: pulled
        spec:
          selector: {matchLabels: {app: pulled}}
          template:
            metadata: {labels: {app: pulled}}
            spec: {containers: [{name: m, image: example.invalid/pulled:1}]}
`

// testBundleImage builds a bundle image the way operator-sdk lays one out.
func testBundleImage(t *testing.T, files map[string]string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[n]))
	}
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.Config.Labels = map[string]string{labelManifests: "manifests/"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// imageCatalog writes a File-Based Catalog whose one bundle names img, and a mirror's
// images/ layout holding img unless withoutLayout.
func imageCatalog(t *testing.T, img v1.Image, withoutLayout bool) (dir, ref string) {
	t.Helper()
	dir = t.TempDir()
	d, _ := img.Digest()
	ref = "registry.example/pulled/bundle@" + d.String()
	fbc := []map[string]any{
		{"schema": "olm.package", "name": "pulled", "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": "pulled", "name": "stable", "entries": []map[string]any{{"name": "pulled.v1.0.0"}}},
		{"schema": "olm.bundle", "package": "pulled", "name": "pulled.v1.0.0", "image": ref,
			"properties": []map[string]any{{"type": "olm.package", "value": map[string]string{"packageName": "pulled", "version": "1.0.0"}}}},
	}
	var out bytes.Buffer
	for _, b := range fbc {
		data, _ := json.Marshal(b)
		out.Write(data)
		out.WriteByte('\n')
	}
	os.MkdirAll(filepath.Join(dir, "pulled"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "pulled", "catalog.json"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if !withoutLayout {
		if err := (ociparts.Layout{Dir: filepath.Join(dir, ImagesDir)}).Put(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ref
}

func TestImageOnlyBundle(t *testing.T) {
	img := testBundleImage(t, map[string]string{
		"manifests/pulled.clusterserviceversion.yaml": imageCSV,
		"metadata/annotations.yaml":                   "annotations:\n  operators.operatorframework.io.bundle.package.v1: pulled\n",
		"manifests/settings.configmap.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
		"README.md":                                   "not part of the bundle",
	})
	dir, ref := imageCatalog(t, img, false)
	cat := loadFixture(t, dir)
	if len(cat.Rejections) > 0 {
		t.Fatalf("rejections: %v", cat.Rejections)
	}
	if len(cat.Packages()) != 1 {
		t.Fatalf("the images/ layout was taken for a package: %d packages", len(cat.Packages()))
	}
	b := cat.BundleByCSV("pulled.v1.0.0")
	if b == nil || !b.ImageOnly() || b.Image != ref {
		t.Fatalf("bundle = %+v", b)
	}

	content, err := cat.Content(b)
	if err != nil {
		t.Fatal(err)
	}
	if content.CSV.Name != "pulled.v1.0.0" || len(content.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs) != 1 {
		t.Fatalf("CSV from the image = %s", content.CSV.Name)
	}
	files := content.Files
	objs, err := ObjectsFromFiles(files)
	if err != nil || len(objs) != 1 || objs[0].GetName() != "settings" || len(content.Objects) != 1 {
		t.Fatalf("ObjectsFromFiles of the pulled bundle = %d objects, %v; Content has %d; want the ConfigMap from the image", len(objs), err, len(content.Objects))
	}
	if got := BundleDigest(files); got != b.Digest {
		t.Fatalf("BundleDigest = %s, the catalog knows the bundle as %s", got, b.Digest)
	}
	if err := VerifyFiles(files, b.Digest); err != nil {
		t.Fatal(err)
	}
	// What is kept (cache, cluster, archive) is checked through the chain: any changed
	// part is refused, naming the part.
	for _, tc := range []struct{ name, file, want string }{
		{"manifest", imageManifestFile, "the manifest has digest"},
		{"config", imageConfigFile, "the config has digest"},
		{"layer", imageLayerDir + "000.tar", "layer 0 has digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(files)
			i := slices.IndexFunc(bad, func(f File) bool { return f.Name == tc.file })
			bad[i].Data = append(slices.Clone(bad[i].Data), ' ')
			err := VerifyFiles(bad, b.Digest)
			if !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyFiles of a changed %s = %v", tc.name, err)
			}
			if _, err := ContentFromFiles(bad); err == nil && tc.name == "layer" {
				// Parsing does not verify (callers do); it must at least not panic.
				_ = err
			}
		})
	}
	// Parts that are not parts are refused rather than ignored.
	odd := append(slices.Clone(files), File{Name: "image/extra", Data: []byte("x")})
	if err := VerifyFiles(odd, b.Digest); err == nil || !strings.Contains(err.Error(), "image/extra") {
		t.Fatalf("VerifyFiles with an unknown image part = %v", err)
	}
}

func TestImageOnlyBundleWithoutSource(t *testing.T) {
	img := testBundleImage(t, map[string]string{"manifests/csv.yaml": imageCSV})
	dir, _ := imageCatalog(t, img, true)
	cat := loadFixture(t, dir)
	b := cat.BundleByCSV("pulled.v1.0.0")
	if _, err := cat.Content(b); !errors.Is(err, ErrNoContent) || !strings.Contains(err.Error(), "registry.example/pulled/bundle@sha256:") {
		t.Fatalf("Content without an image source = %v", err)
	}
}

// wrongImages serves another image than the one asked for.
type wrongImages struct{ parts *ociparts.Parts }

func (w wrongImages) Pull(string) (*ociparts.Parts, error) { return w.parts, nil }

func TestImageSourceServingOtherContent(t *testing.T) {
	img := testBundleImage(t, map[string]string{"manifests/csv.yaml": imageCSV})
	other := testBundleImage(t, map[string]string{"manifests/csv.yaml": imageCSV + "# changed\n"})
	parts, err := ociparts.FromImage(other)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := imageCatalog(t, img, true)
	cat, err := Load(dir, Options{Images: wrongImages{parts}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cat.Content(cat.BundleByCSV("pulled.v1.0.0"))
	if !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), "registry.example/pulled/bundle@sha256:") {
		t.Fatalf("Content from a source serving other content = %v", err)
	}
}

func TestImageManifestsDirectory(t *testing.T) {
	// A bundle image whose labels put the manifests elsewhere, with a whiteout in an
	// upper layer removing a file of the lower one.
	img := testBundleImage(t, map[string]string{
		"deploy/csv.yaml":   imageCSV,
		"deploy/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\n",
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "deploy/.wh.extra.yaml", Typeflag: tar.TypeReg})
	tw.Close()
	upper, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, upper); err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.Config.Labels = map[string]string{labelManifests: "deploy/"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	parts, err := ociparts.FromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	files, err := imageManifests(parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Name != "manifests/csv.yaml" {
		t.Fatalf("manifests = %v", names(files))
	}
}

func names(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}
