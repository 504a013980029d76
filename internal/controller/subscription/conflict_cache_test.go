package subscription

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/resolve"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// TestConflictBeforeFirstInstallReadsUncached: two Subscriptions of a package created in
// the same second, where the cache of cache-b's pass does not show cache-a yet. cache-a
// comes first (same second, smaller name), so cache-b must be refused; deciding from the
// cache alone lets both install. A narrow unit case of cache lag, which a real cache shows
// only by timing (e2e TestSecondSubscriptionOfAPackageRefused).
func TestConflictBeforeFirstInstallReadsUncached(t *testing.T) {
	cat, err := catalog.Load("../../../samples/catalog", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := catalogsource.StoreOf(map[types.NamespacedName]*catalog.Catalog{{Namespace: "twins", Name: "samples"}: cat})
	created := metav1.NewTime(time.Now().Truncate(time.Second))
	sub := func(name string) *omv1.Subscription {
		return &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "twins", Name: name, CreationTimestamp: created},
			Spec: omv1.SubscriptionSpec{StartingCSV: "cache-operator.1.1.0", Catalog: "samples"}}
	}
	a, b := sub("cache-a"), sub("cache-b")
	cached := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithIndex(&omv1.Subscription{}, IndexPackage, indexPackage).WithObjects(b.DeepCopy()).Build()
	api := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(a.DeepCopy(), b.DeepCopy()).Build()
	res := func(r *Reconciler) *resolution {
		got, err := r.resolve(b)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	for _, tc := range []struct {
		name      string
		apiReader client.Reader
		want      string
	}{
		{"the cache alone misses cache-a", nil, ""},
		{"read uncached before the first install", api, ReasonPackageConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Client: cached, APIReader: tc.apiReader, Catalogs: store}
			err := r.checkConflict(context.Background(), b, res(r).bundle)
			var re *resolve.Error
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected refusal: %v", err)
			case tc.want != "" && (!errors.As(err, &re) || re.Reason != tc.want):
				t.Fatalf("got %v, want a refusal %s naming cache-a", err, tc.want)
			}
		})
	}
}
