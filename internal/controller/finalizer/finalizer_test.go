package finalizer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestRemove: the finalizer comes off the object as it was read, and only that one. A copy
// read before the object was let go and made again under its name removes nothing from
// the new one (a pass from a stale cache once took the finalizer off a Blueprint the
// Subscription had just made again, and told its end twice).
func TestRemove(t *testing.T) {
	ctx := context.Background()
	obj := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", Finalizers: []string{omv1.Finalizer}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(obj()).Build()
	read := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "x"}, read); err != nil {
		t.Fatal(err)
	}
	stale := read.DeepCopy()
	if removed, err := Remove(ctx, c, read); !removed || err != nil {
		t.Fatalf("Remove of the object as read: %v, %v; want true", removed, err)
	}
	now := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(read), now); err != nil || controllerutil.ContainsFinalizer(now, omv1.Finalizer) {
		t.Fatalf("after Remove: %v, finalizers %v; want none", err, now.Finalizers)
	}

	// Let go and made again under its name: the stale copy reaches nothing.
	if err := c.Delete(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, obj()); err != nil {
		t.Fatal(err)
	}
	if removed, err := Remove(ctx, c, stale); removed || err != nil {
		t.Fatalf("Remove from a copy older than the object: %v, %v; want false, nil", removed, err)
	}
	again := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stale), again); err != nil || !controllerutil.ContainsFinalizer(again, omv1.Finalizer) {
		t.Errorf("the object made again: %v, finalizers %v; want its finalizer kept", err, again.Finalizers)
	}

	// Gone: nothing to do, and no error.
	ghost := obj()
	ghost.Name, ghost.ResourceVersion = "ghost", "1"
	if removed, err := Remove(ctx, c, ghost); removed || err != nil {
		t.Errorf("Remove of an object gone: %v, %v; want false, nil", removed, err)
	}
}
