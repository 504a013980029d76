package catalogsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
)

// TestLoadHTTP: the poll step of an HTTP source on its own. The first poll builds the
// catalog; later ones are conditional and return the catalog in the Store untouched; a
// bundle read goes to the cache under CacheDir and then works with the server gone; a new
// URL starts afresh.
func TestLoadHTTP(t *testing.T) {
	cat, err := catalog.Load("../../../samples/catalog", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var conditional atomic.Int64
	h := remote.Handler(cat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			conditional.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "served"}
	r := &Reconciler{CacheDir: t.TempDir()}

	first, changed, err := r.loadHTTP(ctx, key, srv.URL, nil)
	if err != nil || !changed || first.Digest != cat.Digest || len(first.Bundles()) != 10 {
		t.Fatalf("first poll: %v, changed %v, %v", err, changed, first)
	}
	again, changed, err := r.loadHTTP(ctx, key, srv.URL, first)
	if err != nil || changed || again != first || conditional.Load() != 1 {
		t.Fatalf("unchanged poll: %v, changed %v, same %v, %d conditional requests", err, changed, again == first, conditional.Load())
	}
	// The Store holds another catalog (the source was a Directory meanwhile): no 304 then.
	other, changed, err := r.loadHTTP(ctx, key, srv.URL, cat)
	if err != nil || !changed || other == cat || conditional.Load() != 1 {
		t.Fatalf("poll with a foreign catalog in the Store: %v, changed %v, %d conditional", err, changed, conditional.Load())
	}

	b := other.BundleByCSV("cache-operator.v1.2.0")
	if _, err := other.Content(b); err != nil {
		t.Fatal(err)
	}
	cached := filepath.Join(r.CacheDir, RemoteCacheSubdir, strings.TrimPrefix(b.Digest, "sha256:")+".tar")
	if _, err := os.Stat(cached); err != nil {
		t.Errorf("bundle not cached under the cache dir: %v", err)
	}
	srv.Close()
	if _, err := other.Content(b); err != nil {
		t.Errorf("cached bundle with the server down: %v", err)
	}
	if _, _, err := r.loadHTTP(ctx, key, srv.URL, other); err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("poll with the server down: %v", err)
	}

	// Another URL: a fresh source, nothing conditional.
	srv2 := httptest.NewServer(remote.Handler(cat))
	defer srv2.Close()
	moved, changed, err := r.loadHTTP(ctx, key, srv2.URL, other)
	if err != nil || !changed || moved == other {
		t.Errorf("new URL: %v, changed %v", err, changed)
	}
	r.remotes.forget(key)
	if len(r.remotes.sources) != 0 {
		t.Error("forget kept the source")
	}
}
