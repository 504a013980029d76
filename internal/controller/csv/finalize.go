package csv

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/finalizer"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/refusal"
	"github.com/operator-manager/operator-manager/internal/render"
)

// deleteLast are the kinds removed only once everything else of the installation is
// gone: its Deployments serve the webhooks and API services that are removed first, so
// the cluster is never left with a webhook pointing at nothing.
var deleteLast = map[string]bool{"Deployment": true}

// finalize removes, as the installation's identity, every object of the CSV's inventory
// that is still the CSV's (webhook configurations and the like first, Deployments last),
// then lets the CSV go. Objects a newer CSV took over carry its owner annotation and stay.
// CRDs are never in an inventory: custom resources outlive the operator.
func (r *Reconciler) finalize(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion) (ctrl.Result, error) {
	r.deep.forget(csv.UID)
	if !controllerutil.ContainsFinalizer(csv, omv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	id := identity.Effective(csv.Namespace, csv.Annotations[omv1.AnnotationServiceAccount], "")
	entries := csv.Status.Inventory
	if rendered, err := r.renderedEntries(ctx, csv); err != nil {
		// Never a reason to keep the CSV: the inventory is complete unless the manager
		// stopped between an apply and its record.
		ctrl.LoggerFrom(ctx).Info("uninstalling by the inventory alone: cannot render the CSV", "error", err.Error())
	} else {
		entries = union(rendered, entries) // each object once, as the inventory recorded it
	}
	var first, last []omv1alpha1.InventoryEntry
	for _, e := range entries {
		if deleteLast[e.Kind] {
			last = append(last, e)
		} else {
			first = append(first, e)
		}
	}
	remaining, err := r.deleteEntries(ctx, csv, id, first)
	if err == nil && remaining == 0 {
		remaining, err = r.deleteEntries(ctx, csv, id, last)
	}
	var refused *deleteRefused
	if errors.As(err, &refused) {
		// Said on the CSV's status, where the Blueprint and the Subscription read it, not
		// only in an event and the manager's log; tried again at a steady pace, since the
		// rights granted again are not watched.
		msg := fmt.Sprintf("%s; grant those rights again and the uninstall goes on (tried every %s), or remove the objects and this CSV's finalizer by hand", refused.msg, refusal.RetryAfter)
		r.sayDeleteFailed(ctx, csv, omv1.ReasonInsufficientPermissions, msg)
		return ctrl.Result{RequeueAfter: refusal.RetryAfter}, nil
	}
	if err != nil {
		if !refusal.Momentary(err) {
			// Said where the Subscription reads it too (a policy webhook down on DELETE
			// answers 500): before, the uninstall said "removing X" for as long as it
			// lasted. Retried with backoff; told once per wording.
			r.sayDeleteFailed(ctx, csv, omv1.ReasonReconcileError, fmt.Sprintf("%v (retried with backoff)", err))
		}
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		r.setDeleting(ctx, csv, "Deleting", "waiting for "+objects(remaining)+" to be removed")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if err := r.releaseConversions(ctx, csv, id); err != nil {
		return ctrl.Result{}, err
	}
	if removed, err := finalizer.Remove(ctx, r.Client, csv); err != nil {
		return ctrl.Result{}, err
	} else if !removed {
		// Gone already: a pass on a cache that still showed the finalizer, after the one
		// that removed it and said so; or changed since read, looked at again in a moment.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	r.event(csv, false, "Deleted", "Removed every object of %s", csv.Name)
	return ctrl.Result{}, nil
}

// renderedEntries names the objects the CSV renders to, as its apply would make them. The
// inventory records what an apply made in the status write after it; a manager stopped
// between the two (or whose write lost a conflict) leaves objects in the cluster that the
// inventory does not name, and an uninstall then would leave them behind, Deployments
// running and cluster-scoped RBAC granted. Only names matter here: webhook certificates
// are stand-ins, and nothing is written. Each entry is still deleted only if it carries
// this CSV as its owner.
func (r *Reconciler) renderedEntries(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion) ([]omv1alpha1.InventoryEntry, error) {
	if csv.Spec.DecodeError != "" {
		return nil, nil // never rendered, never applied
	}
	sub, err := r.subscriptionOf(ctx, csv)
	if err != nil {
		return nil, err
	}
	targets, err := targetsOf(csv, sub)
	if err != nil {
		return nil, nil // refused before any apply
	}
	others, err := r.otherObjects(ctx, csv)
	if err != nil {
		return nil, err
	}
	stand := []byte("stand-in")
	certs := map[string]render.ServingCert{}
	for _, dep := range render.ServingDeployments(&csv.Spec.ClusterServiceVersionSpec) {
		certs[dep] = render.ServingCert{CA: stand, Cert: stand, Key: stand}
	}
	objs, err := render.Render(renderInput(csv, sub, targets, others, certs))
	if err != nil {
		return nil, nil // refused before any apply
	}
	var out []omv1alpha1.InventoryEntry
	for _, o := range objs.InApplyOrder() {
		gvk, err := apiutil.GVKForObject(o, r.Client.Scheme())
		if err != nil {
			return nil, err
		}
		if gvk.Kind == "CustomResourceDefinition" {
			continue // custom resources outlive the operator
		}
		out = append(out, omv1alpha1.InventoryEntry{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return out, nil
}

// setDeleting shows the deletion in the CSV's phase, written once.
// sayDeleteFailed says in the CSV's Deleting phase why its objects cannot be removed, and
// tells it in a Warning event once per wording.
func (r *Reconciler) sayDeleteFailed(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, reason, message string) {
	if csv.Status.Reason != reason || csv.Status.Message != message {
		r.event(csv, true, "DeleteFailed", "Cannot remove what %s installed: %s", csv.Name, message)
	}
	r.setDeleting(ctx, csv, reason, message)
}

func (r *Reconciler) setDeleting(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, reason, message string) {
	// Progress (objects left) is said once; a refusal each time its words change.
	if csv.Status.Phase == omv1alpha1.CSVDeleting && csv.Status.Reason == reason && (reason == "Deleting" || csv.Status.Message == message) {
		return
	}
	patch := client.MergeFrom(csv.DeepCopy())
	csv.Status.Phase, csv.Status.Reason, csv.Status.Message = omv1alpha1.CSVDeleting, reason, message
	_ = r.Client.Status().Patch(ctx, csv, patch)
}

// deleteEntries deletes the entries that still belong to csv, as id, and returns how many
// still exist (deleted now or still terminating). An entry whose kind is no longer served
// is gone with its kind.
func (r *Reconciler) deleteEntries(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, id identity.Identity, entries []omv1alpha1.InventoryEntry) (int, error) {
	cl, err := r.Identities.For(id)
	if err != nil {
		return 0, err
	}
	reader, err := r.Identities.Reader(id)
	if err != nil {
		return 0, err
	}
	// Each entry is read, and deleted if still the CSV's, at once with the others (an
	// installation's objects do not depend on each other's removal; what must go last
	// comes in a later call): one after another, a retired version's ten objects took
	// longer than the rollback to it that waited for them.
	type outcome struct {
		exists  bool // still there: deleted now or terminating
		refusal string
		err     error
	}
	outcomes := make([]outcome, len(entries))
	inParallel(len(entries), func(i int) {
		exists, err := r.deleteEntry(ctx, csv, cl, reader, entries[i])
		if apierrors.IsForbidden(err) {
			outcomes[i] = outcome{exists: exists, refusal: err.Error()}
			return
		}
		outcomes[i] = outcome{exists: exists, err: err}
	})
	remaining := 0
	var refusals []string
	for _, o := range outcomes {
		if o.err != nil {
			return remaining, o.err
		}
		if o.exists {
			remaining++
		}
		if o.refusal != "" {
			refusals = append(refusals, o.refusal)
		}
	}
	if len(refusals) > 0 {
		more := ""
		if len(refusals) > 1 {
			more = fmt.Sprintf(" (and %d more objects)", len(refusals)-1) // the first says what is missing
		}
		return remaining, &deleteRefused{fmt.Sprintf("%s may not delete what it installed: %s%s", id, refusals[0], more)}
	}
	return remaining, nil
}

// deleteRefused: the installing identity may not remove what it installed (its
// RoleBinding or ServiceAccount gone). The manager does not remove it with its own
// rights, which a tenant's installation may exceed: the uninstall waits for a person.
type deleteRefused struct{ msg string }

func (e *deleteRefused) Error() string { return e.msg }

// deleteEntry deletes one entry of the inventory if it still belongs to csv, and says
// whether it still exists (deleted now or terminating). A refusal to delete it is
// returned as the API server's Forbidden.
func (r *Reconciler) deleteEntry(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, cl client.Client, reader client.Reader, e omv1alpha1.InventoryEntry) (bool, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(e.APIVersion, e.Kind))
	if err := reader.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		if apierrors.IsForbidden(err) && r.goneForManager(ctx, e) {
			// The identity may no longer read it, but there is nothing left to delete:
			// when a tenant's namespace is deleted, the namespace controller removes its
			// RoleBinding with the objects it installed, and the uninstall waited forever
			// for rights to delete what was gone, holding the namespace in Terminating
			// (found by hand).
			return false, nil
		}
		return false, fmt.Errorf("reading %s %s: %w", e.Kind, describeEntry(e), err)
	}
	if !ownedBy(obj, csv) {
		return false, nil // a newer version of the installation, or another one sharing it, took it over
	}
	if e.Namespace == "" {
		// A cluster-scoped object the bundle names itself (a ClusterRole among its
		// manifests) is shared by the installations of the package side by side: it
		// goes to one still using it, and goes away with the last.
		heir, err := r.sharer(ctx, csv, e)
		if err != nil {
			return false, err
		}
		if heir != nil {
			if err := handOver(ctx, cl, obj, heir); err != nil {
				return false, fmt.Errorf("handing %s %s over to %s/%s: %w", e.Kind, e.Name, heir.Namespace, heir.Name, err)
			}
			r.event(csv, false, "SharedObjectKept", "Kept %s %s: %s/%s installed it too and now owns it", e.Kind, e.Name, heir.Namespace, heir.Name)
			return false, nil
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		return true, nil
	}
	// Deleted only as read: a newer version of the installation may take the object
	// over (apply it with its own owner) between the read and the delete, and must
	// not lose it. A conflict is looked at again on the next pass.
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := cl.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return true, nil
	case apierrors.IsForbidden(err):
		return true, err
	}
	return true, fmt.Errorf("deleting %s %s: %w", e.Kind, describeEntry(e), err)
}

// goneForManager says whether the manager's own read finds the entry gone. Only its
// absence is trusted: a read the manager may not make either says nothing, and an object
// that is there is deleted only with the identity's rights (deleteRefused).
func (r *Reconciler) goneForManager(ctx context.Context, e omv1alpha1.InventoryEntry) bool {
	if r.APIReader == nil {
		return false
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(e.APIVersion, e.Kind))
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj)
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

// sharer is another live CSV of the same package whose inventory holds the same
// cluster-scoped object, or nil.
func (r *Reconciler) sharer(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, e omv1alpha1.InventoryEntry) (*omv1alpha1.ClusterServiceVersion, error) {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{omv1.LabelPackage: csv.Labels[omv1.LabelPackage]}); err != nil {
		return nil, err
	}
	group := schema.FromAPIVersionAndKind(e.APIVersion, e.Kind).Group
	for i := range list.Items {
		other := &list.Items[i]
		if (other.Namespace == csv.Namespace && other.Name == csv.Name) || !other.DeletionTimestamp.IsZero() {
			continue
		}
		for _, o := range other.Status.Inventory {
			if o.Namespace == "" && o.Kind == e.Kind && o.Name == e.Name && schema.FromAPIVersionAndKind(o.APIVersion, o.Kind).Group == group {
				return other, nil
			}
		}
	}
	return nil, nil
}

// handOver makes heir the owner of a shared object, as heir's own apply would have: its
// uninstall then removes it, when no one else shares it.
func handOver(ctx context.Context, cl client.Client, obj *metav1.PartialObjectMetadata, heir *omv1alpha1.ClusterServiceVersion) error {
	patch := client.MergeFrom(obj.DeepCopy())
	annotations, labels := obj.GetAnnotations(), obj.GetLabels()
	if annotations == nil {
		annotations = map[string]string{}
	}
	if labels == nil {
		labels = map[string]string{}
	}
	annotations[render.AnnotationOwner] = heir.Namespace + "/" + heir.Name
	labels[render.LabelOwnerName], labels[render.LabelOwnerNamespace] = render.LabelValue(heir.Name), heir.Namespace
	obj.SetAnnotations(annotations)
	obj.SetLabels(labels)
	return cl.Patch(ctx, obj, patch)
}
