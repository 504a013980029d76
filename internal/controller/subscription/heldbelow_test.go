package subscription

import (
	"testing"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func TestHeldBelow(t *testing.T) {
	rev := func(n, g int64, csv, version string, trigger omv1.Trigger, outcome omv1.RevisionOutcome, from string) omv1.Revision {
		return omv1.Revision{Revision: n, Generation: g, CSVName: csv, Version: version, Trigger: trigger, Outcome: outcome, FromVersion: from}
	}
	bp := func(g int64, target string, history ...omv1.Revision) *omv1.Blueprint {
		return &omv1.Blueprint{Spec: omv1.BlueprintSpec{ClusterServiceVersionName: target, Generation: g},
			Status: omv1.BlueprintStatus{History: history}}
	}
	installed := rev(1, 1, "a.v1", "1.0.0", omv1.TriggerInstall, omv1.OutcomeSucceeded, "")
	cases := []struct {
		name string
		bp   *omv1.Blueprint
		want string
	}{
		{"no history", bp(1, "a.v1"), ""},
		{"an install holds nothing", bp(1, "a.v1", installed), ""},
		{"a rollback by hand from a running newer version", bp(3, "a.v1", installed,
			rev(2, 2, "a.v2", "2.0.0", omv1.TriggerUpgrade, omv1.OutcomeSucceeded, "1.0.0"),
			rev(3, 3, "a.v1", "1.0.0", omv1.TriggerDowngrade, omv1.OutcomeSucceeded, "2.0.0")), "2.0.0"},
		{"back to the version a failed upgrade left running: held below the failed one", bp(3, "a.v1", installed,
			rev(2, 2, "a.v2", "2.0.0", omv1.TriggerUpgrade, omv1.OutcomeFailed, "1.0.0"),
			rev(3, 2, "a.v2", "2.0.0", omv1.TriggerRetry, omv1.OutcomeFailed, "1.0.0"),
			rev(4, 3, "a.v1", "1.0.0", omv1.TriggerDowngrade, omv1.OutcomeSucceeded, "1.0.0")), "2.0.0"},
		{"an automatic rollback is no person's choice", bp(2, "a.v2", installed,
			rev(2, 2, "a.v2", "2.0.0", omv1.TriggerUpgrade, omv1.OutcomeFailed, "1.0.0"),
			rev(3, 2, "a.v1", "1.0.0", omv1.TriggerRollback, omv1.OutcomeSucceeded, "1.0.0")), ""},
		{"the Subscription moved on since (a newer generation)", bp(4, "a.v3", installed,
			rev(2, 3, "a.v1", "1.0.0", omv1.TriggerDowngrade, omv1.OutcomeSucceeded, "2.0.0")), ""},
	}
	for _, tc := range cases {
		if got := heldBelow(tc.bp); got != tc.want {
			t.Errorf("%s: heldBelow = %q, want %q", tc.name, got, tc.want)
		}
	}
}
