package exepages

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestQuietStateObserve(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const quiet = 30 * time.Second
	type step struct {
		sec   int
		count uint64
		want  bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"quiet from the start: the start release already gave everything back", []step{{0, 5, false}, {40, 5, false}, {100, 5, false}}},
		{"a burst, then quiet: one release", []step{{0, 5, false}, {10, 9, false}, {20, 12, false}, {49, 12, false}, {50, 12, true}, {80, 12, false}, {200, 12, false}}},
		{"work that never stops: none", []step{{0, 1, false}, {20, 2, false}, {40, 3, false}, {60, 4, false}, {80, 5, false}}},
		{"a second burst after a release: a second release", []step{{0, 1, false}, {10, 2, false}, {40, 2, true}, {50, 3, false}, {70, 3, false}, {80, 3, true}}},
		{"a pause shorter than quiet: none yet", []step{{0, 1, false}, {10, 2, false}, {39, 2, false}, {40, 3, false}, {69, 3, false}, {70, 3, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q quietState
			for _, s := range tc.steps {
				if got := q.observe(s.count, at(s.sec), quiet); got != s.want {
					t.Fatalf("at %ds count %d: release %v, want %v", s.sec, s.count, got, s.want)
				}
			}
		})
	}
}

// The running Scavenger releases once after a burst has been quiet, not during it, and
// stops with its context.
func TestScavengerReleasesAfterQuiet(t *testing.T) {
	var work, releases, frees atomic.Uint64
	s := &Scavenger{
		Quiet:    time.Second, // far above the burst's 50 ms steps, so a loaded machine does not end the burst early
		Activity: work.Load,
		Release:  func() (int64, error) { releases.Add(1); return 1024, nil },
		FreeHeap: func() { frees.Add(1) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	// A burst of work lasting several quiet periods' worth of checks: no release.
	for i := 0; i < 40; i++ {
		work.Add(1)
		time.Sleep(50 * time.Millisecond)
	}
	if n := releases.Load(); n != 0 {
		t.Fatalf("%d releases while the work went on", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for releases.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if releases.Load() != 1 {
		t.Fatalf("%d releases after the work went quiet, want 1", releases.Load())
	}
	if frees.Load() != 1 {
		t.Fatalf("the free heap given back %d times with the pages, want 1", frees.Load())
	}
	time.Sleep(2500 * time.Millisecond)
	if releases.Load() != 1 || frees.Load() != 1 {
		t.Errorf("%d releases and %d heap frees while nothing happened after the first, want 1", releases.Load(), frees.Load())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the scavenger did not stop with its context")
	}
}
