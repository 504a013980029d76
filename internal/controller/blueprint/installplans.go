package blueprint

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/installplan"
)

// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=installplans,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=installplans/status,verbs=get;patch

// ownedPlans reads the Blueprint's InstallPlans (from the cache, once per reconcile, so a
// Blueprint without any costs no request) and, for a Manual Subscription (only its changes
// wait), picks the one of its current change, if one was made: its spec.approved approves
// the change. An object the Blueprint does not control approves nothing.
func (r *Reconciler) ownedPlans(ctx context.Context, s *scope, manual bool) error {
	list := &omv1alpha1.InstallPlanList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.bp.Namespace)); err != nil {
		return err
	}
	pending := installplan.Pending(s.bp)
	for i := range list.Items {
		if ip := &list.Items[i]; metav1.IsControlledBy(ip, s.bp) {
			s.plans = append(s.plans, ip)
			if manual && ip.Name == pending {
				s.plan = ip
			}
		}
	}
	return nil
}

// recordPlan names the InstallPlan of the change on a revision opened for it (a retry of
// the change too), so the plan can follow it to its outcome.
func recordPlan(s *scope, rev *omv1.Revision) {
	bp := s.bp
	if s.plan != nil && rev.Trigger != omv1.TriggerRollback && rev.CSVName == bp.Spec.ClusterServiceVersionName &&
		rev.Generation == bp.Spec.Generation {
		rev.InstallPlan = s.plan.Name
	}
}

// syncInstallPlans makes the InstallPlan of a change that waits for approval, and keeps
// each of the Blueprint's plans (read by ownedPlans) saying what became of its change
// (installplan.Decide): approved, installing, complete or failed, or deleted once its
// change is no longer wanted or remembered.
func (r *Reconciler) syncInstallPlans(ctx context.Context, s *scope) error {
	bp := s.bp
	want := ""
	if bp.Status.Phase == omv1.BlueprintWaitingForApproval {
		want = installplan.Pending(bp)
	}
	for _, ip := range s.plans {
		if ip.Name == want {
			want = ""
		}
		if err := r.applyPlan(ctx, ip, installplan.Decide(bp, ip)); err != nil {
			return err
		}
	}
	if want == "" {
		return nil
	}
	ip := &omv1alpha1.InstallPlan{
		ObjectMeta: metav1.ObjectMeta{Name: want, Namespace: bp.Namespace, Labels: map[string]string{}},
		Spec: omv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: installplan.CSVs(bp),
			Approval: string(omv1.ApprovalManual), Generation: bp.Spec.Generation},
	}
	for _, k := range []string{omv1.LabelSubscription, omv1.LabelPackage} {
		if v := bp.Labels[k]; v != "" {
			ip.Labels[k] = v
		}
	}
	if err := controllerutil.SetControllerReference(bp, ip, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, ip); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // made by an earlier pass the cache does not show yet; its event brings the Blueprint back
		}
		return fmt.Errorf("creating InstallPlan %s/%s: %w", ip.Namespace, ip.Name, err)
	}
	return r.applyPlan(ctx, ip, installplan.Decide(bp, ip))
}

// applyPlan writes what Decide said of one InstallPlan, and only what differs.
func (r *Reconciler) applyPlan(ctx context.Context, ip *omv1alpha1.InstallPlan, d installplan.Decision) error {
	if d.Delete {
		if err := r.Client.Delete(ctx, ip); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting InstallPlan %s/%s: %w", ip.Namespace, ip.Name, err)
		}
		return nil
	}
	if d.Approved && !ip.Spec.Approved {
		patch := client.MergeFrom(ip.DeepCopy())
		ip.Spec.Approved = true
		if err := r.Client.Patch(ctx, ip, patch); err != nil {
			return fmt.Errorf("marking InstallPlan %s/%s approved: %w", ip.Namespace, ip.Name, err)
		}
	}
	st := installplan.WithConditions(ip, d.Status, metav1.NewTime(r.Clock.Now()))
	if equality.Semantic.DeepEqual(ip.Status, st) {
		return nil
	}
	patch := client.MergeFrom(ip.DeepCopy())
	ip.Status = st
	if err := r.Client.Status().Patch(ctx, ip, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing the status of InstallPlan %s/%s: %w", ip.Namespace, ip.Name, err)
	}
	return nil
}
