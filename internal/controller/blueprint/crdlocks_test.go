package blueprint

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNameLocks: callers sharing a name never hold it at once, whatever other names they
// lock with it and in whatever order they list them; callers with no name in common do
// not wait on each other; and nothing is kept once every lock is released.
func TestNameLocks(t *testing.T) {
	var l nameLocks
	var inside [3]atomic.Int32 // holders of a, b and c
	sets := [][]string{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "a", "c"}, {"a"}}
	idx := map[string]int{"a": 0, "b": 1, "c": 2}
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		names := sets[i%len(sets)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := l.lock(names)
			defer unlock()
			distinct := slices.Compact(slices.Sorted(slices.Values(names))) // a name listed twice is held once
			for _, n := range distinct {
				if got := inside[idx[n]].Add(1); got != 1 {
					t.Errorf("%d holders of %s at once", got, n)
				}
			}
			time.Sleep(time.Millisecond)
			for _, n := range distinct {
				inside[idx[n]].Add(-1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("deadlock: callers still waiting after 30s")
	}
	if len(l.held) != 0 {
		t.Errorf("%d locks kept after all were released", len(l.held))
	}

	// Disjoint names: the second caller does not wait for the first.
	unlock := l.lock([]string{"x"})
	got := make(chan struct{})
	go func() { l.lock([]string{"y"})(); close(got) }()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Error("a lock of y waited for a lock of x")
	}
	// A shared name: it waits.
	waited := make(chan struct{})
	go func() { l.lock([]string{"y", "x"})(); close(waited) }()
	select {
	case <-waited:
		t.Error("a lock of x was taken while x was held")
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	<-waited
}
