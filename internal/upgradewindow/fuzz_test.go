package upgradewindow

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// FuzzAt: any schedule, duration and time zone a person may write is refused with an
// error or read into a consistent state (open until after now, or next opening after now),
// never a panic or a loop.
func FuzzAt(f *testing.F) {
	f.Add("0 2 * * 1-5", int64(2*time.Hour), "Europe/Berlin", int64(1796000000))
	f.Add("@weekly", int64(time.Minute), "", int64(0))
	f.Add("*/7 1-3 29 2 *", int64(time.Hour), "UTC", int64(1796000000))
	f.Add("0 0 30 2 *", int64(time.Hour), "", int64(1796000000))
	f.Add("CRON_TZ=Asia/Tokyo * * * * *", int64(time.Hour), "", int64(1796000000))
	f.Fuzz(func(t *testing.T, schedule string, d int64, tz string, unix int64) {
		now := time.Unix(unix%(1<<34), 0).UTC()
		w := []omv1.UpgradeWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: time.Duration(d % int64(30*24*time.Hour))}, TimeZone: tz}}
		st, err := At(w, now)
		if err != nil {
			return
		}
		if st.Open && !st.Closes.After(now) {
			t.Errorf("open at %s but closes at %s", now, st.Closes)
		}
		if !st.Open && !st.Opens.IsZero() && !st.Opens.After(now) {
			t.Errorf("closed at %s but opens at %s", now, st.Opens)
		}
	})
}
