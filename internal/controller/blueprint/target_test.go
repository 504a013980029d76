package blueprint

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestRollbackTarget: the revision asked for must have succeeded and differ from the
// target; without one, the newest good revision of another CSV.
func TestRollbackTarget(t *testing.T) {
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Name: "cache"}, Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "c.v1.3.0"},
		Status: omv1.BlueprintStatus{History: []omv1.Revision{
			{Revision: 1, CSVName: "c.v1.1.0", Outcome: omv1.OutcomeSucceeded},
			{Revision: 2, CSVName: "c.v1.2.0", Outcome: omv1.OutcomeSucceeded},
			{Revision: 3, CSVName: "c.v1.3.0", Outcome: omv1.OutcomeFailed},
			{Revision: 4, CSVName: "c.v1.3.0", Outcome: omv1.OutcomeSucceeded},
		}}}
	for _, tc := range []struct {
		to      int64
		want    int64
		wantErr string
	}{
		{to: 0, want: 2},
		{to: 1, want: 1},
		{to: 2, want: 2},
		{to: 3, wantErr: "never succeeded"},
		{to: 4, wantErr: "already the target"},
		{to: 9, wantErr: "no revision 9"},
	} {
		got, err := RollbackTarget(bp, tc.to)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("to %d: err = %v, want %q", tc.to, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("to %d: %v", tc.to, err)
		case got.Revision != tc.want:
			t.Errorf("to %d: revision %d, want %d", tc.to, got.Revision, tc.want)
		}
	}
	if _, err := RollbackTarget(&omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, 0); err == nil || !strings.Contains(err.Error(), "no earlier good revision") {
		t.Errorf("empty history: %v", err)
	}
}

func TestDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := Deadline(start, nil); !got.Equal(start.Add(DefaultHealthTimeout + 30*time.Second)) {
		t.Errorf("default deadline %s", got)
	}
	sub := &omv1.Subscription{Spec: omv1.SubscriptionSpec{Health: &omv1.HealthPolicy{Timeout: &metav1.Duration{Duration: time.Minute}}}}
	if got := Deadline(start, sub); !got.Equal(start.Add(time.Minute + 6*time.Second)) {
		t.Errorf("1m deadline %s", got)
	}
}
