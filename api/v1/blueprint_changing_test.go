package v1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChanging: an installation counts as where it is going, for the operators resolved
// against it, while a change to its spec's version is under way or waits, or is written
// and not yet acted on; a change that failed, was rolled back or was blocked leaves what
// runs as what counts.
func TestBlueprintChanging(t *testing.T) {
	bp := func(spec, current string, phase BlueprintPhase, gen, observed int64) *Blueprint {
		b := &Blueprint{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		b.Spec.ClusterServiceVersionName = spec
		b.Status.CurrentCSV, b.Status.Phase, b.Status.ObservedGeneration = current, phase, observed
		return b
	}
	deleting := bp("x.v2", "x.v1", BlueprintUpgrading, 2, 2)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name string
		bp   *Blueprint
		want bool
	}{
		{"settled on its version", bp("x.v1", "x.v1", BlueprintSucceeded, 1, 1), false},
		{"an upgrade under way", bp("x.v2", "x.v1", BlueprintUpgrading, 2, 2), true},
		{"a downgrade waiting for approval", bp("x.v0", "x.v1", BlueprintWaitingForApproval, 2, 2), true},
		{"an upgrade held for its window", bp("x.v2", "x.v1", BlueprintUpgradeHeld, 2, 2), true},
		{"a first install", bp("x.v1", "", BlueprintInstalling, 1, 1), true},
		{"a new spec not yet acted on", bp("x.v2", "x.v1", BlueprintSucceeded, 2, 1), true},
		{"rolled back", bp("x.v2", "x.v1", BlueprintRolledBack, 2, 2), false},
		{"failed", bp("x.v2", "x.v1", BlueprintFailed, 2, 2), false},
		{"blocked by the CRD preflight", bp("x.v2", "x.v1", BlueprintBlocked, 2, 2), false},
		{"rolling back to what ran", bp("x.v2", "x.v1", BlueprintRollingBack, 2, 2), false},
		{"being deleted", deleting, false},
	} {
		if got := tc.bp.Changing(); got != tc.want {
			t.Errorf("%s: Changing = %v, want %v", tc.name, got, tc.want)
		}
		csv, _, from := tc.bp.Heading()
		if want := map[bool]string{true: tc.bp.Spec.ClusterServiceVersionName, false: tc.bp.Status.CurrentCSV}[tc.want]; csv != want || (tc.want && from != tc.bp.Status.CurrentCSV) || (!tc.want && from != "") {
			t.Errorf("%s: Heading = %s from %q, want %s", tc.name, csv, from, want)
		}
	}
}
