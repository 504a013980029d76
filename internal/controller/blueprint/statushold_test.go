package blueprint

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

func TestProgressHold(t *testing.T) {
	progressing := func(reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: omv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: msg}}
	}
	waitingForCSV := progressing("Install", "revision 1: waiting for x.v1 to start the revision")
	installing := progressing("Install", "revision 1: x.v1 is Installing: 0/1 available")
	for _, tc := range []struct {
		name          string
		progressOnly  bool
		mirrorsCSV    bool
		before, after []metav1.Condition
		want          time.Duration
	}{
		{"not progress: at once", false, true, installing, installing, 0},
		{"the CSV's rollout words again: a summary", true, true, installing, progressing("Install", "revision 1: x.v1 is Installing: 1/1 available, waiting"), statuswrite.SummaryInterval},
		{"the CSV took the revision: its words, same reason", true, true, waitingForCSV, installing, statuswrite.SummaryInterval},
		{"from waiting for CRDs to the CSV's words: a step", true, true, progressing(ReasonWaitingForCRDs, "waiting for CRD a"), installing, statuswrite.DefaultInterval},
		{"the Blueprint's own words (CRDs): shown within seconds", true, false, progressing(ReasonWaitingForCRDs, "waiting for CRD a"), progressing(ReasonWaitingForCRDs, "waiting for CRD b"), statuswrite.DefaultInterval},
	} {
		if got := progressHold(tc.progressOnly, tc.mirrorsCSV, tc.before, tc.after); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
