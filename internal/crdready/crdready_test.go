package crdready

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func crd(name string, established bool, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: v != "v0"})
	}
	status := apiextensionsv1.ConditionFalse
	if established {
		status = apiextensionsv1.ConditionTrue
	}
	c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: status}}
	return c
}

func TestMemo(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	type ask struct {
		name, version string
		want          bool
	}
	for _, tc := range []struct {
		name  string
		steps func(m *Memo)
		after time.Duration
		asks  []ask
	}{
		{"never seen: read it", func(m *Memo) {}, 0, []ask{{"a.x", "", false}}},
		{"seen Established: ready at a served version, not at another or an unserved one",
			func(m *Memo) { m.Saw(crd("a.x", true, "v0", "v1")) }, time.Second,
			[]ask{{"a.x", "", true}, {"a.x", "v1", true}, {"a.x", "v2", false}, {"a.x", "v0", false}, {"b.x", "", false}}},
		{"seen not Established: read it", func(m *Memo) { m.Saw(crd("a.x", false, "v1")) }, 0, []ask{{"a.x", "v1", false}}},
		{"a later sighting not Established replaces a ready one",
			func(m *Memo) { m.Saw(crd("a.x", true, "v1")); m.Saw(crd("a.x", false, "v1")) }, 0, []ask{{"a.x", "v1", false}}},
		{"forgotten: read it", func(m *Memo) { m.Saw(crd("a.x", true, "v1")); m.Forget("a.x") }, 0, []ask{{"a.x", "v1", false}}},
		{"older than TTL: read it", func(m *Memo) { m.Saw(crd("a.x", true, "v1")) }, TTL + time.Second, []ask{{"a.x", "v1", false}}},
		{"at TTL: still trusted", func(m *Memo) { m.Saw(crd("a.x", true, "v1")) }, TTL, []ask{{"a.x", "v1", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now = time.Unix(1000, 0)
			m := &Memo{Now: clock}
			tc.steps(m)
			now = now.Add(tc.after)
			for _, a := range tc.asks {
				if got := m.Ready(a.name, a.version); got != a.want {
					t.Errorf("Ready(%q, %q) = %v, want %v", a.name, a.version, got, a.want)
				}
			}
		})
	}
}

// TestMemoNil: a nil memo remembers nothing, so a controller without one reads every time.
func TestMemoNil(t *testing.T) {
	var m *Memo
	m.Saw(crd("a.x", true, "v1"))
	m.Forget("a.x")
	if m.Ready("a.x", "") {
		t.Error("a nil memo answered ready")
	}
}

// TestMemoBounded: past maxEntries, expired sightings are dropped and fresh ones kept.
func TestMemoBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	m := &Memo{Now: func() time.Time { return now }}
	for i := range maxEntries {
		m.Saw(crd(fmt.Sprintf("old%d.x", i), true, "v1"))
	}
	now = now.Add(TTL + time.Second)
	m.Saw(crd("new.x", true, "v1"))
	if len(m.m) != 1 || !m.Ready("new.x", "v1") {
		t.Errorf("after expiry and one new sighting: %d entries, new ready %v", len(m.m), m.Ready("new.x", "v1"))
	}
}
