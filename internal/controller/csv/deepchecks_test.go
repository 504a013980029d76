package csv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

func TestDeepChecks(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	type step struct {
		uid    types.UID
		at     time.Duration // after t0
		forget bool          // forget uid instead of asking
		due    bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first pass checks", []step{{uid: "a", due: true}}},
		{"once per period", []step{{uid: "a", due: true}, {uid: "a", at: time.Second}, {uid: "a", at: resyncAfterGate - time.Second}, {uid: "a", at: resyncAfterGate, due: true}}},
		{"each CSV on its own", []step{{uid: "a", due: true}, {uid: "b", at: time.Second, due: true}, {uid: "a", at: 2 * time.Second}}},
		{"a failed check is done again", []step{{uid: "a", due: true}, {uid: "a", forget: true}, {uid: "a", at: time.Second, due: true}, {uid: "a", at: 2 * time.Second}}},
		{"forgetting one leaves the others", []step{{uid: "a", due: true}, {uid: "b", due: true}, {uid: "a", forget: true}, {uid: "b", at: time.Second}}},
		// A clock set back must not hold the check off for the period plus the jump.
		{"a clock set back checks", []step{{uid: "a", at: time.Hour, due: true}, {uid: "a", due: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d deepChecks
			for i, s := range tc.steps {
				if s.forget {
					d.forget(s.uid)
					continue
				}
				if got := d.due(s.uid, t0.Add(s.at)); got != s.due {
					t.Errorf("step %d (%s at +%v): due %v, want %v", i, s.uid, s.at, got, s.due)
				}
			}
		})
	}
}

// TestDriftRetriesAFailedDeepCheck: the drift check of a kind that is not watched (a
// Secret) cut short by an error is done again on the next pass, not ten minutes later; a
// check that read everything is not repeated within the period.
func TestDriftRetriesAFailedDeepCheck(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "webhook-cert"}}
	server := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret).Build()
	reads, failing := 0, true
	reader := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			if failing {
				failing = false
				return apierrors.NewTooManyRequestsError("the API server is busy")
			}
			return c.Get(ctx, key, obj, opts...)
		}})
	r := &Reconciler{Client: server, Identities: &identity.Clients{Own: server, OwnReader: reader}}
	csv := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache-operator.v1.1.0", UID: "u1"}}
	csv.Status.Inventory = []omv1alpha1.InventoryEntry{{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "webhook-cert"}}
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	pass := func(at time.Duration) (*driftFinding, error) {
		return r.drift(context.Background(), &scope{csv: csv, id: identity.Manager, now: now.Add(at)})
	}
	if _, err := pass(0); err == nil {
		t.Fatal("the first pass's read failed, but drift returned no error")
	}
	if drift, err := pass(time.Second); err != nil || drift != nil || reads != 2 {
		t.Fatalf("the pass after a failed check: drift %v, error %v, %d reads in all; want no drift, no error, the Secret read again (2 reads)", drift, err, reads)
	}
	if _, err := pass(2 * time.Second); err != nil || reads != 2 {
		t.Fatalf("a pass within the period after a complete check: error %v, %d reads in all; want 2 (not read again)", err, reads)
	}
}
