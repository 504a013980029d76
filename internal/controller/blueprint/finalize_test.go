package blueprint

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// TestFinalizeAsksTheServer: a Blueprint being deleted keeps its finalizer while the
// server still holds one of its CSVs that the cache has not shown yet (created a moment
// before the uninstall was asked for), and deletes that CSV; with none left anywhere, the
// finalizer goes.
func TestFinalizeAsksTheServer(t *testing.T) {
	now := metav1.NewTime(time.Now())
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache", DeletionTimestamp: &now,
		Finalizers: []string{omv1.Finalizer}, Labels: map[string]string{omv1.LabelSubscription: "cache"}}}
	csv := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache-operator.v1.1.0",
		Labels: map[string]string{omv1.LabelSubscription: "cache"}}}
	for _, tc := range []struct {
		name          string
		onServer      bool // the CSV exists, but the cache has not seen it
		wantFinalizer bool
	}{
		{name: "a CSV only the server shows", onServer: true, wantFinalizer: true},
		{name: "no CSV anywhere", onServer: false, wantFinalizer: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{bp.DeepCopy()}
			if tc.onServer {
				objs = append(objs, csv.DeepCopy())
			}
			server := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
			// The cache lags: it lists no CSV yet. Everything else is the server's.
			cache := interceptor.NewClient(server, interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*omv1alpha1.ClusterServiceVersionList); ok {
						return nil
					}
					return c.List(ctx, list, opts...)
				}})
			r := &Reconciler{Client: cache, APIReader: server}
			got := &omv1.Blueprint{}
			if err := server.Get(context.Background(), client.ObjectKeyFromObject(bp), got); err != nil {
				t.Fatal(err)
			}
			res, err := r.finalize(context.Background(), got)
			if err != nil {
				t.Fatal(err)
			}
			after := &omv1.Blueprint{}
			err = server.Get(context.Background(), client.ObjectKeyFromObject(bp), after)
			kept := err == nil && len(after.Finalizers) > 0
			if kept != tc.wantFinalizer {
				t.Errorf("finalizer kept = %v (get: %v), want %v", kept, err, tc.wantFinalizer)
			}
			if tc.wantFinalizer && res.RequeueAfter == 0 {
				t.Error("no requeue while a CSV is left")
			}
			if tc.onServer {
				err := server.Get(context.Background(), client.ObjectKeyFromObject(csv), &omv1alpha1.ClusterServiceVersion{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("the CSV only the server showed was not deleted: %v", err)
				}
			}
		})
	}
}

// TestFinalizeLeavesAnotherBlueprintsCSVs: a Blueprint deleted by hand is made again under
// its name, and the new one's CSV has the same name and labels as the old one's. A pass on
// the old Blueprint (from a cache that still shows it) lets it go without deleting the new
// one's CSV, which would uninstall the operator the Subscription just installed again.
func TestFinalizeLeavesAnotherBlueprintsCSVs(t *testing.T) {
	now := metav1.NewTime(time.Now())
	old := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache", UID: "old", DeletionTimestamp: &now,
		Finalizers: []string{omv1.Finalizer}, Labels: map[string]string{omv1.LabelSubscription: "cache"}}}
	yes := true
	theirs := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache-operator.v1.1.0", UID: "csv",
		Labels:          map[string]string{omv1.LabelSubscription: "cache"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: omv1.GroupVersion.String(), Kind: "Blueprint", Name: "cache", UID: "new", Controller: &yes}}}}
	server := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(old.DeepCopy(), theirs.DeepCopy()).Build()
	r := &Reconciler{Client: server, APIReader: server}
	got := &omv1.Blueprint{}
	if err := server.Get(context.Background(), client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.finalize(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := server.Get(context.Background(), client.ObjectKeyFromObject(theirs), csv); err != nil || !csv.DeletionTimestamp.IsZero() {
		t.Errorf("the new Blueprint's CSV: %v, deleted at %v; want it untouched", err, csv.DeletionTimestamp)
	}
	after := &omv1.Blueprint{}
	if err := server.Get(context.Background(), client.ObjectKeyFromObject(old), after); err == nil && len(after.Finalizers) > 0 {
		t.Errorf("the old Blueprint kept its finalizer over a CSV not its own")
	}
}
