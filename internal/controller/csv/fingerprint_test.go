package csv

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// TestFingerprintOfAggregatedClusterRole: the controller manager filling an aggregated
// role's rules is not drift, a change of what the manager applied is; a plain role's
// fingerprint stays its resourceVersion. The applied (unstructured) and cached (typed)
// copies of one role fingerprint alike.
func TestFingerprintOfAggregatedClusterRole(t *testing.T) {
	agg := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "x-admin", ResourceVersion: "10", Labels: map[string]string{"app": "x"}},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"x/aggregate-to-admin": "true"}}}},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(agg)
	if err != nil {
		t.Fatal(err)
	}
	applied := fingerprint("ClusterRole", &unstructured.Unstructured{Object: m})
	if got := fingerprint("ClusterRole", agg); got != applied {
		t.Errorf("typed %q and unstructured %q fingerprints of one role differ", got, applied)
	}
	aggregated := agg.DeepCopy()
	aggregated.ResourceVersion = "11"
	aggregated.Rules = []rbacv1.PolicyRule{{APIGroups: []string{"x"}, Resources: []string{"things"}, Verbs: []string{"*"}}}
	if got := fingerprint("ClusterRole", aggregated); got != applied {
		t.Errorf("rules filled by aggregation changed the fingerprint: %q, was %q", got, applied)
	}
	edited := agg.DeepCopy()
	edited.AggregationRule.ClusterRoleSelectors[0].MatchLabels = map[string]string{"y": "true"}
	if got := fingerprint("ClusterRole", edited); got == applied {
		t.Error("an edited aggregationRule is not drift")
	}
	plain := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader", ResourceVersion: "7"}}
	if got := fingerprint("ClusterRole", plain); got != "resourceVersion:7" {
		t.Errorf("plain role fingerprint = %q", got)
	}
}

// TestDriftRepaired: a drifted object counts as restored only when the apply that
// followed changed it; a change to fields the manager does not apply comes back as found.
func TestDriftRepaired(t *testing.T) {
	entry := func(fp string) omv1alpha1.InventoryEntry {
		return omv1alpha1.InventoryEntry{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "op", Fingerprint: fp}
	}
	other := omv1alpha1.InventoryEntry{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "ns", Name: "op", Fingerprint: "resourceVersion:9"}
	for _, tc := range []struct {
		name      string
		found     driftFinding
		inventory []omv1alpha1.InventoryEntry
		want      bool
	}{
		{"image changed by hand, put back: a new generation", driftFinding{entry: entry("generation:1"), how: "changed", live: "generation:2"},
			[]omv1alpha1.InventoryEntry{other, entry("generation:3")}, true},
		{"rollout restart: the apply changed nothing", driftFinding{entry: entry("generation:1"), how: "changed", live: "generation:2"},
			[]omv1alpha1.InventoryEntry{other, entry("generation:2")}, false},
		{"deleted, created again", driftFinding{entry: entry("generation:1"), how: "deleted"},
			[]omv1alpha1.InventoryEntry{entry("generation:1")}, true},
		{"not in the new inventory", driftFinding{entry: entry("generation:1"), how: "changed", live: "generation:2"},
			[]omv1alpha1.InventoryEntry{other}, true},
		{"not readable by the identity, applied: nothing known was restored", driftFinding{entry: other, how: "not readable by ServiceAccount ns/installer", unreadable: true},
			[]omv1alpha1.InventoryEntry{other}, false},
	} {
		if got := tc.found.repaired(tc.inventory); got != tc.want {
			t.Errorf("%s: repaired = %v, want %v", tc.name, got, tc.want)
		}
	}
}
