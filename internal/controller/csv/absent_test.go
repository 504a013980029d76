package csv

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAbsentNamespaces: the objects of a target namespace that is not there are left out,
// the rest kept in order; a change of the absent namespaces alone is the same render (no
// health gate), any other change is not.
func TestAbsentNamespaces(t *testing.T) {
	obj := func(ns, name string) client.Object {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	objs := []client.Object{obj("own", "a"), obj("gone", "b"), obj("", "c"), obj("here", "d"), obj("gone", "e")}
	names := func(objs []client.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	if got := names(withoutNamespaces(slices.Clone(objs), []string{"gone"})); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Errorf("withoutNamespaces(gone) = %v, want [a c d]", got)
	}
	if got := names(withoutNamespaces(slices.Clone(objs), nil)); len(got) != len(objs) {
		t.Errorf("withoutNamespaces(none) = %v, want all", got)
	}

	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		{"nothing absent, same", "h1", "h1" + absentSuffix(nil), true},
		{"a namespace gone", "h1", "h1" + absentSuffix([]string{"w"}), true},
		{"a namespace back", "h1" + absentSuffix([]string{"w", "x"}), "h1" + absentSuffix([]string{"x"}), true},
		{"another render", "h1", "h2", false},
		{"another render and a namespace gone", "h1", "h2" + absentSuffix([]string{"w"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameRender(tc.a, tc.b); got != tc.same {
				t.Errorf("sameRender(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
			}
		})
	}

	c := appliedCondition(9, "the manager's own ServiceAccount", []string{"w"})
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonTargetNamespacesMissing ||
		c.Message != "9 objects applied as the manager's own ServiceAccount; target namespace w does not exist (or is being deleted): what the operator is granted there is applied when it is created (or remove it from the Subscription's targetNamespaces or its OperatorGroup's)" {
		t.Errorf("appliedCondition with w absent = %+v", c)
	}
	if c := appliedCondition(1, "x", nil); c.Message != "1 object applied as x" {
		t.Errorf("one object: %q", c.Message)
	}
	if c := appliedCondition(3, "x", nil); c.Reason != "Applied" || c.Message != "3 objects applied as x" {
		t.Errorf("appliedCondition = %+v", c)
	}
}
