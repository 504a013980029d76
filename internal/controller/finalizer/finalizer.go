// Package finalizer holds the finalizer steps the controllers share: adding it, and
// taking it off once the cleanup is done.
package finalizer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Remove takes operator-manager's finalizer off obj as it was read, once its cleanup is
// done, and says whether it did. The patch holds to obj's resourceVersion, so it reaches
// that object alone: a pass from a cache that still shows an object already let go would
// otherwise patch, by name, one made again since under the same name (a Blueprint the
// Subscription makes again, a CSV the Blueprint makes again, a Subscription applied again),
// taking its finalizer off and telling its end a second time (found in CI: a Blueprint
// deleted by hand, "BlueprintDeleted" told twice). false with no error: the object is gone
// or changed since it was read, and its caller looks again in a moment, saying nothing now.
func Remove(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	if !controllerutil.ContainsFinalizer(obj, omv1.Finalizer) {
		return false, nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, omv1.Finalizer)
	err := c.Patch(ctx, obj, patch)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing the finalizer of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}
