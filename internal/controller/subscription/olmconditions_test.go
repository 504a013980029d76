package subscription

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestSetOLMConditions: an OLM Subscription carries OLM's condition types, said from its
// own conditions, so a tool written for OLM (ArgoCD's Subscription health check) reads
// each state as it reads OLM's: installing and waiting for approval Progressing, failures
// Degraded, installed Healthy. A Subscription in this project's words gets none.
func TestSetOLMConditions(t *testing.T) {
	cond := func(typ string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg}
	}
	resolvedOK := cond(omv1.ConditionResolved, true, "Resolved", "resolves to etcd.v0.9.4")
	for _, tc := range []struct {
		name     string
		notOLM   bool
		state    omv1.SubscriptionState
		opstatus string
		conds    []metav1.Condition
		want     []string // "Type Status Reason [message]" of OLM's conditions
	}{
		{name: "installed", state: omv1.SubscriptionStateAtLatest, opstatus: "succeeded",
			conds: []metav1.Condition{resolvedOK, cond(omv1.ConditionReady, true, "Succeeded", "")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy"}},
		{name: "installed, its catalog gone", state: omv1.SubscriptionStateAtLatest, opstatus: "succeeded",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, true, omv1.ReasonCatalogUnavailable, "etcd.v0.9.4 runs, as asked, and stays: its catalog cannot be read"),
				cond(omv1.ConditionReady, true, "Succeeded", "")},
			want: []string{"CatalogSourcesUnhealthy True UnhealthyCatalogSourceFound [etcd.v0.9.4 runs, as asked, and stays: its catalog cannot be read]"}},
		{name: "installing", state: omv1.SubscriptionStateUpgradePending, opstatus: "installing",
			conds: []metav1.Condition{resolvedOK},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy", "InstallPlanPending True Installing [etcd.v0.9.4 is being installed]"}},
		{name: "waiting for approval", state: omv1.SubscriptionStateUpgradePending, opstatus: "waitingforapproval",
			conds: []metav1.Condition{resolvedOK, cond(omv1.ConditionUpgradePending, true, omv1.ReasonWaitingForApproval, "approve InstallPlan install-x")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy", "InstallPlanPending True RequiresApproval [approve InstallPlan install-x]"}},
		{name: "held by an upgrade window", state: omv1.SubscriptionStateUpgradePending, opstatus: "upgradeheld",
			conds: []metav1.Condition{resolvedOK, cond(omv1.ConditionUpgradePending, true, omv1.ReasonOutsideUpgradeWindow, "opens at 02:00")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy", "InstallPlanPending True OutsideUpgradeWindow [opens at 02:00]"}},
		{name: "unsatisfiable", opstatus: "resolve failed",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonUnsatisfiable, "cannot install x: ...")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy", "ResolutionFailed True ConstraintsNotSatisfiable [cannot install x: ...]"}},
		{name: "version not found", opstatus: "resolve failed",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonVersionNotFound, "no 9.9.9")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy", "ResolutionFailed True ErrorPreventedResolution [no 9.9.9]"}},
		{name: "catalog failed to load", opstatus: "resolve failed",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonCatalogNotReady, "catalog ns/x is not loaded: ...")},
			want:  []string{"CatalogSourcesUnhealthy True UnhealthyCatalogSourceFound [catalog ns/x is not loaded: ...]"}},
		{name: "catalog loading is a wait", opstatus: opstatusWaitingForCatalog,
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonCatalogNotReady, "catalog ns/x is not loaded yet")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy"}},
		{name: "paused", state: omv1.SubscriptionStateAtLatest, opstatus: "succeeded",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonPaused, "spec.paused is true")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy"}},
		{name: "rolled back", state: omv1.SubscriptionStateUpgradeAvailable, opstatus: "rolledback",
			conds: []metav1.Condition{resolvedOK, cond(omv1.ConditionRolledBack, true, omv1.ReasonHealthCheckFailed, "1.2.0 failed its health check; 1.1.0 runs again")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy", "InstallPlanFailed True InstallComponentFailed [1.2.0 failed its health check; 1.1.0 runs again]"}},
		{name: "first install failed", opstatus: "failed",
			conds: []metav1.Condition{resolvedOK, cond(omv1.ConditionReady, false, omv1.ReasonDeadlineExceeded, "not healthy within 5m")},
			want:  []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy", "InstallPlanFailed True InstallComponentFailed [not healthy within 5m]"}},
		{name: "not an OLM Subscription", notOLM: true, state: omv1.SubscriptionStateUpgradePending, opstatus: "installing",
			conds: []metav1.Condition{resolvedOK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &omv1.Subscription{}
			if !tc.notOLM {
				sub.Spec.Name = "etcd"
			}
			sub.Status = omv1.SubscriptionStatus{State: tc.state, Opstatus: tc.opstatus, CurrentCSV: "etcd.v0.9.4", Conditions: slices.Clone(tc.conds)}
			setOLMConditions(sub)
			var got []string
			for _, c := range sub.Status.Conditions {
				if !slices.ContainsFunc(tc.conds, func(o metav1.Condition) bool { return o.Type == c.Type }) {
					s := fmt.Sprintf("%s %s %s", c.Type, c.Status, c.Reason)
					if c.Status == metav1.ConditionTrue {
						s += " [" + c.Message + "]"
					}
					got = append(got, s)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			// Said once, they stay as they are: a second pass changes nothing.
			before := slices.Clone(sub.Status.Conditions)
			setOLMConditions(sub)
			if !slices.EqualFunc(before, sub.Status.Conditions, func(a, b metav1.Condition) bool { return a == b }) {
				t.Error("a second pass changed the conditions")
			}
		})
	}
}

// TestOLMConditionsLeave: a condition that stops being true goes, as OLM's do: the
// install ends, so InstallPlanPending leaves; resolution succeeds again, so
// ResolutionFailed leaves; CatalogSourcesUnhealthy turns False and stays.
func TestOLMConditionsLeave(t *testing.T) {
	sub := &omv1.Subscription{Spec: omv1.SubscriptionSpec{Name: "etcd"}}
	sub.Status = omv1.SubscriptionStatus{State: omv1.SubscriptionStateUpgradePending, Opstatus: "installing", CurrentCSV: "etcd.v0.9.4",
		Conditions: []metav1.Condition{{Type: omv1.ConditionResolved, Status: metav1.ConditionFalse, Reason: omv1.ReasonCatalogNotReady, Message: "catalog gone"}}}
	sub.Status.Opstatus = "resolve failed"
	setOLMConditions(sub)
	sub.Status.Conditions[0] = metav1.Condition{Type: omv1.ConditionResolved, Status: metav1.ConditionFalse, Reason: omv1.ReasonUnsatisfiable, Message: "m"}
	setOLMConditions(sub)
	sub.Status.Opstatus = "installing"
	sub.Status.Conditions[0] = metav1.Condition{Type: omv1.ConditionResolved, Status: metav1.ConditionTrue, Reason: "Resolved"}
	setOLMConditions(sub)
	sub.Status.State, sub.Status.Opstatus = omv1.SubscriptionStateAtLatest, "succeeded"
	setOLMConditions(sub)
	var got []string
	for _, c := range sub.Status.Conditions[1:] {
		got = append(got, fmt.Sprintf("%s %s %s", c.Type, c.Status, c.Reason))
	}
	if want := []string{"CatalogSourcesUnhealthy False AllCatalogSourcesHealthy"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
