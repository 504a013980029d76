package upgradewindow

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func w(schedule string, d time.Duration, tz string) omv1.UpgradeWindow {
	return omv1.UpgradeWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: tz}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestAt(t *testing.T) {
	weekdays := w("0 2 * * 1-5", 2*time.Hour, "")
	for _, tc := range []struct {
		name    string
		windows []omv1.UpgradeWindow
		now     string // 2026-12-07 is a Monday
		open    bool
		closes  string
		opens   string
		err     string
	}{
		{name: "inside a weekday window", windows: []omv1.UpgradeWindow{weekdays}, now: "2026-12-07T03:00:00Z", open: true, closes: "2026-12-07T04:00:00Z"},
		{name: "at the moment it opens", windows: []omv1.UpgradeWindow{weekdays}, now: "2026-12-07T02:00:00Z", open: true, closes: "2026-12-07T04:00:00Z"},
		{name: "at the moment it closes", windows: []omv1.UpgradeWindow{weekdays}, now: "2026-12-07T04:00:00Z", opens: "2026-12-08T02:00:00Z"},
		{name: "before it opens", windows: []omv1.UpgradeWindow{weekdays}, now: "2026-12-07T01:59:00Z", opens: "2026-12-07T02:00:00Z"},
		{name: "Saturday: the next is Monday's", windows: []omv1.UpgradeWindow{weekdays}, now: "2026-12-05T12:00:00Z", opens: "2026-12-07T02:00:00Z"},
		{name: "in Berlin's time", windows: []omv1.UpgradeWindow{w("0 2 * * *", time.Hour, "Europe/Berlin")}, now: "2026-12-07T01:30:00Z", open: true, closes: "2026-12-07T02:00:00Z"},
		{name: "Berlin's window, not yet open in UTC terms", windows: []omv1.UpgradeWindow{w("0 2 * * *", time.Hour, "Europe/Berlin")}, now: "2026-12-07T00:30:00Z", opens: "2026-12-07T01:00:00Z"},
		{name: "opening every minute for two minutes: always open", windows: []omv1.UpgradeWindow{w("* * * * *", 2*time.Minute, "")}, now: "2026-12-07T10:00:30Z", open: true, closes: "2026-12-07T10:02:00Z"},
		{name: "a window longer than its period", windows: []omv1.UpgradeWindow{w("@daily", 36*time.Hour, "")}, now: "2026-12-07T13:00:00Z", open: true, closes: "2026-12-08T12:00:00Z"},
		{name: "two windows, the second open", windows: []omv1.UpgradeWindow{weekdays, w("0 12 * * 6", 4*time.Hour, "")}, now: "2026-12-05T13:00:00Z", open: true, closes: "2026-12-05T16:00:00Z"},
		{name: "two windows, the sooner opens next", windows: []omv1.UpgradeWindow{weekdays, w("0 12 * * 6", 4*time.Hour, "")}, now: "2026-12-05T10:00:00Z", opens: "2026-12-05T12:00:00Z"},
		{name: "a schedule that never fires", windows: []omv1.UpgradeWindow{w("0 0 30 2 *", time.Hour, "")}, now: "2026-12-05T10:00:00Z"},
		{name: "a bad schedule", windows: []omv1.UpgradeWindow{weekdays, w("0 2 * *", time.Hour, "")}, now: "2026-12-05T10:00:00Z",
			err: `spec.upgradeWindows[1].schedule "0 2 * *": expected exactly 5 fields`},
		{name: "seconds are not taken", windows: []omv1.UpgradeWindow{w("0 0 2 * * *", time.Hour, "")}, now: "2026-12-05T10:00:00Z",
			err: `spec.upgradeWindows[0].schedule "0 0 2 * * *": expected exactly 5 fields`},
		{name: "a time zone in the schedule", windows: []omv1.UpgradeWindow{w("CRON_TZ=Asia/Tokyo 0 2 * * *", time.Hour, "")}, now: "2026-12-05T10:00:00Z",
			err: `spec.upgradeWindows[0].schedule "CRON_TZ=Asia/Tokyo 0 2 * * *": give the time zone in spec.upgradeWindows[0].timeZone`},
		{name: "no duration", windows: []omv1.UpgradeWindow{w("@daily", 0, "")}, now: "2026-12-05T10:00:00Z",
			err: `spec.upgradeWindows[0].duration "0s": a window must stay open for some time`},
		{name: "an unknown time zone", windows: []omv1.UpgradeWindow{w("@daily", time.Hour, "Mars/Olympus")}, now: "2026-12-05T10:00:00Z",
			err: `spec.upgradeWindows[0].timeZone "Mars/Olympus": not a time zone`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := At(tc.windows, at(tc.now))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var closes, opens time.Time
			if tc.closes != "" {
				closes = at(tc.closes)
			}
			if tc.opens != "" {
				opens = at(tc.opens)
			}
			if st.Open != tc.open || !st.Closes.Equal(closes) || !st.Opens.Equal(opens) {
				t.Errorf("At = %+v, want open %v, closes %s, opens %s", st, tc.open, tc.closes, tc.opens)
			}
			if never := !tc.open && tc.opens == ""; st.NeverOpens() != never {
				t.Errorf("NeverOpens = %v, want %v", st.NeverOpens(), never)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	if got, want := Describe(State{Opens: at("2026-12-07T02:00:00+01:00")}), "the next upgrade window opens at 2026-12-07T01:00:00Z"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if got := Describe(State{}); got != "no upgrade window ever opens" {
		t.Errorf("Describe of a schedule that never fires = %q", got)
	}
}
