// Package csv reconciles ClusterServiceVersions: it checks a CSV's requirements, applies
// what it installs (service accounts, RBAC, Deployments, the bundle's other objects) by
// server-side apply as the installation's identity, keeps them as applied (drift is
// repaired), and derives its phase from the real state of its Deployments and pods:
// Pending -> InstallReady -> Installing -> Succeeded, or Failed with a reason; after its
// health gate a Succeeded CSV keeps being judged (Failed ComponentUnhealthy and back).
//
// It is the only writer of a CSV's status. The Blueprint controller asks it for things
// through annotations: which revision to carry out (the gate starts again when it
// changes) and whether to stand aside (desired phase Replacing).
package csv

import (
	"context"
	"fmt"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/backoff"
	"github.com/operator-manager/operator-manager/internal/bundles"
	"github.com/operator-manager/operator-manager/internal/controller/finalizer"
	"github.com/operator-manager/operator-manager/internal/crdready"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/refusal"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// DefaultHealthTimeout applies when a CSV carries no health-timeout annotation.
const DefaultHealthTimeout = 5 * time.Minute

// pollWhileInstalling is how often a CSV in its health gate looks at its pods, which are
// not watched (a cluster-wide pod cache would cost the manager more memory than it saves).
// Deployments are watched, so a rollout's progress arrives as events.
const pollWhileInstalling = 3 * time.Second

// resyncAfterGate is how often a CSV past its gate is looked at without an event: the
// deep drift check of kinds that are not watched (Secrets, ConfigMaps, the bundle's other
// objects). Reads only: nothing is written when nothing changed.
const resyncAfterGate = 10 * time.Minute

// Reconciler installs CSVs.
type Reconciler struct {
	// Client is the manager's cached client: CSVs, Subscriptions and the installed objects
	// it watches are read from its cache.
	Client client.Client
	// APIReader reads pods, ReplicaSets and CRDs directly: caching every pod and CRD of
	// the cluster would cost the manager far more memory than these few reads.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// CRDs remembers CRDs seen Established moments ago (shared by the Blueprint and CSV
	// controllers), so an installation's passes do not GET each CRD again; nil: always read.
	CRDs *crdready.Memo
	// Bundles holds the bundles (local cache, then the copy stored in the cluster), for
	// the bundle's other objects.
	Bundles *bundles.Source
	// Identities hands out the client of an installation's identity; every write of
	// installed objects goes through it.
	Identities *identity.Clients
	Clock      clock.PassiveClock
	// Workers is the number of CSVs reconciled at once.
	Workers int
	// MaxRetryDelay caps the backoff of a failed reconcile (zero: backoff.DefaultMaxDelay).
	MaxRetryDelay time.Duration

	// stale tells a reconcile whose cached CSV predates this process's last status write.
	stale statuswrite.Stale
	// status spaces the writes of progress alone (a Deployment's replica counts moving
	// while the phase and its reason stay), as for Subscriptions and Blueprints.
	status statuswrite.Throttle
	// applied tells the health check whether the cached copy of a Deployment has seen
	// this process's last apply of it.
	applied watermarks
	// others keeps the parsed other objects of recent bundles, by digest.
	others othersMemo
	// deep spaces the drift check of the kinds that are not watched.
	deep deepChecks
}

// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=clusterserviceversions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=clusterserviceversions/status;clusterserviceversions/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=subscriptions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts;services,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterroles;clusterrolebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;list;watch

// SetupWithManager registers the controller. It owns the Deployments it creates and
// watches the other objects it installs (by their owner annotation, which cluster-scoped
// objects need), so a deleted or edited object is put back at once; and the Subscriptions,
// whose config shapes the rendered objects.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	byOwner := handler.EnqueueRequestsFromMapFunc(ownerOf)
	return ctrl.NewControllerManagedBy(mgr).
		For(&omv1alpha1.ClusterServiceVersion{}).
		Owns(&appsv1.Deployment{}).
		Watches(&corev1.ServiceAccount{}, byOwner).
		Watches(&corev1.Service{}, byOwner).
		Watches(&rbacv1.Role{}, byOwner).
		Watches(&rbacv1.RoleBinding{}, byOwner).
		Watches(&rbacv1.ClusterRole{}, byOwner).
		Watches(&rbacv1.ClusterRoleBinding{}, byOwner).
		Watches(&admissionregistrationv1.ValidatingWebhookConfiguration{}, byOwner).
		Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, byOwner).
		// An owned APIService: its Available condition is part of the health, and one
		// deleted by hand would take the operator's API away.
		Watches(&apiregistrationv1.APIService{}, byOwner).
		Watches(&omv1.Subscription{}, handler.EnqueueRequestsFromMapFunc(r.csvsOfSubscription)).
		// Installations side by side that serve one CRD's conversion: when one comes or
		// goes, the others look again at which of them holds it.
		Watches(&omv1alpha1.ClusterServiceVersion{}, r.conversionPeersChanged()).
		// An OperatorGroup's targets are those of its namespace's Subscriptions that name none.
		Watches(&omv1.OperatorGroup{}, handler.EnqueueRequestsFromMapFunc(operatorgroup.InNamespace(r.Client,
			func() client.ObjectList { return &omv1alpha1.ClusterServiceVersionList{} }, client.HasLabels{omv1.LabelSubscription}))).
		// ... and so are the namespaces its selector selects: the operator is rendered again
		// when a namespace is labelled into or out of it.
		WatchesMetadata(&corev1.Namespace{}, operatorgroup.Namespaces(r.Client,
			func() client.ObjectList { return &omv1alpha1.ClusterServiceVersionList{} }, client.HasLabels{omv1.LabelSubscription})).
		WithOptions(backoff.Options(r.Workers, r.MaxRetryDelay)).
		Named("clusterserviceversion").
		Complete(r)
}

// Reconcile runs the install steps for one CSV and patches its status once at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Get(ctx, req.NamespacedName, csv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.stale.Is(string(csv.UID), csv.ResourceVersion, time.Now()) {
		// The cache has not shown this process's last status write yet; its watch event
		// brings the CSV back. Deciding from the older copy would apply everything again.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if !csv.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, csv)
	}
	if err := finalizer.Ensure(ctx, r.Client, csv); err != nil {
		return ctrl.Result{}, err
	}
	orig := csv.DeepCopy()
	var s *scope
	defer func() {
		if equality.Semantic.DeepEqual(orig.Status, csv.Status) {
			return
		}
		now := time.Now()
		if wait := r.status.Wait(csv.UID, progressOnly(orig.Status, csv.Status), now); wait > 0 {
			statuswrite.RequeueWithin(&result, wait)
			return
		}
		// Optimistic lock: the status holds the gate's state, and two workers or two
		// processes must never both write it from stale copies.
		err := r.Client.Status().Patch(ctx, csv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			r.status.Wrote(csv.UID, now)
			r.stale.Wrote(string(csv.UID), orig.ResourceVersion, csv.ResourceVersion, now)
			for _, f := range s.onWritten {
				f()
			}
		}
		switch {
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			result, retErr = ctrl.Result{RequeueAfter: time.Second}, nil
		case err != nil && retErr == nil:
			retErr = fmt.Errorf("patching status of CSV %s: %w", req, err)
		}
	}()
	s = &scope{csv: csv, now: r.Clock.Now()}
	if csv.Annotations[omv1.AnnotationDesiredPhase] == omv1.DesiredPhaseReplacing {
		// Another CSV of the same Blueprint is taking over (an upgrade, or a rollback to
		// an older one); leave its objects be.
		s.decide(omv1alpha1.CSVReplacing, "BeingReplaced", "another version of this installation is taking over")
		r.setPhase(s)
		return ctrl.Result{}, nil
	}
	r.startGateOnNewRevision(s)
	defer r.cutShort(s)
	for _, step := range []func(context.Context, *scope) (bool, error){r.requirements, r.build, r.apply, r.conversions, r.judge} {
		done, err := step(ctx, s)
		if err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			if st := &s.csv.Status; !refusal.Momentary(err) && !passedGate(st) && st.Phase != omv1alpha1.CSVFailed {
				// Retried with backoff, and said where the Blueprint reads its CSV: the
				// revision's progress (and its deadline's words, if it never goes
				// through) name the error, not "is new" for as long as it lasts. A
				// version that runs keeps its phase (its health is judged apart), and so
				// does a gate's failure verdict, which sticks.
				s.decide(omv1alpha1.CSVInstalling, omv1.ReasonReconcileError, "%v (retried with backoff)", err)
				r.setPhase(s)
			}
			return ctrl.Result{}, err
		}
		if done {
			break
		}
	}
	r.setPhase(s)
	if !s.renewCerts.IsZero() {
		// Capped, so a clock change or a long-lived process never misses the rotation.
		statuswrite.RequeueWithin(&s.result, min(max(s.renewCerts.Sub(s.now), time.Second), 24*time.Hour))
	}
	return s.result, nil
}

// scope carries what the steps of one reconcile gather and decide.
type scope struct {
	// onWritten runs once the status is written: the events and counts of a phase change.
	onWritten []func()
	csv       *omv1alpha1.ClusterServiceVersion
	now       time.Time
	sub       *omv1.Subscription // nil for a CSV without one
	id        identity.Identity
	objects   []client.Object // rendered, in apply order
	deploys   []*appsv1.Deployment
	// apiServices are the CSV's owned APIServices, whose availability is part of its health.
	apiServices []string
	// conversions are the CRDs whose conversion webhook this CSV's operator serves.
	conversions []render.CRDConversion
	// renewCerts is when the first serving certificate of the CSV falls due for
	// rotation: a reconcile is scheduled then, even if nothing else happens.
	renewCerts time.Time
	hash       string
	// absent are the target namespaces that do not exist (or are being deleted): the
	// objects rendered into them are left out until they do.
	absent  []string
	phase   omv1alpha1.CSVPhase
	reason  string
	message string
	result  ctrl.Result
	// newRevision: this pass starts a revision (a new CSV, a rollback to it, a retry).
	// Its objects are applied whole, whatever the last render recorded: another version
	// of the installation may have changed them since, and that is no change by hand.
	newRevision bool
	// appliedAll: this pass applied every object it renders, and recorded the render.
	appliedAll bool
}

func (s *scope) decide(phase omv1alpha1.CSVPhase, reason, format string, args ...any) {
	s.phase, s.reason, s.message = phase, reason, fmt.Sprintf(format, args...)
}

// passedGate reports whether the CSV proved itself healthy for its current revision and
// objects: from then on it is judged live (degraded is reported, not a failed install).
func passedGate(st *omv1alpha1.ClusterServiceVersionStatus) bool {
	return st.Phase == omv1alpha1.CSVSucceeded || (st.Phase == omv1alpha1.CSVFailed && st.Reason == ReasonComponentUnhealthy)
}

// startGateOnNewRevision starts the health gate again when the Blueprint asks the CSV to
// carry out another revision (a rollback to it, a retry) or the CSV is new.
func (r *Reconciler) startGateOnNewRevision(s *scope) {
	want, _ := strconv.ParseInt(s.csv.Annotations[omv1.AnnotationRevision], 10, 64)
	st := &s.csv.Status
	if st.GateStartTime != nil && (want == 0 || want == st.Revision) && st.Phase != omv1alpha1.CSVReplacing {
		return
	}
	r.startGate(s, fmt.Sprintf("revision %d", want))
	st.Revision = want
	s.newRevision = true
}

// cutShort makes the next pass's drift check look at every object, watched or not, when
// this pass started a revision and did not apply all its objects (a step failed, a
// requirement is not met yet). The pass that starts a revision applies everything,
// whatever the render recorded, since another version may have changed the objects; the
// next pass is no new revision, and applies only what it finds drifted. Before, it looked
// only at the watched kinds, and what another version had changed of the others waited
// for the periodic deep check. Not everything applied again: an object as the revision
// wants it is not written, so a rollback to a version whose objects were never changed
// goes through under a policy webhook that refuses every write.
func (r *Reconciler) cutShort(s *scope) {
	if s.newRevision && !s.appliedAll {
		r.deep.forget(s.csv.UID)
	}
}

// startGate begins a health gate now: the phase is decided afresh, and a failure verdict
// of an earlier gate no longer sticks.
func (r *Reconciler) startGate(s *scope, why string) {
	st := &s.csv.Status
	now := timePtr(s.now)
	st.GateStartTime = now
	if st.Phase != "" && st.Phase != omv1alpha1.CSVPending {
		// Told once the gate's start is written: a pass whose status write conflicts
		// (the Blueprint patching the CSV's annotations meanwhile) starts it again, and
		// told it twice (found by hand: a config and a health timeout changed together).
		s.onWritten = append(s.onWritten, func() { r.event(s.csv, false, "GateStarted", "Health gate started for %s", why) })
	}
	st.Phase, st.Reason, st.Message = "", "", ""
}

func (r *Reconciler) event(csv *omv1alpha1.ClusterServiceVersion, warning bool, reason, format string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(csv, nil, typ, reason, "Install", format, args...)
}
