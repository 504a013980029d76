package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

const sampleCatalog = "../../../samples/catalog"

// TestRemoteCatalog: the project's sample catalog served over HTTP resolves like the
// directory it came from, its bundles read through the cache, and a bundle read once is
// still readable with the server gone.
func TestRemoteCatalog(t *testing.T) {
	dir, err := catalog.Load(sampleCatalog, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(dir))
	defer srv.Close()
	client := &Client{BaseURL: srv.URL, CacheDir: filepath.Join(t.TempDir(), "cache")}
	cat, err := client.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cat.Digest != dir.Digest || len(cat.Packages()) != len(dir.Packages()) || len(cat.Bundles()) != len(dir.Bundles()) || len(cat.Bundles()) == 0 {
		t.Fatalf("remote catalog %s, directory %s", cat, dir)
	}

	// The lookups the Subscription and Blueprint controllers make.
	head, err := cat.Head("cache-operator", "")
	if err != nil || head.CSVName != "cache-operator.v1.3.0" {
		t.Fatalf("head: %v %v", head, err)
	}
	if b, err := cat.BundleByRef("cache-operator.1.2.0"); err != nil || b.CSVName != "cache-operator.v1.2.0" {
		t.Errorf("BundleByRef: %v %v", b, err)
	}
	next, err := cat.Successors("cache-operator", "stable", semver.MustParse("1.1.0"))
	if err != nil || len(next) != 1 || next[0].CSVName != "cache-operator.v1.2.0" {
		t.Errorf("successors of 1.1.0: %v %v", next, err)
	}
	backup := cat.BundleByCSV("backup-operator.v0.2.0")
	if backup == nil || len(backup.Dependencies) == 0 || !backup.Dependencies[0].Versions.Contains(semver.MustParse("1.2.0")) {
		t.Fatalf("backup-operator 0.2.0 and its dependency: %+v", backup)
	}
	if providers := cat.ProvidersOf(backup.RequiredCRDs[0].GVK()); len(providers) == 0 || providers[0].Package != "cache-operator" {
		t.Errorf("providers of %v: %v", backup.RequiredCRDs[0].GVK(), providers)
	}
	if p := cat.Package("backup-operator"); p == nil || len(p.Bundles) != 2 || p.Channels[0].Entries[0].Bundle == nil {
		t.Errorf("package backup-operator not linked: %+v", p)
	}

	b := cat.BundleByCSV("cache-operator.v1.2.0")
	if client.Cached(b.Digest) {
		t.Fatal("a bundle was fetched before it was read")
	}
	bc, err := cat.Content(b)
	if err != nil {
		t.Fatal(err)
	}
	if bc.CSV.Name != b.CSVName || len(bc.CRDs) != 1 || len(bc.Objects) != 1 || !client.Cached(b.Digest) {
		t.Fatalf("content: csv %s, %d CRDs, %d objects, cached %v", bc.CSV.Name, len(bc.CRDs), len(bc.Objects), client.Cached(b.Digest))
	}

	srv.Close()
	again, err := cat.Content(b)
	if err != nil {
		t.Fatalf("content from the cache with the server down: %v", err)
	}
	if again.CSV.Name != b.CSVName || len(again.CRDs) != 1 {
		t.Errorf("content from the cache: %s, %d CRDs", again.CSV.Name, len(again.CRDs))
	}
	never := cat.BundleByCSV("cache-operator.v1.0.0")
	if _, err := cat.Files(never); err == nil || !strings.Contains(err.Error(), "reading bundle cache-operator/cache-operator.v1.0.0") {
		t.Errorf("a bundle never fetched, with the server down: %v", err)
	}
}

// TestRemoteCatalogRefusesBadIndex: an index that does not hold together is refused with
// the server and the bundle named, not half used.
func TestRemoteCatalogRefusesBadIndex(t *testing.T) {
	dir, err := catalog.Load(sampleCatalog, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bundles := dir.Bundles()
	dup := *bundles[0]
	body, err := json.Marshal(Index{Digest: dir.Digest, Packages: dir.Packages(), Bundles: append(bundles[:len(bundles):len(bundles)], &dup)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()
	client := &Client{BaseURL: srv.URL, CacheDir: t.TempDir()}
	_, err = client.Load(context.Background())
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), `duplicate CSV name "`+dup.CSVName+`"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := client.Catalog(nil); err == nil {
		t.Error("nil index accepted")
	}
	if _, err := (&Client{BaseURL: "http://127.0.0.1:1"}).Load(context.Background()); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable server: %v", err)
	}
}

// TestRemoteCommunity: the real community catalog survives the trip through the index
// whole: same digest, packages, heads and lookups, and its bundles read through the cache.
func TestRemoteCommunity(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the community catalog")
	}
	dir, err := catalog.Load(catalogtest.CommunityPath(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(dir))
	defer srv.Close()
	client := &Client{BaseURL: srv.URL, CacheDir: t.TempDir()}
	cat, err := client.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cat.Digest != dir.Digest || len(cat.Packages()) != len(dir.Packages()) || len(cat.Bundles()) != len(dir.Bundles()) {
		t.Fatalf("remote %s, directory %s", cat, dir)
	}
	for _, p := range dir.Packages() {
		want, wantErr := dir.Head(p.Name, "")
		got, err := cat.Head(p.Name, "")
		if (wantErr == nil) != (err == nil) || (err == nil && got.CSVName != want.CSVName) {
			t.Errorf("%s: head %v %v, want %v %v", p.Name, got, err, want, wantErr)
		}
	}
	for i, b := range dir.Bundles() {
		rb := cat.BundleByCSV(b.CSVName)
		if rb == nil || rb.Digest != b.Digest || cat.Bundles()[i].CSVName != b.CSVName {
			t.Fatalf("bundle %s: %+v", b.Ref(), rb)
		}
		if i%40 != 0 {
			continue
		}
		_, wantErr := dir.Content(b)
		if _, err := cat.Content(rb); (err == nil) != (wantErr == nil) {
			t.Errorf("%s: content %v, from the directory %v", b.Ref(), err, wantErr)
		}
	}
}
