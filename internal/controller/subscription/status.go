package subscription

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/installplan"
	"github.com/operator-manager/operator-manager/internal/metrics"
)

func setCondition(sub *omv1.Subscription, typ string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	setConditionStatus(sub, typ, status, reason, message)
}

// setConditionStatus is setCondition for a status that may be Unknown.
func setConditionStatus(sub *omv1.Subscription, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&sub.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: message, ObservedGeneration: sub.Generation})
}

// conditionOrder is the order of the Subscription's conditions: the same list in the
// same order from every code path, so a reconcile that changes nothing writes nothing.
var conditionOrder = map[string]int{omv1.ConditionResolved: 0, omv1.ConditionInstalled: 1, omv1.ConditionHealthy: 2,
	omv1.ConditionReady: 3, omv1.ConditionRolledBack: 4, omv1.ConditionBlocked: 5, omv1.ConditionUpgradePending: 6}

func sortConditions(cs []metav1.Condition) {
	rank := func(t string) int {
		if n, ok := conditionOrder[t]; ok {
			return n
		}
		return len(conditionOrder)
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if ri, rj := rank(cs[i].Type), rank(cs[j].Type); ri != rj {
			return ri < rj
		}
		return cs[i].Type < cs[j].Type
	})
}

func removeCondition(sub *omv1.Subscription, typ string) {
	meta.RemoveStatusCondition(&sub.Status.Conditions, typ)
}

// mirror copies the Blueprint's progress into the Subscription's status.
func (r *Reconciler) mirror(sub *omv1.Subscription, bp *omv1.Blueprint) {
	st := &sub.Status
	defer func() { st.State = stateOf(st, bp) }()
	if st.Package == "" {
		// An installation no catalog here resolves (imported from another cluster, pinned
		// by hand) is still of the package its Blueprint runs: the guard that refuses to
		// uninstall what others depend on, dependency checks and `status` read it here.
		st.Package = bp.Spec.Package
	}
	if sub.Spec.OLMStyle() && bp.Spec.ClusterServiceVersionName != "" {
		// OLM's currentCSV, in an OLM Subscription: the CSV of the newest change (under
		// way, waiting for approval, or done), one edge of the channel at a time, which
		// OLM users' scripts wait on (kubectl wait csv/$currentCSV). Elsewhere it is what
		// the Subscription resolves to.
		st.CurrentCSV = bp.Spec.ClusterServiceVersionName
	}
	st.InstallPlanRef = nil
	if name := installplan.Latest(bp, sub.Spec.ApprovalMode() == omv1.ApprovalManual); name != "" {
		st.InstallPlanRef = &corev1.ObjectReference{APIVersion: omv1alpha1.GroupVersion.String(), Kind: "InstallPlan",
			Namespace: bp.Namespace, Name: name}
	}
	if bp.Status.CurrentCSV != "" {
		st.InstalledCSV, st.InstalledVersion = bp.Status.CurrentCSV, bp.Status.CurrentVersion
		metrics.InstalledVersions.Set(sub.Namespace+"/"+sub.Name, 1, sub.Namespace, sub.Name, bp.Spec.Package, bp.Status.CurrentVersion, bp.Status.CurrentCSV)
	}
	st.CurrentRevision = bp.Status.LastGoodRevision
	for _, h := range bp.Status.History {
		if h.CSVName == st.InstalledCSV && h.Outcome == omv1.OutcomeSucceeded {
			st.CurrentRevision = h.Revision
		}
	}
	st.Opstatus = opstatusOf(bp.Status.Phase)
	if st.Opstatus == "" {
		// A Blueprint not looked at yet: its first phase, said in the write that created
		// it rather than in one more.
		st.Opstatus = "pending"
		if bp.Status.CurrentCSV == "" && bp.Spec.ClusterServiceVersionName != "" && !blueprint.AwaitsApproval(blueprint.PolicyOf(sub), bp) {
			st.Opstatus = opstatusOf(omv1.BlueprintInstalling)
		}
	}
	ready := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionReady)
	if rb := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionRolledBack); rb != nil && bp.Status.Phase == omv1.BlueprintRolledBack {
		setCondition(sub, omv1.ConditionRolledBack, true, rb.Reason, rb.Message)
	} else {
		removeCondition(sub, omv1.ConditionRolledBack)
	}
	if bl := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionBlocked); bl != nil && bp.Status.Phase == omv1.BlueprintBlocked {
		setCondition(sub, omv1.ConditionBlocked, true, bl.Reason, bl.Message)
	} else {
		removeCondition(sub, omv1.ConditionBlocked)
	}
	if up := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionUpgradePending); up != nil && (bp.Status.Phase == omv1.BlueprintWaitingForApproval || bp.Status.Phase == omv1.BlueprintUpgradeHeld) {
		setCondition(sub, omv1.ConditionUpgradePending, true, up.Reason, up.Message)
	} else {
		removeCondition(sub, omv1.ConditionUpgradePending)
	}
	// Healthy is the Blueprint's live judgement of the version that runs.
	healthy := func(fallbackReason, fallbackMsg string) {
		if h := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionHealthy); h != nil {
			// Its status as it is: Unknown while a configuration change re-runs the gate.
			setConditionStatus(sub, omv1.ConditionHealthy, h.Status, h.Reason, h.Message)
			return
		}
		setCondition(sub, omv1.ConditionHealthy, false, fallbackReason, fallbackMsg)
	}
	switch bp.Status.Phase {
	case omv1.BlueprintWaitingForApproval, omv1.BlueprintUpgradeHeld, omv1.BlueprintSucceeded:
		if bp.Status.CurrentCSV == "" {
			// A first install waiting for approval (OLM's installPlanApproval: Manual).
			reason, msg := conditionReason(ready), conditionMessage(ready)
			setCondition(sub, omv1.ConditionInstalled, false, reason, msg)
			setCondition(sub, omv1.ConditionHealthy, false, reason, msg)
			break
		}
		setCondition(sub, omv1.ConditionInstalled, true, omv1.ReasonSucceeded, bp.Status.CurrentCSV+" is installed")
		healthy(conditionReason(ready), conditionMessage(ready))
	case omv1.BlueprintRolledBack:
		setCondition(sub, omv1.ConditionInstalled, true, omv1.ReasonRolledBack, bp.Status.CurrentCSV+" is installed (rolled back)")
		healthy(omv1.ReasonRolledBack, bp.Status.CurrentCSV+" runs again")
	case omv1.BlueprintFailed, omv1.BlueprintBlocked:
		reason, msg := conditionReason(ready), conditionMessage(ready)
		if bp.Status.CurrentCSV == "" || bp.Status.CurrentCSV != bp.Spec.ClusterServiceVersionName {
			setCondition(sub, omv1.ConditionInstalled, bp.Status.CurrentCSV != "", reason, msg)
		}
		if bp.Status.Phase == omv1.BlueprintBlocked && bp.Status.CurrentCSV != "" {
			healthy(reason, msg) // nothing was changed: the running version's health stands
		} else {
			setCondition(sub, omv1.ConditionHealthy, false, reason, msg)
		}
	default:
		// Before the Blueprint has said anything, its reason is foretold: a first install's
		// revision starts with the reason "Install", so the Blueprint's first words change
		// only the Subscription's words, which wait (one status write fewer per install).
		reason, msg := string(omv1.TriggerInstall), bp.Spec.ClusterServiceVersionName+" is being installed"
		if bp.Status.CurrentCSV != "" {
			reason = omv1.ReasonInstalling
		}
		if ready != nil {
			reason, msg = ready.Reason, ready.Message
		}
		if bp.Status.CurrentCSV == "" {
			setCondition(sub, omv1.ConditionInstalled, false, reason, msg)
		}
		setCondition(sub, omv1.ConditionHealthy, false, reason, msg)
	}
}

// stateOf is OLM's status.state of a Subscription whose Blueprint is bp: UpgradePending
// while a change is under way or waits (for approval or for the running operator),
// AtLatestKnown once the CSV the Subscription resolves to runs, UpgradeAvailable when it
// resolves to another and nothing is under way (the change failed, was rolled back or
// blocked), and nothing when nothing runs and nothing is under way.
func stateOf(st *omv1.SubscriptionStatus, bp *omv1.Blueprint) omv1.SubscriptionState {
	switch bp.Status.Phase {
	case omv1.BlueprintSucceeded:
		if st.CurrentCSV == "" || st.CurrentCSV == bp.Status.CurrentCSV {
			return omv1.SubscriptionStateAtLatest
		}
		return omv1.SubscriptionStateUpgradeAvailable
	case omv1.BlueprintRolledBack, omv1.BlueprintFailed, omv1.BlueprintBlocked:
		if bp.Status.CurrentCSV == "" {
			return ""
		}
		return omv1.SubscriptionStateUpgradeAvailable
	case omv1.BlueprintDeleting:
		return ""
	}
	return omv1.SubscriptionStateUpgradePending
}

func conditionReason(c *metav1.Condition) string {
	if c == nil {
		return "Unknown"
	}
	return c.Reason
}

func conditionMessage(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return c.Message
}

// deriveReady is the one place the Subscription's Ready condition is set: true when the
// intent is resolved and the operator it names is installed and healthy; otherwise false
// with the reason of the first condition that is not.
//
// While an uninstall is asked for, Ready follows Installed alone: what was resolved (or
// paused) before no longer says anything about the Subscription, which is not as asked
// until the operator is gone ("Uninstalling", "RequiredByOthers", "Uninstalled"); found
// by hand: an uninstalled Subscription that had been paused kept saying "spec.paused is
// true: version changes wait".
func deriveReady(sub *omv1.Subscription) {
	if uninstalling(sub.Status.Opstatus) {
		if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionInstalled); c != nil {
			setCondition(sub, omv1.ConditionReady, false, c.Reason, c.Message)
			return
		}
	}
	for _, typ := range []string{omv1.ConditionResolved, omv1.ConditionInstalled, omv1.ConditionHealthy} {
		c := meta.FindStatusCondition(sub.Status.Conditions, typ)
		if c == nil {
			setCondition(sub, omv1.ConditionReady, false, "Pending", "waiting for "+typ)
			return
		}
		if c.Status != metav1.ConditionTrue {
			setCondition(sub, omv1.ConditionReady, false, c.Reason, c.Message)
			return
		}
	}
	// Installed and healthy, but not what was asked for: say why.
	for _, typ := range []string{omv1.ConditionRolledBack, omv1.ConditionBlocked, omv1.ConditionUpgradePending} {
		if c := meta.FindStatusCondition(sub.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			setCondition(sub, omv1.ConditionReady, false, typ, c.Message)
			return
		}
	}
	setCondition(sub, omv1.ConditionReady, true, omv1.ReasonSucceeded, sub.Status.InstalledCSV+" is installed and healthy")
}

// uninstalling says whether opstatus is an uninstall's: under way, waiting for the
// installations that depend on it, or done.
func uninstalling(opstatus string) bool {
	return opstatus == "deleting" || opstatus == "required" || opstatus == "deleted"
}

// inProgress says whether a Subscription's words, in opstatus, are progress: the steps
// of a version change under way, which follow each other and may wait. The words of a
// settled phase are news (why it is blocked, failed, rolled back or held: a second
// version blocked for the same reason as the first changes only the words) and are
// written at once.
func inProgress(opstatus string) bool {
	switch opstatus {
	case strings.ToLower(string(omv1.BlueprintPending)), strings.ToLower(string(omv1.BlueprintInstalling)),
		strings.ToLower(string(omv1.BlueprintUpgrading)), strings.ToLower(string(omv1.BlueprintRollingBack)),
		strings.ToLower(string(omv1.BlueprintDeleting)):
		return true
	}
	return false
}

// stepReasons are the reasons of a version change's own steps: the revision under way
// (named by its trigger) and its CRDs becoming Established. A Subscription moving between
// them is progress, which waits like words. Any other reason names something outside the
// installation that it waits on (a native API the cluster does not serve, a bundle its
// catalog cannot give) and is news, shown within seconds.
var stepReasons = map[string]bool{
	string(omv1.TriggerInstall): true, string(omv1.TriggerUpgrade): true, string(omv1.TriggerDowngrade): true,
	string(omv1.TriggerRetry): true, string(omv1.TriggerRollback): true, omv1.ReasonInstalling: true,
	blueprint.ReasonWaitingForCRDs: true,
}

// stepsOnly says whether every reason that differs between two lists of conditions, the
// same but for words (statuswrite.ProgressOnly), moves from one step of a version change
// to another.
func stepsOnly(before, after []metav1.Condition) bool {
	if len(before) != len(after) {
		return false
	}
	for i := range before {
		if before[i].Reason != after[i].Reason && (!stepReasons[before[i].Reason] || !stepReasons[after[i].Reason]) {
			return false
		}
	}
	return true
}

// opstatusOf is the original operator-manager's status.opstatus for a Blueprint phase
// (its phase in lower case), as written here and read by readiness.
func opstatusOf(p omv1.BlueprintPhase) string { return strings.ToLower(string(p)) }

// sayReconcileError puts a reconcile's error, retried with backoff, in Ready (a Warning
// event when it is new), over what deriveReady made of the other conditions: those are
// what the last pass that got through saw, and may say "waiting" for good.
func sayReconcileError(sub, orig *omv1.Subscription, err error, recorder events.EventRecorder) {
	msg := "the manager's reconcile fails, and is retried with backoff: " + err.Error()
	setCondition(sub, omv1.ConditionReady, false, omv1.ReasonReconcileError, msg)
	if was := meta.FindStatusCondition(orig.Status.Conditions, omv1.ConditionReady); recorder != nil && (was == nil || was.Message != msg) {
		recorder.Eventf(sub, nil, corev1.EventTypeWarning, omv1.ReasonReconcileError, "Reconcile", "%s", msg)
	}
}
