// Package kubeapply applies objects by server-side apply with operator-manager's single
// field owner, so every object the manager writes has one owner and repeated applies of
// the same content are no-ops on the server.
package kubeapply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/config"
)

// Apply server-side applies obj (typed with TypeMeta set, or unstructured), taking
// ownership of conflicting fields: the manager is the source of truth for what it applies.
func Apply(ctx context.Context, c client.Client, obj client.Object) error {
	_, err := ApplyAndGet(ctx, c, obj)
	return err
}

// ApplyAndGet is Apply returning the object as the API server stored it. A
// resourceVersion obj carries (a copy read from the cluster) is dropped: the apply is
// what the manager wants, whatever the object is now.
func ApplyAndGet(ctx context.Context, c client.Client, obj client.Object) (*unstructured.Unstructured, error) {
	return apply(ctx, c, obj, false)
}

// ApplyIfUnchanged is ApplyAndGet keeping obj's resourceVersion as a precondition: the API
// server refuses the apply with a Conflict when the object changed since that version
// was read (server-side apply checks it as an update does). For an apply that carries
// what a read found (another installation's provider records on a shared CRD), so that a
// write made since is not undone. An empty resourceVersion applies unconditionally.
func ApplyIfUnchanged(ctx context.Context, c client.Client, obj client.Object) (*unstructured.Unstructured, error) {
	return apply(ctx, c, obj, true)
}

func apply(ctx context.Context, c client.Client, obj client.Object, keepVersion bool) (*unstructured.Unstructured, error) {
	u, err := ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u.SetManagedFields(nil)
	if !keepVersion {
		u.SetResourceVersion("")
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(config.FieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("applying %s %s %s: %w", u.GetAPIVersion(), u.GetKind(), describe(u), err)
	}
	return u, nil
}

// ToUnstructured converts a typed object; it must carry its apiVersion and kind.
func ToUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("object %s has no apiVersion or kind", obj.GetName())
	}
	return u, nil
}

func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
