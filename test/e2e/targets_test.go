package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/csv"
)

// TestTargetNamespaceMissing: an operator told to watch a namespace that is not there
// installs all the same, says so, and is granted its rights there once the namespace is
// created; the namespace deleted under the running operator takes those rights with it
// and leaves the installation Succeeded, with no health gate for either. Before, the
// install waited for ever at "is new", and a watched namespace deleted left the
// installation in its health gate with a stale "retrying" message, the manager retrying
// every few seconds.
func TestTargetNamespaceMissing(t *testing.T) {
	ns, watched := "targets", "targets-watched"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [`+watched+`]}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	installed := func() metav1.Condition {
		return condition(getCSV(t, ns, "cache-operator.v1.1.0").Status.Conditions, csv.ConditionInstalled)
	}
	if c := installed(); c.Status != metav1.ConditionTrue || c.Reason != csv.ReasonTargetNamespacesMissing ||
		!strings.Contains(c.Message, "target namespace "+watched+" does not exist") {
		t.Errorf("CSV Installed = %+v, want True %s naming %s", c, csv.ReasonTargetNamespacesMissing, watched)
	}
	if !eventIn(t, ns, corev1.EventTypeWarning, csv.ReasonTargetNamespacesMissing, watched) {
		t.Errorf("no %s Warning naming %s", csv.ReasonTargetNamespacesMissing, watched)
	}
	if out, err := cli("status", "cache", "-n", ns); err != nil || !strings.Contains(out, watched+" (does not exist)") {
		t.Errorf("status does not say the watched namespace is missing: %v\n%s", err, out)
	}
	gate := getCSV(t, ns, "cache-operator.v1.1.0").Status.GateStartTime

	// Created: the operator's Role there, as for a namespace that was there all along.
	if err := k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: watched}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: watched}}) })
	granted := func() int {
		roles := &rbacv1.RoleList{}
		if err := k8s.List(ctx(), roles, client.InNamespace(watched), client.MatchingLabels{"operator-manager.domain/owner-namespace": ns}); err != nil {
			t.Fatal(err)
		}
		return len(roles.Items)
	}
	eventually(t, time.Minute, "the operator's Role in "+watched, func() bool {
		return granted() > 0 && installed().Reason == "Applied"
	}, describeSub(t, ns, "cache"))

	// Deleted: gone with it, the installation untouched.
	if err := k8s.Delete(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: watched}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, watched+" gone and the CSV saying so", func() bool {
		gone := apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Name: watched}, &corev1.Namespace{}))
		return gone && installed().Reason == csv.ReasonTargetNamespacesMissing
	}, describeSub(t, ns, "cache"))
	c := getCSV(t, ns, "cache-operator.v1.1.0")
	if c.Status.Phase != omv1alpha1.CSVSucceeded || !c.Status.GateStartTime.Equal(gate) {
		t.Errorf("CSV phase %s, gate started %v (was %v): a watched namespace coming and going is no change to the operator", c.Status.Phase, c.Status.GateStartTime, gate)
	}
	if eventIn(t, ns, "", "GateStarted", "") {
		t.Error("a health gate ran for a watched namespace coming or going")
	}
	sub := getSub(t, ns, "cache")
	if ready := condition(sub.Status.Conditions, omv1.ConditionReady); ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v after the watched namespace was deleted", ready)
	}
}

// eventIn says whether namespace ns holds an event of type typ ("" any) and reason whose
// message contains text.
func eventIn(t *testing.T, ns, typ, reason, text string) bool {
	t.Helper()
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if (typ == "" || e.Type == typ) && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}
