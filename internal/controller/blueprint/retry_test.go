package blueprint

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestRetryable: only a change that ended badly, as the manager last saw the spec, is
// tried again; every other state says why there is nothing to retry.
func TestRetryable(t *testing.T) {
	bp := func(phase omv1.BlueprintPhase, seen bool) *omv1.Blueprint {
		b := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache", Generation: 2}}
		b.Spec.ClusterServiceVersionName, b.Spec.Generation = "x.v2", 3
		b.Status.Phase, b.Status.CurrentCSV, b.Status.ObservedGeneration = phase, "x.v1", 2
		b.Status.History = []omv1.Revision{{Revision: 1, CSVName: "x.v1", Generation: 1, Trigger: omv1.TriggerInstall, Outcome: omv1.OutcomeSucceeded}}
		if seen {
			b.Status.History = append(b.Status.History, omv1.Revision{Revision: 2, CSVName: "x.v2", Generation: 3, Trigger: omv1.TriggerUpgrade, Outcome: omv1.OutcomeFailed})
		} else {
			b.Generation = 3 // the spec changed since the status was written
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		bp      *omv1.Blueprint
		wantErr string
	}{
		{"failed", bp(omv1.BlueprintFailed, true), ""},
		{"rolled back", bp(omv1.BlueprintRolledBack, true), ""},
		{"blocked by the preflight", bp(omv1.BlueprintBlocked, true), ""},
		{"failed, an earlier change", bp(omv1.BlueprintFailed, false), "has not yet taken up its latest change"},
		{"succeeded", bp(omv1.BlueprintSucceeded, true), "nothing to retry: x.v1 runs and passed its health gate"},
		{"upgrading", bp(omv1.BlueprintUpgrading, true), "a change is under way (Upgrading"},
		{"rolling back", bp(omv1.BlueprintRollingBack, true), "a change is under way (RollingBack"},
		{"waiting for approval", bp(omv1.BlueprintWaitingForApproval, true), "it is WaitingForApproval, which waits rather than failed"},
		{"held", bp(omv1.BlueprintUpgradeHeld, true), "it is UpgradeHeld, which waits"},
		{"deleting", bp(omv1.BlueprintDeleting, true), "it is being uninstalled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Retryable(tc.bp)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Retryable = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Retryable = %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}
