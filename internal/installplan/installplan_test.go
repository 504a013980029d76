package installplan

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

func TestName(t *testing.T) {
	a := Name("etcd", "etcdoperator.v0.9.4", 2)
	if a != Name("etcd", "etcdoperator.v0.9.4", 2) {
		t.Fatal("the name of one change differs between calls")
	}
	if !strings.HasPrefix(a, "install-") || len(a) != len("install-")+10 {
		t.Errorf("name %q is not install- and 10 characters", a)
	}
	for _, other := range []string{Name("etcd", "etcdoperator.v0.9.4", 3), Name("etcd", "etcdoperator.v0.9.2", 2), Name("etcd2", "etcdoperator.v0.9.4", 2)} {
		if other == a {
			t.Errorf("another change has the same name %q", a)
		}
	}
}

func blueprint(phase omv1.BlueprintPhase, current string, history ...omv1.Revision) *omv1.Blueprint {
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "team-a",
		Labels: map[string]string{omv1.LabelSubscription: "cache"}}}
	bp.Spec.ClusterServiceVersionName, bp.Spec.Generation = "cache.v1.1.0", 2
	bp.Status.Phase, bp.Status.CurrentCSV, bp.Status.History = phase, current, history
	return bp
}

func plan(name string, approved bool) *omv1alpha1.InstallPlan {
	return &omv1alpha1.InstallPlan{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: omv1alpha1.InstallPlanSpec{Approved: approved}}
}

func TestDecide(t *testing.T) {
	pending := Name("cache", "cache.v1.1.0", 2)
	older := Name("cache", "cache.v1.0.0", 1)
	rev := func(n int64, csv, ip string, outcome omv1.RevisionOutcome) omv1.Revision {
		return omv1.Revision{Revision: n, CSVName: csv, InstallPlan: ip, Outcome: outcome, Reason: "HealthCheckFailed", Message: "0/1 available"}
	}
	held := func(cliApproved bool) *omv1.Blueprint {
		bp := blueprint(omv1.BlueprintUpgradeHeld, "cache.v1.0.0")
		bp.Spec.Approved = cliApproved
		bp.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionUpgradePending, Status: metav1.ConditionTrue,
			Reason: omv1.ReasonOutsideUpgradeWindow, Message: "cache.v1.1.0 waits for an upgrade window"}}
		return bp
	}
	cases := []struct {
		name     string
		bp       *omv1.Blueprint
		ip       *omv1alpha1.InstallPlan
		delete   bool
		approved bool
		phase    omv1alpha1.InstallPlanPhase
		revision int64
	}{
		{"the change waits: requires approval", blueprint(omv1.BlueprintWaitingForApproval, "cache.v1.0.0"), plan(pending, false),
			false, false, omv1alpha1.InstallPlanRequiresApproval, 0},
		{"approved, not yet taken up: still requires approval, approval kept", blueprint(omv1.BlueprintWaitingForApproval, "cache.v1.0.0"), plan(pending, true),
			false, true, omv1alpha1.InstallPlanRequiresApproval, 0},
		{"its revision runs: installing, approved", blueprint(omv1.BlueprintUpgrading, "cache.v1.0.0",
			rev(1, "cache.v1.0.0", "", omv1.OutcomeSucceeded), rev(2, "cache.v1.1.0", pending, omv1.OutcomePending)), plan(pending, false),
			false, true, omv1alpha1.InstallPlanInstalling, 2},
		{"its revision succeeded: complete", blueprint(omv1.BlueprintSucceeded, "cache.v1.1.0",
			rev(1, "cache.v1.0.0", "", omv1.OutcomeSucceeded), rev(2, "cache.v1.1.0", pending, omv1.OutcomeSucceeded)), plan(pending, true),
			false, true, omv1alpha1.InstallPlanComplete, 2},
		{"its revision failed and was rolled back: failed", blueprint(omv1.BlueprintRolledBack, "cache.v1.0.0",
			rev(1, "cache.v1.0.0", "", omv1.OutcomeSucceeded), rev(2, "cache.v1.1.0", pending, omv1.OutcomeFailed),
			rev(3, "cache.v1.0.0", "", omv1.OutcomeSucceeded)), plan(pending, true),
			false, true, omv1alpha1.InstallPlanFailed, 2},
		{"a retry of its change: follows the retry", blueprint(omv1.BlueprintUpgrading, "cache.v1.0.0",
			rev(2, "cache.v1.1.0", pending, omv1.OutcomeFailed), rev(3, "cache.v1.1.0", pending, omv1.OutcomePending)), plan(pending, true),
			false, true, omv1alpha1.InstallPlanInstalling, 3},
		{"an older plan still in the history: complete", blueprint(omv1.BlueprintWaitingForApproval, "cache.v1.0.0",
			rev(1, "cache.v1.0.0", older, omv1.OutcomeSucceeded)), plan(older, true),
			false, true, omv1alpha1.InstallPlanComplete, 1},
		{"approved, then held by an upgrade window: kept, approved, installing", held(false), plan(pending, true),
			false, true, omv1alpha1.InstallPlanInstalling, 0},
		{"approved with the CLI, then held: kept, marked approved", held(true), plan(pending, false),
			false, true, omv1alpha1.InstallPlanInstalling, 0},
		{"held, never approved (Manual turned off): deleted", held(false), plan(pending, false),
			true, false, "", 0},
		{"the change moved on before approval: deleted", blueprint(omv1.BlueprintWaitingForApproval, "cache.v1.0.0"), plan(older, false),
			true, false, "", 0},
		{"Manual turned off while it waited: deleted", blueprint(omv1.BlueprintSucceeded, "cache.v1.0.0"), plan(pending, false),
			true, false, "", 0},
		{"its revision left the history: deleted", blueprint(omv1.BlueprintSucceeded, "cache.v1.1.0",
			rev(5, "cache.v1.1.0", "", omv1.OutcomeSucceeded)), plan(older, true),
			true, false, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.bp, c.ip)
			if d.Delete != c.delete || d.Approved != c.approved || d.Status.Phase != c.phase || d.Status.Revision != c.revision {
				t.Errorf("Decide = delete %v, approved %v, %s (revision %d); want delete %v, approved %v, %s (revision %d)",
					d.Delete, d.Approved, d.Status.Phase, d.Status.Revision, c.delete, c.approved, c.phase, c.revision)
			}
			if c.bp.Status.Phase == omv1.BlueprintUpgradeHeld && !c.delete && d.Status.Message != "approved; cache.v1.1.0 waits for an upgrade window" {
				t.Errorf("a held plan's message %q does not say what it waits for", d.Status.Message)
			}
			if c.phase == omv1alpha1.InstallPlanFailed && !strings.Contains(d.Status.Message, "HealthCheckFailed: 0/1 available") {
				t.Errorf("a failed plan's message %q does not say why", d.Status.Message)
			}
		})
	}
}

func TestLatestAndCSVs(t *testing.T) {
	pending := Name("cache", "cache.v1.1.0", 2)
	waiting := blueprint(omv1.BlueprintWaitingForApproval, "")
	waiting.Spec.Dependencies = []omv1.ResolvedDependency{
		{Package: "store", CSVName: "store.v2.0.0", BundleDigest: "sha256:aa"},
		{Package: "log", CSVName: "log.v1.0.0", Reason: "met by the installed log.v1.0.0"},
	}
	if got := Latest(waiting, true); got != pending {
		t.Errorf("Latest of a waiting change = %q, want its pending plan %q", got, pending)
	}
	if got := CSVs(waiting); strings.Join(got, ",") != "cache.v1.1.0,store.v2.0.0" {
		t.Errorf("CSVs = %v: want the target and the dependency installed with it, not the one already met", got)
	}
	msg := WaitMessage(waiting)
	for _, want := range []string{"cache.v1.1.0 waits for approval to be installed", "store.v2.0.0", "operator-manager approve cache -n team-a", pending} {
		if !strings.Contains(msg, want) {
			t.Errorf("WaitMessage %q does not say %q", msg, want)
		}
	}
	done := blueprint(omv1.BlueprintSucceeded, "cache.v1.1.0",
		omv1.Revision{Revision: 1, CSVName: "cache.v1.0.0", InstallPlan: "install-a"},
		omv1.Revision{Revision: 2, CSVName: "cache.v1.1.0", InstallPlan: "install-b"},
		omv1.Revision{Revision: 3, CSVName: "cache.v1.0.0"})
	if got := Latest(done, true); got != "install-b" {
		t.Errorf("Latest = %q, want the newest plan a revision carried out", got)
	}
	if got := Latest(blueprint(omv1.BlueprintSucceeded, "cache.v1.1.0"), true); got != "" {
		t.Errorf("Latest without plans = %q", got)
	}
	if got := Latest(blueprint(omv1.BlueprintUpgradeHeld, "cache.v1.0.0"), true); got != pending {
		t.Errorf("Latest of a Manual change approved and held = %q, want its plan %q", got, pending)
	}
	if got := Latest(blueprint(omv1.BlueprintUpgradeHeld, "cache.v1.0.0"), false); got != "" {
		t.Errorf("Latest of an Automatic change held = %q, want none (no plan is made for it)", got)
	}
}

// TestWithConditions: OLM's Installed condition follows the plan's phase (True when
// Complete, False when Failed, none before), keeps its time while it stays, and leaves an
// unchanged plan's status equal, so it is not written again.
func TestWithConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	ip := &omv1alpha1.InstallPlan{}
	st := WithConditions(ip, omv1alpha1.InstallPlanStatus{Phase: omv1alpha1.InstallPlanRequiresApproval}, t0)
	if len(st.Conditions) != 0 {
		t.Errorf("waiting for approval: %+v, want no Installed condition", st.Conditions)
	}
	ip.Status = WithConditions(ip, omv1alpha1.InstallPlanStatus{Phase: omv1alpha1.InstallPlanComplete, Message: "revision 1 installed x"}, t0)
	c := meta.FindStatusCondition(ip.Status.Conditions, omv1alpha1.InstallPlanInstalled)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonInstallSucceeded || c.Message != "revision 1 installed x" || !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("complete: %+v", c)
	}
	again := WithConditions(ip, omv1alpha1.InstallPlanStatus{Phase: omv1alpha1.InstallPlanComplete, Message: "revision 1 installed x"}, t1)
	if !equality.Semantic.DeepEqual(again, ip.Status) {
		t.Errorf("an unchanged plan's status changed: %+v -> %+v", ip.Status, again)
	}
	failed := WithConditions(ip, omv1alpha1.InstallPlanStatus{Phase: omv1alpha1.InstallPlanFailed, Message: "did not install"}, t1)
	if c := meta.FindStatusCondition(failed.Conditions, omv1alpha1.InstallPlanInstalled); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInstallComponentFailed || !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("failed: %+v", c)
	}
}
