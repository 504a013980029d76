package subscription

import (
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// OLM's condition types on a Subscription (operator-framework/api's names), which tools
// written for OLM key on: ArgoCD's health check of a Subscription (InstallPlanPending is
// Progressing; ResolutionFailed, InstallPlanFailed and CatalogSourcesUnhealthy are
// Degraded), scripts that `kubectl wait` on them.
var (
	condCatalogSourcesUnhealthy = string(v1alpha1.SubscriptionCatalogSourcesUnhealthy)
	condResolutionFailed        = string(v1alpha1.SubscriptionResolutionFailed)
	condInstallPlanPending      = string(v1alpha1.SubscriptionInstallPlanPending)
	condInstallPlanFailed       = string(v1alpha1.SubscriptionInstallPlanFailed)
)

// OLM's reasons for them that have no constant in operator-framework/api (an InstallPlan's
// phases, the resolver's outcomes).
const (
	reasonConstraintsNotSatisfiable = "ConstraintsNotSatisfiable"
	reasonErrorPreventedResolution  = "ErrorPreventedResolution"
	reasonRequiresApproval          = string(v1alpha1.InstallPlanPhaseRequiresApproval)
	reasonInstallPlanInstalling     = string(v1alpha1.InstallPlanPhaseInstalling)
	reasonInstallComponentFailed    = "InstallComponentFailed"
)

// setOLMConditions gives a Subscription written in OLM's words the conditions OLM's own
// carry, derived here from its other conditions and state, after Ready: they say the same
// thing in OLM's words, so they change only when those do and never cost a write of their
// own. CatalogSourcesUnhealthy is always present, as in OLM; the others only while true.
//   - CatalogSourcesUnhealthy: True while the catalog it names is not loaded (missing, or
//     its load failed); a catalog that fails to reload while the last one is kept is not
//     unhealthy to the Subscription, which goes on using it.
//   - ResolutionFailed: True while it cannot be resolved (ConstraintsNotSatisfiable for an
//     unsatisfiable dependency, ErrorPreventedResolution for the rest: a package, version
//     or catalog it may not use, its OperatorGroup), not while paused or its catalog loads.
//   - InstallPlanPending: True while a change waits for approval (RequiresApproval), waits
//     for an upgrade window or the operator's consent (their reasons), or is under way
//     (Installing).
//   - InstallPlanFailed: True while its newest change failed, was rolled back or is
//     blocked (InstallComponentFailed), with the words of that outcome.
func setOLMConditions(sub *omv1.Subscription) {
	if !sub.Spec.OLMStyle() {
		return
	}
	st := &sub.Status
	find := func(typ string) *metav1.Condition {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
		return nil
	}
	failing := func(typ string) *metav1.Condition {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status == metav1.ConditionFalse {
			return c
		}
		return nil
	}
	resolved := failing(omv1.ConditionResolved)

	if resolved != nil && resolved.Reason == omv1.ReasonCatalogNotReady && st.Opstatus != opstatusWaitingForCatalog {
		setCondition(sub, condCatalogSourcesUnhealthy, true, v1alpha1.UnhealthyCatalogSourceFound, resolved.Message)
	} else if c := find(omv1.ConditionResolved); c != nil && c.Reason == omv1.ReasonCatalogUnavailable {
		// What runs stays, and Resolved is True; the catalog is unhealthy all the same.
		setCondition(sub, condCatalogSourcesUnhealthy, true, v1alpha1.UnhealthyCatalogSourceFound, c.Message)
	} else {
		setCondition(sub, condCatalogSourcesUnhealthy, false, v1alpha1.AllCatalogSourcesHealthy, "all available catalogsources are healthy")
	}

	switch {
	case resolved == nil || resolved.Reason == omv1.ReasonCatalogNotReady || resolved.Reason == omv1.ReasonPaused:
		removeCondition(sub, condResolutionFailed)
	case resolved.Reason == omv1.ReasonUnsatisfiable:
		setCondition(sub, condResolutionFailed, true, reasonConstraintsNotSatisfiable, resolved.Message)
	default:
		setCondition(sub, condResolutionFailed, true, reasonErrorPreventedResolution, resolved.Message)
	}

	switch up := find(omv1.ConditionUpgradePending); {
	case up != nil && up.Reason == omv1.ReasonWaitingForApproval:
		setCondition(sub, condInstallPlanPending, true, reasonRequiresApproval, up.Message)
	case up != nil:
		setCondition(sub, condInstallPlanPending, true, up.Reason, up.Message)
	case st.State == omv1.SubscriptionStateUpgradePending:
		setCondition(sub, condInstallPlanPending, true, reasonInstallPlanInstalling, st.CurrentCSV+" is being installed")
	default:
		removeCondition(sub, condInstallPlanPending)
	}

	switch st.Opstatus {
	case opstatusOf(omv1.BlueprintRolledBack), opstatusOf(omv1.BlueprintFailed), opstatusOf(omv1.BlueprintBlocked):
		msg := ""
		for _, typ := range []string{omv1.ConditionRolledBack, omv1.ConditionBlocked} {
			if c := find(typ); c != nil && msg == "" {
				msg = c.Message
			}
		}
		if r := failing(omv1.ConditionReady); msg == "" && r != nil {
			msg = r.Message
		}
		setCondition(sub, condInstallPlanFailed, true, reasonInstallComponentFailed, msg)
	default:
		removeCondition(sub, condInstallPlanFailed)
	}
}
