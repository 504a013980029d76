package catalogsource

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Store holds the loaded catalog of each CatalogSource, for the controllers that resolve
// against them. A catalog is immutable once loaded, so readers share it without copying.
type Store struct {
	mu       sync.RWMutex
	catalogs map[types.NamespacedName]*catalog.Catalog
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{catalogs: map[types.NamespacedName]*catalog.Catalog{}}
}

// StoreOf returns a store that holds the given catalogs, as if their CatalogSources had
// loaded them: for callers that load catalogs themselves (the resolution's unit tests).
func StoreOf(catalogs map[types.NamespacedName]*catalog.Catalog) *Store {
	s := NewStore()
	for k, c := range catalogs {
		s.catalogs[k] = c
	}
	return s
}

// Get returns the catalog of a CatalogSource, or nil when it is not loaded.
func (s *Store) Get(key types.NamespacedName) *catalog.Catalog {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.catalogs[key]
}

func (s *Store) set(key types.NamespacedName, c *catalog.Catalog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catalogs[key] = c
}

func (s *Store) delete(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.catalogs, key)
}
