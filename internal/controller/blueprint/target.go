package blueprint

import (
	"fmt"
	"time"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// RollbackTarget picks the revision to return to: the one asked for (which must have
// succeeded once, so its bundle is known good and cached), or, with to 0, the newest good
// revision of another CSV than the Blueprint's target. `operator-manager rollback` and the
// console both use it (pure).
func RollbackTarget(bp *omv1.Blueprint, to int64) (*omv1.Revision, error) {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		h := &bp.Status.History[i]
		switch {
		case to != 0 && h.Revision == to:
			if h.Outcome != omv1.OutcomeSucceeded {
				return nil, fmt.Errorf("revision %d (%s) never succeeded (outcome %s): pick a revision that ran, see `operator-manager history %s`", to, h.CSVName, h.Outcome, bp.Name)
			}
			if h.CSVName == bp.Spec.ClusterServiceVersionName {
				return nil, fmt.Errorf("revision %d is %s, which is already the target", to, h.CSVName)
			}
			return h, nil
		// The default is the newest good revision other than the target: after a failed
		// upgrade that was not rolled back, that is the version still running.
		case to == 0 && h.Outcome == omv1.OutcomeSucceeded && h.CSVName != bp.Spec.ClusterServiceVersionName:
			return h, nil
		}
	}
	if to != 0 {
		return nil, fmt.Errorf("no revision %d in the history of %s (pruned, or never made); see `operator-manager history %s`", to, bp.Name, bp.Name)
	}
	return nil, fmt.Errorf("%s has no earlier good revision to return to", bp.Name)
}

// SetRollback points the Blueprint at the revision, as a person's rollback does: the
// running CSV becomes the old version, the target and its bundle the revision's, the
// generation moves on and the change needs no further approval.
func SetRollback(bp *omv1.Blueprint, target *omv1.Revision) {
	bp.Spec.OldVersion = bp.Status.CurrentCSV
	bp.Spec.ClusterServiceVersionName, bp.Spec.Version, bp.Spec.BundleDigest = target.CSVName, target.Version, target.BundleDigest
	bp.Spec.Generation++
	bp.Spec.Approved = true // a person asked for it: no further approval
}

// HealthTimeout is a revision's health timeout: the Subscription's, or
// DefaultHealthTimeout.
func HealthTimeout(sub *omv1.Subscription) time.Duration { return healthTimeout(sub) }

// Deadline is when a revision started at start fails if it has reached no outcome: its
// health timeout and a grace after it, as the controller computes it.
func Deadline(start time.Time, sub *omv1.Subscription) time.Time {
	timeout := healthTimeout(sub)
	return start.Add(timeout + deadlineGrace(timeout))
}
