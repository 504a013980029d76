package csv

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// TestRevisionCutShortLooksDeep: the pass that starts a revision (a rollback to this CSV,
// a retry) applies every object; when it is cut short (a step failed, a requirement not
// met yet) the next pass is no new revision and applies only what it finds drifted, so
// it looks at every object, watched or not, at once rather than at the periodic deep
// check: what another version changed of an unwatched kind is put back before the
// revision is judged. A pass that applied everything changes nothing.
func TestRevisionCutShortLooksDeep(t *testing.T) {
	now := time.Now()
	newCSV := func() *omv1alpha1.ClusterServiceVersion {
		csv := &omv1alpha1.ClusterServiceVersion{}
		csv.UID = "csv-uid"
		csv.Annotations = map[string]string{omv1.AnnotationRevision: "3"}
		csv.Status = omv1alpha1.ClusterServiceVersionStatus{Phase: omv1alpha1.CSVReplacing, Revision: 1, RenderHash: "render",
			GateStartTime: &metav1.Time{Time: now.Add(-time.Hour)}}
		return csv
	}
	for _, tc := range []struct {
		name       string
		appliedAll bool
		wantDeep   bool
	}{
		{"cut short", false, true},
		{"applied everything", true, false},
	} {
		r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
		csv := newCSV()
		if !r.deep.due(csv.UID, now) || r.deep.due(csv.UID, now) {
			t.Fatal("a deep check was not due at first, or due again at once")
		}
		s := &scope{csv: csv, now: now, hash: "render"}
		r.startGateOnNewRevision(s)
		if !s.newRevision || csv.Status.Revision != 3 {
			t.Fatalf("%s: revision 3 not started", tc.name)
		}
		s.appliedAll = tc.appliedAll
		r.cutShort(s)
		if got := r.deep.due(csv.UID, now.Add(time.Second)); got != tc.wantDeep {
			t.Errorf("%s: the next pass's drift check deep: %v, want %v", tc.name, got, tc.wantDeep)
		}
		next := &scope{csv: csv, now: now, hash: "render"}
		if r.startGateOnNewRevision(next); next.newRevision {
			t.Errorf("%s: the next pass started the revision (and its gate) again", tc.name)
		}
	}
}
