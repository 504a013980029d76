package subscription

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func TestReadiness(t *testing.T) {
	cond := func(typ string, ok bool, reason string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	for _, tc := range []struct {
		name      string
		opstatus  string
		conds     []metav1.Condition
		wantReady bool
		state     string
		reason    string
	}{
		{name: "no status yet", state: StateProgressing, reason: "Pending"},
		{name: "installed and healthy", opstatus: "succeeded", wantReady: true, state: StateReady, reason: "Succeeded",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, true, "Resolved"), cond(omv1.ConditionReady, true, "Succeeded")}},
		{name: "first install under way", opstatus: "installing", state: StateProgressing, reason: "Install",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, true, "Resolved"), cond(omv1.ConditionReady, false, "Install")}},
		{name: "upgrade under way", opstatus: "upgrading", state: StateProgressing, reason: "Upgrade",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "Upgrade")}},
		{name: "uninstall under way", opstatus: "deleting", state: StateProgressing, reason: "Uninstalling",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "Uninstalling")}},
		{name: "rolled back after a failed health check: the reason is the rollback's", opstatus: "rolledback", state: StateFailed, reason: "HealthCheckFailed",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, true, "Resolved"), cond(omv1.ConditionHealthy, true, "Healthy"),
				cond(omv1.ConditionReady, false, "RolledBack"), cond(omv1.ConditionRolledBack, true, "HealthCheckFailed")}},
		{name: "first install failed", opstatus: "failed", state: StateFailed, reason: "HealthCheckFailed",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "HealthCheckFailed")}},
		{name: "blocked by the CRD preflight", opstatus: "blocked", state: StateFailed, reason: "Blocked",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "Blocked")}},
		{name: "upgrade waits for approval", opstatus: "waitingforapproval", state: StateWaiting, reason: "WaitingForApproval",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "UpgradePending"), cond(omv1.ConditionUpgradePending, true, "WaitingForApproval")}},
		{name: "upgrade held by the operator", opstatus: "upgradeheld", state: StateWaiting, reason: "OperatorNotUpgradeable",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "UpgradePending"), cond(omv1.ConditionUpgradePending, true, "OperatorNotUpgradeable")}},
		{name: "upgrade waits for its window", opstatus: "upgradeheld", state: StateScheduled, reason: "OutsideUpgradeWindow",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "UpgradePending"), cond(omv1.ConditionUpgradePending, true, "OutsideUpgradeWindow")}},
		{name: "upgrade held by a window that cannot be read", opstatus: "upgradeheld", state: StateFailed, reason: "InvalidUpgradeWindow",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "UpgradePending"), cond(omv1.ConditionUpgradePending, true, "InvalidUpgradeWindow")}},
		{name: "uninstall waits for dependents", opstatus: "required", state: StateWaiting, reason: "RequiredByOthers",
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, "RequiredByOthers")}},
		{name: "uninstall of a paused Subscription under way", opstatus: "deleting", state: StateProgressing, reason: "Uninstalling",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonPaused), cond(omv1.ConditionReady, false, "Uninstalling")}},
		{name: "uninstall under way, its catalog gone", opstatus: "deleting", state: StateProgressing, reason: "Uninstalling",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonCatalogNotReady), cond(omv1.ConditionReady, false, "Uninstalling")}},
		{name: "uninstall of a paused Subscription waits for dependents", opstatus: "required", state: StateWaiting, reason: "RequiredByOthers",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, omv1.ReasonPaused), cond(omv1.ConditionReady, false, "RequiredByOthers")}},
		{name: "unhealthy after its gate", opstatus: "succeeded", state: StateUnhealthy, reason: "ComponentUnhealthy",
			conds: []metav1.Condition{cond(omv1.ConditionHealthy, false, "ComponentUnhealthy"), cond(omv1.ConditionReady, false, "ComponentUnhealthy")}},
		{name: "a configuration change in its health gate", opstatus: "succeeded", state: StateProgressing, reason: "HealthGateRunning",
			conds: []metav1.Condition{{Type: omv1.ConditionHealthy, Status: metav1.ConditionUnknown, Reason: "HealthGateRunning"}, cond(omv1.ConditionReady, false, "HealthGateRunning")}},
		{name: "a first install whose Blueprint a quota refused: nothing under way", opstatus: "", state: StateFailed, reason: omv1.ReasonRefusedByAPIServer,
			conds: []metav1.Condition{cond(omv1.ConditionResolved, true, "Resolved"), cond(omv1.ConditionInstalled, false, omv1.ReasonRefusedByAPIServer),
				cond(omv1.ConditionReady, false, omv1.ReasonRefusedByAPIServer)}},
		{name: "an upgrade a quota refused while the old version runs", opstatus: "succeeded", state: StateFailed, reason: omv1.ReasonRefusedByAPIServer,
			conds: []metav1.Condition{cond(omv1.ConditionHealthy, true, "Healthy"), cond(omv1.ConditionBlocked, true, omv1.ReasonRefusedByAPIServer),
				cond(omv1.ConditionReady, false, omv1.ConditionBlocked)}},
		{name: "an upgrade whose bundle Secret a quota refused", opstatus: "upgrading", state: StateFailed, reason: omv1.ReasonRefusedByAPIServer,
			conds: []metav1.Condition{cond(omv1.ConditionHealthy, false, omv1.ReasonRefusedByAPIServer), cond(omv1.ConditionReady, false, omv1.ReasonRefusedByAPIServer)}},
		{name: "a reconcile that keeps failing, before anything is installed", opstatus: "", state: StateFailed, reason: omv1.ReasonReconcileError,
			conds: []metav1.Condition{cond(omv1.ConditionReady, false, omv1.ReasonReconcileError)}},
		{name: "an install whose Blueprint's reconcile keeps failing", opstatus: "installing", state: StateFailed, reason: omv1.ReasonReconcileError,
			conds: []metav1.Condition{cond(omv1.ConditionResolved, true, "Resolved"), cond(omv1.ConditionInstalled, false, omv1.ReasonReconcileError),
				cond(omv1.ConditionReady, false, omv1.ReasonReconcileError)}},
		{name: "an uninstall whose installing identity lost its rights", opstatus: "deleting", state: StateFailed, reason: omv1.ReasonInsufficientPermissions,
			conds: []metav1.Condition{cond(omv1.ConditionInstalled, false, omv1.ReasonInsufficientPermissions), cond(omv1.ConditionReady, false, omv1.ReasonInsufficientPermissions)}},
		{name: "running, a newer version waits", opstatus: "succeeded", state: StateWaiting, reason: "UpgradePending",
			conds: []metav1.Condition{cond(omv1.ConditionHealthy, true, "Healthy"), cond(omv1.ConditionReady, false, "UpgradePending")}},
		{name: "blocked by the CRD preflight while the old version runs", opstatus: "blocked", state: StateFailed, reason: "CRDPreflightFailed",
			conds: []metav1.Condition{cond(omv1.ConditionHealthy, true, "Healthy"), cond(omv1.ConditionReady, false, "Blocked"), cond(omv1.ConditionBlocked, true, "CRDPreflightFailed")}},
		{name: "unsatisfiable", opstatus: "resolve failed", state: StateUnresolved, reason: "Unsatisfiable",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, "Unsatisfiable"), cond(omv1.ConditionReady, false, "Unsatisfiable")}},
		{name: "unresolvable while the old version runs", opstatus: "succeeded", state: StateUnresolved, reason: "VersionNotFound",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, "VersionNotFound"), cond(omv1.ConditionHealthy, true, "Healthy"), cond(omv1.ConditionReady, false, "VersionNotFound")}},
		{name: "paused", opstatus: "succeeded", state: StatePaused, reason: "Paused",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, false, "Paused"), cond(omv1.ConditionReady, false, "Paused")}},
		{name: "uninstalled as asked", opstatus: "deleted", state: StateUninstalled, reason: "Uninstalled",
			conds: []metav1.Condition{cond(omv1.ConditionResolved, true, "Resolved"), cond(omv1.ConditionReady, false, "Uninstalled")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, state, reason := readiness(&omv1.SubscriptionStatus{Opstatus: tc.opstatus, Conditions: tc.conds})
			if ready != tc.wantReady || state != tc.state || reason != tc.reason {
				t.Errorf("readiness = %v, %q, %q; want %v, %q, %q", ready, state, reason, tc.wantReady, tc.state, tc.reason)
			}
		})
	}
}

func TestWaitsForWindow(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC) // a Saturday
	closed := []omv1.UpgradeWindow{{Schedule: "0 2 * * 1-5", Duration: metav1.Duration{Duration: 2 * time.Hour}}}
	open := []omv1.UpgradeWindow{{Schedule: "0 9 * * *", Duration: metav1.Duration{Duration: 2 * time.Hour}}}
	bad := []omv1.UpgradeWindow{{Schedule: "at two", Duration: metav1.Duration{Duration: time.Hour}}}
	running := &omv1.Blueprint{Status: omv1.BlueprintStatus{CurrentCSV: "cache-operator.v1.0.0"}}
	for _, tc := range []struct {
		name    string
		windows []omv1.UpgradeWindow
		bp      *omv1.Blueprint
		exists  bool
		target  string
		want    bool
	}{
		{name: "no windows", bp: running, exists: true, target: "cache-operator.v1.1.0"},
		{name: "an upgrade, windows closed", windows: closed, bp: running, exists: true, target: "cache-operator.v1.1.0", want: true},
		{name: "an upgrade, a window open", windows: open, bp: running, exists: true, target: "cache-operator.v1.1.0"},
		{name: "windows that cannot be read hold it", windows: bad, bp: running, exists: true, target: "cache-operator.v1.1.0", want: true},
		{name: "the first install", windows: closed, bp: &omv1.Blueprint{}, target: "cache-operator.v1.1.0"},
		{name: "nothing changes", windows: closed, bp: running, exists: true, target: "cache-operator.v1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &omv1.Subscription{Spec: omv1.SubscriptionSpec{UpgradeWindows: tc.windows}}
			if got := waitsForWindow(sub, tc.bp, tc.exists, tc.target, now); got != tc.want {
				t.Errorf("waitsForWindow = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDeriveReady: Ready is the first condition that is not true, and while an uninstall
// is asked for, Installed alone (found by hand: a paused Subscription, uninstalled, kept
// saying "spec.paused is true").
func TestDeriveReady(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " words"}
	}
	yes, no := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		name       string
		opstatus   string
		conds      []metav1.Condition
		want       metav1.ConditionStatus
		wantReason string
	}{
		{"installed and healthy", "succeeded",
			[]metav1.Condition{cond(omv1.ConditionResolved, yes, "Resolved"), cond(omv1.ConditionInstalled, yes, "Succeeded"), cond(omv1.ConditionHealthy, yes, "Healthy")},
			yes, omv1.ReasonSucceeded},
		{"paused: the pause", "succeeded",
			[]metav1.Condition{cond(omv1.ConditionResolved, no, omv1.ReasonPaused), cond(omv1.ConditionInstalled, yes, "Succeeded"), cond(omv1.ConditionHealthy, yes, "Healthy")},
			no, omv1.ReasonPaused},
		{"nothing installed yet", "",
			[]metav1.Condition{cond(omv1.ConditionResolved, yes, "Resolved")},
			no, "Pending"},
		{"paused, then uninstalled", "deleted",
			[]metav1.Condition{cond(omv1.ConditionResolved, no, omv1.ReasonPaused), cond(omv1.ConditionInstalled, no, omv1.ReasonUninstalled)},
			no, omv1.ReasonUninstalled},
		{"paused, uninstall under way", "deleting",
			[]metav1.Condition{cond(omv1.ConditionResolved, no, omv1.ReasonPaused), cond(omv1.ConditionInstalled, no, omv1.ReasonUninstalling), cond(omv1.ConditionHealthy, yes, "Healthy")},
			no, omv1.ReasonUninstalling},
		{"catalog gone, uninstalled", "deleted",
			[]metav1.Condition{cond(omv1.ConditionResolved, no, omv1.ReasonCatalogNotReady), cond(omv1.ConditionInstalled, no, omv1.ReasonUninstalled)},
			no, omv1.ReasonUninstalled},
		{"uninstall refused while others depend: runs, healthy, not as asked", "required",
			[]metav1.Condition{cond(omv1.ConditionResolved, yes, "Resolved"), cond(omv1.ConditionInstalled, yes, "RequiredByOthers"), cond(omv1.ConditionHealthy, yes, "Healthy")},
			no, "RequiredByOthers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &omv1.Subscription{}
			sub.Status.Opstatus = tc.opstatus
			sub.Status.Conditions = tc.conds
			deriveReady(sub)
			c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionReady)
			if c == nil || c.Status != tc.want || c.Reason != tc.wantReason {
				t.Fatalf("Ready = %+v, want %s %s", c, tc.want, tc.wantReason)
			}
			if c.Message == "" {
				t.Errorf("Ready %s %s with no words", c.Status, c.Reason)
			}
		})
	}
}
