package blueprint

import (
	"github.com/blang/semver/v4"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// Policy is what a Subscription says about failed versions.
type Policy struct {
	// AutoRollback returns to the last good revision after a failed health check.
	AutoRollback bool
	// Retries is how many more times a failed version is tried first.
	Retries int
	// ManualApproval makes a version change of a running operator wait for approval:
	// spec.approved, or Approved.
	ManualApproval bool
	// ApproveFirstInstall makes a first install wait for approval too (OLM's
	// installPlanApproval: Manual); without it a first install goes ahead.
	ApproveFirstInstall bool
	// Approved is the approval of the current change given in its InstallPlan.
	Approved bool
	// Hold, when set, is the running operator saying it may not be upgraded now (its
	// OperatorCondition Upgradeable=False): an upgrade waits, a rollback or a downgrade
	// a person asked for does not.
	Hold *Hold
	// Unblocked: what blocked the change (the installing identity's rights, the CRD
	// preflight) has changed since (recheckBlocked: granted or mended, or another finding
	// now): it is tried again.
	Unblocked bool
}

// Hold is what holds an upgrade: the running operator's Upgradeable=False, as read from
// its OperatorCondition, or the Subscription's upgrade windows, all closed.
type Hold struct {
	// OperatorCondition is the name of the object that says so (the running CSV's).
	OperatorCondition string
	// Override is true when an administrator's spec.overrides says it, not the operator.
	Override        bool
	Reason, Message string
	// Window is true when the upgrade windows hold it; Message then says when the next
	// opens, or (Invalid) which field cannot be read.
	Window, Invalid bool
}

// Decision is what a Blueprint must do next.
type Decision struct {
	// Open is a revision to start (appended to the history), or nil.
	Open *omv1.Revision
	// Work is the pending revision to carry on with (Open, once appended), or nil when
	// there is nothing to do.
	Work *omv1.Revision
	// Settled is the phase when there is nothing to do: Succeeded, RolledBack, Failed,
	// Blocked, WaitingForApproval or UpgradeHeld.
	Settled omv1.BlueprintPhase
}

// Plan decides the next step of a Blueprint from its spec and history alone, so the
// state machine is testable without a cluster (as Flux's helm-controller decides its next
// action).
//
// A version change is a pair (target CSV, spec.generation): the Subscription controller
// bumps spec.generation whenever it points the Blueprint elsewhere, and a person edits
// clusterServiceVersionName. Only a new pair opens a revision; an edit of anything else
// (approval, dependencies) never does. Within one pair, a failed attempt is retried up to
// Retries times, then rolled back to the last good revision when AutoRollback is on, and
// never tried again until the pair changes: that is what stops a failed version from
// looping.
func Plan(bp *omv1.Blueprint, p Policy) Decision {
	g := bp.Spec.Generation
	target := bp.Spec.ClusterServiceVersionName
	// The attempts at the current pair are the newest non-rollback revisions, as long as
	// they carry the pair; a rollback revision after them tells how the pair ended.
	var attempts []*omv1.Revision
	var rollback *omv1.Revision
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		r := &bp.Status.History[i]
		if r.Trigger == omv1.TriggerRollback {
			if len(attempts) == 0 && rollback == nil {
				rollback = r
			}
			continue
		}
		if r.CSVName != target || r.Generation != g || r.Imported {
			break
		}
		attempts = append(attempts, r)
	}
	if len(attempts) == 0 {
		if AwaitsApproval(p, bp) {
			return Decision{Settled: omv1.BlueprintWaitingForApproval}
		}
		trigger := omv1.TriggerInstall
		if bp.Status.CurrentCSV != "" {
			trigger = omv1.TriggerUpgrade
		}
		version, digest := Target(bp)
		if trigger != omv1.TriggerInstall && (older(version, bp.Status.CurrentVersion) || returnsToRunning(bp)) {
			trigger = omv1.TriggerDowngrade
		}
		if trigger == omv1.TriggerUpgrade && p.Hold != nil && bp.Status.CurrentCSV != target {
			return Decision{Settled: omv1.BlueprintUpgradeHeld}
		}
		return open(bp, target, version, digest, trigger)
	}
	if rollback != nil {
		switch rollback.Outcome {
		case omv1.OutcomePending:
			return Decision{Work: rollback}
		case omv1.OutcomeSucceeded:
			return Decision{Settled: omv1.BlueprintRolledBack}
		default:
			return Decision{Settled: omv1.BlueprintFailed}
		}
	}
	last := attempts[0] // newest
	switch last.Outcome {
	case omv1.OutcomePending:
		return Decision{Work: last}
	case omv1.OutcomeSucceeded:
		return Decision{Settled: omv1.BlueprintSucceeded}
	case omv1.OutcomeBlocked:
		if p.Unblocked {
			return open(bp, target, last.Version, last.BundleDigest, omv1.TriggerRetry)
		}
		return Decision{Settled: omv1.BlueprintBlocked}
	}
	if len(attempts) <= p.Retries {
		return open(bp, target, last.Version, last.BundleDigest, omv1.TriggerRetry)
	}
	if good := LastGood(bp); p.AutoRollback && good != nil && good.CSVName != target {
		return open(bp, good.CSVName, good.Version, good.BundleDigest, omv1.TriggerRollback)
	}
	return Decision{Settled: omv1.BlueprintFailed}
}

// AwaitsApproval says whether the Blueprint's target, not yet attempted, waits for a
// person: a Manual Subscription's change of the running version (or, with
// ApproveFirstInstall, its first install) not yet approved.
func AwaitsApproval(p Policy, bp *omv1.Blueprint) bool {
	if !p.ManualApproval || bp.Spec.Approved || p.Approved {
		return false
	}
	if bp.Status.CurrentCSV == "" {
		return p.ApproveFirstInstall
	}
	return bp.Status.CurrentCSV != bp.Spec.ClusterServiceVersionName
}

// Attempted reports whether a revision was opened for the Blueprint's current change (its
// target and spec.generation): for a change that waited, that it was approved.
func Attempted(bp *omv1.Blueprint) bool {
	for _, h := range bp.Status.History {
		if h.Trigger != omv1.TriggerRollback && h.CSVName == bp.Spec.ClusterServiceVersionName && h.Generation == bp.Spec.Generation {
			return true
		}
	}
	return false
}

// returnsToRunning says whether the target is the version still running after a change
// to another that did not succeed (a failed upgrade, left in place or rolled back
// automatically): pointing back at it is a manual rollback, though its version is not
// older than the one running. Retries and automatic rollbacks are no one's request, so
// the newest revision asked for is the one looked at.
func returnsToRunning(bp *omv1.Blueprint) bool {
	if bp.Status.CurrentCSV != bp.Spec.ClusterServiceVersionName {
		return false
	}
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if h := bp.Status.History[i]; Requested(h) {
			return h.CSVName != bp.Spec.ClusterServiceVersionName
		}
	}
	return false
}

// Requested says whether a revision carried out a version someone asked for here (an
// install, an upgrade or a downgrade): retries and automatic rollbacks are the manager's
// own, and an imported revision was asked for on another cluster.
func Requested(h omv1.Revision) bool {
	return h.Trigger != omv1.TriggerRollback && h.Trigger != omv1.TriggerRetry && !h.Imported
}

// Target is the version and bundle digest of the Blueprint's target CSV. The spec's own
// are right when the Subscription wrote them; a person who edits only
// clusterServiceVersionName (the original's way to roll back) leaves those of the
// previous target behind. Then the history knows the CSV's version and bundle; failing
// that, both are left empty, and the bundle is looked up by CSV name in the catalog.
func Target(bp *omv1.Blueprint) (version, digest string) {
	target := bp.Spec.ClusterServiceVersionName
	var known *omv1.Revision // newest revision of the target
	stale := false           // the spec's digest belongs to another CSV
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		h := &bp.Status.History[i]
		if h.CSVName == target && h.BundleDigest != "" {
			if h.BundleDigest == bp.Spec.BundleDigest {
				return bp.Spec.Version, bp.Spec.BundleDigest // the spec agrees with the history
			}
			if known == nil {
				known = h
			}
		}
		if h.CSVName != target && h.BundleDigest == bp.Spec.BundleDigest {
			stale = true
		}
	}
	switch {
	case known != nil && (stale || bp.Spec.BundleDigest == ""):
		return known.Version, known.BundleDigest
	case stale:
		return "", ""
	}
	return bp.Spec.Version, bp.Spec.BundleDigest
}

func open(bp *omv1.Blueprint, csv, version, digest string, trigger omv1.Trigger) Decision {
	next := int64(1)
	if n := len(bp.Status.History); n > 0 {
		next = bp.Status.History[n-1].Revision + 1
	}
	r := &omv1.Revision{Revision: next, Trigger: trigger, Generation: bp.Spec.Generation, CSVName: csv, Version: version,
		BundleDigest: digest, Outcome: omv1.OutcomePending, FromVersion: bp.Status.CurrentVersion}
	return Decision{Open: r, Work: r}
}

// older compares versions as semver (never as strings); unparsable versions are not older.
func older(v, than string) bool {
	a, err1 := semver.ParseTolerant(v)
	b, err2 := semver.ParseTolerant(than)
	return err1 == nil && err2 == nil && a.LT(b)
}

// LastGood is the newest revision that succeeded here: the rollback target. A revision
// imported from another cluster never ran here, so it is none.
func LastGood(bp *omv1.Blueprint) *omv1.Revision {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if h := bp.Status.History[i]; h.Outcome == omv1.OutcomeSucceeded && !h.Imported {
			return &bp.Status.History[i]
		}
	}
	return nil
}

// Prune drops the oldest revisions beyond limit (0: keep all), never the current nor the
// last good one, as Helm's --history-max does. It returns the kept history and the
// dropped revisions (whose cached bundles the caller may remove).
func Prune(history []omv1.Revision, limit int, current string) (kept, dropped []omv1.Revision) {
	if limit <= 0 || len(history) <= limit {
		return history, nil
	}
	protected := map[int64]bool{}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Outcome == omv1.OutcomeSucceeded {
			protected[history[i].Revision] = true // last good
			break
		}
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].CSVName == current && history[i].Outcome == omv1.OutcomeSucceeded {
			protected[history[i].Revision] = true // the one running now
			break
		}
	}
	if n := len(history); history[n-1].Outcome == omv1.OutcomePending {
		protected[history[n-1].Revision] = true // the one being carried out
	}
	excess := len(history) - limit
	for _, r := range history {
		if excess > 0 && !protected[r.Revision] {
			dropped = append(dropped, r)
			excess--
			continue
		}
		kept = append(kept, r)
	}
	return kept, dropped
}
