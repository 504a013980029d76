package csv

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/render"
)

// ownedKinds are the kinds a CSV installs; with the kinds of the bundle's other objects
// they are what its deletion removes. CRDs are never among them: custom resources
// outlive the operator.
var ownedKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
}

// finalize removes every object still labelled as this CSV's, in every namespace, then
// lets the CSV go. Objects a newer CSV took over carry its labels and stay.
func (r *Reconciler) finalize(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(csv, omv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	if csv.Status.Phase != omv1alpha1.CSVDeleting {
		patch := client.MergeFrom(csv.DeepCopy())
		csv.Status.Phase, csv.Status.Reason, csv.Status.Message = omv1alpha1.CSVDeleting, "Deleting", "removing the objects this version installed"
		if err := r.Client.Status().Patch(ctx, csv, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	kinds := append([]schema.GroupVersionKind{}, ownedKinds...)
	if others, err := r.otherObjects(csv); err == nil {
		for _, o := range others {
			kinds = append(kinds, o.GroupVersionKind())
		}
	}
	sel := client.MatchingLabels{render.LabelOwnerName: render.LabelValue(csv.Name), render.LabelOwnerNamespace: render.LabelValue(csv.Namespace)}
	remaining := 0
	seen := map[schema.GroupVersionKind]bool{}
	for _, gvk := range kinds {
		if seen[gvk] {
			continue
		}
		seen[gvk] = true
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.Client.List(ctx, list, sel); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return ctrl.Result{}, fmt.Errorf("listing %s of CSV %s/%s: %w", gvk.Kind, csv.Namespace, csv.Name, err)
		}
		for i := range list.Items {
			remaining++
			if list.Items[i].GetDeletionTimestamp() != nil {
				continue
			}
			if err := r.Client.Delete(ctx, &list.Items[i], client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("deleting %s %s: %w", gvk.Kind, list.Items[i].GetName(), err)
			}
		}
	}
	if remaining > 0 {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	r.event(csv, false, "Deleted", "Removed every object of %s", csv.Name)
	patch := client.MergeFrom(csv.DeepCopy())
	controllerutil.RemoveFinalizer(csv, omv1.Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, csv, patch))
}
