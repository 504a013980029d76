package exepages

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
)

// Scavenger gives the executable's pages and the free heap back once the work has been
// quiet for a while. A burst of installations touches code and
// tables (bundle parsing, the CRD validation and its CEL, server-side apply) that the
// manager does not use again until the next burst, and the kernel maps them in large
// runs, so they stayed resident for as long as the process lived. Released, they stay
// in the page cache, and the next burst maps back what it uses, page cache hits that cost
// microseconds each. The heap a burst grew (up to the GC percent over its live heap) is
// collected and returned at the same moment, so the settled process holds its live heap,
// not the burst's headroom, and the headroom can be sized for the burst's CPU.
type Scavenger struct {
	// Quiet is how long Activity must stay unchanged before the pages are released.
	Quiet time.Duration
	// Activity is a count that grows with the work (such as writes sent).
	Activity func() uint64
	// Release gives the pages back; Release of this package when nil.
	Release func() (int64, error)
	// FreeHeap collects and returns the free heap to the system; debug.FreeOSMemory when
	// nil.
	FreeHeap func()
	Log      logr.Logger
}

// NeedLeaderElection: a standby replica releases its pages too.
func (s *Scavenger) NeedLeaderElection() bool { return false }

// Start checks the activity a few times per quiet period until ctx ends.
func (s *Scavenger) Start(ctx context.Context) error {
	release, freeHeap := s.Release, s.FreeHeap
	if release == nil {
		release = Release
	}
	if freeHeap == nil {
		freeHeap = debug.FreeOSMemory
	}
	tick := time.NewTicker(max(s.Quiet/4, 10*time.Millisecond))
	defer tick.Stop()
	var q quietState
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			if !q.observe(s.Activity(), now, s.Quiet) {
				continue
			}
			freeHeap()
			if kib, err := release(); err != nil {
				s.Log.Error(err, "Releasing the binary's pages after a quiet period")
			} else {
				s.Log.Info("Released the binary's pages and the free heap after a quiet period", "quiet", s.Quiet.String(), "MiB", kib/1024)
			}
		}
	}
}

// quietState follows an activity count between checks.
type quietState struct {
	last  uint64
	since time.Time
	// dirty: the count moved since the last release (or the start), so pages were
	// touched that a release would give back.
	dirty bool
}

// observe records the count seen at now and reports whether to release: the count moved
// since the last release and has not moved for quiet. A manager that stays quiet releases
// once, not every period.
func (q *quietState) observe(count uint64, now time.Time, quiet time.Duration) bool {
	if q.since.IsZero() {
		q.last, q.since = count, now
		return false
	}
	if count != q.last {
		q.last, q.since, q.dirty = count, now, true
		return false
	}
	if q.dirty && now.Sub(q.since) >= quiet {
		q.dirty = false
		return true
	}
	return false
}
