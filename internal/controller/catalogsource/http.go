package catalogsource

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/operator-manager/operator-manager/internal/atomicfile"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
)

// RemoteCacheSubdir is the directory under Reconciler.CacheDir that keeps the bundles of
// HTTP sources, one <sha256-hex>.tar per bundle. It is content-addressed and checked on
// every read, so all sources share it.
const RemoteCacheSubdir = "remote"

// HTTPCatalogsSubdir is the directory under Reconciler.CacheDir that keeps, per HTTP
// source, the index its catalog was last built from (<namespace>/<name>/index.json), so
// that a manager restarting while the server is down has the catalog its Subscriptions
// were resolved from (onDisk); the bundles are in RemoteCacheSubdir.
const HTTPCatalogsSubdir = "http-catalogs"

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
	if err := r.keepIndex(key, idx); err != nil {
		// The catalog is loaded; only a restart while the server is down will miss it.
		log.FromContext(ctx).Error(err, "Keeping the catalog index on disk", "source", url)
	}
	return cat, true, nil
}

func (r *Reconciler) httpIndexFile(key types.NamespacedName) string {
	return filepath.Join(r.sourceRoot(HTTPCatalogsSubdir, key), "index.json")
}

// keepIndex writes the index a catalog was built from, replacing the one before at once
// (a rename), so a reader finds one whole index or the previous one.
func (r *Reconciler) keepIndex(key types.NamespacedName, idx *remote.Index) error {
	data, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	return atomicfile.Write(r.httpIndexFile(key), data, 0o644)
}

// keptIndex builds the catalog of HTTP source key from the index kept on disk, when its
// digest is digest; its bundles come from the shared cache, and from the server once it
// answers. It is remembered as loaded, so the next poll is conditional on it.
func (r *Reconciler) keptIndex(key types.NamespacedName, url, digest string) *catalog.Catalog {
	data, err := os.ReadFile(r.httpIndexFile(key))
	if err != nil {
		return nil
	}
	idx := &remote.Index{}
	if json.Unmarshal(data, idx) != nil || idx.Digest != digest {
		return nil
	}
	src := r.remotes.get(key, url, r.newClient)
	cat, err := src.client.Catalog(idx)
	if err != nil || cat.Digest != digest {
		return nil
	}
	r.remotes.loaded(src, idx, cat)
	return cat
}

// forgetHTTP drops what is kept of HTTP source key, in memory and on disk.
func (r *Reconciler) forgetHTTP(key types.NamespacedName) {
	r.remotes.forget(key)
	_ = os.RemoveAll(r.sourceRoot(HTTPCatalogsSubdir, key))
}
