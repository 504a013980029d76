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
		return nil, fmt.Errorf("no revision %d in the history of %s/%s (pruned, or never made); see `operator-manager history %s`", to, bp.Namespace, bp.Name, bp.Name)
	}
	return nil, fmt.Errorf("%s/%s has no earlier good revision to return to: no other revision in its history succeeded; see `operator-manager history %s`", bp.Namespace, bp.Name, bp.Name)
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

// SettledForTarget reports whether the Blueprint's phase is the outcome of its current
// target: its status has seen the spec, and its newest attempt is of that target and
// version change (an outcome of an earlier change must not end a new wait).
func SettledForTarget(bp *omv1.Blueprint) bool {
	if bp.Status.ObservedGeneration < bp.Generation {
		return false
	}
	if bp.Status.Phase == omv1.BlueprintWaitingForApproval || bp.Status.Phase == omv1.BlueprintUpgradeHeld {
		return true // nothing was attempted yet: the phase is about the target itself
	}
	h := latestAttempt(bp)
	return h != nil && h.CSVName == bp.Spec.ClusterServiceVersionName && h.Generation == bp.Spec.Generation
}

// Withdrawable returns the revision that runs when the Blueprint's change was never
// attempted (it waits for approval, an upgrade window or the operator's consent) and that
// revision is the newest of the history and succeeded, so pointing the Blueprint back at
// its pair (CSV and spec.generation) withdraws the change: nothing is applied, rolled
// back or gated. nil otherwise: a new pair for what runs then opens a revision, which
// re-applies it (after a failed change left in place, or an automatic rollback).
func Withdrawable(bp *omv1.Blueprint) *omv1.Revision {
	n := len(bp.Status.History)
	if n == 0 || bp.Status.CurrentCSV == "" || Attempted(bp) {
		return nil
	}
	last := &bp.Status.History[n-1]
	if last.Outcome != omv1.OutcomeSucceeded || last.CSVName != bp.Status.CurrentCSV || last.Trigger == omv1.TriggerRollback || last.Imported {
		return nil
	}
	return last
}

// latestAttempt is the newest revision that is not an automatic rollback, or nil.
func latestAttempt(bp *omv1.Blueprint) *omv1.Revision {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if bp.Status.History[i].Trigger != omv1.TriggerRollback {
			return &bp.Status.History[i]
		}
	}
	return nil
}

// Retryable says why the Blueprint's change cannot be retried, or nil: only a change
// that ended badly (Failed, RolledBack, Blocked), and only once the manager has seen the
// spec it ended under (SettledForTarget), is tried again.
func Retryable(bp *omv1.Blueprint) error {
	switch bp.Status.Phase {
	case omv1.BlueprintFailed, omv1.BlueprintRolledBack, omv1.BlueprintBlocked:
		if SettledForTarget(bp) {
			return nil
		}
		return fmt.Errorf("%s/%s: the manager has not yet taken up its latest change (phase %s is of an earlier one): nothing to retry yet", bp.Namespace, bp.Name, bp.Status.Phase)
	case omv1.BlueprintSucceeded:
		return fmt.Errorf("%s/%s: nothing to retry: %s runs and passed its health gate", bp.Namespace, bp.Name, bp.Status.CurrentCSV)
	case "", omv1.BlueprintPending, omv1.BlueprintInstalling, omv1.BlueprintUpgrading, omv1.BlueprintRollingBack:
		return fmt.Errorf("%s/%s: nothing to retry: a change is under way (%s; see `operator-manager status %s`)", bp.Namespace, bp.Name, bp.Status.Phase, bp.Name)
	case omv1.BlueprintDeleting:
		return fmt.Errorf("%s/%s: nothing to retry: it is being uninstalled", bp.Namespace, bp.Name)
	}
	return fmt.Errorf("%s/%s: nothing to retry: it is %s, which waits rather than failed (see `operator-manager status %s`)", bp.Namespace, bp.Name, bp.Status.Phase, bp.Name)
}

// SetRetry asks for the Blueprint's change again, as `operator-manager retry` and the
// console do: a new generation of the same target is a new version change to Plan, so a
// revision opens as for a change just asked for. Nothing else of the spec changes.
func SetRetry(bp *omv1.Blueprint) {
	bp.Spec.Generation++
}
