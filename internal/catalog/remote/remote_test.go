package remote

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

func loadCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load("../testdata/layouts", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestFetchThenServerDown(t *testing.T) {
	cat := loadCatalog(t)
	srv := httptest.NewServer(Handler(cat))
	ctx := context.Background()
	client := &Client{BaseURL: srv.URL, CacheDir: filepath.Join(t.TempDir(), "cache")}

	idx, err := client.Index(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if idx.Digest != cat.Digest || len(idx.Bundles) != len(cat.Bundles()) || len(idx.Packages) != len(cat.Packages()) {
		t.Fatalf("index %s with %d bundles, catalog %s with %d", idx.Digest, len(idx.Bundles), cat.Digest, len(cat.Bundles()))
	}
	if again, err := client.Index(ctx, idx); err != nil || again != idx {
		t.Errorf("conditional index fetch: %v, same=%v", err, again == idx)
	}
	// The index carries what a resolver needs, ranges included.
	var fbc *catalog.Bundle
	for _, b := range idx.Bundles {
		if b.CSVName == "manifestpkg.v1.1.0" && (!b.SkipRange.Contains(semver.MustParse("0.9.5")) || b.Digest != cat.BundleByCSV(b.CSVName).Digest) {
			t.Errorf("bundle in the index: %+v", b)
		}
		if b.CSVName == "fbcpkg.v2.0.0" {
			fbc = b
		}
	}

	var wantNames []string
	for _, name := range []string{"bundlepkg.v0.2.0", "fbcpkg.v2.0.0"} {
		b := cat.BundleByCSV(name)
		files, err := client.Fetch(ctx, b.Digest)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if catalog.DigestFiles(files) != b.Digest || len(files) != len(b.Files) {
			t.Fatalf("%s: fetched %d files", name, len(files))
		}
		wantNames = append(wantNames, name)
	}
	if fbc == nil || !client.Cached(fbc.Digest) {
		t.Fatal("FBC bundle not cached")
	}

	srv.Close()
	for _, name := range wantNames {
		b := cat.BundleByCSV(name)
		files, err := client.Fetch(ctx, b.Digest)
		if err != nil {
			t.Fatalf("%s from the cache with the server down: %v", name, err)
		}
		bc, err := catalog.ContentFromFiles(files)
		if err != nil || bc.CSV.Name != name {
			t.Fatalf("%s: content %v", name, err)
		}
	}
	if _, err := client.Fetch(ctx, cat.BundleByCSV("flatpkg.v0.1.0").Digest); err == nil {
		t.Error("a bundle never fetched came from nowhere")
	}
	if _, err := client.Index(ctx, idx); err == nil {
		t.Error("index with the server down")
	}
}

func TestCacheCorruptionDetected(t *testing.T) {
	cat := loadCatalog(t)
	srv := httptest.NewServer(Handler(cat))
	defer srv.Close()
	ctx := context.Background()
	client := &Client{BaseURL: srv.URL, CacheDir: t.TempDir()}
	digest := cat.BundleByCSV("flatpkg.v0.2.0").Digest
	if _, err := client.Fetch(ctx, digest); err != nil {
		t.Fatal(err)
	}
	file := client.cachePath(digest)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, bytes.Replace(data, []byte("Gadget"), []byte("Gidget"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if client.Cached(digest) {
		t.Error("a damaged cache entry counts as cached")
	}
	// With the server up, the damaged entry is replaced.
	if _, err := client.Fetch(ctx, digest); err != nil || !client.Cached(digest) {
		t.Errorf("refetch: %v", err)
	}
	// With the server down, the damage is reported.
	if err := os.WriteFile(file, []byte("not a tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := client.Fetch(ctx, digest); err == nil || !strings.Contains(err.Error(), "cached copy was unusable") {
		t.Errorf("err = %v", err)
	}
}

func TestHandler(t *testing.T) {
	cat := loadCatalog(t)
	h := Handler(cat)
	digest := cat.BundleByCSV("bundlepkg.v0.1.0").Digest
	tests := []struct {
		name, method, path, ifNoneMatch string
		status                          int
		etag                            string
	}{
		{"index", "GET", "/index.json", "", 200, cat.Digest},
		{"index unchanged", "GET", "/index.json", `"` + cat.Digest + `"`, 304, cat.Digest},
		{"index other etag", "GET", "/index.json", `"sha256:00", W/"x"`, 200, cat.Digest},
		{"index star", "GET", "/index.json", "*", 304, cat.Digest},
		{"bundle", "GET", "/bundles/" + digest, "", 200, digest},
		{"bundle unchanged", "GET", "/bundles/" + digest, `"` + digest + `"`, 304, digest},
		{"unknown bundle", "GET", "/bundles/sha256:" + strings.Repeat("0", 64), "", 404, ""},
		{"bad digest", "GET", "/bundles/sha256:xyz", "", 400, ""},
		{"traversal", "GET", "/bundles/..%2f..%2fetc%2fpasswd", "", 400, ""},
		{"upper-case hex", "GET", "/bundles/" + strings.ToUpper(digest), "", 400, ""},
		{"post", "POST", "/index.json", "", 405, ""},
		{"other path", "GET", "/etc/passwd", "", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.ifNoneMatch != "" {
				req.Header.Set("If-None-Match", tt.ifNoneMatch)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.etag != "" && rec.Header().Get("ETag") != `"`+tt.etag+`"` {
				t.Errorf("ETag %q, want %q", rec.Header().Get("ETag"), tt.etag)
			}
			if rec.Code == 200 && strings.HasPrefix(tt.path, "/bundles/") {
				files, err := verify(rec.Body.Bytes(), digest)
				if err != nil || len(files) != len(cat.BundleByDigest(digest).Files) {
					t.Errorf("archive: %v", err)
				}
			}
		})
	}
}

func TestHandlerReportsChangedCatalog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(dir, os.DirFS("../testdata/layouts")); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := cat.BundleByCSV("flatpkg.v0.1.0")
	if err := os.WriteFile(filepath.Join(dir, b.RelPath, b.Files[0]), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	Handler(cat).ServeHTTP(rec, httptest.NewRequest("GET", "/bundles/"+b.Digest, nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "does not match its digest") {
		t.Errorf("status %d: %s", rec.Code, rec.Body)
	}
}

func TestReadArchiveRejects(t *testing.T) {
	tests := []struct {
		name  string
		files []catalog.File
		err   string
	}{
		{"parent", []catalog.File{{Name: "../x", Data: nil}}, `archive entry "../x" is not a clean relative path`},
		{"absolute", []catalog.File{{Name: "/etc/x", Data: nil}}, `archive entry "/etc/x" is not a clean relative path`},
		{"unclean", []catalog.File{{Name: "a/./b", Data: nil}}, `archive entry "a/./b" is not a clean relative path`},
		{"duplicate", []catalog.File{{Name: "a"}, {Name: "a"}}, `archive entry "a" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeArchive(&buf, tt.files); err != nil {
				t.Fatal(err)
			}
			if _, err := readArchive(buf.Bytes()); err == nil || err.Error() != tt.err {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
	if _, err := verify([]byte("junk"), "sha256:"+strings.Repeat("0", 64)); err == nil {
		t.Error("junk accepted")
	}
	var buf bytes.Buffer
	_ = writeArchive(&buf, []catalog.File{{Name: "a", Data: []byte("x")}})
	if _, err := verify(buf.Bytes(), "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, catalog.ErrDigestMismatch) {
		t.Errorf("wrong digest: %v", err)
	}
}

func TestFetchRejectsBadDigest(t *testing.T) {
	client := &Client{BaseURL: "http://127.0.0.1:1", CacheDir: t.TempDir()}
	for _, d := range []string{"", "sha256:../../x", "md5:abc", "sha256:" + strings.Repeat("A", 64)} {
		if _, err := client.Fetch(context.Background(), d); err == nil || !strings.Contains(err.Error(), "invalid digest") {
			t.Errorf("%q: %v", d, err)
		}
	}
}
