// Package csv reconciles ClusterServiceVersions: it checks a CSV's requirements, applies
// what it installs (service accounts, RBAC, Deployments, the bundle's other objects) by
// server-side apply, and derives its phase from the real state of its Deployments and pods:
// Pending -> InstallReady -> Installing -> Succeeded, or Failed with a reason.
package csv

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/controller/finalizer"
)

// DefaultHealthTimeout applies when a CSV carries no health-timeout annotation.
const DefaultHealthTimeout = 5 * time.Minute

// pollWhileInstalling is how often an installing CSV looks at its pods, which are not
// watched (a cluster-wide pod cache would cost the manager more memory than it saves).
const pollWhileInstalling = 2 * time.Second

// Reconciler installs CSVs.
type Reconciler struct {
	Client client.Client
	// APIReader reads pods, ReplicaSets and CRDs directly: caching every pod and CRD of
	// the cluster would cost the manager far more memory than these few reads.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Cache     *bundlecache.Cache
	Clock     clock.PassiveClock
}

// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=clusterserviceversions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=clusterserviceversions/status;clusterserviceversions/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=subscriptions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts;services;configmaps;secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterroles;clusterrolebindings,verbs=get;list;watch;create;update;patch;delete;bind;escalate
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// SetupWithManager registers the controller; it owns the Deployments it creates.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&omv1alpha1.ClusterServiceVersion{}).
		Owns(&appsv1.Deployment{}).
		Named("clusterserviceversion").
		Complete(r)
}

// Reconcile runs the install steps for one CSV and patches its status once at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Get(ctx, req.NamespacedName, csv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !csv.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, csv)
	}
	if err := finalizer.Ensure(ctx, r.Client, csv); err != nil {
		return ctrl.Result{}, err
	}
	orig := csv.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(orig.Status, csv.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, csv, client.MergeFrom(orig)); err != nil && retErr == nil {
			retErr = fmt.Errorf("patching status of CSV %s: %w", req, err)
		}
	}()
	s := &scope{csv: csv, now: r.Clock.Now()}
	// Replacing: a newer CSV of the same Blueprint is taking over; leave its objects be.
	if csv.Status.Phase == omv1alpha1.CSVReplacing {
		return ctrl.Result{}, nil
	}
	for _, step := range []func(context.Context, *scope) (bool, error){r.requirements, r.install, r.judge} {
		done, err := step(ctx, s)
		if err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, err
		}
		if done {
			break
		}
	}
	r.setPhase(s)
	return s.result, nil
}

// scope carries what the steps of one reconcile gather and decide.
type scope struct {
	csv     *omv1alpha1.ClusterServiceVersion
	now     time.Time
	objects *renderedObjects
	phase   omv1alpha1.CSVPhase
	reason  string
	message string
	result  ctrl.Result
}

func (s *scope) decide(phase omv1alpha1.CSVPhase, reason, format string, args ...any) {
	s.phase, s.reason, s.message = phase, reason, fmt.Sprintf(format, args...)
}

func (r *Reconciler) event(csv *omv1alpha1.ClusterServiceVersion, warning bool, reason, format string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(csv, nil, typ, reason, "Install", format, args...)
}
