package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testRegistry is a registry served in the test process on loopback, with every request
// recorded.
type testRegistry struct {
	*httptest.Server
	host string

	mu       sync.Mutex
	requests []string
}

// newRegistry serves go-containerregistry's in-memory registry, through wrap when given.
func newRegistry(t *testing.T, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	return serve(t, wrap, false)
}

// serve serves the registry over plain HTTP, or HTTPS with httptest's certificate.
func serve(t *testing.T, wrap func(http.Handler) http.Handler, useTLS bool) *testRegistry {
	t.Helper()
	reg := &testRegistry{}
	var h http.Handler = ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	next := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		reg.requests = append(reg.requests, r.Method+" "+r.URL.Path)
		reg.mu.Unlock()
		next.ServeHTTP(w, r)
	})
	reg.Server = httptest.NewUnstartedServer(h)
	reg.Config.ErrorLog = log.New(io.Discard, "", 0) // refused TLS handshakes, as tested
	if useTLS {
		reg.StartTLS()
	} else {
		reg.Start()
	}
	t.Cleanup(reg.Close)
	reg.host = strings.TrimPrefix(strings.TrimPrefix(reg.URL, "http://"), "https://")
	return reg
}

// take returns the requests recorded since the last call.
func (r *testRegistry) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

// tarOf returns a tar of files (path: content), in path order.
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layerOf is a gzip layer holding files.
func layerOf(t *testing.T, files map[string]string) v1.Layer {
	t.Helper()
	data := tarOf(t, files)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// imageOf is an image of one layer per file set, with labels.
func imageOf(t *testing.T, labels map[string]string, layers ...map[string]string) v1.Image {
	t.Helper()
	img := empty.Image
	for _, files := range layers {
		var err error
		if img, err = mutate.AppendLayers(img, layerOf(t, files)); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Labels = labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// bundleImage is a bundle image of one CSV.
func bundleImage(t *testing.T, csvName string) v1.Image {
	return imageOf(t, map[string]string{"operators.operatorframework.io.bundle.manifests.v1": "manifests/"}, map[string]string{
		"manifests/csv.yaml":           "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: " + csvName + "\n",
		"metadata/annotations.yaml":    "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n",
		"manifests/service.yaml":       "apiVersion: v1\nkind: Service\nmetadata:\n  name: demo\n",
		"root-file-outside-manifests":  "x",
		"manifests/README-not-applied": "docs",
	})
}

// push pushes img to ref and returns its digest.
func push(t *testing.T, img v1.Image, ref string, o Options) string {
	t.Helper()
	d, err := Push(context.Background(), img, ref, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// digestOf is img's digest.
func digestOf(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// replaceResponses serves body in place of the registry's answer to GET path.
func replaceResponses(bodies map[string][]byte) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, ok := bodies[r.URL.Path]
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
			_, _ = w.Write(body)
		})
	}
}

// writeIndex pushes an image index under ref.
func writeIndex(ref string, idx v1.ImageIndex, opts []remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	return remote.WriteIndex(r, idx, opts...)
}
