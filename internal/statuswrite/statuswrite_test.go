package statuswrite

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestProgressOnly(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	later := metav1.NewTime(at.Add(time.Second))
	c := func(typ string, st metav1.ConditionStatus, reason, msg string, ts metav1.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, LastTransitionTime: ts}
	}
	base := []metav1.Condition{c("Ready", "False", "WaitingForCRDs", "waiting for CRD a", at), c("Progressing", "True", "Install", "x", at)}
	for _, tc := range []struct {
		name  string
		after []metav1.Condition
		want  bool
	}{
		{"message and reason change", []metav1.Condition{c("Ready", "False", "Install", "waiting for deployment d", at), c("Progressing", "True", "Install", "y", at)}, true},
		{"nothing changes", base, true},
		{"a status turns", []metav1.Condition{c("Ready", "True", "Succeeded", "ok", later), c("Progressing", "True", "Install", "x", at)}, false},
		{"a condition is added", append(append([]metav1.Condition{}, base...), c("Healthy", "True", "Succeeded", "", at)), false},
		{"a condition is removed", base[:1], false},
		{"the order changes", []metav1.Condition{base[1], base[0]}, false},
		{"a transition time moves", []metav1.Condition{c("Ready", "False", "WaitingForCRDs", "waiting for CRD a", later), base[1]}, false},
	} {
		if got := ProgressOnly(base, tc.after); got != tc.want {
			t.Errorf("%s: ProgressOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestThrottle(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	th := &Throttle{Interval: 5 * time.Second}
	if w := th.Wait("a", true, now); w != 0 {
		t.Errorf("an object never written here waits %s, want 0 (a restarted process writes at once)", w)
	}
	th.Wrote("a", now)
	if w := th.Wait("a", false, now.Add(time.Second)); w != 0 {
		t.Errorf("a change that says something new waits %s, want 0", w)
	}
	if w := th.Wait("a", true, now.Add(time.Second)); w != 4*time.Second {
		t.Errorf("progress one second after a write waits %s, want 4s", w)
	}
	if w := th.Wait("a", true, now.Add(5*time.Second)); w != 0 {
		t.Errorf("progress an interval after a write waits %s, want 0", w)
	}
	if w := th.Wait("b", true, now.Add(time.Second)); w != 0 {
		t.Errorf("another object waits %s, want 0", w)
	}
	// A summary's new reason waits a shorter time than its words.
	if w := th.WaitSince("a", 2*time.Second, now.Add(time.Second)); w != time.Second {
		t.Errorf("a 2s hold one second after a write waits %s, want 1s", w)
	}
	if w := th.WaitSince("b", 2*time.Second, now); w != 0 {
		t.Errorf("a hold of an object never written waits %s, want 0", w)
	}
	// Old entries are dropped once the map grows; recent ones stay.
	for i := range 300 {
		th.Wrote(uidOf(i), now)
	}
	th.Wrote("fresh", now.Add(time.Minute))
	if len(th.last) > 2 {
		t.Errorf("%d entries kept a minute later, want only the recent ones", len(th.last))
	}
}

func uidOf(i int) k8stypes.UID { return k8stypes.UID(string(rune('A'+i%26)) + string(rune('a'+i/26))) }

func TestStale(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var s Stale
	if s.Is("a", "10", now) {
		t.Error("an object never written is stale")
	}
	s.Wrote("a", "10", "11", now)
	if !s.Is("a", "10", now) {
		t.Error("the copy the write replaced is not stale")
	}
	if s.Is("a", "11", now) {
		t.Error("the written copy is stale")
	}
	if s.Is("a", "10", now) {
		t.Error("once the cache moved on, the entry is not forgotten")
	}
	s.Wrote("b", "5", "5", now)
	if s.Is("b", "5", now) {
		t.Error("a no-op write (resourceVersion unchanged) makes the object stale for good")
	}
	s.Wrote("bp/csv", Absent, "12", now)
	if !s.Is("bp/csv", Absent, now) {
		t.Error("a child created a moment ago and still absent from the cache is not stale")
	}
	if s.Is("bp/csv", "12", now) {
		t.Error("the created child is stale")
	}
	// A reconcile that adds a finalizer (20 -> 21) and then writes the status (21 -> 22):
	// a cached copy at either older version is stale, the written one is not.
	s.Wrote("d", "20", "22", now)
	s.Wrote("d", "21", "22", now)
	if !s.Is("d", "21", now) || !s.Is("d", "20", now) {
		t.Error("a copy at the version the finalizer write made, or the one before it, is not stale")
	}
	if s.Is("d", "22", now) || s.Is("d", "21", now) {
		t.Error("the written copy is stale, or the entry outlives the cache catching up")
	}
	s.Wrote("c", "7", "8", now)
	if s.Is("c", "7", now.Add(2*time.Minute)) {
		t.Error("a write the cache never shows blocks the object after a minute")
	}
}

func TestStatusProgressOnly(t *testing.T) {
	type status struct {
		Phase      string
		Conditions []metav1.Condition
	}
	conds := func(s *status) *[]metav1.Condition { return &s.Conditions }
	before := status{Phase: "Installing", Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "WaitingForCRDs"}}}
	reworded := status{Phase: "Installing", Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "Install", Message: "waiting for the CSV"}}}
	if !StatusProgressOnly(before, reworded, conds) {
		t.Error("a reworded condition in the same phase is not progress only")
	}
	moved := reworded
	moved.Phase = "Succeeded"
	if StatusProgressOnly(before, moved, conds) {
		t.Error("a new phase is progress only")
	}
	if before.Conditions[0].Reason != "WaitingForCRDs" || reworded.Conditions == nil {
		t.Error("the statuses compared were changed")
	}
}

func TestRequeueWithin(t *testing.T) {
	var r ctrl.Result
	RequeueWithin(&r, 5*time.Second)
	RequeueWithin(&r, 10*time.Second)
	if r.RequeueAfter != 5*time.Second {
		t.Errorf("RequeueAfter = %s, want the sooner 5s", r.RequeueAfter)
	}
	RequeueWithin(&r, time.Second)
	if r.RequeueAfter != time.Second {
		t.Errorf("RequeueAfter = %s, want 1s", r.RequeueAfter)
	}
}

func TestSameReasons(t *testing.T) {
	c := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name          string
		before, after []metav1.Condition
		want          bool
	}{
		{"words only", []metav1.Condition{c("Ready", "Install", "a")}, []metav1.Condition{c("Ready", "Install", "b")}, true},
		{"a new reason", []metav1.Condition{c("Ready", "WaitingForCRDs", "a")}, []metav1.Condition{c("Ready", "Install", "a")}, false},
		{"a condition more", []metav1.Condition{c("Ready", "Install", "a")}, []metav1.Condition{c("Ready", "Install", "a"), c("Progressing", "Install", "a")}, false},
		{"another type", []metav1.Condition{c("Ready", "Install", "a")}, []metav1.Condition{c("Healthy", "Install", "a")}, false},
		{"none", nil, nil, true},
	} {
		if got := SameReasons(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
