package blueprint

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

func TestContentCache(t *testing.T) {
	var c contentCache
	for i := range contentCacheSize + 3 {
		c.put(fmt.Sprint(i), &catalog.BundleContent{})
	}
	if n := c.bundles.Len(); n != contentCacheSize {
		t.Fatalf("%d entries, want at most %d", n, contentCacheSize)
	}
	if c.get("0") != nil || c.get(fmt.Sprint(contentCacheSize+2)) == nil {
		t.Error("the oldest entry is kept, or the newest is not")
	}
	c.forget("5")
	c.forget("never put")
	if c.get("5") != nil || c.bundles.Len() != contentCacheSize-1 {
		t.Errorf("after forget: %d entries, digest 5 kept: %v", c.bundles.Len(), c.get("5") != nil)
	}
}

// repairs is how many repaired CRDs are remembered for digest.
func repairs(c *contentCache, digest string) int {
	e, ok := c.bundles.Get(digest)
	if !ok {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.repaired)
}

func TestContentCacheRepair(t *testing.T) {
	crd := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.example.com"},
			"spec": map[string]any{
				"group": "example.com", "scope": "Namespaced",
				"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
	}
	var c contentCache
	// A bundle whose content is not kept: repaired, not remembered.
	if _, _, err := c.repair("gone", crd()); err != nil {
		t.Fatal(err)
	}
	c.put("gone", &catalog.BundleContent{})
	if repairs(&c, "gone") != 0 {
		t.Error("a CRD repaired while its bundle's content was not kept is remembered")
	}
	c.put("d1", &catalog.BundleContent{})
	first, _, err := c.repair("d1", crd())
	if err != nil {
		t.Fatal(err)
	}
	first.Annotations = map[string]string{"changed": "by the caller"}
	second, _, err := c.repair("d1", crd())
	if err != nil {
		t.Fatal(err)
	}
	if second == first || second.Annotations["changed"] != "" || second.Spec.Names.Kind != "Widget" {
		t.Errorf("the remembered repair is shared with, or changed by, its first caller: %+v", second.ObjectMeta)
	}
	if n := repairs(&c, "d1"); n != 1 {
		t.Errorf("repairs remembered for d1: %d, want 1", n)
	}
	c.forget("d1")
	if c.get("d1") != nil || repairs(&c, "d1") != 0 {
		t.Error("the content or repairs of a forgotten bundle are kept")
	}
}

func TestCRDWaits(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var c crdWaits
	if _, ok := c.get("uid/1", now); ok {
		t.Error("a revision never waiting is remembered")
	}
	next := &afterCRDs{crds: []string{"a.example.com", "b.example.com", "kept.example.com"}}
	c.set("uid/1", []string{"a.example.com", "b.example.com"}, next, now)
	if w, ok := c.get("uid/1", now.Add(time.Minute)); !ok || len(w.names) != 2 || w.next != next {
		t.Errorf("get = %+v, %v; want the two CRDs and what comes after them", w, ok)
	}
	if _, ok := c.get("uid/2", now); ok {
		t.Error("another revision of the Blueprint shares the entry")
	}
	if _, ok := c.get("uid/1", now.Add(crdWaitTTL+time.Second)); ok {
		t.Error("an entry older than crdWaitTTL is trusted")
	}
	c.set("uid/1", []string{"a.example.com"}, nil, now)
	c.forget("uid/1")
	if _, ok := c.get("uid/1", now); ok {
		t.Error("a forgotten entry is remembered")
	}
}
