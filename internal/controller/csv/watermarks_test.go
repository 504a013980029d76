package csv

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWatermarks: a cached Deployment is trusted once it has seen this process's last
// apply of it (same object, that generation or later); the previous template's copy, or
// the copy of a Deployment since replaced, is not.
func TestWatermarks(t *testing.T) {
	dep := func(uid types.UID, gen int64) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op", UID: uid, Generation: gen}}
	}
	var w watermarks
	if !w.covers(dep("a", 1)) {
		t.Error("no apply by this process: the cache is trusted")
	}
	w.set("ns", "op", "a", 3)
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"older generation", dep("a", 2), false},
		{"the replaced object", dep("b", 7), false},
		{"caught up", dep("a", 3), true},
		{"mark dropped once caught up", dep("a", 1), true},
	} {
		if got := w.covers(tc.d); got != tc.want {
			t.Errorf("%s: covers = %v, want %v", tc.name, got, tc.want)
		}
	}
	w.set("ns", "op", "a", 4)
	if !w.covers(dep("a", 5)) {
		t.Error("a later generation (another writer's) has seen the apply too")
	}
}
