package csv

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// TestNewRevisionAppliesWhole: a revision the Blueprint asks of a CSV (a rollback to it, a
// retry) applies every object until one apply of them all goes through, even when its
// first pass failed and was recorded: the next pass once saw the render recorded by the
// CSV's earlier revision, took the objects as applied, and left what another version had
// changed to the drift check.
func TestNewRevisionAppliesWhole(t *testing.T) {
	r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
	csv := &omv1alpha1.ClusterServiceVersion{}
	csv.Annotations = map[string]string{omv1.AnnotationRevision: "3"}
	csv.Status = omv1alpha1.ClusterServiceVersionStatus{Phase: omv1alpha1.CSVReplacing, Revision: 1, RenderHash: "render-of-revision-1",
		GateStartTime: &metav1.Time{Time: time.Now().Add(-time.Hour)}}

	first := &scope{csv: csv, now: time.Now(), hash: "render-of-revision-1"}
	r.startGateOnNewRevision(first)
	if !first.newRevision || csv.Status.Revision != 3 {
		t.Fatalf("revision 3 not started: newRevision %v, status revision %d", first.newRevision, csv.Status.Revision)
	}
	// The first pass's apply fails; its status (revision 3, no render recorded) is
	// written. The next pass is no new revision, yet must apply everything again.
	next := &scope{csv: csv, now: time.Now(), hash: "render-of-revision-1"}
	r.startGateOnNewRevision(next)
	if next.newRevision {
		t.Fatal("the second pass started the revision again (its gate with it)")
	}
	if !next.appliesAll() {
		t.Errorf("the second pass of revision 3 takes its objects as applied (render recorded %q): what another version changed is left as it is", csv.Status.RenderHash)
	}
}
