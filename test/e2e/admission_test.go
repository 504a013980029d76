package e2e

import (
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
)

// policyAddsFinalizer reports whether the API server now adds the manager's finalizer to a
// Subscription as it is created (config.AdmissionAddsFinalizer: a server-side dry run).
func policyAddsFinalizer(t *testing.T) bool {
	t.Helper()
	applies, err := config.AdmissionAddsFinalizer(ctx(), k8s)
	if err != nil {
		t.Fatal(err)
	}
	return applies
}

// TestSubscriptionCreatedWithFinalizer: with config/admission installed (as the harness and
// config/default install it), a Subscription has the manager's finalizer from the request
// that creates it, even while the manager is down, so the manager writes nothing to add it
// and a delete made before the manager ever saw the Subscription still waits for it.
func TestSubscriptionCreatedWithFinalizer(t *testing.T) {
	ns := "admission"
	newNamespace(t, ns)
	killManager(t)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache-operator}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	if got := getSub(t, ns, "cache-operator").Finalizers; !slices.Equal(got, []string{omv1.Finalizer}) {
		t.Fatalf("a Subscription created while the manager is down has finalizers %q, want [%s] from the admission policy", got, omv1.Finalizer)
	}
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "cache-operator", 2*time.Minute)
	if err := k8s.Delete(ctx(), getSub(t, ns, "cache-operator")); err != nil {
		t.Fatal(err)
	}
	waitUninstalled(t, ns, "cache-operator", "cache-operator.v1.1.0")
}

// TestFinalizerWithoutAdmissionPolicy: on a cluster without config/admission (before
// Kubernetes 1.36, or left out), the manager adds the finalizer itself, and an uninstall
// is as complete.
func TestFinalizerWithoutAdmissionPolicy(t *testing.T) {
	ns := "no-admission"
	newNamespace(t, ns)
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "operator-manager-subscription-cleanup"}}
	if err := k8s.Delete(ctx(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := config.InstallAdmission(ctx(), k8s); err != nil {
			t.Errorf("putting config/admission back: %v", err)
		}
		if !policyAddsFinalizer(t) {
			t.Errorf("InstallAdmission returned, but a dry-run Subscription lacks the finalizer")
		}
	})
	eventuallyEvery(t, 30*time.Second, 200*time.Millisecond, "the admission policy no longer applies", func() bool {
		return !policyAddsFinalizer(t)
	}, func() string { return "a dry-run Subscription still gets the finalizer" })

	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-operator"},
		Spec: omv1.SubscriptionSpec{StartingCSV: "cache-operator.1.1.0", Catalog: "samples"}}
	if err := k8s.Create(ctx(), sub); err != nil {
		t.Fatal(err)
	}
	uninstallAtEnd(t, ns, sub.Name)
	if len(sub.Finalizers) != 0 {
		t.Fatalf("created with finalizers %q although the policy's binding is gone", sub.Finalizers)
	}
	waitReady(t, ns, "cache-operator", 2*time.Minute)
	if got := getSub(t, ns, "cache-operator").Finalizers; !slices.Equal(got, []string{omv1.Finalizer}) {
		t.Fatalf("without the admission policy the manager should add its finalizer; finalizers %q", got)
	}
	if err := k8s.Delete(ctx(), getSub(t, ns, "cache-operator")); err != nil {
		t.Fatal(err)
	}
	waitUninstalled(t, ns, "cache-operator", "cache-operator.v1.1.0")
}
