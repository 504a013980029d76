package blueprint

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func rev(n int64, g int64, csv string, trigger omv1.Trigger, outcome omv1.RevisionOutcome) omv1.Revision {
	return omv1.Revision{Revision: n, Generation: g, CSVName: csv, Trigger: trigger, Outcome: outcome, BundleDigest: "sha256:" + csv}
}

// imported marks a revision as `import` brings it.
func imported(r omv1.Revision) omv1.Revision {
	r.Imported = true
	return r
}

func bp(g int64, target, current string, history ...omv1.Revision) *omv1.Blueprint {
	return &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Generation: g + 10},
		Spec:   omv1.BlueprintSpec{ClusterServiceVersionName: target, BundleDigest: "sha256:" + target, Generation: g},
		Status: omv1.BlueprintStatus{CurrentCSV: current, History: history}}
}

func TestPlan(t *testing.T) {
	auto := Policy{AutoRollback: true}
	held := Policy{AutoRollback: true, Hold: &Hold{OperatorCondition: "a.v1", Reason: "Migrating", Message: "a data migration runs"}}
	cases := []struct {
		name    string
		bp      *omv1.Blueprint
		policy  Policy
		open    *omv1.Revision // expected new revision (Revision, CSV, Trigger)
		work    int64          // expected pending revision number, 0 none
		settled omv1.BlueprintPhase
	}{
		{"first install", bp(1, "a.v1", ""), auto, &omv1.Revision{Revision: 1, CSVName: "a.v1", Trigger: omv1.TriggerInstall}, 1, ""},
		{"installing", bp(1, "a.v1", "", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomePending)), auto, nil, 1, ""},
		{"installed", bp(1, "a.v1", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)), auto, nil, 0, omv1.BlueprintSucceeded},
		{"upgrade on spec change", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)), auto,
			&omv1.Revision{Revision: 2, CSVName: "a.v2", Trigger: omv1.TriggerUpgrade}, 2, ""},
		{"failed upgrade rolls back to the last good", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed)), auto,
			&omv1.Revision{Revision: 3, CSVName: "a.v1", Trigger: omv1.TriggerRollback}, 3, ""},
		{"rolled back, no further attempt", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed), rev(3, 2, "a.v1", omv1.TriggerRollback, omv1.OutcomeSucceeded)), auto,
			nil, 0, omv1.BlueprintRolledBack},
		{"retry before rollback", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed)), Policy{AutoRollback: true, Retries: 1},
			&omv1.Revision{Revision: 3, CSVName: "a.v2", Trigger: omv1.TriggerRetry}, 3, ""},
		{"retries spent, roll back", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed), rev(3, 2, "a.v2", omv1.TriggerRetry, omv1.OutcomeFailed)),
			Policy{AutoRollback: true, Retries: 1}, &omv1.Revision{Revision: 4, CSVName: "a.v1", Trigger: omv1.TriggerRollback}, 4, ""},
		{"automatic rollback off: failed stays", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed)), Policy{}, nil, 0, omv1.BlueprintFailed},
		{"blocked stays blocked", bp(1, "a.v1", "", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeBlocked)), auto,
			nil, 0, omv1.BlueprintBlocked},
		{"blocked, its rights granted since: tried again", bp(1, "a.v1", "", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeBlocked)),
			Policy{AutoRollback: true, Unblocked: true}, &omv1.Revision{Revision: 2, CSVName: "a.v1", Trigger: omv1.TriggerRetry}, 2, ""},
		{"failed first install: nothing to roll back to", bp(1, "a.v1", "", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeFailed)), auto,
			nil, 0, omv1.BlueprintFailed},
		// `import` starts the history with what ran on the cluster exported from; an
		// imported revision of the same CSV and (by chance) generation is no attempt here.
		{"imported: the first install here follows the imported revisions",
			bp(1, "a.v2", "", imported(rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)), imported(rev(2, 1, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeSucceeded))),
			auto, &omv1.Revision{Revision: 3, CSVName: "a.v2", Trigger: omv1.TriggerInstall}, 3, ""},
		{"imported, the first install here failed: no rollback to what never ran here",
			bp(1, "a.v2", "", imported(rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)), rev(2, 1, "a.v2", omv1.TriggerInstall, omv1.OutcomeFailed)),
			auto, nil, 0, omv1.BlueprintFailed},
		{"spec changes again after a rollback: try the new one", bp(3, "a.v3", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed), rev(3, 2, "a.v1", omv1.TriggerRollback, omv1.OutcomeSucceeded)), auto,
			&omv1.Revision{Revision: 4, CSVName: "a.v3", Trigger: omv1.TriggerUpgrade}, 4, ""},
		{"manual rollback is a spec change to an older version", func() *omv1.Blueprint {
			b := bp(3, "a.v1", "a.v2", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
				rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeSucceeded))
			b.Spec.Version, b.Status.CurrentVersion = "1.9.0", "1.10.0" // semver, not string order
			return b
		}(), auto, &omv1.Revision{Revision: 3, CSVName: "a.v1", Trigger: omv1.TriggerDowngrade}, 3, ""},
		{"manual approval: an upgrade waits", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)),
			Policy{AutoRollback: true, ManualApproval: true}, nil, 0, omv1.BlueprintWaitingForApproval},
		{"manual approval: approved goes", func() *omv1.Blueprint {
			b := bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded))
			b.Spec.Approved = true
			return b
		}(), Policy{AutoRollback: true, ManualApproval: true}, &omv1.Revision{Revision: 2, CSVName: "a.v2", Trigger: omv1.TriggerUpgrade}, 2, ""},
		{"manual approval: a first install does not wait", bp(1, "a.v1", ""), Policy{ManualApproval: true},
			&omv1.Revision{Revision: 1, CSVName: "a.v1", Trigger: omv1.TriggerInstall}, 1, ""},
		{"OLM's Manual: a first install waits", bp(1, "a.v1", ""), Policy{ManualApproval: true, ApproveFirstInstall: true},
			nil, 0, omv1.BlueprintWaitingForApproval},
		{"OLM's Manual: a first install approved in its InstallPlan goes", bp(1, "a.v1", ""),
			Policy{ManualApproval: true, ApproveFirstInstall: true, Approved: true},
			&omv1.Revision{Revision: 1, CSVName: "a.v1", Trigger: omv1.TriggerInstall}, 1, ""},
		{"manual approval: an upgrade approved in its InstallPlan goes", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)),
			Policy{AutoRollback: true, ManualApproval: true, Approved: true}, &omv1.Revision{Revision: 2, CSVName: "a.v2", Trigger: omv1.TriggerUpgrade}, 2, ""},
		{"automatic: a first install does not wait", bp(1, "a.v1", ""), Policy{ApproveFirstInstall: true},
			&omv1.Revision{Revision: 1, CSVName: "a.v1", Trigger: omv1.TriggerInstall}, 1, ""},
		{"not upgradeable: an upgrade is held", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)),
			held, nil, 0, omv1.BlueprintUpgradeHeld},
		{"not upgradeable: approval is asked first, then the hold", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded)),
			Policy{AutoRollback: true, ManualApproval: true, Hold: held.Hold}, nil, 0, omv1.BlueprintWaitingForApproval},
		{"not upgradeable: approved, still held", func() *omv1.Blueprint {
			b := bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded))
			b.Spec.Approved = true
			return b
		}(), Policy{AutoRollback: true, ManualApproval: true, Hold: held.Hold}, nil, 0, omv1.BlueprintUpgradeHeld},
		{"not upgradeable: a downgrade a person asked for goes", func() *omv1.Blueprint {
			b := bp(3, "a.v1", "a.v2", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
				rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeSucceeded))
			b.Spec.Version, b.Status.CurrentVersion = "1.0.0", "2.0.0"
			return b
		}(), held, &omv1.Revision{Revision: 3, CSVName: "a.v1", Trigger: omv1.TriggerDowngrade}, 3, ""},
		{"not upgradeable: a failed upgrade still rolls back", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed)), held,
			&omv1.Revision{Revision: 3, CSVName: "a.v1", Trigger: omv1.TriggerRollback}, 3, ""},
		{"not upgradeable: an upgrade under way is carried on", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomePending)), held, nil, 2, ""},
		{"not upgradeable: a first install is not held", bp(1, "a.v1", ""), held,
			&omv1.Revision{Revision: 1, CSVName: "a.v1", Trigger: omv1.TriggerInstall}, 1, ""},
		{"blocked stays blocked", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeBlocked)), auto, nil, 0, omv1.BlueprintBlocked},
		{"an edit that is not a version change opens nothing", func() *omv1.Blueprint {
			b := bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
				rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed), rev(3, 2, "a.v1", omv1.TriggerRollback, omv1.OutcomeSucceeded))
			b.Generation += 5 // approved, dependencies ... edited: metadata.generation moves, spec.generation does not
			b.Spec.Approved = true
			return b
		}(), auto, nil, 0, omv1.BlueprintRolledBack},
		{"a hand edit of the target opens a revision without a generation bump", bp(2, "a.v1", "a.v2",
			rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeSucceeded)), auto,
			&omv1.Revision{Revision: 3, CSVName: "a.v1", Trigger: omv1.TriggerUpgrade}, 3, ""},
		{"the same target asked for again (generation bumped) after a rollback: a new attempt", bp(3, "a.v2", "a.v1",
			rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed),
			rev(3, 2, "a.v1", omv1.TriggerRollback, omv1.OutcomeSucceeded)), auto,
			&omv1.Revision{Revision: 4, CSVName: "a.v2", Trigger: omv1.TriggerUpgrade}, 4, ""},
		{"a person pointing back at the version a failed upgrade left running: a manual rollback", bp(3, "a.v1", "a.v1",
			rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed)), Policy{},
			&omv1.Revision{Revision: 3, CSVName: "a.v1", Trigger: omv1.TriggerDowngrade}, 3, ""},
		{"a person pointing at the version an automatic rollback returned to: a manual rollback", bp(3, "a.v1", "a.v1",
			rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed),
			rev(3, 2, "a.v1", omv1.TriggerRollback, omv1.OutcomeSucceeded)), auto,
			&omv1.Revision{Revision: 4, CSVName: "a.v1", Trigger: omv1.TriggerDowngrade}, 4, ""},
		{"the running version asked for again after it succeeded: not a rollback", bp(3, "a.v2", "a.v2",
			rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded), rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeSucceeded)), auto,
			&omv1.Revision{Revision: 3, CSVName: "a.v2", Trigger: omv1.TriggerUpgrade}, 3, ""},
		{"a pending rollback is carried on", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed), rev(3, 2, "a.v1", omv1.TriggerRollback, omv1.OutcomePending)), auto,
			nil, 3, ""},
		{"failed rollback ends failed", bp(2, "a.v2", "a.v1", rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
			rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeFailed), rev(3, 2, "a.v1", omv1.TriggerRollback, omv1.OutcomeFailed)), auto,
			nil, 0, omv1.BlueprintFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Plan(tc.bp, tc.policy)
			if tc.open == nil && d.Open != nil {
				t.Fatalf("opened %+v, want none", d.Open)
			}
			if tc.open != nil {
				if d.Open == nil || d.Open.Revision != tc.open.Revision || d.Open.CSVName != tc.open.CSVName || d.Open.Trigger != tc.open.Trigger ||
					d.Open.Generation != tc.bp.Spec.Generation || d.Open.Outcome != omv1.OutcomePending || d.Open.BundleDigest != "sha256:"+tc.open.CSVName {
					t.Fatalf("opened %+v, want %+v", d.Open, tc.open)
				}
			}
			if (d.Work == nil) != (tc.work == 0) || (d.Work != nil && d.Work.Revision != tc.work) {
				t.Fatalf("work = %+v, want revision %d", d.Work, tc.work)
			}
			if d.Settled != tc.settled {
				t.Fatalf("settled = %q, want %q", d.Settled, tc.settled)
			}
		})
	}
}

func TestTarget(t *testing.T) {
	h := []omv1.Revision{
		{Revision: 1, CSVName: "a.v1", Version: "1.0.0", BundleDigest: "sha256:one", Outcome: omv1.OutcomeSucceeded},
		{Revision: 2, CSVName: "a.v2", Version: "2.0.0", BundleDigest: "sha256:two", Outcome: omv1.OutcomeSucceeded},
	}
	cases := []struct {
		name                    string
		target, version, digest string
		wantVersion, wantDigest string
	}{
		{"written by the Subscription", "a.v3", "3.0.0", "sha256:three", "3.0.0", "sha256:three"},
		{"spec agrees with the history", "a.v1", "1.0.0", "sha256:one", "1.0.0", "sha256:one"},
		{"only the name edited back to a known version", "a.v1", "2.0.0", "sha256:two", "1.0.0", "sha256:one"},
		{"only the name edited to an unknown version", "a.v9", "2.0.0", "sha256:two", "", ""},
		{"a known version without a digest", "a.v1", "", "", "1.0.0", "sha256:one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &omv1.Blueprint{Spec: omv1.BlueprintSpec{ClusterServiceVersionName: tc.target, Version: tc.version, BundleDigest: tc.digest},
				Status: omv1.BlueprintStatus{History: h}}
			v, d := Target(b)
			if v != tc.wantVersion || d != tc.wantDigest {
				t.Fatalf("Target = %q, %q; want %q, %q", v, d, tc.wantVersion, tc.wantDigest)
			}
		})
	}
}

func TestPrune(t *testing.T) {
	h := []omv1.Revision{
		rev(1, 1, "a.v1", omv1.TriggerInstall, omv1.OutcomeSucceeded),
		rev(2, 2, "a.v2", omv1.TriggerUpgrade, omv1.OutcomeSucceeded),
		rev(3, 3, "a.v3", omv1.TriggerUpgrade, omv1.OutcomeSucceeded),
		rev(4, 4, "a.v4", omv1.TriggerUpgrade, omv1.OutcomeFailed),
		rev(5, 4, "a.v3", omv1.TriggerRollback, omv1.OutcomeFailed),
		rev(6, 5, "a.v5", omv1.TriggerUpgrade, omv1.OutcomeFailed),
	}
	// Running a.v3 (revision 3, also the last good); limit 2 keeps it and the newest.
	kept, dropped := Prune(h, 2, "a.v3")
	if len(kept) != 2 || kept[0].Revision != 3 || kept[1].Revision != 6 || len(dropped) != 4 {
		t.Fatalf("kept %v dropped %v", revs(kept), revs(dropped))
	}
	if kept, dropped := Prune(h, 0, "a.v3"); len(kept) != 6 || dropped != nil {
		t.Errorf("limit 0 keeps all: %v", revs(kept))
	}
	// The current one is kept even when it is not the newest success.
	h2 := append([]omv1.Revision{}, h[:3]...)
	h2 = append(h2, rev(4, 4, "a.v1", omv1.TriggerUpgrade, omv1.OutcomeFailed))
	kept, _ = Prune(h2, 1, "a.v1")
	if got := revs(kept); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("kept %v, want the current (1) and the last good (3)", got)
	}
}

func revs(rs []omv1.Revision) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Revision)
	}
	return out
}
