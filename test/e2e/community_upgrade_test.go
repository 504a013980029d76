package e2e

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestCommunityUpgradeChains upgrades etcd 0.9.0 -> 0.9.2 -> 0.9.4 and prometheus 0.14.0 ->
// 0.15.0 -> 0.22.2 from the shared community catalog, old v1beta1 CRDs and all: each step
// Succeeded with the old CSV gone, the history right, and custom resources made at the
// first version unchanged at the last.
func TestCommunityUpgradeChains(t *testing.T) {
	if communityDir() == "" {
		t.Skip("the shared community catalog is absent (../shared/catalogs/community-operators or $OPM_COMMUNITY_CATALOG)")
	}
	chains := []struct {
		ns, pkg string
		steps   []string // startingCSV suffixes
		csvs    []string
		cr      schema.GroupVersionKind
		spec    map[string]any
	}{
		{"etcd-chain", "etcd", []string{"0.9.0", "0.9.2", "0.9.4"}, []string{"etcdoperator.v0.9.0", "etcdoperator.v0.9.2", "etcdoperator.v0.9.4"},
			schema.GroupVersionKind{Group: "etcd.database.coreos.com", Version: "v1beta2", Kind: "EtcdCluster"},
			map[string]any{"size": int64(3), "version": "3.2.13"}},
		{"prometheus-chain", "prometheus", []string{"0.14.0", "0.15.0", "0.22.2"}, []string{"prometheusoperator.0.14.0", "prometheusoperator.0.15.0", "prometheusoperator.0.22.2"},
			schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"},
			map[string]any{"replicas": int64(2), "serviceAccountName": "prometheus"}},
	}
	for _, c := range chains {
		t.Run(c.pkg, func(t *testing.T) {
			newNamespace(t, c.ns)
			applyYAML(t, c.ns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: %s}
spec: {startingCSV: %s.%s}
`, c.pkg, c.pkg, c.steps[0]))
			waitRunning(t, c.ns, c.pkg, c.csvs[0])
			cr := &unstructured.Unstructured{Object: map[string]any{"spec": c.spec}}
			cr.SetGroupVersionKind(c.cr)
			cr.SetNamespace(c.ns)
			cr.SetName("example")
			if err := k8s.Create(ctx(), cr); err != nil {
				t.Fatal(err)
			}
			before := getCR(t, cr)
			for i := 1; i < len(c.steps); i++ {
				setStartingCSV(t, c.ns, c.pkg, c.pkg+"."+c.steps[i])
				bp := waitRunning(t, c.ns, c.pkg, c.csvs[i])
				if bp.Spec.OldVersion != c.csvs[i-1] {
					t.Errorf("oldVersion = %q, want %q", bp.Spec.OldVersion, c.csvs[i-1])
				}
				checkInstalled(t, c.ns, c.csvs[i])
				if left := ownedObjects(t, c.ns, c.csvs[i-1]); len(left) > 0 {
					t.Errorf("objects of %s left after the upgrade: %v", c.csvs[i-1], left)
				}
			}
			bp := getBlueprint(t, c.ns, c.pkg)
			want := fmt.Sprintf("1:%s:Install:Succeeded 2:%s:Upgrade:Succeeded 3:%s:Upgrade:Succeeded", c.csvs[0], c.csvs[1], c.csvs[2])
			if got := historyOf(bp); got != want {
				t.Errorf("history = %s\nwant      %s", got, want)
			}
			if bp.Status.Phase != omv1.BlueprintSucceeded {
				t.Errorf("phase %s", bp.Status.Phase)
			}
			after := getCR(t, cr)
			if after.GetUID() != before.GetUID() || fmt.Sprint(after.Object["spec"]) != fmt.Sprint(before.Object["spec"]) {
				t.Errorf("the %s changed across upgrades: %v -> %v", c.cr.Kind, before.Object["spec"], after.Object["spec"])
			}
		})
	}
}
