// Package statuswrite decides when a reconcile's status change is written. A change that
// says something new (a phase, a condition turning True or False, a revision, any field
// besides the words of a condition) is written at once. A change of only the reason or
// message of conditions whose status stays the same ("waiting for CRD x", then "waiting
// for deployment y") is a progress report: it is written at most once per Interval per
// object, and the reconcile is requeued so the newest words land after that. An install
// that takes a second then costs two status writes (started, finished) instead of one per
// step, while one that is stuck still shows why within Interval.
package statuswrite

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultInterval is how stale a progress report may be.
const DefaultInterval = 5 * time.Second

// SummaryInterval is how stale the progress words of a summary may be: an object that
// repeats another's progress (a Subscription, the Blueprint's), whose phase, condition
// statuses and reasons are still written at once. Readers that want the live words read
// the source, as `install --wait` does.
const SummaryInterval = 60 * time.Second

// Throttle remembers when each object's status was last written, in this process. It is
// safe for concurrent reconciles. A process that has not written an object's status yet
// (a restart) writes at once.
type Throttle struct {
	Interval time.Duration
	mu       sync.Mutex
	last     map[types.UID]time.Time
}

// Wait is how long a status change of object uid must wait: zero unless it is progress
// only and the last write was less than Interval ago.
func (t *Throttle) Wait(uid types.UID, progressOnly bool, now time.Time) time.Duration {
	if !progressOnly {
		return 0
	}
	return t.WaitSince(uid, t.interval(), now)
}

// WaitSince is how long a write of object uid must wait for d to have passed since its
// last write (zero if it has, or if this process has not written it). A summary's
// progress whose reason changes waits the short DefaultInterval, its words SummaryInterval.
func (t *Throttle) WaitSince(uid types.UID, d time.Duration, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ok := t.last[uid]
	if !ok {
		return 0
	}
	if wait := last.Add(d).Sub(now); wait > 0 {
		return wait
	}
	return 0
}

// Wrote records a status write of object uid at now.
func (t *Throttle) Wrote(uid types.UID, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[types.UID]time.Time{}
	}
	// Entries older than Interval decide nothing: dropped, so the map holds only the
	// objects written recently, however many a fleet has.
	if len(t.last) >= 256 {
		for k, v := range t.last {
			if now.Sub(v) >= t.interval() {
				delete(t.last, k)
			}
		}
	}
	t.last[uid] = now
}

func (t *Throttle) interval() time.Duration {
	if t.Interval > 0 {
		return t.Interval
	}
	return DefaultInterval
}

// ProgressOnly says whether the conditions after differ from those before only in the
// reason, message or observedGeneration of conditions whose type and status are the same,
// in the same order. The caller checks that nothing else of the status changed.
func ProgressOnly(before, after []metav1.Condition) bool {
	if len(before) != len(after) {
		return false
	}
	for i := range before {
		b, a := before[i], after[i]
		if b.Type != a.Type || b.Status != a.Status || !b.LastTransitionTime.Equal(&a.LastTransitionTime) {
			return false
		}
	}
	return true
}

// SameReasons says whether before and after hold the same conditions with the same
// reasons, in the same order: a change of their words only, not a step to another reason.
func SameReasons(before, after []metav1.Condition) bool {
	if len(before) != len(after) {
		return false
	}
	for i := range before {
		if before[i].Type != after[i].Type || before[i].Reason != after[i].Reason {
			return false
		}
	}
	return true
}

// StatusProgressOnly is ProgressOnly for a whole status: nothing besides its conditions
// changed, and those only in words. conditions points at a status's conditions.
func StatusProgressOnly[S any](before, after S, conditions func(*S) *[]metav1.Condition) bool {
	b, a := *conditions(&before), *conditions(&after)
	*conditions(&before), *conditions(&after) = nil, nil
	return equality.Semantic.DeepEqual(before, after) && ProgressOnly(b, a)
}

// RequeueWithin makes a reconcile's result come back within d at the latest: sooner
// requeues already asked for stand.
func RequeueWithin(result *ctrl.Result, d time.Duration) {
	if result.RequeueAfter == 0 || d < result.RequeueAfter {
		result.RequeueAfter = d
	}
}
