package catalogsource

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// DefaultName is the CatalogSource the manager keeps for its --catalog directory.
// Subscriptions without spec.catalog use it.
const DefaultName = "default"

// ManagedByLabel marks objects the manager created itself.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// EnsureDefault makes the default CatalogSource point at dir. It creates it when absent and
// corrects its directory when it was made by the manager; one made by a person is left alone.
func EnsureDefault(ctx context.Context, c client.Client, namespace, dir string) error {
	cs := &omv1.CatalogSource{}
	key := client.ObjectKey{Namespace: namespace, Name: DefaultName}
	err := c.Get(ctx, key, cs)
	switch {
	case apierrors.IsNotFound(err):
		cs = &omv1.CatalogSource{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: namespace,
				Labels: map[string]string{ManagedByLabel: "operator-manager"}},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir, DisplayName: "Default catalog (--catalog)"},
		}
		if err := c.Create(ctx, cs); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the default CatalogSource %s: %w", key, err)
		}
		log.FromContext(ctx).Info("Created the default CatalogSource", "catalogSource", key, "directory", dir)
		return nil
	case err != nil:
		return fmt.Errorf("reading the default CatalogSource %s: %w", key, err)
	}
	if cs.Labels[ManagedByLabel] != "operator-manager" || (cs.Spec.SourceType == omv1.SourceDirectory && cs.Spec.Directory == dir) {
		return nil
	}
	patch := client.MergeFrom(cs.DeepCopy())
	cs.Spec.SourceType, cs.Spec.Directory, cs.Spec.URL = omv1.SourceDirectory, dir, ""
	if err := c.Patch(ctx, cs, patch); err != nil {
		return fmt.Errorf("pointing the default CatalogSource %s at %s: %w", key, dir, err)
	}
	return nil
}

// keepDefault creates the default CatalogSource again once it is deleted: every
// Subscription that names no catalog resolves in it, and "kept" means kept, not "made
// at start" (before, a deleted default stopped every such installation until the manager
// restarted). A namespace being deleted (the manager uninstalled) is left to go.
func (r *Reconciler) keepDefault(ctx context.Context, key types.NamespacedName) error {
	if r.DefaultDir == "" || key != (types.NamespacedName{Namespace: r.DefaultNamespace, Name: DefaultName}) {
		return nil
	}
	err := EnsureDefault(ctx, r.Client, r.DefaultNamespace, r.DefaultDir)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
