package subscription

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/metrics"
)

// The state label of operator_manager_subscription_ready: what an alert acts on, sorted
// from the many reasons a Subscription is not Ready. The shipped alerting rules
// (config/prometheus) name them.
const (
	StateReady       = "ready"       // installed at the version it resolves to, and healthy
	StateProgressing = "progressing" // a version change (or an uninstall) under way
	StateWaiting     = "waiting"     // a change waits for a person's approval or the operator's consent
	StateScheduled   = "scheduled"   // an upgrade waits for the Subscription's next upgrade window
	StatePaused      = "paused"      // spec.paused: a person stopped version changes
	StateFailed      = "failed"      // the latest change failed, was rolled back or blocked
	StateUnhealthy   = "unhealthy"   // the version that runs passed its health gate and is unhealthy now
	StateUnresolved  = "unresolved"  // the intent cannot be resolved against the catalog
	StateUninstalled = "uninstalled" // option: delete took the operator away, as asked
)

// State is the state a Subscription's status is in, as the operator_manager_subscription_ready
// series and the shipped alerts name it: what a person looks at (the console colours an
// installation by it: a fault, something under way or waiting, or done as asked).
func State(st *omv1.SubscriptionStatus) string {
	_, state, _ := readiness(st)
	return state
}

// readiness sorts a Subscription's status into the state label; its Ready condition
// (set by deriveReady) gives the value and the reason. Where Ready names the condition
// that holds it (RolledBack, Blocked, UpgradePending), the reason is that condition's
// own: what an alert's words need (HealthCheckFailed, WaitingForApproval).
func readiness(st *omv1.SubscriptionStatus) (ready bool, state, reason string) {
	c := meta.FindStatusCondition(st.Conditions, omv1.ConditionReady)
	if c == nil {
		return false, StateProgressing, "Pending"
	}
	reason = c.Reason
	if c.Status == metav1.ConditionTrue {
		return true, StateReady, reason
	}
	if by := meta.FindStatusCondition(st.Conditions, c.Reason); by != nil && by.Status == metav1.ConditionTrue && by.Reason != "" {
		reason = by.Reason
	}
	if st.Opstatus == "deleted" {
		return false, StateUninstalled, reason
	}
	if reason == omv1.ReasonRefusedByAPIServer || reason == omv1.ReasonReconcileError ||
		st.Opstatus == "deleting" && reason == omv1.ReasonInsufficientPermissions {
		// A quota or a policy for a person to mend; a reconcile that keeps failing (the
		// alert's "for" passes over one that fails once); an uninstall whose installing
		// identity lost the rights to remove what it installed.
		return false, StateFailed, reason
	}
	switch st.Opstatus {
	case "deleting": // an uninstall: what was resolved before no longer counts
		return false, StateProgressing, reason
	case "required":
		return false, StateWaiting, reason
	}
	if r := meta.FindStatusCondition(st.Conditions, omv1.ConditionResolved); r != nil && r.Status == metav1.ConditionFalse {
		if r.Reason == omv1.ReasonPaused {
			return false, StatePaused, reason
		}
		return false, StateUnresolved, reason
	}
	if u := meta.FindStatusCondition(st.Conditions, omv1.ConditionUpgradePending); u != nil && u.Status == metav1.ConditionTrue {
		switch u.Reason {
		case omv1.ReasonOutsideUpgradeWindow:
			return false, StateScheduled, u.Reason
		case omv1.ReasonInvalidUpgradeWindow:
			return false, StateFailed, u.Reason // a person must mend the Subscription
		}
	}
	switch st.Opstatus {
	case opstatusOf(omv1.BlueprintWaitingForApproval), opstatusOf(omv1.BlueprintUpgradeHeld):
		return false, StateWaiting, reason
	case opstatusOf(omv1.BlueprintFailed), opstatusOf(omv1.BlueprintRolledBack), opstatusOf(omv1.BlueprintBlocked):
		return false, StateFailed, reason
	case opstatusOf(omv1.BlueprintSucceeded):
		if h := meta.FindStatusCondition(st.Conditions, omv1.ConditionHealthy); h != nil && h.Status == metav1.ConditionFalse {
			return false, StateUnhealthy, reason
		} else if h != nil && h.Status == metav1.ConditionUnknown {
			return false, StateProgressing, reason // a configuration change in its health gate
		}
		// Installed and healthy, not what it resolves to: an upgrade waits (Manual).
		return false, StateWaiting, reason
	}
	return false, StateProgressing, reason
}

// recordReadiness sets the Subscription's series of operator_manager_subscription_ready.
func recordReadiness(sub *omv1.Subscription) {
	ready, state, reason := readiness(&sub.Status)
	pkg := sub.Status.Package
	if pkg == "" {
		pkg = sub.Spec.PackageName()
	}
	value := 0.0
	if ready {
		value = 1
	}
	metrics.SubscriptionStates.Set(sub.Namespace+"/"+sub.Name, value, sub.Namespace, sub.Name, pkg, state, reason)
}
