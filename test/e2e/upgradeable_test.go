package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// asServiceAccount is a client that acts as a ServiceAccount (impersonated by the test's
// administrator), to do what the operator's own pods would.
func asServiceAccount(t *testing.T, ns, name string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setOperatorCondition writes one condition of an OperatorCondition's spec.conditions (or
// spec.overrides) with c.
func setOperatorCondition(t *testing.T, c client.Client, ns, name string, overrides bool, cond metav1.Condition) {
	t.Helper()
	eventually(t, 30*time.Second, "OperatorCondition "+ns+"/"+name+" updated", func() bool {
		oc := &omv1.OperatorCondition{}
		if err := c.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, oc); err != nil {
			t.Logf("reading OperatorCondition %s/%s: %v", ns, name, err)
			return false
		}
		list := &oc.Spec.Conditions
		if overrides {
			list = &oc.Spec.Overrides
		}
		meta.SetStatusCondition(list, cond)
		if err := c.Update(ctx(), oc); err != nil {
			t.Logf("updating OperatorCondition %s/%s: %v", ns, name, err)
			return false
		}
		return true
	}, func() string { return "" })
}

// TestOperatorConditionHoldsUpgrade: an installed operator that says Upgradeable=False (as
// its own ServiceAccount, through the OperatorCondition the manager made for it) holds an
// upgrade with its reason shown in the Subscription and `operator-manager status`; turning
// it True lets the upgrade go. An administrator's override wins over the operator, and a
// rollback to an older version is never held.
func TestOperatorConditionHoldsUpgrade(t *testing.T) {
	ns := "held"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")

	// What the manager made for the operator: the object, its name in the pods' env.
	oc := &omv1.OperatorCondition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator.v1.1.0"}, oc); err != nil {
		t.Fatalf("no OperatorCondition for the installed CSV: %v", err)
	}
	dep := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, dep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		found = found || (e.Name == omv1.EnvOperatorConditionName && e.Value == "cache-operator.v1.1.0")
	}
	if !found {
		t.Errorf("the operator's container lacks %s: %v", omv1.EnvOperatorConditionName, dep.Spec.Template.Spec.Containers[0].Env)
	}

	// The operator (its ServiceAccount, not an administrator) says "not now".
	operator := asServiceAccount(t, ns, "cache-operator")
	setOperatorCondition(t, operator, ns, "cache-operator.v1.1.0", false, metav1.Condition{Type: omv1.OperatorConditionUpgradeable,
		Status: metav1.ConditionFalse, Reason: "MigrationRunning", Message: "a data migration is running"})
	// It may write only its own OperatorCondition.
	other := &omv1.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-else"}}
	if err := operator.Create(ctx(), other); !apierrors.IsForbidden(err) {
		t.Errorf("the operator's ServiceAccount created another OperatorCondition: %v", err)
	}

	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	want := []string{"cache-operator.v1.1.0 says it may not be upgraded now", "OperatorCondition cache-operator.v1.1.0",
		"MigrationRunning: a data migration is running", "cache-operator.v1.2.0 waits until it turns True"}
	eventually(t, time.Minute, "upgrade held", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionUpgradePending)
		return c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonOperatorNotUpgradeable
	}, describeSub(t, ns, "cache"))
	c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionUpgradePending)
	for _, w := range want {
		if !strings.Contains(c.Message, w) {
			t.Errorf("UpgradePending lacks %q: %s", w, c.Message)
		}
	}
	if bp := getBlueprint(t, ns, "cache"); bp.Status.Phase != omv1.BlueprintUpgradeHeld || len(bp.Status.History) != 1 {
		t.Errorf("Blueprint phase %s with %d revisions; want UpgradeHeld and nothing attempted", bp.Status.Phase, len(bp.Status.History))
	}
	out, err := cli("status", "cache", "-n", ns)
	if err != nil || !strings.Contains(out, "UpgradeHeld") || !strings.Contains(out, "MigrationRunning: a data migration is running") {
		t.Errorf("status does not show why the upgrade waits: %v\n%s", err, out)
	}
	// Held means nothing changed: the old version runs, healthy.
	time.Sleep(2 * time.Second)
	if img := containerImage(t, ns, "cache-operator"); !strings.HasSuffix(img, ":1.1.0") {
		t.Errorf("a held upgrade changed the Deployment to %s", img)
	}
	if c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionHealthy); c.Status != metav1.ConditionTrue {
		t.Errorf("the running version is reported unhealthy while held: %s %s", c.Reason, c.Message)
	}

	// The operator is ready again: the upgrade goes at once, without any other change.
	setOperatorCondition(t, operator, ns, "cache-operator.v1.1.0", false, metav1.Condition{Type: omv1.OperatorConditionUpgradeable,
		Status: metav1.ConditionTrue, Reason: "MigrationDone", Message: "ready"})
	bp := waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionUpgradePending); c != nil {
		t.Errorf("UpgradePending stays after the upgrade: %+v", c)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator.v1.1.0"}, &omv1.OperatorCondition{}); !apierrors.IsNotFound(err) {
		t.Errorf("the retired CSV's OperatorCondition is still there (%v)", err)
	}

	// 1.2.0 says "not now"; an administrator overrides it, and the upgrade goes.
	operator = asServiceAccount(t, ns, "cache-operator")
	setOperatorCondition(t, operator, ns, "cache-operator.v1.2.0", false, metav1.Condition{Type: omv1.OperatorConditionUpgradeable,
		Status: metav1.ConditionFalse, Reason: "Busy", Message: "busy"})
	// A rollback to an older version is not held.
	setStartingCSV(t, ns, "cache", "cache-operator.1.1.0")
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	setOperatorCondition(t, operator, ns, "cache-operator.v1.1.0", false, metav1.Condition{Type: omv1.OperatorConditionUpgradeable,
		Status: metav1.ConditionFalse, Reason: "Busy", Message: "busy"})
	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	eventually(t, time.Minute, "upgrade held again", func() bool {
		return getBlueprint(t, ns, "cache").Status.Phase == omv1.BlueprintUpgradeHeld
	}, describeSub(t, ns, "cache"))
	setOperatorCondition(t, k8s, ns, "cache-operator.v1.1.0", true, metav1.Condition{Type: omv1.OperatorConditionUpgradeable,
		Status: metav1.ConditionTrue, Reason: "AdministratorOverride", Message: "upgrade now"})
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
}
