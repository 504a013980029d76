package blueprint

import (
	"fmt"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

func TestContentCache(t *testing.T) {
	var c contentCache
	for i := range contentCacheSize + 3 {
		c.put(fmt.Sprint(i), &catalog.BundleContent{})
	}
	if len(c.entries) != contentCacheSize || len(c.order) != contentCacheSize {
		t.Fatalf("%d entries, %d in order, want at most %d", len(c.entries), len(c.order), contentCacheSize)
	}
	if c.get("0") != nil || c.get(fmt.Sprint(contentCacheSize+2)) == nil {
		t.Error("the oldest entry is kept, or the newest is not")
	}
	c.forget("5")
	c.forget("never put")
	if c.get("5") != nil || len(c.entries) != contentCacheSize-1 || len(c.order) != contentCacheSize-1 {
		t.Errorf("after forget: %d entries, %d in order", len(c.entries), len(c.order))
	}
	for _, d := range c.order {
		if d == "5" {
			t.Error("a forgotten digest stays in the eviction order")
		}
	}
}
