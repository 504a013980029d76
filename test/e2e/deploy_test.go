package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/test/harness"
)

// monitoredBundle is a test-only operator whose bundle ships objects beyond core, apps and
// RBAC: a PodDisruptionBudget, a ConfigMap, a Secret, and (when the cluster serves the
// kind) a ServiceMonitor.
func monitoredBundle(withServiceMonitor bool) map[string]string {
	files := map[string]string{
		"monitored-operator/1.0.0/csv.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: monitored-operator.v1.0.0}
spec:
  displayName: Monitored Operator
  version: 1.0.0
  installModes: [{type: OwnNamespace, supported: true}]
  install:
    strategy: deployment
    spec:
      deployments:
      - name: monitored-operator
        spec:
          replicas: 1
          selector: {matchLabels: {app: monitored-operator}}
          template:
            metadata: {labels: {app: monitored-operator}}
            spec: {containers: [{name: manager, image: "registry.example/monitored-operator:1.0.0"}]}
`,
		"monitored-operator/1.0.0/pdb.yaml": `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: monitored-operator}
spec: {minAvailable: 1, selector: {matchLabels: {app: monitored-operator}}}
`,
		"monitored-operator/1.0.0/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: monitored-operator-config}
data: {level: info}
---
apiVersion: v1
kind: Secret
metadata: {name: monitored-operator-token}
stringData: {token: not-a-real-token}
`,
	}
	if withServiceMonitor {
		files["monitored-operator/1.0.0/servicemonitor.yaml"] = `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: monitored-operator}
spec:
  selector: {matchLabels: {app: monitored-operator}}
  endpoints: [{port: metrics}]
`
	}
	return files
}

// TestDeployedManagerInstallsAsItsServiceAccount: config/default applied as an
// administrator would (kubectl apply --server-side -k); then the manager binary runs with a
// token of the ServiceAccount that Deployment names (kwok's pods run no process) and,
// with only the RBAC deployed, installs the seed's prometheus.0.22.2 Subscription and a
// bundle with a ServiceMonitor, a PodDisruptionBudget, a ConfigMap and a Secret, and
// uninstalls the latter completely.
func TestDeployedManagerInstallsAsItsServiceAccount(t *testing.T) {
	kubectl(t, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(filepath.Dir(sampleDir), "..", "config", "default"))
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: config.ManagerNamespace, Name: "operator-manager"}, d); err != nil {
		t.Fatal(err)
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	kubeconfig := filepath.Join(work, "deployed.kubeconfig")
	if err := env.TokenKubeconfig(ctx(), d.Namespace, sa, kubeconfig); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil || strings.Contains(string(data), "client-certificate") {
		t.Fatalf("the kubeconfig of the deployed ServiceAccount holds a certificate or cannot be read: %v", err)
	}
	killManager(t)
	if err := startManagerWith(harness.Options{Args: []string{"--kubeconfig=" + kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		killManager(t)
		if err := startManager(); err != nil {
			t.Fatal(err)
		}
	}()

	ns := "deployed"
	newNamespace(t, ns)
	community := communityDir() != ""
	if community {
		applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: prometheus-subscription}
spec: {startingCSV: prometheus.0.22.2, option: create}
`)
		waitReady(t, ns, "prometheus-subscription", 3*time.Minute)
	} else {
		t.Log("the shared community catalog is absent: the seed's prometheus and the ServiceMonitor are skipped")
	}
	dir := writeCatalog(t, "monitored", monitoredBundle(community))
	cs := &unstructured.Unstructured{}
	cs.SetGroupVersionKind(schema.GroupVersionKind{Group: "operators.coreos.com.operator-manager.domain", Version: "v1", Kind: "CatalogSource"})
	cs.SetNamespace(ns)
	cs.SetName("monitored")
	_ = unstructured.SetNestedField(cs.Object, map[string]any{"sourceType": "Directory", "directory": dir}, "spec")
	if err := k8s.Create(ctx(), cs); err != nil {
		t.Fatal(err)
	}
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: monitored}
spec: {startingCSV: monitored-operator.1.0.0, catalog: monitored}
`)
	waitReady(t, ns, "monitored", 2*time.Minute)
	owner := client.MatchingLabels{render.LabelOwnerName: "monitored-operator.v1.0.0", render.LabelOwnerNamespace: ns}
	objs := map[string]client.Object{
		"PodDisruptionBudget": &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "monitored-operator", Namespace: ns}},
		"ConfigMap":           &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "monitored-operator-config", Namespace: ns}},
		"Secret":              &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "monitored-operator-token", Namespace: ns}},
	}
	if community {
		sm := &unstructured.Unstructured{}
		sm.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"})
		sm.SetNamespace(ns)
		sm.SetName("monitored-operator")
		objs["ServiceMonitor"] = sm
	}
	for kind, o := range objs {
		if err := k8s.Get(ctx(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("%s of the bundle: %v", kind, err)
			continue
		}
		for k, v := range owner {
			if o.GetLabels()[k] != v {
				t.Errorf("%s lacks the owner label %s=%s: %v", kind, k, v, o.GetLabels())
			}
		}
	}
	if out, err := cli("uninstall", "monitored", "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	for kind, o := range objs {
		if err := k8s.Get(ctx(), client.ObjectKeyFromObject(o), o); err == nil && o.GetDeletionTimestamp() == nil {
			t.Errorf("%s %s was left after the uninstall", kind, o.GetName())
		}
	}
	// And the manager had no right it did not need: it is not a cluster administrator.
	crb := &rbacv1.ClusterRoleBinding{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "operator-manager"}, crb); err != nil || crb.RoleRef.Name != "operator-manager" {
		t.Errorf("the deployed binding: %+v, %v", crb.RoleRef, err)
	}
}
