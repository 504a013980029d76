// Package upgradewindow decides whether a Subscription's upgrade windows (maintenance
// windows: a cron schedule that opens each and a duration it stays open, as Argo CD's sync
// windows) are open at a given time, and when the next one opens. Pure: the caller gives
// the time.
package upgradewindow

import (
	"fmt"
	"strings"
	"time"
	// The time zone database in the binary: the manager's image has none of its own.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// State is the windows' state at a time.
type State struct {
	// Open is true while some window is open.
	Open bool
	// Closes is when the open windows close (the latest of them), when Open.
	Closes time.Time
	// Opens is when the next window opens, when not Open.
	Opens time.Time
}

// maxOpenings bounds the walk over a window's openings within one duration (a month of
// minutes).
const maxOpenings = 31 * 24 * 60

// parser reads the five standard fields and the descriptors (@daily), not seconds: a
// window is planned in minutes.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// At says whether any of windows is open at now, and when that changes. An error names
// the window's field (spec.upgradeWindows[i].schedule, .duration or .timeZone) and what is
// wrong with it; the caller keeps upgrades waiting then, since the person meant to limit them.
func At(windows []omv1.UpgradeWindow, now time.Time) (State, error) {
	var st State
	for i, w := range windows {
		field := fmt.Sprintf("spec.upgradeWindows[%d]", i)
		if strings.HasPrefix(strings.TrimSpace(w.Schedule), "CRON_TZ=") || strings.HasPrefix(strings.TrimSpace(w.Schedule), "TZ=") {
			return State{}, fmt.Errorf("%s.schedule %q: give the time zone in %s.timeZone", field, w.Schedule, field)
		}
		sched, err := parser.Parse(w.Schedule)
		if err != nil {
			return State{}, fmt.Errorf("%s.schedule %q: %v", field, w.Schedule, err)
		}
		d := w.Duration.Duration
		if d <= 0 {
			return State{}, fmt.Errorf("%s.duration %q: a window must stay open for some time", field, w.Duration.Duration)
		}
		loc := time.UTC
		if w.TimeZone != "" {
			if loc, err = time.LoadLocation(w.TimeZone); err != nil {
				return State{}, fmt.Errorf("%s.timeZone %q: not a time zone (IANA names such as Europe/Berlin)", field, w.TimeZone)
			}
		}
		// The latest opening not after now is the first one after now-d, if any is.
		first := sched.Next(now.Add(-d).In(loc))
		if first.IsZero() {
			continue // a schedule that never fires (February 30th)
		}
		if !first.After(now) {
			// Open: it closes d after its last opening at or before now.
			// Bounded: a schedule firing every minute in a window of weeks is the most.
			last := first
			for i, next := 0, sched.Next(last); i < maxOpenings && !next.IsZero() && !next.After(now); i, next = i+1, sched.Next(next) {
				last = next
			}
			if closes := last.Add(d); !st.Open || closes.After(st.Closes) {
				st.Closes = closes
			}
			st.Open = true
			continue
		}
		if st.Opens.IsZero() || first.Before(st.Opens) {
			st.Opens = first
		}
	}
	if st.Open {
		st.Opens = time.Time{}
	}
	return st, nil
}

// NeverOpens says the windows are shut for good: none is open and none ever opens (each
// schedule names a day that never comes, such as February 30th). That is a mistake to
// mend, not a wait: the manager holds the upgrade as Invalid, the CLI refuses the flag.
func (s State) NeverOpens() bool { return !s.Open && s.Opens.IsZero() }

// Describe says a closed state's next opening for a person. The time is absolute (UTC),
// not "in 3h": the words go into a status, which must not change while nothing does.
func Describe(st State) string {
	if st.Opens.IsZero() {
		return "no upgrade window ever opens"
	}
	return "the next upgrade window opens at " + st.Opens.UTC().Format(time.RFC3339)
}
