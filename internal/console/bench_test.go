package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// benchInstallations is how many installations the list benchmark holds: the issue asks
// for a console fast with hundreds.
const benchInstallations = 300

// seedFleet creates benchInstallations Subscriptions and Blueprints (with a status) in a
// namespace of their own, once per test binary.
func seedFleet(b *testing.B) string {
	b.Helper()
	const fleet = "console-bench"
	ctx := context.Background()
	list := &omv1.SubscriptionList{}
	if err := k8s.List(ctx, list, client.InNamespace(fleet)); err == nil && len(list.Items) == benchInstallations {
		return fleet
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleet}}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	for i := range benchInstallations {
		name := fmt.Sprintf("op-%03d", i)
		sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: fleet, Name: name},
			Spec: omv1.SubscriptionSpec{Option: omv1.OptionCreate, StartingCSV: "cache-operator.v1.2.0"}}
		if err := k8s.Create(ctx, sub); err != nil {
			b.Fatal(err)
		}
		bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: fleet, Name: name},
			Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "cache-operator.v1.2.0", Package: "cache-operator", Version: "1.2.0", Generation: 1}}
		if err := k8s.Create(ctx, bp); err != nil {
			b.Fatal(err)
		}
		bp.Status = omv1.BlueprintStatus{Phase: omv1.BlueprintSucceeded, CurrentCSV: "cache-operator.v1.2.0", CurrentVersion: "1.2.0",
			Conditions: []metav1.Condition{{Type: omv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "running", LastTransitionTime: metav1.Now()}}}
		if err := k8s.Status().Update(ctx, bp); err != nil {
			b.Fatal(err)
		}
	}
	return fleet
}

// BenchmarkInstallationsList: the installed list with benchInstallations installations,
// beside its floor, the two Lists it cannot do without (Subscriptions and Blueprints of the
// namespace) made directly, in the same process against the same API server.
func BenchmarkInstallationsList(b *testing.B) {
	fleet := seedFleet(b)
	ctx := context.Background()
	b.Run("floor-two-lists", func(b *testing.B) {
		for b.Loop() {
			if err := k8s.List(ctx, &omv1.SubscriptionList{}, client.InNamespace(fleet)); err != nil {
				b.Fatal(err)
			}
			if err := k8s.List(ctx, &omv1.BlueprintList{}, client.InNamespace(fleet)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("console", func(b *testing.B) {
		ts, _ := local(b)
		for b.Loop() {
			resp, err := http.Get(ts.URL + "/api/installations?namespace=" + fleet)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n < benchInstallations*50 {
				b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
			}
		}
	})
}
