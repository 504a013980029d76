package blueprint

import (
	"sync"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// contentCache keeps the parsed content of the few bundles being worked on, by digest, so
// a bundle is read, hashed and parsed once per revision, not on every reconcile. Bundles
// are content-addressed: an entry never goes stale.
type contentCache struct {
	mu      sync.Mutex
	entries map[string]*catalog.BundleContent
	order   []string
}

// contentCacheSize is a few more than the default Blueprint workers: each entry holds a
// whole parsed bundle (CRD schemas as maps, its raw files), a MiB or more for large ones,
// and 64 of them were most of the manager's heap with 159 installations.
const contentCacheSize = 12

func (c *contentCache) get(digest string) *catalog.BundleContent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[digest]
}

// forget drops a bundle no revision is parsing any more.
func (c *contentCache) forget(digest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[digest]; !ok {
		return
	}
	delete(c.entries, digest)
	for i, d := range c.order {
		if d == digest {
			c.order = append(c.order[:i:i], c.order[i+1:]...)
			break
		}
	}
}

func (c *contentCache) put(digest string, content *catalog.BundleContent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*catalog.BundleContent{}
	}
	if _, ok := c.entries[digest]; ok {
		return
	}
	c.entries[digest] = content
	c.order = append(c.order, digest)
	if len(c.order) > contentCacheSize {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// preflightCache remembers CRD preflights that passed, keyed by the live CRD's name and
// resourceVersion and the digest of the CRD to apply: the same question is not asked (and
// every custom resource not listed) again on a requeue of the same revision. A changed
// live CRD has a new resourceVersion, and is checked again.
type preflightCache struct {
	mu     sync.Mutex
	passed map[string]bool
}

func (c *preflightCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.passed[key]
}

func (c *preflightCache) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.passed == nil || len(c.passed) > 4096 {
		c.passed = map[string]bool{}
	}
	c.passed[key] = true
}
