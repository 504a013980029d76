package csv

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOthersMemo(t *testing.T) {
	svc := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Service")
		u.SetName(name)
		return u
	}
	var o othersMemo
	if _, ok := o.get("sha256:a"); ok {
		t.Fatal("an empty memo has an entry")
	}
	o.put("sha256:none", nil)
	if objs, ok := o.get("sha256:none"); !ok || len(objs) != 0 {
		t.Fatalf("a bundle without other objects is remembered as such: %v %v", objs, ok)
	}
	kept := []*unstructured.Unstructured{svc("metrics")}
	o.put("sha256:a", kept)
	kept[0].SetName("changed after put")
	got, ok := o.get("sha256:a")
	if !ok || len(got) != 1 || got[0].GetName() != "metrics" {
		t.Fatalf("get = %v %v, want the Service as it was put", got, ok)
	}
	// Rendering sets owner references on what it is given: the memo must not see them.
	got[0].SetName("changed after get")
	if again, _ := o.get("sha256:a"); again[0].GetName() != "metrics" {
		t.Fatalf("a change to what get returned reached the memo: %s", again[0].GetName())
	}
	for i := range othersMemoSize {
		o.put(fmt.Sprintf("sha256:%d", i), nil)
	}
	if _, ok := o.get("sha256:none"); ok {
		t.Error("the oldest entry was kept past the bound")
	}
	if _, ok := o.get(fmt.Sprintf("sha256:%d", othersMemoSize-1)); !ok {
		t.Error("the newest entry was dropped")
	}
	if n := o.bundles.Len(); n != othersMemoSize {
		t.Errorf("memo holds %d entries, want %d", n, othersMemoSize)
	}
}
