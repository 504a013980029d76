// Package subscription reconciles Subscriptions: it resolves the administrator's intent
// against a catalog, writes the Blueprint that carries it out, mirrors the Blueprint's
// progress into the Subscription's conditions (and the original's opstatus), and
// uninstalls on `option: delete` or deletion.
package subscription

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/blang/semver/v4"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/backoff"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/controller/finalizer"
	"github.com/operator-manager/operator-manager/internal/metrics"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/refusal"
	"github.com/operator-manager/operator-manager/internal/resolve"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// Reconciler reconciles Subscriptions.
type Reconciler struct {
	Client client.Client
	// APIReader confirms, uncached, what the cache may not show yet: a CatalogSource
	// created a moment before the Subscription naming it ("does not exist" is a warning a
	// person acts on), and before a first install, the other Subscriptions of the
	// namespace and their Blueprints (the conflict check). nil: the cache's word is final.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Catalogs  *catalogsource.Store
	// DefaultCatalog is the CatalogSource used when spec.catalog is empty.
	DefaultCatalog types.NamespacedName
	// GlobalCatalogNamespace is the namespace whose CatalogSources every namespace's
	// Subscriptions may name by OLM's spec.sourceNamespace (empty: DefaultCatalog's).
	GlobalCatalogNamespace string
	// KubeVersion returns the cluster's version for minKubeVersion checks (zero: unknown).
	KubeVersion func() semver.Version
	// Workers is the number of Subscriptions reconciled at once.
	Workers int
	// MaxRetryDelay caps the backoff of a failed reconcile (zero: backoff.DefaultMaxDelay).
	MaxRetryDelay time.Duration

	// status spaces out status writes that only report progress; stale tells a
	// reconcile whose cached Subscription predates this process's last status write.
	status statuswrite.Throttle
	stale  statuswrite.Stale
}

// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=subscriptions,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=subscriptions/status;subscriptions/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=blueprints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=operators.coreos.com.operator-manager.domain,resources=operatorgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// SetupWithManager registers the controller. It owns Blueprints and looks again at every
// Subscription when a CatalogSource changes, so a catalog that was not ready, or has
// gained the version asked for, is picked up without a poll.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.status.Interval = statuswrite.SummaryInterval
	if err := AddIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&omv1.Subscription{}).
		Owns(&omv1.Blueprint{}).
		Watches(&omv1.CatalogSource{}, handler.EnqueueRequestsFromMapFunc(r.subscriptionsOfCatalog)).
		Watches(&omv1.OperatorGroup{}, handler.EnqueueRequestsFromMapFunc(
			operatorgroup.InNamespace(r.Client, func() client.ObjectList { return &omv1.SubscriptionList{} }))).
		// A namespace labelled into or out of an OperatorGroup's selector changes the
		// targets of that OperatorGroup's Subscriptions.
		WatchesMetadata(&corev1.Namespace{}, operatorgroup.Namespaces(r.Client, func() client.ObjectList { return &omv1.SubscriptionList{} })).
		// A refused or unsatisfiable installation is looked at again when another
		// Subscription changes or goes: the one it conflicted with may have made room, or
		// one it depends on come into range.
		Watches(&omv1.Subscription{}, handler.EnqueueRequestsFromMapFunc(r.waitingOnOthers)).
		WithOptions(backoff.Options(r.Workers, r.MaxRetryDelay)).
		Named("subscription").
		Complete(r)
}

func (r *Reconciler) subscriptionsOfCatalog(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &omv1.SubscriptionList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	key := client.ObjectKeyFromObject(obj)
	var out []reconcile.Request
	for _, s := range list.Items {
		// An unsatisfiable Subscription of the catalog's namespace may find its
		// dependency there once it loads (catalogsFor).
		if r.catalogOf(&s) == key || (s.Namespace == key.Namespace && unsatisfiable(&s)) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return out
}

func (r *Reconciler) catalogOf(sub *omv1.Subscription) types.NamespacedName {
	if name := sub.Spec.CatalogName(); name != "" {
		return types.NamespacedName{Namespace: sub.Spec.CatalogNamespace(sub.Namespace), Name: name}
	}
	return r.DefaultCatalog
}

// catalogField is the field of sub that names its catalog: spec.catalog, OLM's
// spec.source, or "" when it names none (the default catalog).
func catalogField(sub *omv1.Subscription) string {
	switch {
	case sub.Spec.Catalog != "":
		return "spec.catalog"
	case sub.Spec.Source != "":
		return "spec.source"
	}
	return ""
}

// catalogAllowed refuses a CatalogSource of another namespace than the Subscription's,
// unless it is in the global catalog namespace, as OLM does: a catalog may hold a
// tenant's private bundles and pull secret, which another tenant must not install from.
func (r *Reconciler) catalogAllowed(sub *omv1.Subscription, key types.NamespacedName) error {
	global := r.GlobalCatalogNamespace
	if global == "" {
		global = r.DefaultCatalog.Namespace
	}
	if key == r.DefaultCatalog || key.Namespace == sub.Namespace || key.Namespace == global {
		return nil
	}
	return &resolve.Error{Reason: omv1.ReasonCatalogNotAllowed, Message: fmt.Sprintf(
		"spec.sourceNamespace %q: a Subscription may name a CatalogSource of its own namespace (%s) or of the global catalog namespace (%s, the manager's --global-catalog-namespace), not of another namespace",
		key.Namespace, sub.Namespace, global)}
}

// Reconcile resolves one Subscription and patches its status once at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (out ctrl.Result, retErr error) {
	sub := &omv1.Subscription{}
	if err := r.Client.Get(ctx, req.NamespacedName, sub); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.SubscriptionStates.Delete(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.stale.Is(string(sub.UID), sub.ResourceVersion, time.Now()) {
		// The cache has not shown this process's last status write yet; its watch event
		// brings the Subscription back.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	// The namespace's OperatorGroup gives what the Subscription does not say (its targets,
	// who installs), laid over it in memory only. Several are an error said below.
	og, ogErr := operatorgroup.Of(ctx, r.Client, sub.Namespace)
	operatorgroup.Apply(sub, og)
	orig := sub.DeepCopy()
	defer func() {
		if sub.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(sub, omv1.Finalizer) {
			deriveReady(sub)
			if retErr != nil && !refusal.Momentary(retErr) {
				// Retried with backoff, and said: a reconcile that keeps failing is never a
				// Subscription that only says "waiting".
				sayReconcileError(sub, orig, retErr, r.Recorder)
			}
			setOLMConditions(sub)
		}
		sortConditions(sub.Status.Conditions)
		// The metric follows the status this reconcile computed, also while its words
		// wait below to be written.
		recordReadiness(sub)
		if equality.Semantic.DeepEqual(orig.Status, sub.Status) {
			return
		}
		now := time.Now()
		// A summary: while a version change is under way its words and its moves between
		// the change's own steps (Install, WaitingForCRDs, Install) wait long
		// (statuswrite.SummaryInterval); a reason naming something outside the
		// installation that it waits on (a native API, a bundle) waits briefly
		// (statuswrite.DefaultInterval), so one that stays is shown within seconds. What
		// says something new (its opstatus, a condition turning or appearing, any words of
		// a settled phase) waits for nothing.
		if inProgress(sub.Status.Opstatus) &&
			statuswrite.StatusProgressOnly(orig.Status, sub.Status, func(s *omv1.SubscriptionStatus) *[]metav1.Condition { return &s.Conditions }) {
			hold := statuswrite.DefaultInterval
			if stepsOnly(orig.Status.Conditions, sub.Status.Conditions) {
				hold = r.status.Interval
			}
			if wait := r.status.WaitSince(sub.UID, hold, now); wait > 0 {
				statuswrite.RequeueWithin(&out, wait)
				return
			}
		}
		before := sub.ResourceVersion
		err := r.Client.Status().Patch(ctx, sub, client.MergeFrom(orig))
		if err == nil {
			r.status.Wrote(sub.UID, now)
			r.stale.Wrote(string(sub.UID), orig.ResourceVersion, sub.ResourceVersion, now)
			if before != orig.ResourceVersion {
				// A write earlier in this reconcile (a finalizer) made a version the
				// cache may show next: as stale as the one before it.
				r.stale.Wrote(string(sub.UID), before, sub.ResourceVersion, now)
			}
		} else if retErr == nil && !apierrors.IsNotFound(err) {
			retErr = fmt.Errorf("patching status of Subscription %s: %w", req, err)
		}
	}()
	if !sub.DeletionTimestamp.IsZero() || sub.Spec.Option == omv1.OptionDelete {
		return r.uninstall(ctx, sub)
	}
	if err := finalizer.Ensure(ctx, r.Client, sub); err != nil {
		return ctrl.Result{}, err
	}
	if ogErr != nil {
		reason, unusable := operatorgroup.Unusable(ogErr)
		if !unusable {
			return ctrl.Result{}, ogErr
		}
		// Nothing changes while what the operators watch is ambiguous or empty; deleting
		// the extra OperatorGroup, or labelling a namespace its selector selects (both
		// watched), brings the Subscription back.
		return r.resolveFailed(sub, &resolve.Error{Reason: reason, Message: ogErr.Error()})
	}
	operatorgroup.Apply(sub, og) // again: the finalizer's patch read the Subscription back as written

	bp := &omv1.Blueprint{}
	err := r.Client.Get(ctx, req.NamespacedName, bp)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	exists := err == nil
	result := ctrl.Result{}
	var refused error // the API server's refusal of a write the change needs (sayRefused)
	if sub.Spec.Paused && exists {
		setCondition(sub, omv1.ConditionResolved, false, omv1.ReasonPaused, "spec.paused is true: version changes wait")
	} else {
		// Resolving is pure and cheap, so it runs on every reconcile and the Resolved
		// condition always reflects the current catalog.
		was := meta.FindStatusCondition(orig.Status.Conditions, omv1.ConditionResolved)
		res, err := r.resolve(sub)
		if err == nil {
			err = r.catalogStillThere(ctx, sub)
		}
		wait, werr := r.catalogWait(ctx, sub, err)
		if werr != nil {
			return ctrl.Result{}, werr
		}
		if wait != nil && wait.quiet {
			// This process has not loaded a catalog that is there and ready: a restarted
			// manager says nothing new about the Subscription until it has.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		if err == nil && exists {
			err = packageChanged(bp, res.bundle)
		}
		if err == nil {
			err = r.checkConflict(ctx, sub, res.bundle)
		}
		keptReason, kept := notInCatalog(sub, bp, err, wait) // "" without an error, or without a Blueprint
		switch {
		case wait != nil && wait.loading && runsAsAsked(sub, bp) != "":
			// Its catalog is being (re)loaded (its CatalogSource changed, a manager started):
			// nothing new to say of an installation that runs as asked, so its conditions
			// stay as they were, with no Ready=False blip, until the catalog is there.
			result = ctrl.Result{RequeueAfter: 5 * time.Second}
		case wait != nil && wait.loading:
			result = r.waitForCatalog(sub, err)
		case kept != "":
			if was == nil || was.Reason != keptReason || was.Message != kept {
				r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, keptReason, "Resolve", "%s", kept)
			}
			setCondition(sub, omv1.ConditionResolved, true, keptReason, kept)
		case err != nil:
			if result, err = r.resolveFailed(sub, err); err != nil {
				return result, err
			}
		// The Blueprint's target follows the Subscription only when the Subscription's
		// spec changed since it was last written (or there is no Blueprint), and then only
		// when it asks for another version: a person who edits the Blueprint's
		// clusterServiceVersionName to roll back is not overruled by a pause, a resume or
		// a config edit.
		case exists && !writtenForGeneration(sub, bp) && keepsTarget(sub, bp, res):
			if err = r.recordSpec(ctx, sub, bp); refusal.Is(err) {
				refused, result = err, ctrl.Result{RequeueAfter: refusal.RetryAfter}
			} else if err != nil {
				return result, err
			}
			r.sayHeld(sub, bp, res)
		case !exists || !writtenForGeneration(sub, bp):
			// A version change must leave the installations that depend on this one what
			// they were resolved against: refused otherwise, the running version kept.
			broken, berr := r.brokenDependents(ctx, sub, bp, res.bundle)
			if berr != nil {
				return ctrl.Result{}, berr
			}
			if len(broken) > 0 {
				if result, err = r.resolveFailed(sub, refusedForDependents(res.bundle, bp, broken)); err != nil {
					return result, err
				}
				break
			}
			if result, err = r.install(ctx, sub, bp, exists, res); refusal.Is(err) {
				refused, result = err, ctrl.Result{RequeueAfter: refusal.RetryAfter}
			} else if err != nil {
				return result, err
			}
			exists = exists || bp.UID != "" // created just now: its (empty) progress is mirrored at once
		case exists && r.followChannel(sub, bp, res) != nil:
			// A channel-following installation moves one upgrade edge at a time, each
			// through the health gate, as the catalog gains versions, as far as the
			// installations that depend on it accept.
			next := r.followChannel(sub, bp, res)
			broken, berr := r.brokenDependents(ctx, sub, bp, next)
			if berr != nil {
				return ctrl.Result{}, berr
			}
			if len(broken) > 0 {
				r.resolved(sub, res)
				c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved)
				c.Reason = omv1.ReasonHeldForDependents
				c.Message = fmt.Sprintf("held at %s: the channel's next version %s would take what they need from the installations that depend on this one: %s; follows the channel again once they accept it",
					bp.Status.CurrentCSV, next.CSVName, strings.Join(broken, "; "))
				break
			}
			res.bundle = next
			if result, err = r.install(ctx, sub, bp, exists, res); refusal.Is(err) {
				refused, result = err, ctrl.Result{RequeueAfter: refusal.RetryAfter}
			} else if err != nil {
				return result, err
			}
		default:
			r.sayHeld(sub, bp, res)
		}
		if exists && res != nil {
			r.markContentChanged(sub, bp, res.bundle, was)
		}
	}
	if exists && (sub.Spec.ApprovalMode() == omv1.ApprovalManual || len(sub.Spec.UpgradeWindows) > 0) {
		if err := r.approvedDependencies(ctx, sub, bp); err != nil {
			if err = r.dependencyRefused(sub, orig, err); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	sub.Status.ObservedGeneration = sub.Generation
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionInstalled); refused == nil && c != nil && c.Reason == omv1.ReasonRefusedByAPIServer {
		removeCondition(sub, omv1.ConditionInstalled) // the refusal is over: mirror says what is
	}
	if exists {
		r.mirror(sub, bp)
	}
	if refused != nil {
		r.sayRefused(sub, orig.Status.Conditions, refused)
	}
	r.markDeprecations(sub) // of what runs, once mirror has said what that is
	return result, nil
}

// sayHeld records the resolution of a Subscription whose Blueprint's target it does not
// move, saying so when a person's rollback holds it (HeldAfterManualRollback for a channel
// follower, PointedByHand for a Subscription that names its version).
func (r *Reconciler) sayHeld(sub *omv1.Subscription, bp *omv1.Blueprint, res *resolution) {
	r.resolved(sub, res)
	c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved)
	if from := heldBelow(bp); from != "" && resolve.Following(intentOf(sub)) {
		c.Reason = omv1.ReasonHeldAfterRollback
		c.Message = fmt.Sprintf("held at %s after a manual rollback from %s: follows channel again when the catalog offers a version newer than %s, or when this Subscription asks for another version (package, channel, version, startingCSV or catalog)",
			bp.Spec.ClusterServiceVersionName, from, from)
	} else if bp.Spec.ClusterServiceVersionName != res.bundle.CSVName && !resolve.Following(intentOf(sub)) {
		c.Reason = omv1.ReasonPointedByHand
		c.Message += fmt.Sprintf("; the Blueprint was pointed at %s by hand, which stands until this Subscription asks for another version (package, channel, version, startingCSV or catalog)", bp.Spec.ClusterServiceVersionName)
	}
}

// sayRefused says that the API server refused a write the Subscription's change needs
// (its Blueprint created or changed, a dependency's Subscription created): a quota on
// Blueprints, a policy that wants labels the manager does not set. Without it the
// refusal was said only in the manager's log, and the Subscription waited "for
// Installed" for good. Nothing runs yet: Installed is False with the refusal. Something
// runs: it stays (Installed True), and the change is Blocked by the refusal. Told once
// in a Warning event while the words stay the same; the write is tried again every
// refusal.RetryAfter, since what mends it (a quota, a policy) is not watched.
func (r *Reconciler) sayRefused(sub *omv1.Subscription, was []metav1.Condition, err error) {
	msg := refusal.Message(err)
	typ, status := omv1.ConditionInstalled, false
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionInstalled); c != nil && c.Status == metav1.ConditionTrue {
		typ, status = omv1.ConditionBlocked, true
	}
	setCondition(sub, typ, status, omv1.ReasonRefusedByAPIServer, msg)
	if c := meta.FindStatusCondition(was, typ); c == nil || c.Reason != omv1.ReasonRefusedByAPIServer || c.Message != msg {
		r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, omv1.ReasonRefusedByAPIServer, "Install", "%s", msg)
	}
}

// notInCatalog says, when the catalog no longer offers what the Subscription asks for
// (a version pulled, the package removed: NotInCatalog) or cannot be read at all (its
// CatalogSource deleted or failing to load: CatalogUnavailable) but that is what runs,
// settled, that it runs as asked and stays, with the reason; "" otherwise. A person who
// pinned a version is not told that the Subscription failed (Ready False, a paging alert)
// for a version that runs and is healthy; what runs is kept in the installation's stored
// bundle, for a rollback too. The catalog's own trouble is the CatalogSource's to say
// (its Ready condition, the OperatorCatalogLoadFailing alert, OLM's
// CatalogSourcesUnhealthy).
func notInCatalog(sub *omv1.Subscription, bp *omv1.Blueprint, err error, wait *catalogWait) (string, string) {
	var re *resolve.Error
	if !errors.As(err, &re) {
		return "", ""
	}
	reason := omv1.ReasonNotInCatalog
	why := "its catalog no longer offers it"
	switch {
	case re.Reason == omv1.ReasonVersionNotFound || re.Reason == omv1.ReasonPackageNotFound:
	case re.Reason == omv1.ReasonCatalogNotReady && wait != nil && !wait.loading && !wait.quiet:
		reason, why = omv1.ReasonCatalogUnavailable, "its catalog cannot be read, and version changes wait for it"
	default:
		return "", ""
	}
	current := runsAsAsked(sub, bp)
	if current == "" {
		if target := pointedTarget(sub, bp); target != "" {
			// Not (yet) running: the change goes on from the bundle stored with the
			// installation, and Ready says how it goes (installing, blocked, failed), not
			// that a catalog lacks what no catalog is needed for.
			return reason, fmt.Sprintf("%s is the Blueprint's target (written by `import` or by this Subscription, or pointed there by hand), and its bundle is stored with the installation, so no catalog is needed for it: %s (%s)",
				target, strings.Replace(why, "no longer offers", "does not offer", 1), re.Message)
		}
		return "", ""
	}
	how := "as asked"
	if from := heldBelow(bp); from != "" {
		how = "held after a manual rollback from " + from
	} else if !satisfies(sub, bp) {
		how = "as the Blueprint was pointed by hand"
	}
	return reason, fmt.Sprintf("%s runs, %s, and stays: %s (%s)", current, how, why, re.Message)
}

// runsAsAsked is the CSV that runs, settled, when it is what the Subscription asks for
// (resolve.Satisfies), or when the Subscription asked nothing new since it last wrote the
// Blueprint: then what runs is what it asked for, or what a person pointed the Blueprint
// at since (a rollback by hand), which stands until the Subscription asks for another
// version (keepsTarget). "",
// otherwise.
func runsAsAsked(sub *omv1.Subscription, bp *omv1.Blueprint) string {
	current := bp.Status.CurrentCSV
	if current == "" || current != bp.Spec.ClusterServiceVersionName {
		return ""
	}
	if !writtenForGeneration(sub, bp) && !satisfies(sub, bp) {
		return ""
	}
	return current
}

// pointedTarget is the Blueprint's target CSV when it does not run and the Subscription
// asked for nothing new since the Blueprint was last written for it: `import` made it so
// (pinned to the archive's version, with its bundle stored), or the Subscription itself
// before its catalog dropped the version, or a person since. Its bundle is known (the
// spec's digest), so nothing of the change waits for a catalog. "", otherwise.
func pointedTarget(sub *omv1.Subscription, bp *omv1.Blueprint) string {
	target := bp.Spec.ClusterServiceVersionName
	if target == "" || bp.Spec.BundleDigest == "" || target == bp.Status.CurrentCSV ||
		!writtenForGeneration(sub, bp) {
		return ""
	}
	return target
}

// satisfies says whether the version the Blueprint runs is what the Subscription's spec
// asks for (resolve.Satisfies).
func satisfies(sub *omv1.Subscription, bp *omv1.Blueprint) bool {
	v, err := semver.ParseTolerant(bp.Status.CurrentVersion)
	return err == nil && resolve.Satisfies(intentOf(sub), bp.Spec.Package, bp.Status.CurrentCSV, v)
}

// packageChanged refuses a spec that resolves to another package than the one the
// Subscription's installation is of (spec.package or OLM's spec.name edited in place).
// Carried out, it would replace one operator by another as if it were a version change:
// a "downgrade" from cache-operator 1.1.0 to backup-operator 0.2.0, the history and
// rollbacks mixing two packages, and installations that depend on the first left without
// it. Nothing is changed; the message says what to do instead.
func packageChanged(bp *omv1.Blueprint, b *catalog.Bundle) error {
	was := bp.Spec.Package
	if was == "" || was == b.Package {
		return nil
	}
	what := "nothing of it runs"
	if bp.Status.CurrentCSV != "" {
		what = bp.Status.CurrentCSV + " runs and stays"
	}
	return &resolve.Error{Reason: omv1.ReasonPackageChanged, Message: fmt.Sprintf(
		"the spec asks for package %s, but this Subscription installed package %s (%s); a Subscription's package does not change: put it back, or uninstall this one (option: delete) and subscribe to %s in a Subscription of its own",
		b.Package, was, what, b.Package)}
}

// runsAsInstalled says whether b, the catalog's bundle of the version the Blueprint runs
// and targets, is to be taken as the content installed even when its digest differs
// (the version republished under the same name): a version's content is fixed once it
// runs. Adopting it would reinstall, as a health-gated "upgrade" to the same version, at
// whatever moment something else made the Subscription write its Blueprint (a config
// change, a restart), and a catalog's change of layout would reinstall a fleet. A target
// that does not run yet (it failed, or waits) takes the catalog's content with the next
// change of the Subscription.
func runsAsInstalled(bp *omv1.Blueprint, b *catalog.Bundle) bool {
	return bp.Status.CurrentCSV == b.CSVName && bp.Spec.ClusterServiceVersionName == b.CSVName
}

// markContentChanged says, on the Resolved condition and once in a Warning event, that the
// catalog serves the running version with other content than the one installed, which
// stays (runsAsInstalled). A Resolved condition that says something else already (held,
// pointed by hand) keeps it.
func (r *Reconciler) markContentChanged(sub *omv1.Subscription, bp *omv1.Blueprint, b *catalog.Bundle, was *metav1.Condition) {
	c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Resolved" ||
		!runsAsInstalled(bp, b) || bp.Spec.BundleDigest == "" || bp.Spec.BundleDigest == b.Digest {
		return
	}
	c.Reason = omv1.ReasonContentChangedInCatalog
	c.Message += fmt.Sprintf("; the catalog now serves %s with other content (%s) than the one installed (%s), which stays: a version's content is fixed once it runs, so the change reaches this cluster when it is published as a new version",
		b.CSVName, catalog.ShortDigest(b.Digest), catalog.ShortDigest(bp.Spec.BundleDigest))
	if was == nil || was.Reason != c.Reason || was.Message != c.Message {
		r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, c.Reason, "Resolve", "%s", c.Message)
	}
}

// intentOf is what the Subscription asks for now. In an OLM Subscription (spec.name),
// startingCSV is where the first install starts, as in OLM: once something is installed,
// the intent is the package's channel, followed one upgrade edge at a time. Elsewhere
// startingCSV names the version to run, as in the original operator-manager.
func intentOf(sub *omv1.Subscription) resolve.Intent {
	in := resolve.Intent{StartingCSV: sub.Spec.StartingCSV, Package: sub.Spec.PackageName(), Channel: sub.Spec.Channel, Version: sub.Spec.Version}
	if sub.Spec.OLMStyle() && sub.Status.InstalledCSV != "" {
		in.StartingCSV = ""
	}
	return in
}

// followChannel returns the next version a channel-following Subscription moves to, or
// nil: nothing newer on its channel's edges, a change already under way, a target that
// failed and was rolled back (which stays until the catalog offers something newer), or
// a version a person rolled back to by hand (which stays until the catalog offers a
// version newer than the one rolled back from, or the Subscription asks for another).
func (r *Reconciler) followChannel(sub *omv1.Subscription, bp *omv1.Blueprint, res *resolution) *catalog.Bundle {
	in := intentOf(sub)
	if !resolve.Following(in) || bp.Status.CurrentCSV == "" {
		return nil
	}
	cat := r.Catalogs.Get(res.catalog)
	current, err := semver.ParseTolerant(bp.Status.CurrentVersion)
	if cat == nil || err != nil {
		return nil
	}
	next := resolve.NextInChannel(cat, in, bp.Status.CurrentCSV, current)
	if next == nil || next.CSVName == bp.Spec.ClusterServiceVersionName {
		return nil
	}
	if from := heldBelow(bp); from != "" {
		if v, err := semver.ParseTolerant(from); err == nil && !next.Version.GT(v) {
			return nil
		}
	}
	return next
}

// heldBelow is the version a person rolled back from by hand (a Downgrade revision the
// Subscription did not ask for), or "". The Subscription's own changes are written with
// the subscription-generation annotation; a hand edit of the Blueprint leaves it behind.
// A return to the version a failed upgrade left running rolls back from the version
// that failed, not from the one that ran (which is the same as the revision's).
func heldBelow(bp *omv1.Blueprint) string {
	history := bp.Status.History
	for i := len(history) - 1; i >= 0; i-- {
		h := history[i]
		if !blueprint.Requested(h) {
			continue
		}
		if h.Trigger != omv1.TriggerDowngrade || h.Generation != bp.Spec.Generation || h.CSVName != bp.Spec.ClusterServiceVersionName {
			return ""
		}
		if h.FromVersion != h.Version {
			return h.FromVersion
		}
		for j := i - 1; j >= 0; j-- {
			if blueprint.Requested(history[j]) {
				return history[j].Version
			}
		}
		return ""
	}
	return ""
}

// install resolves the dependencies of the chosen bundle, creates what is missing, and
// points the Blueprint at the bundle. When the dependencies cannot be satisfied nothing
// is created and the Resolved condition says why.
func (r *Reconciler) install(ctx context.Context, sub *omv1.Subscription, bp *omv1.Blueprint, exists bool, res *resolution) (ctrl.Result, error) {
	plan, err := r.resolveDependencies(ctx, sub, res)
	if err != nil {
		return r.resolveFailed(sub, err)
	}
	waits := awaitsApproval(sub, bp, exists, res.bundle.CSVName) || waitsForWindow(sub, bp, exists, res.bundle.CSVName, time.Now())
	deps, err := r.ensureDependencies(ctx, sub, plan, !waits)
	if err != nil {
		return r.resolveFailed(sub, err) // a dependency's Subscription in the way is said in Resolved
	}
	res.dependencies = deps
	return ctrl.Result{}, r.writeBlueprint(ctx, sub, bp, exists, res)
}

// resolution is a resolved intent: the bundle and the catalog it comes from.
type resolution struct {
	bundle       *catalog.Bundle
	catalog      types.NamespacedName
	dependencies []omv1.ResolvedDependency
}

func (r *Reconciler) resolve(sub *omv1.Subscription) (*resolution, error) {
	key := r.catalogOf(sub)
	if err := r.catalogAllowed(sub, key); err != nil {
		return nil, err
	}
	cat := r.Catalogs.Get(key)
	if cat == nil {
		return nil, &resolve.Error{Reason: omv1.ReasonCatalogNotReady,
			Message: fmt.Sprintf("catalog %s is not loaded yet (see `kubectl get catalogsource -n %s %s`)", key, key.Namespace, key.Name)}
	}
	in := intentOf(sub)
	b, err := resolve.Bundle(cat, key.String(), in)
	if err != nil {
		return nil, err
	}
	if in.StartingCSV != "" && in.Package != "" && b.Package != in.Package {
		return nil, &resolve.Error{Reason: resolve.ReasonVersionNotFound, Message: fmt.Sprintf(
			"spec.startingCSV %q is %s of package %q in catalog %s, not of package %q that spec.%s names",
			sub.Spec.StartingCSV, b.CSVName, b.Package, key, in.Package, map[bool]string{true: "name", false: "package"}[sub.Spec.Package == ""])}
	}
	return &resolution{bundle: b, catalog: key}, nil
}

// catalogStillThere refuses a resolution from a catalog whose CatalogSource is gone (or
// going) from the cache, though this process still holds its loaded copy. A deleted
// CatalogSource's event reaches this controller and the CatalogSource controller, which
// drops the copy, at once: resolved first, the Subscription went on saying Resolved from
// a catalog that no longer existed, and nothing brought it back. The cache has dropped
// the object before any handler sees its delete event, so this read decides it.
func (r *Reconciler) catalogStillThere(ctx context.Context, sub *omv1.Subscription) error {
	key := r.catalogOf(sub)
	cs := &omv1.CatalogSource{}
	err := r.Client.Get(ctx, key, cs)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && !cs.DeletionTimestamp.IsZero()):
		return &resolve.Error{Reason: omv1.ReasonCatalogNotReady, Message: fmt.Sprintf("CatalogSource %s is gone", key)}
	case err != nil:
		return err
	}
	return nil
}

// catalogWait asks the Subscription's CatalogSource why resolving failed, when it failed
// only because this process holds no loaded catalog of that name (nil otherwise).
func (r *Reconciler) catalogWait(ctx context.Context, sub *omv1.Subscription, err error) (*catalogWait, error) {
	var re *resolve.Error
	if !errors.As(err, &re) || re.Reason != omv1.ReasonCatalogNotReady {
		return nil, nil
	}
	key := r.catalogOf(sub)
	cs := &omv1.CatalogSource{}
	err = r.Client.Get(ctx, key, cs)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, cs)
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		cs = nil
	}
	w := judgeCatalog(key, catalogField(sub), cs)
	re.Message = w.message
	return &w, nil
}

// resolveFailed records a resolution failure. It is not retried by backoff: a change of
// the Subscription or of the catalog (both watched) is what can fix it.
func (r *Reconciler) resolveFailed(sub *omv1.Subscription, err error) (ctrl.Result, error) {
	var re *resolve.Error
	if !errors.As(err, &re) {
		return ctrl.Result{}, err
	}
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved); c == nil || c.Reason != re.Reason || c.Message != re.Message {
		r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, re.Reason, "Resolve", "%s", re.Message)
	}
	setCondition(sub, omv1.ConditionResolved, false, re.Reason, re.Message)
	sub.Status.Opstatus = "resolve failed"
	if re.Reason == omv1.ReasonCatalogNotReady {
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// dependencyRefused says, in Resolved as the first install's resolution says it, why a
// dependency recorded while a change waited cannot be installed now that the change goes
// ahead (a person's own Subscription of the package uninstalled, one being deleted). It is
// not retried by backoff: the dependency's Subscription is watched. Other errors are
// returned as they are. The warning is told when the words are new to the Subscription as
// read, not as this pass's resolution set them a moment before.
func (r *Reconciler) dependencyRefused(sub, orig *omv1.Subscription, err error) error {
	var re *resolve.Error
	if !errors.As(err, &re) {
		return err
	}
	if c := meta.FindStatusCondition(orig.Status.Conditions, omv1.ConditionResolved); c == nil || c.Reason != re.Reason || c.Message != re.Message {
		r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, re.Reason, "Resolve", "%s", re.Message)
	}
	setCondition(sub, omv1.ConditionResolved, false, re.Reason, re.Message)
	return nil
}

// waitForCatalog records a resolution that waits for its catalog's load: no warning, and
// a status that says waiting, not failed. The CatalogSource's status change when the load
// ends brings the Subscription back; the requeue is the floor.
func (r *Reconciler) waitForCatalog(sub *omv1.Subscription, err error) ctrl.Result {
	var re *resolve.Error
	errors.As(err, &re)
	setCondition(sub, omv1.ConditionResolved, false, re.Reason, re.Message)
	sub.Status.Opstatus = opstatusWaitingForCatalog
	return ctrl.Result{RequeueAfter: 5 * time.Second}
}

// installShape is a digest of how the Subscription asks its operator to be installed, the
// fields that shape what is rendered and judged: its config, target namespaces,
// ServiceAccount and health policy (AnnotationInstallShape).
func installShape(sub *omv1.Subscription) string {
	data, _ := json.Marshal(struct {
		Config             *omv1.SubscriptionConfig `json:"config,omitempty"`
		TargetNamespaces   []string                 `json:"targetNamespaces,omitempty"`
		ServiceAccountName string                   `json:"serviceAccountName,omitempty"`
		Health             *omv1.HealthPolicy       `json:"health,omitempty"`
	}{sub.Spec.Config, sub.Spec.TargetNamespaces, sub.Spec.ServiceAccountName, sub.Spec.Health})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// mendsFailure says whether a Subscription whose install shape went from was to shape
// mends the change its Blueprint holds as Failed: a person changed how the operator is
// installed (a node selector no node has, too little memory, too short a health timeout)
// after the change failed. The change is tried again, as `operator-manager retry` does. A
// change rolled back is not: the older version runs, and the new shape is its own; an
// unknown earlier shape (a Blueprint from before the annotation) is only recorded.
func mendsFailure(bp *omv1.Blueprint, was, shape string) bool {
	return was != "" && was != shape && bp.Status.Phase == omv1.BlueprintFailed && blueprint.Retryable(bp) == nil
}

// writeBlueprint creates the Blueprint or points it at the resolved CSV, recording the
// CSV it replaces and bumping its generation.
func (r *Reconciler) writeBlueprint(ctx context.Context, sub *omv1.Subscription, bp *omv1.Blueprint, exists bool, res *resolution) error {
	b := res.bundle
	r.resolved(sub, res)
	if !exists {
		// Filled in place: the caller mirrors the new Blueprint in the same status write.
		*bp = omv1.Blueprint{}
		bp.Name, bp.Namespace = sub.Name, sub.Namespace
	}
	patch := client.MergeFrom(bp.DeepCopy())
	shape, was := installShape(sub), bp.Annotations[omv1.AnnotationInstallShape]
	bp.Labels = mergeLabels(bp.Labels, map[string]string{omv1.LabelSubscription: sub.Name, omv1.LabelPackage: b.Package})
	bp.Annotations = mergeLabels(bp.Annotations, writtenFor(sub, shape))
	if exists && bp.Spec.ClusterServiceVersionName == b.CSVName && (bp.Spec.BundleDigest == b.Digest || runsAsInstalled(bp, b)) {
		// Same target: only record that this generation was seen, unless it mends a
		// change that failed. The catalog is followed, though: a Subscription moved to
		// another catalog that serves the same version starts no revision, but the
		// Blueprint's reads (recommend, a bundle fetched again) must go to the new one,
		// not to one that may be about to be deleted.
		bp.Spec.Catalog = res.catalog.String()
		if mendsFailure(bp, was, shape) {
			blueprint.SetRetry(bp)
		}
		return r.Client.Patch(ctx, bp, patch)
	}
	if rev := blueprint.Withdrawable(bp); exists && rev != nil && rev.CSVName == b.CSVName && rev.BundleDigest == b.Digest {
		// Back to what runs before the change that waited was attempted: the change is
		// withdrawn, not made. Before, the new pair opened an "Upgrade" of the running
		// version to itself, through its health gate (found by hand: a Manual
		// Subscription's version set back while the change waited for approval).
		withdrawn := bp.Spec.ClusterServiceVersionName
		bp.Spec.ClusterServiceVersionName, bp.Spec.Generation = rev.CSVName, rev.Generation
		bp.Spec.Version, bp.Spec.BundleDigest = rev.Version, rev.BundleDigest
		bp.Spec.Catalog = res.catalog.String()
		bp.Spec.Dependencies = res.dependencies
		bp.Spec.Approved = false
		if err := r.Client.Patch(ctx, bp, patch); err != nil {
			return fmt.Errorf("updating Blueprint %s/%s: %w", bp.Namespace, bp.Name, err)
		}
		r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, omv1.ReasonChangeWithdrawn, "Install",
			"The change to %s, which had not started, is withdrawn: %s, which runs, is what the Subscription asks for", withdrawn, b.CSVName)
		return nil
	}
	if exists {
		bp.Spec.OldVersion = bp.Spec.ClusterServiceVersionName
		if bp.Status.CurrentCSV != "" {
			bp.Spec.OldVersion = bp.Status.CurrentCSV
		}
	}
	bp.Spec.ClusterServiceVersionName = b.CSVName
	bp.Spec.Package, bp.Spec.Version, bp.Spec.BundleDigest = b.Package, b.Version.String(), b.Digest
	bp.Spec.Catalog = res.catalog.String()
	bp.Spec.Dependencies = res.dependencies
	bp.Spec.Generation++
	// An approval is for one target; a new one waits again (Manual approval only).
	bp.Spec.Approved = false
	if !exists {
		if err := controllerutil.SetControllerReference(sub, bp, r.Client.Scheme()); err != nil {
			return err
		}
		// Created with its finalizer: one write, not two.
		controllerutil.AddFinalizer(bp, omv1.Finalizer)
		if err := r.Client.Create(ctx, bp); err != nil {
			return fmt.Errorf("creating Blueprint %s/%s: %w", bp.Namespace, bp.Name, err)
		}
		// No event here: the Blueprint's own (InstallStarted, UpgradeStarted) tells the
		// same change, with its revision, one write instead of two.
		return nil
	}
	if err := r.Client.Patch(ctx, bp, patch); err != nil {
		return fmt.Errorf("updating Blueprint %s/%s: %w", bp.Namespace, bp.Name, err)
	}
	return nil
}

// writtenForGeneration says whether the Blueprint was last written for the Subscription's
// present generation: nothing was asked since, so its target stands as it is, whoever
// pointed it there.
func writtenForGeneration(sub *omv1.Subscription, bp *omv1.Blueprint) bool {
	return bp.Annotations[omv1.AnnotationSubscriptionGeneration] == strconv.FormatInt(sub.Generation, 10)
}

// writtenFor is what a Blueprint records of the Subscription spec it was last written
// for: its generation, what it asks of the version, and how it installs.
func writtenFor(sub *omv1.Subscription, shape string) map[string]string {
	return map[string]string{omv1.AnnotationSubscriptionGeneration: strconv.FormatInt(sub.Generation, 10),
		omv1.AnnotationSubscriptionIntent: sub.Spec.VersionIntent(), omv1.AnnotationInstallShape: shape}
}

// keepsTarget says whether a new generation of the Subscription leaves the Blueprint's
// target alone though it resolves elsewhere: the Blueprint was written for the same
// version intent, so the spec changed in something else (paused or resumed; config,
// approval, health, upgrade windows), and the target differs because a person pointed
// it there (a rollback by hand, which stands until another version is asked for) or
// because the channel moved on (followed edge by edge, by followChannel, as always). A
// Blueprint written before the intent was recorded is repointed, as it always was.
func keepsTarget(sub *omv1.Subscription, bp *omv1.Blueprint, res *resolution) bool {
	intent := bp.Annotations[omv1.AnnotationSubscriptionIntent]
	return intent != "" && intent == sub.Spec.VersionIntent() && bp.Spec.ClusterServiceVersionName != res.bundle.CSVName
}

// recordSpec records the Subscription's new generation on a Blueprint whose target it
// keeps (keepsTarget); a change of how it installs that mends a failed change retries it,
// as writeBlueprint does.
func (r *Reconciler) recordSpec(ctx context.Context, sub *omv1.Subscription, bp *omv1.Blueprint) error {
	patch := client.MergeFrom(bp.DeepCopy())
	shape, was := installShape(sub), bp.Annotations[omv1.AnnotationInstallShape]
	bp.Annotations = mergeLabels(bp.Annotations, writtenFor(sub, shape))
	if mendsFailure(bp, was, shape) {
		blueprint.SetRetry(bp)
	}
	if err := r.Client.Patch(ctx, bp, patch); err != nil {
		return fmt.Errorf("updating Blueprint %s/%s: %w", bp.Namespace, bp.Name, err)
	}
	return nil
}

// resolved records a successful resolution.
func (r *Reconciler) resolved(sub *omv1.Subscription, res *resolution) {
	b := res.bundle
	setCondition(sub, omv1.ConditionResolved, true, "Resolved",
		fmt.Sprintf("%s resolves to %s (version %s) in catalog %s", describeIntent(sub), b.CSVName, b.Version, res.catalog))
	sub.Status.Package, sub.Status.CurrentCSV = b.Package, b.CSVName
}

func describeIntent(sub *omv1.Subscription) string {
	in := intentOf(sub)
	if in.StartingCSV != "" && sub.Spec.OLMStyle() {
		return fmt.Sprintf("startingCSV %q (the first install of package %q, as in OLM)", in.StartingCSV, in.Package)
	}
	if in.StartingCSV != "" {
		return fmt.Sprintf("startingCSV %q", in.StartingCSV)
	}
	s := fmt.Sprintf("package %q", in.Package)
	if sub.Spec.Channel != "" {
		s += fmt.Sprintf(" channel %q", sub.Spec.Channel)
	}
	if sub.Spec.Version != "" {
		s += fmt.Sprintf(" version %q", sub.Spec.Version)
	}
	return s
}

// uninstallRefused is why the uninstall of bp's operator cannot go on, as its CSV being
// deleted says it (its installing identity may not remove what it installed), or "".
func (r *Reconciler) uninstallRefused(ctx context.Context, bp *omv1.Blueprint) (reason, message string) {
	for _, name := range []string{bp.Status.CurrentCSV, bp.Spec.ClusterServiceVersionName} {
		csv := &omv1alpha1.ClusterServiceVersion{}
		if name == "" || r.Client.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: name}, csv) != nil {
			continue
		}
		if !csv.DeletionTimestamp.IsZero() && csv.Status.Phase == omv1alpha1.CSVDeleting &&
			(csv.Status.Reason == omv1.ReasonInsufficientPermissions || csv.Status.Reason == omv1.ReasonReconcileError) {
			return csv.Status.Reason, csv.Status.Message
		}
	}
	return "", ""
}

func mergeLabels(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// uninstall deletes the Blueprint (whose finalizer removes the CSVs and everything they
// installed, but no CRD) and waits until it is gone; then it lets a deleted Subscription go.
func (r *Reconciler) uninstall(ctx context.Context, sub *omv1.Subscription) (ctrl.Result, error) {
	if users, err := r.dependents(ctx, sub); err != nil {
		return ctrl.Result{}, err
	} else if len(users) > 0 {
		msg := fmt.Sprintf("not uninstalled: %s still depend on package %s; uninstall them first", strings.Join(users, ", "), sub.Status.Package)
		if len(users) == 1 {
			msg = fmt.Sprintf("not uninstalled: %s still depends on package %s; uninstall it first", users[0], sub.Status.Package)
		}
		setCondition(sub, omv1.ConditionInstalled, true, "RequiredByOthers", msg)
		sub.Status.Opstatus = "required"
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	bp := &omv1.Blueprint{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(sub), bp)
	switch {
	case err == nil:
		if bp.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, bp); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
			r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, omv1.ReasonUninstalling, "Uninstall", "Uninstalling %s", bp.Spec.ClusterServiceVersionName)
		}
		sub.Status.Opstatus = "deleting"
		// Taken up: a wait on the uninstall reads what it does, not "waiting for the
		// manager to take up the change" for as long as it lasts.
		sub.Status.ObservedGeneration = sub.Generation
		if reason, why := r.uninstallRefused(ctx, bp); why != "" {
			// Still installed, but not as asked: False, as while an uninstall goes on.
			setCondition(sub, omv1.ConditionInstalled, false, reason, "the uninstall waits: "+why)
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
		setCondition(sub, omv1.ConditionInstalled, false, omv1.ReasonUninstalling, "removing "+bp.Spec.ClusterServiceVersionName)
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	uninstalled := sub.Status.InstalledCSV
	sub.Status.InstalledCSV, sub.Status.InstalledVersion, sub.Status.CurrentRevision = "", "", 0
	setCondition(sub, omv1.ConditionInstalled, false, omv1.ReasonUninstalled, "the operator is uninstalled; its CRDs and custom resources are kept")
	removeCondition(sub, omv1.ConditionHealthy)
	sub.Status.Opstatus = "deleted"
	sub.Status.ObservedGeneration = sub.Generation
	if !sub.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(sub, omv1.Finalizer) {
		// Told once the Subscription is let go, by the pass that let it go (not by one on
		// a cache still showing it, nor on a Subscription applied again under its name).
		if removed, err := finalizer.Remove(ctx, r.Client, sub); err != nil {
			return ctrl.Result{}, err
		} else if !removed {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
	}
	if uninstalled != "" {
		r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, omv1.ReasonUninstalled, "Uninstall", "Uninstalled %s", uninstalled)
		metrics.InstalledVersions.Delete(sub.Namespace + "/" + sub.Name)
	}
	return ctrl.Result{}, nil
}
