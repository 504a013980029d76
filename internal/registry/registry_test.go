package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

var ctx = context.Background()

// TestResolveFollowsTag: a tag resolves to the digest it points at now.
func TestResolveFollowsTag(t *testing.T) {
	reg := newRegistry(t, nil)
	ref := reg.host + "/org/catalog:v1"
	first := push(t, imageOf(t, nil, map[string]string{"configs/a.json": "1"}), ref, Options{})
	got, err := Resolve(ctx, ref, Options{})
	if err != nil || got != first {
		t.Fatalf("Resolve = %s, %v; want %s", got, err, first)
	}
	second := push(t, imageOf(t, nil, map[string]string{"configs/a.json": "2"}), ref, Options{})
	if second == first {
		t.Fatal("two different images have the same digest")
	}
	if got, err = Resolve(ctx, ref, Options{}); err != nil || got != second {
		t.Fatalf("Resolve after a new push = %s, %v; want %s", got, err, second)
	}
	if got, err = Resolve(ctx, reg.host+"/org/catalog@"+first, Options{}); err != nil || got != first {
		t.Fatalf("Resolve of a digest = %s, %v; want %s", got, err, first)
	}
	_, err = Resolve(ctx, reg.host+"/org/catalog:nosuch", Options{})
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), reg.host+"/org/catalog:nosuch") {
		t.Errorf("Resolve of a missing tag = %v; want not found, naming the reference", err)
	}
}

// TestResolveFallsBackToGet: a registry refusing HEAD is asked with GET.
func TestResolveFallsBackToGet(t *testing.T) {
	var refuseHead atomic.Bool
	reg := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead && refuseHead.Load() {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	ref := reg.host + "/org/catalog:v1"
	want := push(t, imageOf(t, nil, map[string]string{"configs/a.json": "1"}), ref, Options{})
	refuseHead.Store(true)
	if got, err := Resolve(ctx, ref, Options{}); err != nil || got != want {
		t.Fatalf("Resolve = %s, %v; want %s", got, err, want)
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPullCatalog: the files under the directory the label names (or /configs) are
// written to cacheDir/<hex of the digest>, at their relative paths, and nothing else.
func TestPullCatalog(t *testing.T) {
	reg := newRegistry(t, nil)
	cases := []struct {
		name   string
		labels map[string]string
		layers []map[string]string
		want   map[string]string
	}{
		{
			name:   "label",
			labels: map[string]string{ConfigsLabel: "/srv/fbc"},
			layers: []map[string]string{
				{"bin/opm": "binary", "configs/ignored.json": "{}"},
				{"srv/fbc/demo/catalog.json": `{"schema":"olm.package","name":"demo"}`, "srv/fbc/other/catalog.yaml": "schema: olm.package\nname: other\n"},
			},
			want: map[string]string{"demo/catalog.json": `{"schema":"olm.package","name":"demo"}`, "other/catalog.yaml": "schema: olm.package\nname: other\n"},
		},
		{
			name:   "default",
			layers: []map[string]string{{"configs/demo/catalog.json": "{}", "etc/passwd": "root"}, {"configs/demo/.wh.catalog.json": "", "configs/demo/index.json": "[]"}},
			want:   map[string]string{"demo/index.json": "[]"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := reg.host + "/org/catalog:" + tc.name
			digest := push(t, imageOf(t, tc.labels, tc.layers...), ref, Options{})
			cache := t.TempDir()
			ci, err := PullCatalog(ctx, ref, Options{}, cache)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := v1.NewHash(digest)
			if ci.Ref != ref || ci.Digest != digest || ci.Dir != filepath.Join(cache, h.Hex) {
				t.Errorf("PullCatalog = %+v; want ref %s digest %s in %s", ci, ref, digest, filepath.Join(cache, h.Hex))
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
			entries, _ := os.ReadDir(cache)
			if len(entries) != 1 {
				t.Errorf("the cache holds %d entries, want only the digest's directory", len(entries))
			}
		})
	}
	// An image without a configs directory is not a catalog.
	ref := reg.host + "/org/notacatalog:v1"
	push(t, imageOf(t, nil, map[string]string{"bin/app": "x"}), ref, Options{})
	if _, err := PullCatalog(ctx, ref, Options{}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no file under /configs") {
		t.Errorf("PullCatalog of an image without /configs = %v", err)
	}
}

// TestPullCatalogIndex: of an index, the linux/amd64 image is read; the directory is
// named by the index digest the tag points at.
func TestPullCatalogIndex(t *testing.T) {
	reg := newRegistry(t, nil)
	arm := imageOf(t, nil, map[string]string{"configs/arch": "arm64"})
	amd := imageOf(t, nil, map[string]string{"configs/arch": "amd64"})
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	ref := reg.host + "/org/catalog:multi"
	opts, err := Options{}.RemoteOptions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeIndex(ref, idx, opts); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	ci, err := PullCatalog(ctx, ref, Options{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ci.Digest != idxDigest.String() || readTree(t, ci.Dir)["arch"] != "amd64" {
		t.Errorf("PullCatalog of an index = %+v, files %v; want the index digest and the amd64 image", ci, readTree(t, ci.Dir))
	}
}

// TestPullCatalogReusesItsDirectory: the digest's directory, once written, is the
// answer: by digest with no request at all, by tag with only the resolve.
func TestPullCatalogReusesItsDirectory(t *testing.T) {
	reg := newRegistry(t, nil)
	tag := reg.host + "/org/catalog:v1"
	digest := push(t, imageOf(t, nil, map[string]string{"configs/demo/catalog.json": "{}"}), tag, Options{})
	byDigest := reg.host + "/org/catalog@" + digest
	cache := t.TempDir()
	first, err := PullCatalog(ctx, byDigest, Options{}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := reg.take(); len(reqs) == 0 {
		t.Fatal("the first pull made no request")
	}
	again, err := PullCatalog(ctx, byDigest, Options{}, cache)
	if err != nil || again.Dir != first.Dir {
		t.Fatalf("second PullCatalog = %+v, %v", again, err)
	}
	if reqs := reg.take(); len(reqs) != 0 {
		t.Errorf("the second pull by digest asked the registry: %v", reqs)
	}
	byTag, err := PullCatalog(ctx, tag, Options{}, cache)
	if err != nil || byTag.Dir != first.Dir {
		t.Fatalf("PullCatalog by tag = %+v, %v", byTag, err)
	}
	for _, r := range reg.take() {
		if r != "GET /v2/" && r != "HEAD /v2/org/catalog/manifests/v1" {
			t.Errorf("the pull by tag of a held digest made the request %q; want only the resolve", r)
		}
	}
}

// TestBundlesPullAndCache: a bundle is pulled once from the registry, then read from the
// cache layout, even with the registry gone.
func TestBundlesPullAndCache(t *testing.T) {
	reg := newRegistry(t, nil)
	img := bundleImage(t, "demo.v1.0.0")
	digest := push(t, img, reg.host+"/org/demo-bundle:v1.0.0", Options{})
	ref := reg.host + "/org/demo-bundle@" + digest
	b := Bundles{Cache: ociparts.Layout{Dir: filepath.Join(t.TempDir(), "images")}}
	p, err := b.Pull(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(digest); err != nil {
		t.Fatal(err)
	}
	files, err := p.Files("manifests")
	if err != nil || !strings.Contains(string(files["csv.yaml"]), "demo.v1.0.0") {
		t.Fatalf("bundle files = %v, %v", files, err)
	}
	if !b.Cache.Has(digest) {
		t.Fatal("the pulled bundle is not in the cache layout")
	}
	images, err := b.Cache.Images()
	if err != nil || images[digest] != ref {
		t.Errorf("the layout lists %v, %v; want %s under %s", images, err, digest, ref)
	}
	reg.Close()
	again, err := b.Pull(ref)
	if err != nil {
		t.Fatalf("pull from the cache with the registry stopped: %v", err)
	}
	if !bytes.Equal(again.Manifest, p.Manifest) {
		t.Error("the cached bundle differs from the pulled one")
	}
	// Without a cache, the registry is needed, and its absence is said.
	_, err = Bundles{Options: Options{Timeout: 5 * time.Second}}.Pull(ref)
	t.Logf("registry stopped: %v", err)
	if err == nil || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("pull with the registry stopped and no cache = %v; want an error naming the reference and why", err)
	}
}

// TestTagRefused: a bundle is pulled by digest only.
func TestTagRefused(t *testing.T) {
	for _, pull := range []func(string) error{
		func(ref string) error { _, err := Bundles{}.Pull(ref); return err },
		func(ref string) error { _, err := PullImage(ctx, ref, Options{}); return err },
	} {
		err := pull("registry.invalid/org/bundle:v1")
		if err == nil || !strings.Contains(err.Error(), "referenced by tag") || !strings.Contains(err.Error(), "registry.invalid/org/bundle:v1") {
			t.Errorf("pull by tag = %v; want a refusal naming the reference", err)
		}
	}
}

// TestTamperedManifest: a registry serving another manifest for a digest is caught, with
// an error wrapping ErrDigestMismatch and naming the reference.
func TestTamperedManifest(t *testing.T) {
	bodies := map[string][]byte{}
	reg := newRegistry(t, replaceResponses(bodies))
	good := bundleImage(t, "demo.v1.0.0")
	evil := bundleImage(t, "evil.v6.6.6")
	digest := push(t, good, reg.host+"/org/demo:good", Options{})
	push(t, evil, reg.host+"/org/demo:evil", Options{})
	raw, _ := evil.RawManifest()
	bodies["/v2/org/demo/manifests/"+digest] = raw
	ref := reg.host + "/org/demo@" + digest

	_, err := Bundles{}.Pull(ref)
	t.Logf("tampered manifest: %v", err)
	if !errors.Is(err, ociparts.ErrDigestMismatch) || !strings.Contains(err.Error(), ref) {
		t.Errorf("Bundles.Pull of a tampered manifest = %v; want ErrDigestMismatch naming %s", err, ref)
	}
	_, err = PullCatalog(ctx, reg.host+"/org/demo:good", Options{}, t.TempDir())
	if !errors.Is(err, ociparts.ErrDigestMismatch) || !strings.Contains(err.Error(), reg.host+"/org/demo:good") {
		t.Errorf("PullCatalog of a tampered manifest = %v; want ErrDigestMismatch naming the reference", err)
	}
}

// TestTamperedLayer: a layer blob served with other bytes is caught likewise.
func TestTamperedLayer(t *testing.T) {
	bodies := map[string][]byte{}
	reg := newRegistry(t, replaceResponses(bodies))
	img := bundleImage(t, "demo.v1.0.0")
	digest := push(t, img, reg.host+"/org/demo:v1", Options{})
	layers, _ := img.Layers()
	ld, _ := layers[0].Digest()
	other, _ := bundleImage(t, "evil.v6.6.6").Layers()
	rc, _ := other[0].Compressed()
	var evil bytes.Buffer
	_, _ = evil.ReadFrom(rc)
	rc.Close()
	bodies["/v2/org/demo/blobs/"+ld.String()] = evil.Bytes()
	ref := reg.host + "/org/demo@" + digest

	_, err := Bundles{}.Pull(ref)
	t.Logf("tampered layer: %v", err)
	if !errors.Is(err, ociparts.ErrDigestMismatch) || !strings.Contains(err.Error(), ref) {
		t.Errorf("Bundles.Pull of a tampered layer = %v; want ErrDigestMismatch naming %s", err, ref)
	}
}

// TestBasicAuth: credentials from a docker config Secret open a registry that wants
// them; without them the error says unauthorized and names the registry.
func TestBasicAuth(t *testing.T) {
	reg := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "robot" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	withAuth := Options{DockerConfig: []byte(`{"auths":{"` + reg.host + `":{"auth":"` + auth + `"}}}`)}
	withFields := Options{DockerConfig: []byte(`{"auths":{"http://` + reg.host + `/org":{"username":"robot","password":"s3cret"}}}`)}
	ref := reg.host + "/org/demo:v1"
	digest := push(t, bundleImage(t, "demo.v1.0.0"), ref, withAuth)
	pinned := reg.host + "/org/demo@" + digest
	for name, o := range map[string]Options{"auth": withAuth, "username and password": withFields} {
		if _, err := (Bundles{Options: o}).Pull(pinned); err != nil {
			t.Errorf("pull with the credentials (%s): %v", name, err)
		}
	}
	wrong := Options{DockerConfig: []byte(`{"auths":{"` + reg.host + `":{"username":"robot","password":"wrong"}}}`)}
	for name, o := range map[string]Options{"anonymous": {}, "wrong password": wrong} {
		_, err := Resolve(ctx, ref, o)
		t.Logf("%s: %v", name, err)
		if err == nil || !strings.Contains(err.Error(), "unauthorized") || !strings.Contains(err.Error(), reg.host) {
			t.Errorf("resolve %s = %v; want unauthorized naming %s", name, err, reg.host)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows a password: %v", err)
		}
	}
}

// TestTLS: a registry with a certificate of its own CA is reached with that CA in
// CABundle; without, the error names the certificate problem.
func TestTLS(t *testing.T) {
	reg := serve(t, nil, true)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.Certificate().Raw})
	trusted := Options{CABundle: ca}
	ref := reg.host + "/org/demo:v1"
	digest := push(t, bundleImage(t, "demo.v1.0.0"), ref, trusted)
	if got, err := Resolve(ctx, ref, trusted); err != nil || got != digest {
		t.Fatalf("Resolve with the CA = %s, %v", got, err)
	}
	if _, err := (Bundles{Options: trusted}).Pull(reg.host + "/org/demo@" + digest); err != nil {
		t.Fatalf("pull with the CA: %v", err)
	}
	if got, err := Resolve(ctx, ref, Options{Insecure: true}); err != nil || got != digest {
		t.Errorf("Resolve with Insecure = %s, %v", got, err)
	}
	_, err := Resolve(ctx, ref, Options{})
	t.Logf("without the CA: %v", err)
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "unknown authority") || !strings.Contains(err.Error(), reg.host) {
		t.Errorf("Resolve without the CA = %v; want the certificate problem, naming the registry", err)
	}
	if _, err := Resolve(ctx, ref, Options{CABundle: []byte("not PEM")}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a CA bundle without a certificate = %v", err)
	}
}

// TestPushByDigest: an image pushed by digest keeps it; a wrong digest is refused.
func TestPushByDigest(t *testing.T) {
	reg := newRegistry(t, nil)
	img := bundleImage(t, "demo.v1.0.0")
	digest := digestOf(t, img)
	if got := push(t, img, reg.host+"/mirror/demo@"+digest, Options{}); got != digest {
		t.Errorf("Push by digest = %s; want %s", got, digest)
	}
	if _, err := PullImage(ctx, reg.host+"/mirror/demo@"+digest, Options{}); err != nil {
		t.Errorf("pull of the pushed image: %v", err)
	}
	other := digestOf(t, bundleImage(t, "other.v1.0.0"))
	if _, err := Push(ctx, img, reg.host+"/mirror/demo@"+other, Options{}); err == nil {
		t.Error("Push under another image's digest succeeded")
	}
}

// TestCatalogImageFrom: the same files give the same digest, the files are under
// /configs with the label naming it, and paths leaving the root are refused.
func TestCatalogImageFrom(t *testing.T) {
	files := map[string][]byte{"demo/catalog.json": []byte(`{"schema":"olm.package","name":"demo"}`), "other/catalog.yaml": []byte("schema: olm.package\nname: other\n")}
	a, err := CatalogImageFrom(files)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := CatalogImageFrom(map[string][]byte{"other/catalog.yaml": files["other/catalog.yaml"], "demo/catalog.json": files["demo/catalog.json"]})
	if digestOf(t, a) != digestOf(t, b) {
		t.Error("the same files gave two digests")
	}
	c, _ := CatalogImageFrom(map[string][]byte{"demo/catalog.json": []byte("{}")})
	if digestOf(t, a) == digestOf(t, c) {
		t.Error("other files gave the same digest")
	}
	p, err := ociparts.FromImage(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(digestOf(t, a)); err != nil {
		t.Fatal(err)
	}
	labels, _ := p.Labels()
	got, _ := p.Files(labels[ConfigsLabel])
	if labels[ConfigsLabel] != "/configs" || len(got) != 2 || !bytes.Equal(got["demo/catalog.json"], files["demo/catalog.json"]) {
		t.Errorf("catalog image label %q, files %v", labels[ConfigsLabel], got)
	}
	for _, bad := range []string{"../x.json", "/abs.json", "a/../../x", "", "a//b"} {
		if _, err := CatalogImageFrom(map[string][]byte{bad: nil}); err == nil {
			t.Errorf("CatalogImageFrom accepted the path %q", bad)
		}
	}
	if _, err := CatalogImageFrom(map[string][]byte{"a": nil, "a/b": nil}); err == nil {
		t.Error("CatalogImageFrom accepted a file and a directory of the same name")
	}
}
