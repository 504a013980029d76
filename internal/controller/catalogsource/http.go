package catalogsource

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
)

// RemoteCacheSubdir is the directory under Reconciler.CacheDir that keeps the bundles of
// HTTP sources, one <sha256-hex>.tar per bundle. It is content-addressed and checked on
// every read, so all sources share it.
const RemoteCacheSubdir = "remote"

// httpTimeout bounds one request to a catalog server.
const httpTimeout = time.Minute

// httpSource is what the controller remembers of an HTTP source between polls: the
// index its catalog was built from, for the conditional request of the next poll.
type httpSource struct {
	url    string
	client *remote.Client
	index  *remote.Index
	// cat is the catalog built from index: the poll is conditional only while the
	// Store still holds it.
	cat *catalog.Catalog
}

// httpSources holds the httpSource of each CatalogSource.
type httpSources struct {
	mu      sync.Mutex
	sources map[types.NamespacedName]*httpSource
}

// get returns the state of a source, new when the source is new or its URL changed.
func (s *httpSources) get(key types.NamespacedName, url string, newClient func(string) *remote.Client) *httpSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sources == nil {
		s.sources = map[types.NamespacedName]*httpSource{}
	}
	src := s.sources[key]
	if src == nil || src.url != url {
		src = &httpSource{url: url, client: newClient(url)}
		s.sources[key] = src
	}
	return src
}

func (s *httpSources) loaded(src *httpSource, idx *remote.Index, cat *catalog.Catalog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src.index, src.cat = idx, cat
}

// previous returns the index to make the request conditional on, or nil.
func (s *httpSources) previous(src *httpSource, inStore *catalog.Catalog) *remote.Index {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inStore == nil || src.cat != inStore {
		return nil
	}
	return src.index
}

func (s *httpSources) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sources, key)
}

// remoteCacheDir is where the bundles of HTTP sources are kept.
func (r *Reconciler) remoteCacheDir() string {
	if r.CacheDir == "" {
		return filepath.Join(os.TempDir(), "operator-manager", RemoteCacheSubdir)
	}
	return filepath.Join(r.CacheDir, RemoteCacheSubdir)
}

func (r *Reconciler) newClient(url string) *remote.Client {
	hc := r.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: httpTimeout}
	}
	return &remote.Client{BaseURL: url, CacheDir: r.remoteCacheDir(), HTTP: hc}
}

// loadHTTP polls an HTTP source. The index request is conditional on the digest of the
// catalog in the Store, so an unchanged catalog costs one 304 and no rebuild; prev is
// then returned with changed false. Bundles are fetched only when a controller reads
// them (Catalog.Files), into the shared cache.
func (r *Reconciler) loadHTTP(ctx context.Context, key types.NamespacedName, url string, prev *catalog.Catalog) (*catalog.Catalog, bool, error) {
	src := r.remotes.get(key, url, r.newClient)
	previous := r.remotes.previous(src, prev)
	idx, err := src.client.Index(ctx, previous)
	if err != nil {
		return nil, false, fmt.Errorf("reading the catalog at %s: %w", url, err)
	}
	if previous != nil && idx.Digest == previous.Digest {
		return prev, false, nil
	}
	cat, err := src.client.Catalog(idx)
	if err != nil {
		return nil, false, err
	}
	r.remotes.loaded(src, idx, cat)
	return cat, true, nil
}
