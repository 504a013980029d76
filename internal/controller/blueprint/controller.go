// Package blueprint reconciles Blueprints: it carries a version change out. It fetches the
// bundle through the local cache, applies its CRDs (converted and repaired, never
// deleted), creates the CSV, follows the CSV to an outcome, retires older CSVs once the
// new one is Succeeded, and records each revision.
package blueprint

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/controller/finalizer"
)

// Reconciler carries Blueprints out.
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	Cache     *bundlecache.Cache
	Catalogs  *catalogsource.Store
	Clock     clock.PassiveClock
}

// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=blueprints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=blueprints/status;blueprints/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;update;patch;delete

// SetupWithManager registers the controller; it owns the CSVs it creates.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&omv1.Blueprint{}).
		Owns(&omv1alpha1.ClusterServiceVersion{}).
		Named("blueprint").
		Complete(r)
}

// scope carries one reconcile's gathered state.
type scope struct {
	bp     *omv1.Blueprint
	sub    *omv1.Subscription // nil when the Blueprint has no Subscription (made by hand)
	work   *omv1.Revision     // the revision being carried out
	now    time.Time
	result ctrl.Result
}

// Reconcile plans the next step from the spec and the history (Plan), carries a pending
// revision out or settles, prunes the history, and patches the status once at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	bp := &omv1.Blueprint{}
	if err := r.Client.Get(ctx, req.NamespacedName, bp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !bp.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, bp)
	}
	if err := finalizer.Ensure(ctx, r.Client, bp); err != nil {
		return ctrl.Result{}, err
	}
	orig := bp.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(orig.Status, bp.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, bp, client.MergeFrom(orig)); err != nil && retErr == nil {
			retErr = fmt.Errorf("patching status of Blueprint %s: %w", req, err)
		}
	}()
	s := &scope{bp: bp, now: r.Clock.Now()}
	if name := bp.Labels[omv1.LabelSubscription]; name != "" {
		sub := &omv1.Subscription{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: name}, sub); err == nil {
			s.sub = sub
		} else if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	d := Plan(bp, policyOf(s.sub))
	if d.Open != nil {
		r.open(s, d.Open)
		d.Work = latest(bp)
	}
	var err error
	if d.Work != nil {
		s.work = d.Work
		err = r.carryOut(ctx, s)
	} else {
		err = r.settle(ctx, s, d.Settled)
	}
	if err != nil {
		setReady(bp, metav1.ConditionFalse, "ReconcileError", err.Error())
		return ctrl.Result{}, err
	}
	if err := r.prune(s); err != nil {
		return ctrl.Result{}, err
	}
	bp.Status.ObservedGeneration = bp.Generation
	return s.result, nil
}

// policyOf reads the rollback policy of the Subscription (defaults: automatic rollback on,
// no retries, as the API defaults them).
func policyOf(sub *omv1.Subscription) Policy {
	p := Policy{AutoRollback: true}
	if sub != nil && sub.Spec.Rollback != nil {
		if sub.Spec.Rollback.Automatic != nil {
			p.AutoRollback = *sub.Spec.Rollback.Automatic
		}
		if sub.Spec.Rollback.Retries != nil {
			p.Retries = int(*sub.Spec.Rollback.Retries)
		}
	}
	p.ManualApproval = sub != nil && sub.Spec.Approval == omv1.ApprovalManual
	return p
}

func (r *Reconciler) event(bp *omv1.Blueprint, warning bool, reason, format string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(bp, nil, typ, reason, "VersionChange", format, args...)
}
