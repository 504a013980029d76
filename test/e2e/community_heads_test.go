package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/controller/csv"
	"github.com/operator-manager/operator-manager/internal/render"
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
//     the installation's namespace as OLM places them;
//   - cloud-native-postgresql and opentelemetry-operator declare admission webhooks: they
//     are registered, each with the installation's CA.
func TestCommunityHeadsInstall(t *testing.T) {
	if communityDir() == "" {
		t.Skip("the shared community catalog is absent (../shared/catalogs/community-operators or $OPM_COMMUNITY_CATALOG)")
	}
	pkgs := []string{"elastic-phenix-operator", "opentelemetry-operator", "integrity-shield-operator", "pystol", "cloud-native-postgresql"}
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
	for _, pkg := range []string{"cloud-native-postgresql", "opentelemetry-operator"} {
		ns := "head-" + pkg
		vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
		if err := k8s.List(ctx(), vwcs, client.MatchingLabels{render.LabelOwnerNamespace: ns}); err != nil {
			t.Fatal(err)
		}
		mwcs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
		if err := k8s.List(ctx(), mwcs, client.MatchingLabels{render.LabelOwnerNamespace: ns}); err != nil {
			t.Fatal(err)
		}
		if len(vwcs.Items) == 0 || len(mwcs.Items) == 0 {
			t.Errorf("%s: %d validating and %d mutating webhook configurations registered, want both", pkg, len(vwcs.Items), len(mwcs.Items))
			continue
		}
		for _, w := range vwcs.Items {
			if len(w.Webhooks) != 1 || len(w.Webhooks[0].ClientConfig.CABundle) == 0 || w.Webhooks[0].ClientConfig.Service == nil ||
				w.Webhooks[0].ClientConfig.Service.Namespace != ns {
				t.Errorf("%s: webhook configuration %s does not call the installation's Service with its CA: %+v", pkg, w.Name, w.Webhooks)
			}
		}
		t.Logf("%s: %d validating and %d mutating webhook configurations", pkg, len(vwcs.Items), len(mwcs.Items))
	}
	if r := repairs("elastic-phenix-operator"); !strings.Contains(r, "set the strategy to None") {
		t.Errorf("elastic-phenix-operator's CSV does not record the idle conversion webhook dropped: %s", r)
	}
}
