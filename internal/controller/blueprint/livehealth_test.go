package blueprint

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// TestLiveVerdict: the running version is healthy while its CSV is Succeeded, unhealthy
// when it failed or is gone, and not yet judged (Unknown, no fault) while a configuration
// change runs its health gate again.
func TestLiveVerdict(t *testing.T) {
	csv := func(phase omv1alpha1.CSVPhase, reason, msg string) *omv1alpha1.ClusterServiceVersion {
		c := &omv1alpha1.ClusterServiceVersion{}
		c.Name, c.Status.Phase, c.Status.Reason, c.Status.Message = "x.v1", phase, reason, msg
		return c
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	// gate: a CSV whose health gate began ago, with that health-timeout annotation.
	gate := func(c *omv1alpha1.ClusterServiceVersion, ago time.Duration, timeout string) *omv1alpha1.ClusterServiceVersion {
		c.Status.GateStartTime = &metav1.Time{Time: now.Add(-ago)}
		if timeout != "" {
			c.Annotations = map[string]string{omv1.AnnotationHealthTimeout: timeout}
		}
		return c
	}
	for _, tc := range []struct {
		name         string
		csv          *omv1alpha1.ClusterServiceVersion
		status       metav1.ConditionStatus
		reason, says string
	}{
		{"succeeded", csv(omv1alpha1.CSVSucceeded, "InstallSucceeded", "1 deployment available"), metav1.ConditionTrue, "Succeeded", "x.v1 is healthy: 1 deployment available"},
		{"degraded after its gate", csv(omv1alpha1.CSVFailed, "ComponentUnhealthy", "deployment x not available"), metav1.ConditionFalse, "ComponentUnhealthy", "x.v1 is unhealthy: deployment x not available"},
		{"a configuration change failed its gate", csv(omv1alpha1.CSVFailed, "HealthTimeout", "pod x not scheduled"), metav1.ConditionFalse, "HealthTimeout", "pod x not scheduled"},
		{"a configuration change in its gate", csv(omv1alpha1.CSVInstalling, "InstallWaiting", "waiting for the deployment controller"), metav1.ConditionUnknown, ReasonHealthGateRunning, "is in its health gate again (its configuration changed, or it was created again): waiting for the deployment controller"},
		{"targets its install modes refuse: it runs on as deployed", csv(omv1alpha1.CSVFailed, "UnsupportedOperatorGroup", "spec.targetNamespaces [a b] needs install mode MultiNamespace; nothing was changed"), metav1.ConditionFalse, "UnsupportedOperatorGroup", "x.v1: its configuration cannot be applied: spec.targetNamespaces [a b]"},
		{"a config the API server refuses: it runs on as deployed", csv(omv1alpha1.CSVFailed, "InstallFailed", `applying apps/v1 Deployment a/x: requests: Invalid value: "2Gi"`), metav1.ConditionFalse, "InstallFailed", "x.v1: its configuration cannot be applied, and the operator runs on as it was deployed: applying apps/v1 Deployment"},
		{"its objects cannot be kept as installed", csv(omv1alpha1.CSVFailed, "ReconcileError", `restoring Role a/x (deleted): failed calling webhook "policy"`), metav1.ConditionFalse, "ReconcileError", `x.v1 cannot be kept as installed (retried every 30s): restoring Role a/x (deleted): failed calling webhook "policy"`},
		{"a configuration change that cannot be applied, within its timeout", gate(csv(omv1alpha1.CSVInstalling, "ReconcileError", "applying apps/v1 Deployment a/x: failed calling webhook"), 30*time.Second, "40s"), metav1.ConditionUnknown, ReasonHealthGateRunning, "is in its health gate again"},
		{"a configuration change that cannot be applied, past its timeout", gate(csv(omv1alpha1.CSVInstalling, "ReconcileError", "applying apps/v1 Deployment a/x: failed calling webhook"), 41*time.Second, "40s"), metav1.ConditionFalse, "ReconcileError", "x.v1: its configuration change could not be applied within its health timeout of 40s (retried with backoff): applying apps/v1 Deployment"},
		{"past the default timeout", gate(csv(omv1alpha1.CSVInstalling, "ReconcileError", "failed calling webhook"), 6*time.Minute, ""), metav1.ConditionFalse, "ReconcileError", "within its health timeout of 5m0s"},
		{"a slow rollout past its timeout is the gate's to judge", gate(csv(omv1alpha1.CSVInstalling, "Installing", "0/1 available"), 41*time.Second, "40s"), metav1.ConditionUnknown, ReasonHealthGateRunning, "0/1 available"},
		{"its CSV gone", nil, metav1.ConditionFalse, "CSVMissing", "x.v1 does not exist"},
	} {
		status, reason, msg := liveVerdict("x.v1", tc.csv, now)
		if status != tc.status || reason != tc.reason || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %s %s %q; want %s %s saying %q", tc.name, status, reason, msg, tc.status, tc.reason, tc.says)
		}
	}
}

// TestHealthChange: an event and a count mark each change of live health into unhealthy,
// and back into healthy from unhealthy; a configuration change's gate (Unknown) is none,
// nor is the verdict that ends it by confirming the health the installation had.
func TestHealthChange(t *testing.T) {
	cond := func(s metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Status: s, Reason: reason}
	}
	T, F, U := metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	for _, tc := range []struct {
		name   string
		before *metav1.Condition
		now    metav1.ConditionStatus
		want   string
	}{
		{"first judgement", nil, T, ""},
		{"stays healthy", cond(T, "Succeeded"), T, ""},
		{"degrades", cond(T, "Succeeded"), F, "unhealthy"},
		{"recovers", cond(F, "ComponentUnhealthy"), T, "healthy"},
		{"a configuration change starts its gate", cond(T, "Succeeded"), U, ""},
		{"its gate passes", cond(U, ReasonHealthGateRunning), T, ""},
		{"its gate fails", cond(U, ReasonHealthGateRunning), F, "unhealthy"},
		{"an unhealthy one's configuration is changed", cond(F, "ComponentUnhealthy"), U, ""},
		{"a condition without a reason (written before)", cond(T, ""), F, ""},
	} {
		if got := healthChange(tc.before, tc.now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRunningRevision: a deleted CSV is created again from the revision that made its
// version the one that runs: the newest that succeeded with it (after a rollback, the
// rollback's), never a failed attempt of it.
func TestRunningRevision(t *testing.T) {
	rev := func(n int64, csv string, trigger omv1.Trigger, outcome omv1.RevisionOutcome) omv1.Revision {
		return omv1.Revision{Revision: n, CSVName: csv, Trigger: trigger, Outcome: outcome}
	}
	for _, tc := range []struct {
		name    string
		current string
		history []omv1.Revision
		want    int64
	}{
		{"installed", "x.v1", []omv1.Revision{rev(1, "x.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)}, 1},
		{"upgraded", "x.v2", []omv1.Revision{rev(1, "x.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, "x.v2", omv1.TriggerUpgrade, omv1.OutcomeSucceeded)}, 2},
		{"rolled back", "x.v1", []omv1.Revision{rev(1, "x.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, "x.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed),
			rev(3, "x.v1", omv1.TriggerRollback, omv1.OutcomeSucceeded)}, 3},
		{"a failed retry of what runs is not it", "x.v1", []omv1.Revision{rev(1, "x.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, "x.v1", omv1.TriggerRetry, omv1.OutcomeFailed)}, 1},
		{"pruned from the history", "x.v1", []omv1.Revision{rev(5, "x.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed)}, 0},
	} {
		bp := &omv1.Blueprint{}
		bp.Status.CurrentCSV, bp.Status.History = tc.current, tc.history
		got := int64(0)
		if r := runningRevision(bp); r != nil {
			got = r.Revision
		}
		if got != tc.want {
			t.Errorf("%s: revision %d, want %d", tc.name, got, tc.want)
		}
	}
}
