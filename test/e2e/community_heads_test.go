package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/operator-manager/operator-manager/internal/controller/csv"
)

// TestCommunityHeadsInstall installs the default-channel heads of community packages that
// used to loop or never become ready, each in its own namespace:
//   - elastic-phenix-operator: v1beta1 CRDs with a conversion webhook whose caBundle is a
//     placeholder, which the API server refuses to establish (the single-version CRD gets
//     the None strategy, recorded);
//   - opentelemetry-operator: the CRD preflight listed custom resources through a REST
//     mapping that did not know a CRD the same revision had just applied;
//   - integrity-shield-operator: a ClusterRole in rbac.authorization.k8s.io/v1beta1, moved to
//     v1 and recorded;
//   - pystol: a Service and a ClusterRoleBinding written for a namespace "pystol", placed in
//     the installation's namespace as OLM places them.
func TestCommunityHeadsInstall(t *testing.T) {
	if communityDir() == "" {
		t.Skip("the shared community catalog is absent (../shared/catalogs/community-operators or $OPM_COMMUNITY_CATALOG)")
	}
	pkgs := []string{"elastic-phenix-operator", "opentelemetry-operator", "integrity-shield-operator", "pystol"}
	for _, pkg := range pkgs {
		ns := "head-" + pkg
		newNamespace(t, ns)
		applyYAML(t, ns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: %s}
spec: {package: %s}
`, pkg, pkg))
	}
	for _, pkg := range pkgs {
		sub := waitReady(t, "head-"+pkg, pkg, 3*time.Minute)
		t.Logf("%s: %s installed", pkg, sub.Status.InstalledCSV)
	}
	repairs := func(pkg string) string {
		sub := getSub(t, "head-"+pkg, pkg)
		return fmt.Sprint(getCSV(t, "head-"+pkg, sub.Status.InstalledCSV).Status.CRDRepairs)
	}
	if r := repairs("integrity-shield-operator"); !strings.Contains(r, csv.BundleObjectsRepairName) || !strings.Contains(r, "moved from rbac.authorization.k8s.io/v1beta1") {
		t.Errorf("integrity-shield-operator's CSV does not record the ClusterRole moved to v1: %s", r)
	}
	if r := repairs("elastic-phenix-operator"); !strings.Contains(r, "set the strategy to None") {
		t.Errorf("elastic-phenix-operator's CSV does not record the idle conversion webhook dropped: %s", r)
	}
}
