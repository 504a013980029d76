package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
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
		{"held where a person rolled it back: not the install asked for", func() *omv1.Subscription {
			s := ready(metav1.ConditionTrue)
			s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: omv1.ConditionResolved, Status: metav1.ConditionTrue,
				Reason: omv1.ReasonPointedByHand, Message: "the Blueprint was pointed at v1 by hand"})
			return s
		}(), bp("v1", 3, omv1.BlueprintSucceeded, "v1", rev("v2", omv1.TriggerUpgrade, 1), rev("v1", omv1.TriggerDowngrade, 1)), true, "PointedByHand: the Blueprint was pointed at v1 by hand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, err := installDone(tc.sub, tc.bp, false)
			if done != tc.done {
				t.Fatalf("done = %v, want %v (err %v)", done, tc.done, err)
			}
			if (err != nil) != (tc.errWants != "") || (err != nil && !strings.Contains(err.Error(), tc.errWants)) {
				t.Fatalf("err = %v, want one naming %q", err, tc.errWants)
			}
			if strings.Contains(tc.name, "held") && exitCode(err) != ExitHeld {
				t.Fatalf("exit %d, want %d (held for a person)", exitCode(err), ExitHeld)
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

// TestProgressLine: a wait prints the freshest words for the change and never goes back
// to an earlier step: the CSV's own while it judges the revision and once it has its
// outcome (the Blueprint's summary of them may be a minute old, and says the CRDs were
// awaited until the Blueprint records the outcome); the Blueprint's outcome while the
// Subscription still says the change goes on.
func TestProgressLine(t *testing.T) {
	sub := &omv1.Subscription{}
	sub.Status.Opstatus = "installing"
	sub.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Install", Message: "summary"}}
	bp := &omv1.Blueprint{}
	bp.Status.Phase = omv1.BlueprintInstalling
	bp.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "Install",
		Message: "waiting for CRD x.example.com to be Established"}}
	csv := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "x.v1"}}
	csv.Status.Revision, csv.Status.Phase, csv.Status.Message = 1, omv1alpha1.CSVInstalling, "1/1 available, waiting for the health check"
	concluded := csv.DeepCopy()
	concluded.Status.Phase, concluded.Status.Message = omv1alpha1.CSVSucceeded, "install strategy completed"
	// The Blueprint has its outcome, the Subscription not yet.
	recorded := bp.DeepCopy()
	recorded.Status.Phase = omv1.BlueprintSucceeded
	recorded.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: "Succeeded"},
		{Type: omv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "x.v1 is installed and healthy"}}
	// Both agree: the Subscription's words.
	caughtUp := sub.DeepCopy()
	caughtUp.Status.Opstatus = "succeeded"
	caughtUp.Status.Conditions[0] = metav1.Condition{Type: omv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "x.v1 is installed and healthy"}
	// The Subscription has a trouble of its own (its catalog lost the package): the
	// Blueprint's outcome of the last change says nothing of it.
	unresolved := sub.DeepCopy()
	unresolved.Status.Opstatus = "resolve failed"
	unresolved.Status.Conditions[0] = metav1.Condition{Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ResolutionFailed", Message: "no package x"}
	settledUnknown := recorded.DeepCopy()
	settledUnknown.Status.Conditions = settledUnknown.Status.Conditions[:1]
	for _, tc := range []struct {
		name string
		sub  *omv1.Subscription
		bp   *omv1.Blueprint
		csv  *omv1alpha1.ClusterServiceVersion
		want string
	}{
		{"the CSV judges the revision: its words", sub, bp, csv, "installing Ready=False (Install): revision 1: x.v1 is Installing: 1/1 available, waiting for the health check"},
		{"the CSV has its outcome, the Blueprint not yet: the CSV's words, not the CRD wait again", sub, bp, concluded,
			"installing Ready=False (Install): revision 1: x.v1 is Succeeded: install strategy completed"},
		{"no CSV on the revision yet: the Blueprint's", sub, bp, nil, "installing Ready=False (Install): waiting for CRD x.example.com to be Established"},
		{"the Blueprint has its outcome, the Subscription not yet: the Blueprint's, whole (not a reason that says the change goes on beside words that say it is done)", sub, recorded, nil, "succeeded Ready=True (Succeeded): x.v1 is installed and healthy"},
		{"the Blueprint's outcome without its Ready words: the Subscription's", sub, settledUnknown, nil, "installing Ready=False (Install): summary"},
		{"both agree: the Subscription's", caughtUp, recorded, nil, "succeeded Ready=True (Succeeded): x.v1 is installed and healthy"},
		{"the Subscription's own trouble: its words", unresolved, recorded, nil, "resolve failed Ready=False (ResolutionFailed): no package x"},
		{"no Blueprint: the Subscription's", sub, nil, nil, "installing Ready=False (Install): summary"},
		{"a change not yet taken up: not the status of the spec before it", func() *omv1.Subscription {
			s := caughtUp.DeepCopy()
			s.Generation, s.Status.ObservedGeneration = 3, 2
			return s
		}(), recorded, nil, "waiting for the manager to take up the change (generation 3; its status is of generation 2)"},
	} {
		if got := progressLine(tc.sub, tc.bp, tc.csv, false); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestRevisionCSV: the CSV counts from when it takes the Blueprint's revision in progress
// up until the Blueprint records that revision's outcome.
func TestRevisionCSV(t *testing.T) {
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
		{"its outcome reached, not yet recorded by the Blueprint", bp, csv("x.v2", 2, omv1alpha1.CSVFailed), true},
		{"still on the revision before", bp, csv("x.v2", 1, omv1alpha1.CSVSucceeded), false},
		{"no CSV yet", bp, csv("other", 2, omv1alpha1.CSVInstalling), false},
		{"nothing in progress", func() *omv1.Blueprint { b := bp.DeepCopy(); b.Status.History[1].Outcome = omv1.OutcomeFailed; return b }(), csv("x.v2", 2, omv1alpha1.CSVInstalling), false},
		{"no Blueprint", nil, csv("x.v2", 2, omv1alpha1.CSVInstalling), false},
	} {
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.csv).Build()
		if got := revisionCSV(context.Background(), c, tc.bp); (got != nil) != tc.want {
			t.Errorf("%s: got %v, want a CSV: %v", tc.name, got, tc.want)
		}
	}
}

// TestWantedVersion: install without --csv or --package installs the package of its name
// when new, and keeps what an existing Subscription names, changing only the flags given.
func TestWantedVersion(t *testing.T) {
	byPackage := &omv1.SubscriptionSpec{Package: "cache-operator", Channel: "stable", Version: "1.1.0"}
	byCSV := &omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2"}
	byOLM := &omv1.SubscriptionSpec{Name: "etcd", Channel: "alpha", StartingCSV: "etcdoperator.v0.9.2"}
	for _, tc := range []struct {
		name                   string
		existing               *omv1.SubscriptionSpec
		flags                  omv1.SubscriptionSpec
		channelSet, versionSet bool
		want                   omv1.SubscriptionSpec
		err                    string
	}{
		{name: "new, no flags: the package of its name", flags: omv1.SubscriptionSpec{}, want: omv1.SubscriptionSpec{Package: "cache"}},
		{name: "new, a version: the package of its name at it", flags: omv1.SubscriptionSpec{Version: "1.2.0"}, versionSet: true,
			want: omv1.SubscriptionSpec{Package: "cache", Version: "1.2.0"}},
		{name: "new, --csv", flags: omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2"}, want: omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2"}},
		{name: "existing, --version alone: its package and channel kept", existing: byPackage, flags: omv1.SubscriptionSpec{Version: "1.2.0"}, versionSet: true,
			want: omv1.SubscriptionSpec{Package: "cache-operator", Channel: "stable", Version: "1.2.0"}},
		{name: "existing, --channel alone: its version kept", existing: byPackage, flags: omv1.SubscriptionSpec{Channel: "beta"}, channelSet: true,
			want: omv1.SubscriptionSpec{Package: "cache-operator", Channel: "beta", Version: "1.1.0"}},
		{name: "existing, --version \"\": any version", existing: byPackage, flags: omv1.SubscriptionSpec{}, versionSet: true,
			want: omv1.SubscriptionSpec{Package: "cache-operator", Channel: "stable"}},
		{name: "existing, no flags: installed again as it was", existing: byPackage, want: *byPackage},
		{name: "existing by startingCSV, no flags: as it was", existing: byCSV, want: *byCSV},
		{name: "existing by startingCSV, --version alone: refused, not guessed", existing: byCSV, flags: omv1.SubscriptionSpec{Version: "0.23.0"}, versionSet: true,
			err: "names its version by startingCSV (prometheus.0.22.2)"},
		{name: "existing, --package: the flags as given", existing: byPackage, flags: omv1.SubscriptionSpec{Package: "other"},
			want: omv1.SubscriptionSpec{Package: "other"}},
		{name: "existing OLM's, no flags: its startingCSV (where it started) kept", existing: byOLM, want: omv1.SubscriptionSpec{Package: "etcd", Channel: "alpha", StartingCSV: "etcdoperator.v0.9.2"}},
		{name: "existing OLM's, --version: replaces its startingCSV", existing: byOLM, flags: omv1.SubscriptionSpec{Version: "0.9.4"}, versionSet: true,
			want: omv1.SubscriptionSpec{Package: "etcd", Channel: "alpha", Version: "0.9.4"}},
	} {
		got, err := wantedVersion("cache", tc.existing, tc.flags, tc.channelSet, tc.versionSet)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || exitCode(err) != ExitUsage {
				t.Errorf("%s: got %v, want a usage error with %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestBlueprintLine: a rollback's wait prints the change's own words once the manager has
// taken it up, the CSV's while it rolls the revision out, and never the status of the
// spec before the change as if it were the change's.
func TestBlueprintLine(t *testing.T) {
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	bp.Status.ObservedGeneration, bp.Status.Phase, bp.Status.CurrentCSV = 3, omv1.BlueprintUpgrading, "x.v2"
	bp.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionProgressing, Status: metav1.ConditionTrue, Message: "revision 3: waiting for x.v1 to start the revision"}}
	csv := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "x.v1"}}
	csv.Status.Revision, csv.Status.Phase, csv.Status.Message = 3, omv1alpha1.CSVInstalling, "0/1 replicas updated, 0 available"
	stale := bp.DeepCopy()
	stale.Generation, stale.Status.ObservedGeneration, stale.Status.Phase = 4, 3, omv1.BlueprintSucceeded
	first := bp.DeepCopy()
	first.Status.Phase, first.Status.CurrentCSV, first.Status.Conditions = omv1.BlueprintInstalling, "", nil
	blocked := first.DeepCopy()
	blocked.Status.Phase = omv1.BlueprintBlocked
	blocked.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "InsufficientPermissions", Message: "ServiceAccount q/installer does not exist"}}
	done := bp.DeepCopy()
	done.Status.Phase, done.Status.CurrentCSV = omv1.BlueprintSucceeded, "x.v1"
	done.Status.Conditions[0].Status = metav1.ConditionFalse
	for _, tc := range []struct {
		name string
		bp   *omv1.Blueprint
		csv  *omv1alpha1.ClusterServiceVersion
		want string
	}{
		{"not taken up yet", stale, nil, "waiting for the manager to take up the change (generation 4; running x.v2)"},
		{"the Blueprint's words", bp, nil, "Upgrading, running x.v2: revision 3: waiting for x.v1 to start the revision"},
		{"the CSV's words", bp, csv, "Upgrading, running x.v2: revision 3: x.v1 is Installing: 0/1 replicas updated, 0 available"},
		{"done", done, nil, "Succeeded, running x.v1"},
		{"a first install", first, nil, "Installing, running nothing yet"},
		{"just made, not read yet", &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, nil, "waiting for the manager to take up the Blueprint (running nothing yet)"},
		{"blocked, nothing in progress: why", blocked, nil, "Blocked, running nothing yet: InsufficientPermissions: ServiceAccount q/installer does not exist"},
	} {
		if got := blueprintLine(tc.bp, tc.csv); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestSetIntentKeepsOLMWords: the CLI changes an OLM Subscription in its own words (name,
// source, installPlanApproval), so the API server's rule that two spellings agree holds and
// the YAML a person keeps in git still matches what is stored.
func TestSetIntentKeepsOLMWords(t *testing.T) {
	olm := omv1.SubscriptionSpec{Name: "etcd", StartingCSV: "etcdoperator.v0.9.2", Source: "hub", InstallPlanApproval: omv1.ApprovalManual}
	setIntent(&olm, omv1.SubscriptionSpec{Package: "etcd", Version: "0.9.4"})
	if olm.Name != "etcd" || olm.Package != "" || olm.Version != "0.9.4" || olm.StartingCSV != "" {
		t.Errorf("OLM spec after setIntent = %+v", olm)
	}
	// --csv alone: the package is cleared, so startingCSV pins the version asked for (with
	// OLM's name kept, an installed Subscription would follow its channel and ignore it).
	byCSV := omv1.SubscriptionSpec{Name: "etcd", Channel: "alpha", Source: "hub"}
	setIntent(&byCSV, omv1.SubscriptionSpec{StartingCSV: "etcdoperator.v0.9.4"})
	if byCSV.Name != "" || byCSV.Package != "" || byCSV.Channel != "" || byCSV.StartingCSV != "etcdoperator.v0.9.4" || byCSV.Source != "hub" {
		t.Errorf("OLM spec after setIntent of a CSV alone = %+v", byCSV)
	}
	both := omv1.SubscriptionSpec{Name: "etcd", Package: "etcd"}
	setIntent(&both, omv1.SubscriptionSpec{Package: "etcd-next"})
	if both.Name != "etcd-next" || both.Package != "etcd-next" {
		t.Errorf("both spellings after setIntent = %+v: both change", both)
	}
	own := omv1.SubscriptionSpec{Package: "etcd"}
	setIntent(&own, omv1.SubscriptionSpec{Package: "etcd", Channel: "beta"})
	if own.Package != "etcd" || own.Name != "" || own.Channel != "beta" {
		t.Errorf("own spec after setIntent = %+v", own)
	}
	if src, cat := olmOrOwn("hub", "", "other"); src != "other" || cat != "" {
		t.Errorf("olmOrOwn on an OLM spelling = %q, %q", src, cat)
	}
	if src, cat := olmOrOwn("", "mine", "other"); src != "" || cat != "other" {
		t.Errorf("olmOrOwn on the own spelling = %q, %q", src, cat)
	}
	if src, cat := olmOrOwn("hub", "hub", "other"); src != "other" || cat != "other" {
		t.Errorf("olmOrOwn on both spellings = %q, %q: both change", src, cat)
	}
	if src, cat := olmOrOwn("", "", "other"); src != "" || cat != "other" {
		t.Errorf("olmOrOwn on nothing = %q, %q: the own spelling is written", src, cat)
	}
}

// TestWantedOf: list's WANTED is the version the Subscription resolves to, as kubectl's
// WANTED column says it, else what it asks for; not its package again (a channel
// follower's was its package alone, found by hand).
func TestWantedOf(t *testing.T) {
	for _, tc := range []struct {
		spec       omv1.SubscriptionSpec
		currentCSV string
		want       string
	}{
		{omv1.SubscriptionSpec{Package: "cache-operator"}, "cache-operator.v1.2.0", "1.2.0"},
		{omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2", Package: "prometheus"}, "prometheus.0.22.2", "0.22.2"},
		{omv1.SubscriptionSpec{Package: "odd"}, "odd-operator.2024", "odd-operator.2024"}, // not <package>.<version>: the CSV

		// Not resolved (yet): what it asks for.
		{omv1.SubscriptionSpec{Package: "cache-operator"}, "", "default channel"},
		{omv1.SubscriptionSpec{Package: "cache-operator", Channel: "stable"}, "", "channel stable"},
		{omv1.SubscriptionSpec{Package: "cache-operator", Version: "9.9.9"}, "", "9.9.9"},
		{omv1.SubscriptionSpec{Package: "cache-operator", Version: ">=1.1.0 <1.3.0"}, "", ">=1.1.0 <1.3.0"},
		{omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2"}, "", "prometheus.0.22.2"}, // openEuler's: a pin
		{omv1.SubscriptionSpec{Name: "etcd", Channel: "alpha", StartingCSV: "etcdoperator.v0.9.2"}, "", "channel alpha from etcdoperator.v0.9.2"},
	} {
		if got := wantedOf(&tc.spec, tc.currentCSV, tc.spec.PackageName()); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.spec, got, tc.want)
		}
	}
}
