package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// TestInstallDone: `install --wait` ends on the outcome of the change asked for, and not
// on the state the previous version left.
func TestInstallDone(t *testing.T) {
	ready := func(status metav1.ConditionStatus) *omv1.Subscription {
		sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		sub.Status.ObservedGeneration = 2
		sub.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionReady, Status: status, Reason: "X"}}
		return sub
	}
	bp := func(target string, observed int64, phase omv1.BlueprintPhase, current string, history ...omv1.Revision) *omv1.Blueprint {
		b := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
		b.Spec.ClusterServiceVersionName, b.Spec.Generation = target, 2
		b.Status.ObservedGeneration, b.Status.Phase, b.Status.CurrentCSV, b.Status.History = observed, phase, current, history
		return b
	}
	rev := func(csv string, trigger omv1.Trigger, gen int64) omv1.Revision {
		return omv1.Revision{CSVName: csv, Trigger: trigger, Generation: gen}
	}
	for _, tc := range []struct {
		name     string
		sub      *omv1.Subscription
		bp       *omv1.Blueprint
		done     bool
		errWants string
	}{
		{"previous version still Ready, Blueprint not yet at the new spec", ready(metav1.ConditionTrue),
			bp("v2", 2, omv1.BlueprintSucceeded, "v1", rev("v1", omv1.TriggerInstall, 1)), false, ""},
		{"previous version still Ready, Blueprint saw the spec but no revision yet", ready(metav1.ConditionTrue),
			bp("v2", 3, omv1.BlueprintSucceeded, "v1", rev("v1", omv1.TriggerInstall, 1)), false, ""},
		{"new version Succeeded", ready(metav1.ConditionTrue),
			bp("v2", 3, omv1.BlueprintSucceeded, "v2", rev("v1", omv1.TriggerInstall, 1), rev("v2", omv1.TriggerUpgrade, 2)), true, ""},
		{"new version rolled back", ready(metav1.ConditionTrue),
			bp("v2", 3, omv1.BlueprintRolledBack, "v1", rev("v1", omv1.TriggerInstall, 1), rev("v2", omv1.TriggerUpgrade, 2), rev("v1", omv1.TriggerRollback, 2)), true, "RolledBack"},
		{"an older rollback does not end a new wait", ready(metav1.ConditionFalse),
			bp("v3", 3, omv1.BlueprintRolledBack, "v1", rev("v2", omv1.TriggerUpgrade, 1), rev("v1", omv1.TriggerRollback, 1)), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, err := installDone(tc.sub, tc.bp, false)
			if done != tc.done {
				t.Fatalf("done = %v, want %v (err %v)", done, tc.done, err)
			}
			if (err != nil) != (tc.errWants != "") || (err != nil && !strings.Contains(err.Error(), tc.errWants)) {
				t.Fatalf("err = %v, want one naming %q", err, tc.errWants)
			}
		})
	}
}

// TestPollOutOfTime: a request refused because the wait's deadline would pass first is a
// timeout (exit 4) for a script, even though the context is not done yet; any other error
// stays an error (exit 1).
func TestPollOutOfTime(t *testing.T) {
	// client-go's rate limiter is x/time/rate: with its one token spent and the next an
	// hour away, Wait refuses at once with "would exceed context deadline".
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	lim.Allow()
	err := poll(context.Background(), time.Minute, io.Discard, "ns/s1", func(ctx context.Context) (string, bool, error) {
		if err := lim.Wait(ctx); err != nil {
			return "", false, fmt.Errorf("client rate limiter Wait returned an error: %w", err)
		}
		return "", true, nil
	}, nil)
	if got := exitCode(err); got != ExitTimeout || !strings.Contains(fmt.Sprint(err), "timed out") {
		t.Errorf("rate limiter past the deadline: exit %d, %v; want %d and timed out", got, err, ExitTimeout)
	}

	err = poll(context.Background(), time.Minute, io.Discard, "ns/s1", func(context.Context) (string, bool, error) {
		return "", false, errors.New("forbidden")
	}, nil)
	if got := exitCode(err); got != ExitError {
		t.Errorf("a refused read: exit %d, %v; want %d", got, err, ExitError)
	}
}

// A state that does not change is printed again, marked "still", so a person watching a
// long health gate sees that the wait is alive and for how long it has waited.
func TestPollRepeatsAStateThatLasts(t *testing.T) {
	defer func(d time.Duration) { stillEvery = d }(stillEvery)
	stillEvery = 0
	wake := make(chan struct{}, 1)
	calls := 0
	var out strings.Builder
	err := poll(context.Background(), time.Minute, &out, "ns/s1", func(context.Context) (string, bool, error) {
		calls++
		wakeUp(wake) // look again at once
		if calls == 4 {
			return "succeeded", true, nil
		}
		return "installing: 1/1 replicas updated, 0 available", false, nil
	}, wake)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"] installing: ", "] still installing: ", "] still installing: ", "] succeeded"}
	if len(lines) != len(want) {
		t.Fatalf("printed %q, want %d lines", lines, len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %q, want it to contain %q", i, lines[i], w)
		}
	}

	// Within stillEvery the same state is printed once.
	stillEvery, calls = time.Hour, 0
	out.Reset()
	if err := poll(context.Background(), time.Minute, &out, "ns/s1", func(context.Context) (string, bool, error) {
		calls++
		wakeUp(wake)
		return "installing", calls == 4, nil
	}, wake); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "installing"); n != 1 {
		t.Errorf("printed the unchanged state %d times within stillEvery, want once: %q", n, out.String())
	}
}

// wakeUp wakes a poll without blocking when a wake-up is already pending.
func wakeUp(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// TestProgressLine: while a revision rolls out, a wait prints the CSV's own words, live,
// not the Blueprint's summary of them, which may be a minute old.
func TestProgressLine(t *testing.T) {
	sub := &omv1.Subscription{}
	sub.Status.Opstatus = "installing"
	sub.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Install", Message: "summary"}}
	bp := &omv1.Blueprint{}
	bp.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "Install",
		Message: "revision 1: x.v1 is Installing: 0/1 available"}}
	csv := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "x.v1"}}
	csv.Status.Revision, csv.Status.Phase, csv.Status.Message = 1, omv1alpha1.CSVInstalling, "1/1 available, waiting for the health check"
	settled := bp.DeepCopy()
	settled.Status.Conditions[0].Status = metav1.ConditionFalse
	for _, tc := range []struct {
		name string
		bp   *omv1.Blueprint
		csv  *omv1alpha1.ClusterServiceVersion
		want string
	}{
		{"the CSV judges the revision: its words", bp, csv, "installing Ready=False (Install): revision 1: x.v1 is Installing: 1/1 available, waiting for the health check"},
		{"no CSV judging yet: the Blueprint's", bp, nil, "installing Ready=False (Install): revision 1: x.v1 is Installing: 0/1 available"},
		{"nothing in progress: the Subscription's", settled, csv, "installing Ready=False (Install): summary"},
		{"no Blueprint: the Subscription's", nil, nil, "installing Ready=False (Install): summary"},
	} {
		if got := progressLine(sub, tc.bp, tc.csv, false); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestJudgingCSV: the CSV counts only while it judges the Blueprint's revision in
// progress.
func TestJudgingCSV(t *testing.T) {
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}
	bp.Status.History = []omv1.Revision{{Revision: 1, CSVName: "x.v1", Outcome: omv1.OutcomeSucceeded}, {Revision: 2, CSVName: "x.v2"}}
	csv := func(name string, rev int64, phase omv1alpha1.CSVPhase) *omv1alpha1.ClusterServiceVersion {
		c := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		c.Status.Revision, c.Status.Phase = rev, phase
		return c
	}
	s := runtime.NewScheme()
	_ = omv1alpha1.AddToScheme(s)
	for _, tc := range []struct {
		name string
		bp   *omv1.Blueprint
		csv  *omv1alpha1.ClusterServiceVersion
		want bool
	}{
		{"judging the revision in progress", bp, csv("x.v2", 2, omv1alpha1.CSVInstalling), true},
		{"still on the revision before", bp, csv("x.v2", 1, omv1alpha1.CSVSucceeded), false},
		{"its outcome reached", bp, csv("x.v2", 2, omv1alpha1.CSVFailed), false},
		{"no CSV yet", bp, csv("other", 2, omv1alpha1.CSVInstalling), false},
		{"nothing in progress", func() *omv1.Blueprint { b := bp.DeepCopy(); b.Status.History[1].Outcome = omv1.OutcomeFailed; return b }(), csv("x.v2", 2, omv1alpha1.CSVInstalling), false},
		{"no Blueprint", nil, csv("x.v2", 2, omv1alpha1.CSVInstalling), false},
	} {
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.csv).Build()
		if got := judgingCSV(context.Background(), c, tc.bp); (got != nil) != tc.want {
			t.Errorf("%s: got %v, want a CSV: %v", tc.name, got, tc.want)
		}
	}
}
