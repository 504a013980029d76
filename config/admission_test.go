package config_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
)

// TestSubscriptionFinalizerAddedOnCreate: with config/admission installed, the API server
// adds the manager's finalizer to a Subscription inside the request that creates it, so
// the manager needs no write of its own for it; once, whatever finalizers the Subscription
// came with; and only on create, so the manager's removal of it at uninstall holds.
func TestSubscriptionFinalizerAddedOnCreate(t *testing.T) {
	names, err := config.InstallAdmission(ctx(t), k8s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mutatingadmissionpolicy/operator-manager-subscription-cleanup", "mutatingadmissionpolicybinding/operator-manager-subscription-cleanup"}
	if !slices.Equal(names, want) {
		t.Fatalf("InstallAdmission applied %q, want %q (this API server serves admission policies)", names, want)
	}
	// Again: server-side apply, so installing twice changes nothing and fails nothing.
	if again, err := config.InstallAdmission(ctx(t), k8s); err != nil || !slices.Equal(again, want) {
		t.Fatalf("a second InstallAdmission: %q, %v", again, err)
	}

	create := func(name string, finalizers []string) *omv1.Subscription {
		t.Helper()
		sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Finalizers: finalizers},
			Spec: omv1.SubscriptionSpec{Package: "cache-operator"}}
		if err := k8s.Create(ctx(t), sub); err != nil {
			t.Fatalf("creating Subscription %s: %v", name, err)
		}
		return sub // as the API server answered the create
	}
	// InstallAdmission returned once the API server applies the policy: the first
	// Subscription created after it has the finalizer.
	for _, tc := range []struct {
		name       string
		finalizers []string
		want       []string
	}{
		{"admission-none", nil, []string{omv1.Finalizer}},
		{"admission-other", []string{"example.com/keep"}, []string{"example.com/keep", omv1.Finalizer}},
		// Exported from another cluster with the finalizer on: not added twice.
		{"admission-already", []string{omv1.Finalizer}, []string{omv1.Finalizer}},
	} {
		if got := create(tc.name, tc.finalizers).Finalizers; !slices.Equal(got, tc.want) {
			t.Errorf("%s created with finalizers %q has %q, want %q", tc.name, tc.finalizers, got, tc.want)
		}
	}

	// Only on create: the manager removes the finalizer when the uninstall is done, and an
	// update must not put it back.
	sub := &omv1.Subscription{}
	if err := k8s.Get(ctx(t), client.ObjectKey{Namespace: "default", Name: "admission-none"}, sub); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Finalizers = nil
	if err := k8s.Patch(ctx(t), sub, patch); err != nil {
		t.Fatal(err)
	}
	if len(sub.Finalizers) != 0 {
		t.Errorf("an update that removes the finalizer leaves %q", sub.Finalizers)
	}
}
