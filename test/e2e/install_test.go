package e2e

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/render"
)

// checkInstalled asserts what a user relies on after an install: the CSV Succeeded, each
// Deployment Available, and RBAC that grants every rule of the CSV's permissions and
// clusterPermissions.
func checkInstalled(t *testing.T, ns, csvName string) *omv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: csvName}, csv); err != nil {
		t.Fatal(err)
	}
	if csv.Status.Phase != omv1alpha1.CSVSucceeded {
		t.Errorf("CSV %s phase %s: %s", csvName, csv.Status.Phase, csv.Status.Message)
	}
	strategy := csv.Spec.InstallStrategy.StrategySpec
	for _, d := range strategy.DeploymentSpecs {
		if err := deploymentAvailable(t, ns, d.Name); err != nil {
			t.Error(err)
		}
	}
	sel := client.MatchingLabels{render.LabelOwnerName: render.LabelValue(csvName), render.LabelOwnerNamespace: ns}
	roles, croles := &rbacv1.RoleList{}, &rbacv1.ClusterRoleList{}
	if err := k8s.List(ctx(), roles, client.InNamespace(ns), sel); err != nil {
		t.Fatal(err)
	}
	if err := k8s.List(ctx(), croles, sel); err != nil {
		t.Fatal(err)
	}
	var granted []rbacv1.PolicyRule
	for _, r := range roles.Items {
		granted = append(granted, r.Rules...)
	}
	var clusterGranted []rbacv1.PolicyRule
	for _, r := range croles.Items {
		clusterGranted = append(clusterGranted, r.Rules...)
	}
	contains := func(rules []rbacv1.PolicyRule, want rbacv1.PolicyRule) bool {
		for _, r := range rules {
			if equality.Semantic.DeepEqual(r, want) { // nil and empty lists alike
				return true
			}
		}
		return false
	}
	for _, p := range strategy.Permissions {
		for _, rule := range p.Rules {
			if !contains(granted, rule) && !contains(clusterGranted, rule) {
				t.Errorf("permission rule of %s not granted: %+v", p.ServiceAccountName, rule)
			}
		}
	}
	for _, p := range strategy.ClusterPermissions {
		for _, rule := range p.Rules {
			if !contains(clusterGranted, rule) {
				t.Errorf("clusterPermission rule of %s not granted: %+v", p.ServiceAccountName, rule)
			}
		}
	}
	return csv
}

// TestSampleOperatorLifecycle installs the project's own operator from its own catalog,
// including a bundle whose CRD is old-style v1beta1, checks the printed columns and the
// metrics, then uninstalls it with `option: delete` and checks that nothing of the operator
// remains while its CRD and custom resources do.
func TestSampleOperatorLifecycle(t *testing.T) {
	ns := "sample"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache-operator}
spec: {startingCSV: cache-operator.1.0.0, option: create, catalog: samples}
`)
	sub := waitReady(t, ns, "cache-operator", 2*time.Minute)
	if sub.Status.InstalledCSV != "cache-operator.v1.0.0" || sub.Status.InstalledVersion != "1.0.0" || sub.Status.Opstatus != "succeeded" {
		t.Errorf("status = %+v", sub.Status)
	}
	csv := checkInstalled(t, ns, "cache-operator.v1.0.0")
	if len(csv.Status.CRDRepairs) == 0 || !strings.Contains(strings.Join(csv.Status.CRDRepairs[0].Changes, " "), "v1beta1") {
		t.Errorf("the v1beta1 CRD's conversion is not recorded in the CSV status: %+v", csv.Status.CRDRepairs)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "caches.cache.samples.operator-manager.domain"}, crd); err != nil {
		t.Fatal(err)
	}

	wide := kubectl(t, "get", "blueprint", "-n", ns, "-o", "wide")
	for _, want := range []string{"PACKAGE", "CURRENT", "OLD", "PHASE", "cache-operator", "1.0.0", "Succeeded"} {
		if !strings.Contains(wide, want) {
			t.Errorf("kubectl get blueprint -o wide lacks %q:\n%s", want, wide)
		}
	}
	wide = kubectl(t, "get", "csv", "-n", ns, "-o", "wide")
	for _, want := range []string{"PACKAGE", "VERSION", "PHASE", "cache-operator.v1.0.0", "1.0.0", "Succeeded"} {
		if !strings.Contains(wide, want) {
			t.Errorf("kubectl get csv -o wide lacks %q:\n%s", want, wide)
		}
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`operator_manager_installed_info{csv="cache-operator.v1.0.0",namespace="sample",package="cache-operator",subscription="cache-operator",version="1.0.0"} 1`,
		`operator_manager_installs_total{outcome="Succeeded",package="cache-operator"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A custom resource made while the operator runs must outlive its uninstall.
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("cache.samples.operator-manager.domain/v1")
	cr.SetKind("Cache")
	cr.SetNamespace(ns)
	cr.SetName("keep-me")
	_ = unstructured.SetNestedField(cr.Object, int64(3), "spec", "size")
	if err := k8s.Create(ctx(), cr); err != nil {
		t.Fatal(err)
	}

	sub = getSub(t, ns, "cache-operator")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Option = omv1.OptionDelete
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "uninstall", func() bool {
		c := condition(getSub(t, ns, "cache-operator").Status.Conditions, omv1.ConditionInstalled)
		return c.Reason == omv1.ReasonUninstalled
	}, describeSub(t, ns, "cache-operator"))
	if left := ownedObjects(t, ns, "cache-operator.v1.0.0"); len(left) > 0 {
		t.Errorf("uninstall left objects behind: %v", left)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &omv1.Blueprint{}); err == nil {
		t.Error("the Blueprint remains after uninstall")
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator.v1.0.0"}, &omv1alpha1.ClusterServiceVersion{}); err == nil {
		t.Error("the CSV remains after uninstall")
	}
	if err := k8s.Get(ctx(), client.ObjectKeyFromObject(cr), cr.DeepCopy()); err != nil {
		t.Errorf("the custom resource did not survive the uninstall: %v", err)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: crd.Name}, crd); err != nil || !crd.DeletionTimestamp.IsZero() {
		t.Errorf("the CRD did not survive the uninstall: %v", err)
	}
	if sub := getSub(t, ns, "cache-operator"); sub.Status.Opstatus != "deleted" || sub.Status.InstalledCSV != "" {
		t.Errorf("after uninstall: %+v", sub.Status)
	}
}

// TestUnhealthyVersionEndsFailed: a version whose pods never become ready ends Failed
// within the Subscription's health timeout, and the conditions say which Deployment and why.
func TestUnhealthyVersionEndsFailed(t *testing.T) {
	ns := "broken"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache-operator}
spec: {startingCSV: cache-operator.1.3.0, catalog: samples, health: {timeout: 15s}}
`)
	eventually(t, 2*time.Minute, "Healthy False", func() bool {
		return condition(getSub(t, ns, "cache-operator").Status.Conditions, omv1.ConditionHealthy).Status == metav1.ConditionFalse &&
			condition(getSub(t, ns, "cache-operator").Status.Conditions, omv1.ConditionHealthy).Reason == omv1.ReasonHealthCheckFailed
	}, describeSub(t, ns, "cache-operator"))
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator.v1.3.0"}, csv); err != nil {
		t.Fatal(err)
	}
	if csv.Status.Phase != omv1alpha1.CSVFailed || !strings.Contains(csv.Status.Message, "deployment cache-operator") ||
		!strings.Contains(csv.Status.Message, "not ready") {
		t.Errorf("CSV phase %s reason %s message %q: want Failed naming the deployment and why", csv.Status.Phase, csv.Status.Reason, csv.Status.Message)
	}
	sub := getSub(t, ns, "cache-operator")
	for _, typ := range []string{omv1.ConditionHealthy, omv1.ConditionReady} {
		if c := condition(sub.Status.Conditions, typ); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "deployment cache-operator") {
			t.Errorf("Subscription condition %s = %+v", typ, c)
		}
	}
	if sub.Status.Opstatus != "failed" {
		t.Errorf("opstatus = %q", sub.Status.Opstatus)
	}
}

// TestManagerRestartDuringInstall kills the manager while an install is under way; the
// restarted manager finishes it, with no duplicate objects.
func TestManagerRestartDuringInstall(t *testing.T) {
	ns := "restart"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache-operator}
spec: {startingCSV: cache-operator.1.2.0, catalog: samples}
`)
	eventually(t, time.Minute, "install under way", func() bool {
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &omv1.Blueprint{}) == nil
	}, describeSub(t, ns, "cache-operator"))
	killManager(t)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "cache-operator", 2*time.Minute)
	checkInstalled(t, ns, "cache-operator.v1.2.0")
	got := ownedObjects(t, ns, "cache-operator.v1.2.0")
	// The sample supports AllNamespaces, so its permissions are granted cluster-wide too.
	// The Role and RoleBinding are those of the version's OperatorCondition.
	want := map[string]int{"Deployment": 1, "ServiceAccount": 1, "Service": 1, "ClusterRole": 2, "ClusterRoleBinding": 2,
		"Role": 1, "RoleBinding": 1, "OperatorCondition": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects after a restart = %v, want exactly %v", got, want)
	}
	csvs := &omv1alpha1.ClusterServiceVersionList{}
	if err := k8s.List(ctx(), csvs, client.InNamespace(ns)); err != nil || len(csvs.Items) != 1 {
		t.Errorf("CSVs after a restart: %d (%v)", len(csvs.Items), err)
	}
}

// TestDeleteWhileManagerDown: a Subscription deleted while the manager is down is still
// uninstalled completely when it comes back, because its finalizer held it.
func TestDeleteWhileManagerDown(t *testing.T) {
	ns := "down"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache-operator}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitReady(t, ns, "cache-operator", 2*time.Minute)
	if len(ownedObjects(t, ns, "cache-operator.v1.1.0")) == 0 {
		t.Fatal("nothing installed")
	}
	killManager(t)
	if err := k8s.Delete(ctx(), getSub(t, ns, "cache-operator")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &omv1.Subscription{}); err != nil {
		t.Fatalf("the Subscription went away without the manager: %v", err)
	}
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	waitUninstalled(t, ns, "cache-operator", "cache-operator.v1.1.0")
}
