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
	if len(c.repaired) != 0 {
		t.Error("a CRD of a bundle whose content is not kept is remembered")
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
	if len(c.repaired["d1"]) != 1 {
		t.Errorf("repairs remembered for d1: %d, want 1", len(c.repaired["d1"]))
	}
	c.forget("d1")
	if len(c.repaired) != 0 {
		t.Error("the repairs of a forgotten bundle are kept")
	}
}

func TestCRDWaits(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var c crdWaits
	if _, ok := c.get("uid/1", now); ok {
		t.Error("a revision never waiting is remembered")
	}
	c.set("uid/1", []string{"a.example.com", "b.example.com"}, now)
	if names, ok := c.get("uid/1", now.Add(time.Minute)); !ok || len(names) != 2 {
		t.Errorf("get = %v, %v; want the two CRDs", names, ok)
	}
	if _, ok := c.get("uid/2", now); ok {
		t.Error("another revision of the Blueprint shares the entry")
	}
	if _, ok := c.get("uid/1", now.Add(crdWaitTTL+time.Second)); ok {
		t.Error("an entry older than crdWaitTTL is trusted")
	}
	c.set("uid/1", []string{"a.example.com"}, now)
	c.forget("uid/1")
	if _, ok := c.get("uid/1", now); ok {
		t.Error("a forgotten entry is remembered")
	}
}
