package subscription

import (
	"context"
	"strconv"
	"testing"

	"github.com/blang/semver/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// TestChangeWithdrawn: a Subscription that asks again for the version that runs while its
// change waits (for approval here) withdraws the change: the Blueprint is pointed back at
// the running revision's pair, and its plan opens nothing. Before, the new pair opened an
// "Upgrade" of the running version to itself, through a health gate (found by hand).
// What cannot be withdrawn still opens a revision: after an automatic rollback (its
// objects are the rollback's), or for other content.
func TestChangeWithdrawn(t *testing.T) {
	rev := func(n, g int64, csv string, trigger omv1.Trigger) omv1.Revision {
		return omv1.Revision{Revision: n, Generation: g, CSVName: csv, Version: csv[len(csv)-5:], Trigger: trigger,
			Outcome: omv1.OutcomeSucceeded, BundleDigest: "sha256:" + csv}
	}
	waiting := func(history ...omv1.Revision) *omv1.Blueprint {
		bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rl"}}
		bp.Spec.ClusterServiceVersionName, bp.Spec.Generation, bp.Spec.BundleDigest = "rl.v0.1.0", 5, "sha256:rl.v0.1.0"
		bp.Status.CurrentCSV, bp.Status.History = "rl.v0.2.0", history
		return bp
	}
	running := &catalog.Bundle{Package: "rl", CSVName: "rl.v0.2.0", Version: semver.MustParse("0.2.0"), Digest: "sha256:rl.v0.2.0"}
	republished := &catalog.Bundle{Package: "rl", CSVName: "rl.v0.2.0", Version: semver.MustParse("0.2.0"), Digest: "sha256:other"}
	for _, tc := range []struct {
		name     string
		bp       *omv1.Blueprint
		bundle   *catalog.Bundle
		wantPair string // CSV and generation the Blueprint is pointed at
		wantOpen bool   // whether its plan opens a revision
	}{
		{"waits for approval: withdrawn", waiting(rev(1, 1, "rl.v0.2.0", omv1.TriggerInstall)), running, "rl.v0.2.0/1", false},
		{"after an upgrade: withdrawn to it", waiting(rev(1, 1, "rl.v0.1.0", omv1.TriggerInstall), rev(2, 3, "rl.v0.2.0", omv1.TriggerUpgrade)), running, "rl.v0.2.0/3", false},
		{"after an automatic rollback: a revision", waiting(rev(1, 1, "rl.v0.2.0", omv1.TriggerInstall), rev(2, 3, "rl.v0.3.0", omv1.TriggerUpgrade), rev(3, 3, "rl.v0.2.0", omv1.TriggerRollback)),
			running, "rl.v0.2.0/6", true},
		{"other content: a revision", waiting(rev(1, 1, "rl.v0.2.0", omv1.TriggerInstall)), republished, "rl.v0.2.0/6", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tc.bp.DeepCopy()).Build()
			r := &Reconciler{Client: cl, Recorder: events.NewFakeRecorder(10)}
			sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rl", Generation: 7},
				Spec: omv1.SubscriptionSpec{Package: "rl", Approval: omv1.ApprovalManual}}
			bp := &omv1.Blueprint{}
			if err := cl.Get(context.Background(), client.ObjectKeyFromObject(tc.bp), bp); err != nil {
				t.Fatal(err)
			}
			res := &resolution{bundle: tc.bundle, catalog: types.NamespacedName{Namespace: "ns", Name: "c"}}
			if err := r.writeBlueprint(context.Background(), sub, bp, true, res); err != nil {
				t.Fatal(err)
			}
			got := &omv1.Blueprint{}
			if err := cl.Get(context.Background(), client.ObjectKeyFromObject(tc.bp), got); err != nil {
				t.Fatal(err)
			}
			got.Status = tc.bp.Status
			if pair := got.Spec.ClusterServiceVersionName + "/" + strconv.FormatInt(got.Spec.Generation, 10); pair != tc.wantPair {
				t.Errorf("pointed at %s, want %s", pair, tc.wantPair)
			}
			d := blueprint.Plan(got, blueprint.Policy{ManualApproval: true, Approved: true})
			if opened := d.Open != nil; opened != tc.wantOpen {
				t.Errorf("plan opens a revision: %v (%+v), want %v", opened, d.Open, tc.wantOpen)
			}
			if !tc.wantOpen && d.Settled != omv1.BlueprintSucceeded {
				t.Errorf("settled %q, want Succeeded", d.Settled)
			}
		})
	}
}
