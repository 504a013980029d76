package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// zeros reads as zero bytes without end.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bigFileLayer is a gzip layer holding the file name of size zero bytes, written through
// the compressor so that only the compressed bytes are ever held.
func bigFileLayer(t *testing.T, name string, size int64) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: size}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeros{}, size); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// imageOfLayers is a linux/amd64 image of layers, with labels.
func imageOfLayers(t *testing.T, labels map[string]string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Labels = labels
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// assertEmpty fails unless dir holds nothing: neither a catalog's directory nor a
// temporary one.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the cache holds %s after a refused pull", e.Name())
	}
}

// TestPullCatalogLargeLayer: a base layer larger uncompressed than ociparts.MaxLayerSize
// (the opm binary, an OS) is streamed through, its digests checked, and the catalog's
// files written.
func TestPullCatalogLargeLayer(t *testing.T) {
	const size = 80 << 20
	if size <= ociparts.MaxLayerSize {
		t.Fatal("the test layer is not larger than ociparts.MaxLayerSize")
	}
	reg := newRegistry(t, nil)
	img := imageOfLayers(t, nil,
		bigFileLayer(t, "bin/opm", size),
		layerOf(t, map[string]string{"configs/demo/catalog.json": `{"schema":"olm.package","name":"demo"}`}),
	)
	ref := reg.host + "/org/catalog:big"
	digest := push(t, img, ref, Options{})
	ci, err := PullCatalog(ctx, ref, Options{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ci.Digest != digest {
		t.Errorf("digest %s; want %s", ci.Digest, digest)
	}
	got := readTree(t, ci.Dir)
	if len(got) != 1 || got["demo/catalog.json"] != `{"schema":"olm.package","name":"demo"}` {
		t.Errorf("files = %v", got)
	}
}

// TestPullCatalogCompressions: layers of a plain tar, gzip and zstd are all read.
func TestPullCatalogCompressions(t *testing.T) {
	reg := newRegistry(t, nil)
	plain := static.NewLayer(tarOf(t, map[string]string{"configs/plain.json": "plain", "etc/os-release": "x"}), types.OCIUncompressedLayer)
	zdata := tarOf(t, map[string]string{"configs/zstd.json": "zstd"})
	zl, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(zdata)), nil },
		tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zl.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	magic := make([]byte, 4)
	_, err = io.ReadFull(rc, magic)
	rc.Close()
	if err != nil || !bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Fatalf("the zstd layer starts with %x, %v", magic, err)
	}
	img := imageOfLayers(t, nil, plain, zl, layerOf(t, map[string]string{"configs/gzip.json": "gzip"}))
	ref := reg.host + "/org/catalog:compressions"
	push(t, img, ref, Options{})
	ci, err := PullCatalog(ctx, ref, Options{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := readTree(t, ci.Dir)
	if len(got) != 3 || got["plain.json"] != "plain" || got["zstd.json"] != "zstd" || got["gzip.json"] != "gzip" {
		t.Errorf("files = %v", got)
	}
}

// TestPullCatalogWhiteouts: whiteouts of files, directories and opaque directories apply
// to the configs directory, whether they name a path under it or one holding it.
func TestPullCatalogWhiteouts(t *testing.T) {
	reg := newRegistry(t, nil)
	cases := []struct {
		name   string
		labels map[string]string
		layers []map[string]string
		want   map[string]string
	}{
		{
			name: "opaque",
			layers: []map[string]string{
				{"configs/a/catalog.json": "a", "configs/a/old.json": "old", "configs/b/catalog.json": "b"},
				{"configs/a/.wh..wh..opq": "", "configs/a/new.json": "new"},
			},
			want: map[string]string{"a/new.json": "new", "b/catalog.json": "b"},
		},
		{
			name: "directory",
			layers: []map[string]string{
				{"configs/a/catalog.json": "a", "configs/b/catalog.json": "b"},
				{"configs/.wh.a": ""},
			},
			want: map[string]string{"b/catalog.json": "b"},
		},
		{
			name:   "parent of the configs directory",
			labels: map[string]string{ConfigsLabel: "/srv/fbc"},
			layers: []map[string]string{
				{"srv/fbc/old/catalog.json": "old"},
				{"srv/.wh..wh..opq": "", "srv/fbc/new/catalog.json": "new"},
			},
			want: map[string]string{"new/catalog.json": "new"},
		},
		{
			name: "elsewhere",
			layers: []map[string]string{
				{"configs/a/catalog.json": "a", "etc/x": "x"},
				{".wh.etc": "", "other/.wh..wh..opq": "", ".wh.configsx": ""},
			},
			want: map[string]string{"a/catalog.json": "a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := reg.host + "/org/catalog:" + strings.ReplaceAll(tc.name, " ", "-")
			push(t, imageOf(t, tc.labels, tc.layers...), ref, Options{})
			ci, err := PullCatalog(ctx, ref, Options{}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			got := readTree(t, ci.Dir)
			if len(got) != len(tc.want) {
				t.Errorf("files = %v; want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q; want %q", k, got[k], v)
				}
			}
			if _, err := os.Stat(ci.Dir + "/a"); tc.name == "directory" && err == nil {
				t.Error("the whited-out directory a is still there")
			}
		})
	}
	// Whiteouts removing every file leave no catalog.
	ref := reg.host + "/org/catalog:emptied"
	push(t, imageOf(t, nil, map[string]string{"configs/a/catalog.json": "a"}, map[string]string{".wh.configs": ""}), ref, Options{})
	cache := t.TempDir()
	if _, err := PullCatalog(ctx, ref, Options{}, cache); err == nil || !strings.Contains(err.Error(), "holds no file under /configs") {
		t.Errorf("PullCatalog of an image whose configs are whited out = %v", err)
	}
	assertEmpty(t, cache)
}

// TestPullCatalogFileTooLarge: a file of the configs directory over ociparts.MaxFileSize
// is refused, naming it, and nothing is left in the cache.
func TestPullCatalogFileTooLarge(t *testing.T) {
	reg := newRegistry(t, nil)
	ref := reg.host + "/org/catalog:hugefile"
	push(t, imageOfLayers(t, nil, bigFileLayer(t, "configs/huge.json", ociparts.MaxFileSize+1)), ref, Options{})
	cache := t.TempDir()
	_, err := PullCatalog(ctx, ref, Options{}, cache)
	t.Logf("file too large: %v", err)
	if err == nil || !strings.Contains(err.Error(), "configs/huge.json") || !strings.Contains(err.Error(), "MiB allowed") || !strings.Contains(err.Error(), ref) {
		t.Errorf("PullCatalog of a file over the bound = %v", err)
	}
	assertEmpty(t, cache)
}

// tamperBlobs serves the registry's answer to GET of a blob in blobs changed by its
// function.
func tamperBlobs(blobs map[string]func([]byte) []byte) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, blob, _ := strings.Cut(r.URL.Path, "/blobs/")
			change, ok := blobs[blob]
			if !ok || r.Method != http.MethodGet {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(change(bytes.Clone(rec.Body.Bytes())))
		})
	}
}

// TestPullCatalogTamperedLayer: a layer blob served with other bytes than its digest
// names (a flipped byte, cut short, longer) is refused with ErrDigestMismatch naming the
// reference and the layer, whether the layer holds catalog files or not, and the cache
// holds nothing afterwards.
func TestPullCatalogTamperedLayer(t *testing.T) {
	blobs := map[string]func([]byte) []byte{}
	reg := newRegistry(t, tamperBlobs(blobs))
	base := bigFileLayer(t, "bin/opm", 1<<20)
	configs := layerOf(t, map[string]string{"configs/demo/catalog.json": strings.Repeat(`{"schema":"olm.bundle"}`, 1000)})
	plain := static.NewLayer(tarOf(t, map[string]string{"configs/plain.json": "plain"}), types.OCIUncompressedLayer)
	img := imageOfLayers(t, nil, base, configs, plain)
	ref := reg.host + "/org/catalog:v1"
	push(t, img, ref, Options{})
	flip := func(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }
	flipLast := func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }
	cut := func(b []byte) []byte { return b[:len(b)-1] }
	longer := func(b []byte) []byte { return append(b, 0) }
	cases := []struct {
		name   string
		layer  int
		change func([]byte) []byte
	}{
		{"flipped base", 0, flip},
		{"flipped configs", 1, flip},
		{"flipped gzip trailer", 1, flipLast},
		{"flipped plain tar", 2, flip},
		{"cut short", 1, cut},
		{"longer", 1, longer},
	}
	layers := []v1.Layer{base, configs, plain}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := layers[tc.layer].Digest()
			clear(blobs)
			blobs[d.String()] = tc.change
			cache := t.TempDir()
			_, err := PullCatalog(ctx, ref, Options{}, cache)
			t.Logf("%s: %v", tc.name, err)
			if !errors.Is(err, ociparts.ErrDigestMismatch) || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), d.String()) {
				t.Errorf("PullCatalog of a tampered layer = %v; want ErrDigestMismatch naming %s and the layer %s", err, ref, d)
			}
			assertEmpty(t, cache)
		})
	}
	clear(blobs)
	if _, err := PullCatalog(ctx, ref, Options{}, t.TempDir()); err != nil {
		t.Errorf("PullCatalog served as pushed: %v", err)
	}
}

// TestPullCatalogDiffIDMismatch: a layer whose uncompressed content is not the diff_id
// the config names is refused likewise, though its blob matches its digest.
func TestPullCatalogDiffIDMismatch(t *testing.T) {
	reg := newRegistry(t, nil)
	img := imageOf(t, nil, map[string]string{"bin/opm": "binary"}, map[string]string{"configs/demo/catalog.json": "{}"})
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	other, _ := layerOf(t, map[string]string{"configs/demo/catalog.json": "evil"}).DiffID()
	cf.RootFS.DiffIDs[1] = other
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref := reg.host + "/org/catalog:diffid"
	digest := push(t, img, ref, Options{})
	cache := t.TempDir()
	_, err = PullCatalog(ctx, reg.host+"/org/catalog@"+digest, Options{}, cache)
	t.Logf("diff_id mismatch: %v", err)
	if !errors.Is(err, ociparts.ErrDigestMismatch) || !strings.Contains(err.Error(), reg.host+"/org/catalog@"+digest) ||
		!strings.Contains(err.Error(), "layer 1") || !strings.Contains(err.Error(), other.String()) {
		t.Errorf("PullCatalog of a layer not matching its diff_id = %v; want ErrDigestMismatch naming the reference and layer 1", err)
	}
	assertEmpty(t, cache)

	// A config listing another number of layers than the manifest is refused too.
	cf.RootFS.DiffIDs = cf.RootFS.DiffIDs[:1]
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref = reg.host + "/org/catalog:fewer"
	push(t, img, ref, Options{})
	_, err = PullCatalog(ctx, ref, Options{}, cache)
	if !errors.Is(err, ociparts.ErrDigestMismatch) || !strings.Contains(err.Error(), ref) {
		t.Errorf("PullCatalog of a config with fewer diff_ids = %v", err)
	}
	assertEmpty(t, cache)
}
