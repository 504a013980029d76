package v1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBlueprintDependsOn(t *testing.T) {
	bp := func(ns string, deps ...ResolvedDependency) *Blueprint {
		return &Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup"}, Spec: BlueprintSpec{Dependencies: deps}}
	}
	local := ResolvedDependency{Package: "cache-operator"}
	remote := ResolvedDependency{Package: "cache-operator", ServedFrom: "shared/cache"}
	for _, tc := range []struct {
		name         string
		bp           *Blueprint
		ns, sub, pkg string
		want         bool
	}{
		{"same namespace, by package", bp("a", local), "a", "cache", "cache-operator", true},
		{"same namespace, another package", bp("a", local), "a", "other", "other-operator", false},
		{"same namespace, package unknown", bp("a", local), "a", "cache", "", false},
		{"another namespace, by package alone", bp("b", local), "a", "cache", "cache-operator", false},
		{"another namespace, served from it", bp("b", remote), "shared", "cache", "cache-operator", true},
		{"another namespace, served from another", bp("b", remote), "other", "cache", "cache-operator", false},
		{"same package met elsewhere: not this namespace's", bp("shared2", remote), "shared2", "cache", "cache-operator", false},
		{"no dependencies", bp("a"), "a", "cache", "cache-operator", false},
	} {
		if got := tc.bp.DependsOn(tc.ns, tc.sub, tc.pkg); got != tc.want {
			t.Errorf("%s: DependsOn(%s, %s, %s) = %v, want %v", tc.name, tc.ns, tc.sub, tc.pkg, got, tc.want)
		}
	}
}
