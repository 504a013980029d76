package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
)

// syncBuffer is a buffer the server goroutines write while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// served is a `catalog serve` running in-process.
type served struct {
	url      string
	out, log *syncBuffer
	stop     func() error // cancels the context and returns what the command returned
}

var servingRE = regexp.MustCompile(`Serving catalog \S+ on (http://\S+)`)

// startServe runs `operator-manager catalog serve` on a free port until stop is called.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{out: &syncBuffer{}, log: &syncBuffer{}}
	root := NewRoot()
	root.SetOut(s.out)
	root.SetErr(s.log)
	root.SetArgs(append([]string{"catalog", "serve", "--addr", "127.0.0.1:0"}, args...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var once sync.Once
	var result error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(30 * time.Second):
				t.Error("catalog serve did not stop within 30s of its context ending")
			}
		})
		return result
	}
	t.Cleanup(func() { _ = s.stop() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := servingRE.FindStringSubmatch(s.out.String()); m != nil {
			s.url = m[1]
			return s
		}
		select {
		case err := <-done:
			t.Fatalf("catalog serve exited: %v\n%s", err, s.out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog serve did not start:\n%s", s.out)
		}
	}
}

// get makes a request without following redirects.
func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestCatalogServe(t *testing.T) {
	cat, err := catalog.Load(sampleDir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, sampleDir)
	for _, want := range []string{"4 packages, 10 bundles, 0 rejected, digest " + cat.Digest,
		`package cache-operator: 4 bundles, default channel "stable", head cache-operator.v1.3.0`} {
		if !strings.Contains(s.out.String(), want) {
			t.Errorf("start-up output lacks %q:\n%s", want, s.out)
		}
	}

	resp, body := get(t, s.url+"/index.json")
	var idx remote.Index
	if err := json.Unmarshal(body, &idx); err != nil || resp.StatusCode != 200 {
		t.Fatalf("index: %d %v", resp.StatusCode, err)
	}
	if idx.Digest != cat.Digest || len(idx.Packages) != 4 || len(idx.Bundles) != 10 || resp.Header.Get("ETag") != `"`+cat.Digest+`"` {
		t.Errorf("index %s with %d packages, %d bundles, ETag %s", idx.Digest, len(idx.Packages), len(idx.Bundles), resp.Header.Get("ETag"))
	}
	if resp, body := get(t, s.url+"/index.json", "If-None-Match", resp.Header.Get("ETag")); resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("conditional index: %d, %d bytes", resp.StatusCode, len(body))
	}

	b := cat.BundleByCSV("cache-operator.v1.2.0")
	resp, _ = get(t, s.url+"/bundles/"+b.Digest)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-tar" || resp.Header.Get("ETag") != `"`+b.Digest+`"` {
		t.Errorf("bundle: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("ETag"))
	}
	if resp, _ := get(t, s.url+"/bundles/"+b.Digest, "If-None-Match", `"`+b.Digest+`"`); resp.StatusCode != http.StatusNotModified {
		t.Errorf("conditional bundle: %d", resp.StatusCode)
	}
	client := &remote.Client{BaseURL: s.url, CacheDir: t.TempDir()}
	files, err := client.Fetch(context.Background(), b.Digest)
	if err != nil || catalog.DigestFiles(files) != b.Digest {
		t.Errorf("fetched bundle: %v", err)
	}

	// No request reaches a file that is not a bundle of the index.
	for _, path := range []string{
		"/bundles/..%2f..%2fetc%2fpasswd",
		"/bundles/sha256:../x",
		"/bundles/sha256:..%2f..%2f..%2f..%2fetc%2fpasswd",
		"/bundles/sha256%3a" + strings.Repeat("0", 64) + "%2f..%2f..%2fetc%2fpasswd",
		"/bundles/" + b.Digest + "/../../../etc/passwd",
		"/bundles/%2e%2e",
		"/index.json/..%2f..%2fetc%2fpasswd",
		"/cache-operator/1.2.0/caches.crd.yaml",
	} {
		resp, body := get(t, s.url+path)
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && strings.HasPrefix(loc, "/") {
			// The server's mux redirects an unclean path to its clean form; follow it.
			resp, body = get(t, s.url+loc)
		}
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d", path, resp.StatusCode)
		}
		if bytes.Contains(body, []byte("root:")) || bytes.Contains(body, []byte("apiVersion")) || resp.Header.Get("Content-Type") == "application/x-tar" {
			t.Errorf("%s: a file was served:\n%s", path, body)
		}
	}
	for _, path := range []string{"/bundles/..%2f..%2fetc%2fpasswd", "/bundles/sha256:../x"} {
		if resp, _ := get(t, s.url+path); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 400 or 404", path, resp.StatusCode)
		}
	}

	if err := s.stop(); err != nil {
		t.Errorf("stopping: %v", err)
	}
	log := s.log.String()
	for _, want := range []string{`"GET /index.json HTTP/1.1" 200 `, `"GET /index.json HTTP/1.1" 304 0`,
		`"GET /bundles/sha256:../x HTTP/1.1" 404`, `"GET /bundles/..%2f..%2fetc%2fpasswd HTTP/1.1" 400`, "Stopped serving catalog"} {
		if !strings.Contains(log, want) {
			t.Errorf("request log lacks %q:\n%s", want, log)
		}
	}
	if _, err := http.Get(s.url + "/index.json"); err == nil {
		t.Error("still serving after the context ended")
	}
}

// TestCatalogServeReloads: a bundle added to the directory is served after the next
// reload check, under a new digest; a check that finds nothing changed changes nothing.
func TestCatalogServeReloads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(dir, os.DirFS(sampleDir)); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, "--reload", "100ms")
	_, body := get(t, s.url+"/index.json")
	var before remote.Index
	if err := json.Unmarshal(body, &before); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(s.log.String(), "Reloaded") {
		t.Errorf("reloaded an unchanged directory:\n%s", s.log)
	}

	// The new bundle is written beside the catalog and moved in whole, so no reload sees
	// it half written.
	from := filepath.Join(dir, "cache-operator", "1.2.0")
	to := filepath.Join(t.TempDir(), "1.4.0")
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(to, "cache-operator.v1.2.0.clusterserviceversion.yaml")
	data, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.NewReplacer("cache-operator.v1.2.0", "cache-operator.v1.4.0", "replaces: cache-operator.v1.1.0",
		"replaces: cache-operator.v1.3.0", "version: 1.2.0", "version: 1.4.0").Replace(string(data)))
	if err := os.WriteFile(csv, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to, filepath.Join(dir, "cache-operator", "1.4.0")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var after remote.Index
	for {
		_, body := get(t, s.url+"/index.json")
		if err := json.Unmarshal(body, &after); err != nil {
			t.Fatal(err)
		}
		// The server swaps the catalog it serves, then logs the reload.
		if len(after.Bundles) == 11 && strings.Contains(s.log.String(), "Reloaded catalog") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new bundle was not served:\n%s", s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after.Digest == before.Digest || !strings.Contains(s.log.String(), "Reloaded catalog") ||
		!strings.Contains(s.log.String(), "11 bundles, 0 rejected, digest "+after.Digest+" (was "+before.Digest+")") {
		t.Errorf("digest %s -> %s; log:\n%s", before.Digest, after.Digest, s.log)
	}
	cat, err := (&remote.Client{BaseURL: s.url, CacheDir: t.TempDir()}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cat.Head("cache-operator", ""); err != nil || b.CSVName != "cache-operator.v1.4.0" {
		t.Errorf("head after the reload: %v %v", b, err)
	}
}

func TestCatalogServeErrors(t *testing.T) {
	if _, err := runCLI(t, "catalog", "serve", filepath.Join(t.TempDir(), "nosuch"), "--addr", "127.0.0.1:0"); err == nil {
		t.Error("serving a missing directory")
	}
	if _, err := runCLI(t, "catalog", "serve", sampleDir, "--addr", "256.0.0.1:99999"); err == nil || !strings.Contains(err.Error(), "serving catalog") {
		t.Errorf("bad address: %v", err)
	}
	if _, err := runCLI(t, "catalog", "serve", sampleDir, "--reload", "-1s"); err == nil || !strings.Contains(err.Error(), "--reload") {
		t.Errorf("negative reload: %v", err)
	}
}
