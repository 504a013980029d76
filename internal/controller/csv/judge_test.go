package csv

import (
	"testing"
	"time"
)

func TestLookAgainWhileInstalling(t *testing.T) {
	start := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		timeout time.Duration
		now     time.Time
		want    time.Duration
	}{
		{"the gate just started: the next poll", 30 * time.Second, start, pollWhileInstalling},
		{"the timeout ends after the next poll", 30 * time.Second, start.Add(20 * time.Second), pollWhileInstalling},
		{"the timeout ends before the next poll: then", 30 * time.Second, start.Add(28800 * time.Millisecond), 1200 * time.Millisecond},
		{"the timeout ends exactly at the next poll", 30 * time.Second, start.Add(27 * time.Second), pollWhileInstalling},
		{"the timeout has passed (judged failed): the next poll", 30 * time.Second, start.Add(31 * time.Second), pollWhileInstalling},
		{"the timeout ends now: the next poll", 30 * time.Second, start.Add(30 * time.Second), pollWhileInstalling},
		{"a timeout shorter than a poll", 2 * time.Second, start.Add(500 * time.Millisecond), 1500 * time.Millisecond},
	}
	for _, c := range cases {
		if got := lookAgainWhileInstalling(start, c.timeout, c.now); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestGateStart(t *testing.T) {
	cases := []struct {
		name   string
		stored time.Time
		want   time.Time
	}{
		{"read back to the second: counted from the second's end",
			time.Date(2026, 12, 4, 3, 0, 7, 0, time.UTC), time.Date(2026, 12, 4, 3, 0, 8, 0, time.UTC)},
		{"the exact time of the pass that starts it: the same",
			time.Date(2026, 12, 4, 3, 0, 7, 420_000_000, time.UTC), time.Date(2026, 12, 4, 3, 0, 8, 0, time.UTC)},
	}
	for _, c := range cases {
		if got := gateStart(c.stored); !got.Equal(c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// Never early: whenever in its second the gate began, the timeout counted from
	// gateStart ends no sooner than the full timeout after it.
	for ms := 0; ms < 1000; ms += 125 {
		began := time.Date(2026, 12, 4, 3, 0, 7, ms*1_000_000, time.UTC)
		stored := began.Truncate(time.Second)
		if gateStart(stored).Before(began) {
			t.Errorf("a gate begun at %s counts from %s, before it began", began, gateStart(stored))
		}
	}
}
