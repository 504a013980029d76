// Package blueprint reconciles Blueprints: it carries a version change out. It fetches the
// bundle (local cache, the copy stored in the cluster, or the catalog), checks that the
// installing identity may make every write, applies its CRDs (converted, repaired, checked
// by the preflight, never deleted), asks the CSV to carry the revision out, follows it to
// an outcome within the revision's deadline, retires older CSVs once the new one is
// Succeeded, records each revision, and keeps reporting the live health of what runs.
package blueprint

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/access"
	"github.com/operator-manager/operator-manager/internal/backoff"
	"github.com/operator-manager/operator-manager/internal/bundles"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/controller/finalizer"
	"github.com/operator-manager/operator-manager/internal/crdready"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/refusal"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
	"github.com/operator-manager/operator-manager/internal/upgradewindow"
)

// DefaultHealthTimeout is a revision's deadline when the Subscription sets none.
const DefaultHealthTimeout = 5 * time.Minute

// Reconciler carries Blueprints out.
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	// CRDs remembers CRDs seen Established moments ago (shared by the Blueprint and CSV
	// controllers), so an installation's passes do not GET each CRD again; nil: always read.
	CRDs *crdready.Memo
	// CRDCache is the schema-less cache of CRDs behind CRDs (crdready.NewCache), watched
	// for the installations each CRD names as providers; nil: CRDs are not watched.
	CRDCache cache.Cache
	// Bundles finds a revision's bundle: local cache, the copy in the cluster, the catalog.
	Bundles  *bundles.Source
	Catalogs *catalogsource.Store
	// Identities hands out the client of an installation's identity.
	Identities *identity.Clients
	// Access asks the API server what an identity may do.
	Access access.Checker
	// DefaultServiceAccount is used for Subscriptions that name none (--default-service-account).
	DefaultServiceAccount string
	Clock                 clock.PassiveClock
	// Workers is the number of Blueprints reconciled at once.
	Workers int
	// MaxRetryDelay caps the backoff of a failed reconcile (zero: backoff.DefaultMaxDelay).
	MaxRetryDelay time.Duration

	// status spaces out status writes that only report progress; stale tells a
	// reconcile whose cached Blueprint predates this process's last status write.
	status statuswrite.Throttle
	stale  statuswrite.Stale
	// children tells a reconcile whose cached CSV predates the CSV this process applied.
	children statuswrite.Stale

	contents contentCache
	checked  preflightCache
	crdWaits crdWaits
	// crdLocks hold a CRD from an installation's read of it to its write (nameLocks).
	crdLocks nameLocks
	// rechecks: when each blocked change (rights, CRD preflight) was last checked again;
	// its Interval, the longest recheck, bounds what it keeps.
	rechecks statuswrite.Throttle
	// refusals: the words of the refusal last told of each Blueprint (UID), so a refusal
	// is told once though its status write may be retried (a conflict) before it lands.
	refusals sync.Map
	// outdated: why a CRD of each Blueprint's running version (UID) that stands at an
	// older version of its package could not be brought up (outdatedFinding), until it
	// is checked again. An entry goes once the CRDs are brought up, or the Blueprint with
	// its finalizer.
	outdated sync.Map
}

// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=blueprints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=blueprints/status;blueprints/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=operatorconditions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews;selfsubjectaccessreviews,verbs=create

// SetupWithManager registers the controller. It owns the CSVs it creates, and looks again
// when its Subscription changes (health timeout, service account), which the CSV must hear.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	// The throttle forgets a write once its interval has passed; progressHold asks for up
	// to SummaryInterval.
	r.status.Interval = statuswrite.SummaryInterval
	r.rechecks.Interval = preflightRecheck
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.CRDCache != nil {
		// A CRD becoming Established (or changed) brings back the installations it
		// names as providers: the wait after applying CRDs is a watch, not a poll.
		b = b.WatchesRawSource(source.Kind(r.CRDCache, &apiextensionsv1.CustomResourceDefinition{},
			handler.TypedEnqueueRequestsFromMapFunc(providersOfCRD)))
	}
	return b.
		For(&omv1.Blueprint{}).
		Owns(&omv1alpha1.ClusterServiceVersion{}).
		// An InstallPlan approved with kubectl lets its change go at once.
		Owns(&omv1alpha1.InstallPlan{}).
		Watches(&omv1.Subscription{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
		})).
		// An operator that turns Upgradeable back to True releases its held upgrade at once.
		Watches(&omv1.OperatorCondition{}, handler.EnqueueRequestsFromMapFunc(r.blueprintsRunning)).
		// An OperatorGroup's targets and ServiceAccount are its namespace's Blueprints' too.
		Watches(&omv1.OperatorGroup{}, handler.EnqueueRequestsFromMapFunc(
			operatorgroup.InNamespace(r.Client, func() client.ObjectList { return &omv1.BlueprintList{} }))).
		WithOptions(backoff.Options(r.Workers, r.MaxRetryDelay)).
		Named("blueprint").
		Complete(r)
}

// scope carries one reconcile's gathered state.
type scope struct {
	bp     *omv1.Blueprint
	sub    *omv1.Subscription        // nil when the Blueprint has no Subscription (made by hand)
	id     identity.Identity         // who installs
	work   *omv1.Revision            // the revision being carried out
	hold   *Hold                     // what holds an upgrade: the operator's Upgradeable=False or closed windows
	plans  []*omv1alpha1.InstallPlan // the InstallPlans it controls
	plan   *omv1alpha1.InstallPlan   // the one of its current change, if one was made
	now    time.Time
	result ctrl.Result
	// mirrorsCSV: the Progressing words are the CSV's own for the revision (its rollout),
	// which the CSV's status shows live; the Blueprint repeats them as a summary.
	mirrorsCSV bool
	// probe: a copy of the scope for a check that must leave no trace (recheckBlocked): no
	// events are told from it.
	probe bool
}

// Reconcile plans the next step from the spec and the history (Plan), carries a pending
// revision out or settles, prunes the history, and patches the status once at the end,
// with an optimistic lock: the history is the state machine's state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	bp := &omv1.Blueprint{}
	if err := r.Client.Get(ctx, req.NamespacedName, bp); apierrors.IsNotFound(err) {
		// A CRD's record may name it (providersOfCRD): one left by an earlier version
		// of the manager, or by an uninstall that could not take it off, goes.
		return r.sweepRecords(ctx, req.NamespacedName)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if r.stale.Is(string(bp.UID), bp.ResourceVersion, time.Now()) {
		// The cache has not shown this process's last status write yet; its watch event
		// brings the Blueprint back.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if !bp.DeletionTimestamp.IsZero() {
		r.refusals.Delete(bp.UID)
		r.outdated.Delete(bp.UID)
		return r.finalize(ctx, bp)
	}
	if err := finalizer.Ensure(ctx, r.Client, bp); err != nil {
		return ctrl.Result{}, err
	}
	orig := bp.DeepCopy()
	s := &scope{bp: bp, now: r.Clock.Now()}
	defer func() {
		if retErr != nil && !refusal.Momentary(retErr) {
			// Retried with backoff, and said where a person and the Subscription look,
			// whichever step failed: a reconcile that keeps failing never reads as a
			// revision that only waits.
			setCondition(bp, omv1.ConditionReady, metav1.ConditionFalse, omv1.ReasonReconcileError, retErr.Error())
		}
		if equality.Semantic.DeepEqual(orig.Status, bp.Status) {
			return
		}
		now := time.Now()
		progressOnly := statuswrite.StatusProgressOnly(orig.Status, bp.Status, func(s *omv1.BlueprintStatus) *[]metav1.Condition { return &s.Conditions })
		if hold := progressHold(progressOnly, s.mirrorsCSV, orig.Status.Conditions, bp.Status.Conditions); hold > 0 {
			if wait := r.status.WaitSince(bp.UID, hold, now); wait > 0 {
				// Only the words of a step within the phase changed ("waiting for CRDs",
				// then "waiting for the CSV", then the CSV's rollout words).
				statuswrite.RequeueWithin(&result, wait)
				return
			}
		}
		err := r.Client.Status().Patch(ctx, bp, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			r.status.Wrote(bp.UID, now)
			r.stale.Wrote(string(bp.UID), orig.ResourceVersion, bp.ResourceVersion, now)
		}
		switch {
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// Someone wrote first: decide again from what they wrote.
			result, retErr = ctrl.Result{RequeueAfter: time.Second}, nil
		case err != nil && retErr == nil:
			retErr = fmt.Errorf("patching status of Blueprint %s: %w", req, err)
		}
	}()
	if name := bp.Labels[omv1.LabelSubscription]; name != "" {
		sub := &omv1.Subscription{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: name}, sub); err == nil {
			// The namespace's OperatorGroup gives what the Subscription does not say (its
			// targets, who installs). With several, nothing changes until one is left: the
			// Subscription says TooManyOperatorGroups.
			if err := operatorgroup.ApplyFrom(ctx, r.Client, sub); err != nil {
				return ctrl.Result{}, err
			}
			s.sub = sub
		} else if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	if name := bp.Labels[omv1.LabelSubscription]; s.sub == nil && name != "" && len(bp.Status.History) == 0 {
		// A Blueprint made before its Subscription (`import` makes them in that order)
		// installs nothing until the Subscription exists: it says who installs.
		setCondition(bp, omv1.ConditionReady, metav1.ConditionFalse, ReasonWaitingForSubscription,
			fmt.Sprintf("waiting for Subscription %s/%s, which says who installs (spec.serviceAccountName)", bp.Namespace, name))
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	if raw := bp.Annotations[omv1.AnnotationImportedHistory]; raw != "" && len(bp.Status.History) == 0 {
		// Made by `import`: the history starts with the revisions it retained where it ran
		// before, so `history` and `rollback --to-revision` reach them here too. Its own
		// first revision follows them, in the same status write.
		if imported, err := ImportedHistory(raw); err != nil {
			r.event(bp, true, ReasonImportedHistoryUnreadable, "%v; the history starts empty", err)
		} else {
			bp.Status.History = imported
		}
	}
	named := ""
	if s.sub != nil {
		named = s.sub.Spec.ServiceAccountName
	}
	s.id = identity.Effective(bp.Namespace, named, r.DefaultServiceAccount)
	policy := PolicyOf(s.sub)
	hold, err := r.upgradeHold(ctx, bp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if hold == nil {
		hold = r.windowHold(s)
	}
	policy.Hold, s.hold = hold, hold
	if err := r.ownedPlans(ctx, s, policy.ManualApproval); err != nil {
		return ctrl.Result{}, err
	}
	policy.Approved = s.plan != nil && s.plan.Spec.Approved
	if policy.Unblocked, err = r.recheckBlocked(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	d := Plan(bp, policy)
	if d.Open != nil {
		r.open(s, d.Open)
		d.Work = latest(bp)
	}
	if d.Work != nil {
		s.work = d.Work
		err = r.carryOut(ctx, s)
		if err == nil && s.work.Outcome == omv1.OutcomeFailed {
			// What follows a failure (a retry or a rollback) is opened in the same status
			// write, so no one watching sees a Failed that is not the outcome.
			if next := Plan(bp, policy); next.Open != nil {
				r.open(s, next.Open)
				s.work = latest(bp)
				r.progressWork(s)
			}
		}
	} else {
		err = r.settle(ctx, s, d.Settled)
	}
	if refusal.Is(err) {
		// A quota on Secrets, a policy on what may be created: for a person to mend, said
		// where they look, tried again at a steady pace (nothing watched tells it is mended).
		msg := refusal.Message(err)
		if told, _ := r.refusals.Swap(bp.UID, msg); told != msg {
			r.Recorder.Eventf(bp, nil, corev1.EventTypeWarning, omv1.ReasonRefusedByAPIServer, "Install", "%s", msg)
		}
		setCondition(bp, omv1.ConditionReady, metav1.ConditionFalse, omv1.ReasonRefusedByAPIServer, msg)
		return ctrl.Result{RequeueAfter: refusal.RetryAfter}, nil
	}
	if err == nil {
		r.refusals.Delete(bp.UID)
	}
	if err != nil {
		return ctrl.Result{}, err // said in Ready (the deferred status write)
	}
	if err := r.prune(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.syncInstallPlans(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	bp.Status.ObservedGeneration = bp.Generation
	return s.result, nil
}

// upgradeHold reads what the running operator says about being upgraded, when the
// Blueprint wants another version: its OperatorCondition (named after its CSV) with an
// effective Upgradeable=False holds the change.
func (r *Reconciler) upgradeHold(ctx context.Context, bp *omv1.Blueprint) (*Hold, error) {
	current := bp.Status.CurrentCSV
	if current == "" || current == bp.Spec.ClusterServiceVersionName {
		return nil, nil
	}
	oc := &omv1.OperatorCondition{}
	key := client.ObjectKey{Namespace: bp.Namespace, Name: current}
	err := r.Client.Get(ctx, key, oc)
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	held := func() bool {
		c := oc.Effective(omv1.OperatorConditionUpgradeable)
		return err == nil && c != nil && c.Status == metav1.ConditionFalse
	}
	if !held() && !Attempted(bp) && r.APIReader != nil {
		// About to start the upgrade, which cannot be taken back: the cache may not yet
		// hold the "not now" the operator wrote a moment before the version change was
		// asked for (the two kinds are watched apart), so the server has the last word.
		oc = &omv1.OperatorCondition{}
		if err = r.APIReader.Get(ctx, key, oc); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
	}
	if !held() {
		return nil, nil
	}
	c := oc.Effective(omv1.OperatorConditionUpgradeable)
	override := meta.FindStatusCondition(oc.Spec.Overrides, omv1.OperatorConditionUpgradeable) != nil
	return &Hold{OperatorCondition: oc.Name, Override: override, Reason: c.Reason, Message: c.Message}, nil
}

// windowHold holds an upgrade not yet started while the Subscription's upgrade windows are
// all closed (WindowHold), and has the Blueprint looked at again when the next one opens.
func (r *Reconciler) windowHold(s *scope) *Hold {
	h, opens := WindowHold(s.sub, s.bp, s.now)
	if h != nil && !opens.IsZero() {
		statuswrite.RequeueWithin(&s.result, opens.Sub(s.now)+time.Second)
	}
	return h
}

// WindowHold is what the Subscription's upgrade windows say at now of the Blueprint's
// change: nil unless it is an upgrade not yet tried and no window is open; else a hold
// and when the next window opens. Windows that cannot be read, or never open, hold it too
// (Invalid), naming the field: the person meant to limit upgrades. The Subscription
// controller asks it too, so the dependencies of a held upgrade wait with it.
func WindowHold(sub *omv1.Subscription, bp *omv1.Blueprint, now time.Time) (*Hold, time.Time) {
	if sub == nil || len(sub.Spec.UpgradeWindows) == 0 {
		return nil, time.Time{}
	}
	if current := bp.Status.CurrentCSV; current == "" || current == bp.Spec.ClusterServiceVersionName || Attempted(bp) {
		return nil, time.Time{}
	}
	st, err := upgradewindow.At(sub.Spec.UpgradeWindows, now)
	if err != nil {
		return &Hold{Window: true, Invalid: true, Message: err.Error()}, time.Time{}
	}
	if st.Open {
		return nil, time.Time{}
	}
	if st.NeverOpens() {
		return &Hold{Window: true, Invalid: true, Message: "spec.upgradeWindows: " + upgradewindow.Describe(st)}, time.Time{}
	}
	return &Hold{Window: true, Message: upgradewindow.Describe(st)}, st.Opens
}

// blueprintsRunning maps an OperatorCondition to the Blueprints whose running CSV it
// speaks for.
func (r *Reconciler) blueprintsRunning(ctx context.Context, o client.Object) []reconcile.Request {
	list := &omv1.BlueprintList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, bp := range list.Items {
		if bp.Status.CurrentCSV == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&bp)})
		}
	}
	return out
}

// PolicyOf reads the rollback and approval policy of the Subscription (defaults:
// automatic rollback on, no retries, as the API defaults them; Automatic approval).
func PolicyOf(sub *omv1.Subscription) Policy {
	p := Policy{AutoRollback: true}
	if sub != nil && sub.Spec.Rollback != nil {
		if sub.Spec.Rollback.Automatic != nil {
			p.AutoRollback = *sub.Spec.Rollback.Automatic
		}
		if sub.Spec.Rollback.Retries != nil {
			p.Retries = int(*sub.Spec.Rollback.Retries)
		}
	}
	p.ManualApproval = sub != nil && sub.Spec.ApprovalMode() == omv1.ApprovalManual
	p.ApproveFirstInstall = sub != nil && sub.Spec.ApprovesFirstInstall()
	return p
}

// healthTimeout is the deadline of a revision: the Subscription's health timeout.
func healthTimeout(sub *omv1.Subscription) time.Duration {
	if sub != nil && sub.Spec.Health != nil && sub.Spec.Health.Timeout != nil && sub.Spec.Health.Timeout.Duration > 0 {
		return sub.Spec.Health.Timeout.Duration
	}
	return DefaultHealthTimeout
}

func (r *Reconciler) event(bp *omv1.Blueprint, warning bool, reason, format string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(bp, nil, typ, reason, "VersionChange", format, args...)
}

// conditionMessage is a condition's message, or "".
func conditionMessage(bp *omv1.Blueprint, typ string) string {
	if c := meta.FindStatusCondition(bp.Status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}
