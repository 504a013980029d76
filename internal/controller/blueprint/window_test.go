package blueprint

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestWindowHold: closed windows hold an upgrade not yet started, and ask for a look when
// the next opens; nothing else is held.
func TestWindowHold(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC) // a Saturday
	weekdays := []omv1.UpgradeWindow{{Schedule: "0 2 * * 1-5", Duration: metav1.Duration{Duration: 2 * time.Hour}}}
	upgrade := func() *omv1.Blueprint {
		bp := &omv1.Blueprint{Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "x.v2", Generation: 2}}
		bp.Status.CurrentCSV = "x.v1"
		bp.Status.History = []omv1.Revision{{Revision: 1, CSVName: "x.v1", Generation: 1, Outcome: omv1.OutcomeSucceeded}}
		return bp
	}
	started := upgrade()
	started.Status.History = append(started.Status.History, omv1.Revision{Revision: 2, CSVName: "x.v2", Generation: 2, Outcome: omv1.OutcomePending})
	first := &omv1.Blueprint{Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "x.v1", Generation: 1}}
	for _, tc := range []struct {
		name    string
		bp      *omv1.Blueprint
		windows []omv1.UpgradeWindow
		held    bool
		invalid bool
		message string
		requeue time.Duration
	}{
		{name: "no windows", bp: upgrade()},
		{name: "an upgrade, all closed", bp: upgrade(), windows: weekdays, held: true,
			message: "the next upgrade window opens at 2026-12-07T02:00:00Z", requeue: 40*time.Hour + time.Second},
		{name: "an upgrade, one open", bp: upgrade(), windows: []omv1.UpgradeWindow{{Schedule: "0 9 * * 6", Duration: metav1.Duration{Duration: 2 * time.Hour}}}},
		{name: "an upgrade already started goes on", bp: started, windows: weekdays},
		{name: "a first install", bp: first, windows: weekdays},
		{name: "windows that never open", bp: upgrade(), windows: []omv1.UpgradeWindow{{Schedule: "0 0 30 2 *", Duration: metav1.Duration{Duration: time.Hour}}},
			held: true, invalid: true, message: "spec.upgradeWindows: no upgrade window ever opens"},
		{name: "a window that cannot be read", bp: upgrade(), windows: []omv1.UpgradeWindow{{Schedule: "soon", Duration: metav1.Duration{Duration: time.Hour}}},
			held: true, invalid: true, message: `spec.upgradeWindows[0].schedule "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{bp: tc.bp, sub: &omv1.Subscription{Spec: omv1.SubscriptionSpec{UpgradeWindows: tc.windows}}, now: now}
			h := (&Reconciler{}).windowHold(s)
			if (h != nil) != tc.held {
				t.Fatalf("hold = %+v, want held %v", h, tc.held)
			}
			if h != nil && (!h.Window || h.Invalid != tc.invalid || !strings.Contains(h.Message, tc.message)) {
				t.Errorf("hold = %+v, want invalid %v and a message with %q", h, tc.invalid, tc.message)
			}
			if s.result.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %s, want %s", s.result.RequeueAfter, tc.requeue)
			}
		})
	}
}
