package e2e

import (
	"strings"
	"testing"
	"time"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestSeedSubscriptions installs what the original operator-manager documented, from the
// shared community catalog (the e2e manager's default catalog), with its old v1beta1 CRDs:
// the seed's exact Subscription for prometheus 0.22.2, and etcd 0.9.4.
func TestSeedSubscriptions(t *testing.T) {
	if communityDir() == "" {
		t.Skip("the shared community catalog is absent (../shared/catalogs/community-operators or $OPM_COMMUNITY_CATALOG)")
	}
	ns := "seed"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: prometheus-subscription}
spec: {startingCSV: prometheus.0.22.2, option: create}
`)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: etcd}
spec: {startingCSV: etcd.0.9.4}
`)
	for name, csv := range map[string]string{"prometheus-subscription": "prometheusoperator.0.22.2", "etcd": "etcdoperator.v0.9.4"} {
		sub := waitReady(t, ns, name, 3*time.Minute)
		if sub.Status.InstalledCSV != csv {
			t.Errorf("%s installed %s, want %s", name, sub.Status.InstalledCSV, csv)
		}
		installed := checkInstalled(t, ns, csv)
		if len(installed.Status.CRDRepairs) == 0 {
			t.Errorf("%s: its v1beta1 CRDs were converted, but the CSV status records no change", csv)
		}
	}
	for _, args := range [][]string{{"get", "blueprint", "-n", ns, "-o", "wide"}, {"get", "csv", "-n", ns, "-o", "wide"}} {
		out := kubectl(t, args...)
		for _, want := range []string{"prometheus", "0.22.2", "etcd", "0.9.4", "Succeeded"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl %s lacks %q:\n%s", strings.Join(args, " "), want, out)
			}
		}
	}
	if c := condition(getSub(t, ns, "prometheus-subscription").Status.Conditions, omv1.ConditionResolved); !strings.Contains(c.Message, `startingCSV "prometheus.0.22.2" resolves to prometheusoperator.0.22.2`) {
		t.Errorf("Resolved = %+v", c)
	}
}
