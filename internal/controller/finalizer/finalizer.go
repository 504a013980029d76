// Package finalizer holds the one finalizer step the controllers share.
package finalizer

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// Ensure adds operator-manager's finalizer to obj when it lacks it, so its deletion waits
// for the manager's cleanup even when the manager is down at that moment.
func Ensure(ctx context.Context, c client.Client, obj client.Object) error {
	if controllerutil.ContainsFinalizer(obj, omv1.Finalizer) {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.AddFinalizer(obj, omv1.Finalizer)
	if err := c.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("adding the finalizer to %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
