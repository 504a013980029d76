package csv

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/render"
)

// ownerOf maps an installed object to its CSV by the owner annotation every rendered
// object carries ("namespace/csv"): cluster-scoped objects and objects in target
// namespaces cannot have the CSV as their owner reference.
func ownerOf(_ context.Context, obj client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(obj.GetAnnotations()[render.AnnotationOwner], "/")
	if !ok || ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
}

// csvsOfSubscription maps a Subscription to its CSVs: its config, target namespaces and
// service account shape what they render.
func (r *Reconciler) csvsOfSubscription(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{omv1.LabelSubscription: obj.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}
