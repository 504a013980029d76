package statuswrite

import (
	"slices"
	"sync"
	"time"
)

// Stale tells a reconcile that works from a cached copy older than this process's own
// last status write. The informer cache lags a write by a few milliseconds, and the
// write's own watch event (or one of an object the reconcile applied) may start the next
// reconcile before the cache has it. That reconcile would decide everything again from
// the old status: apply every object once more, repeat an event, and see its patch
// refused. It should instead wait for the cache, which the write's watch event will bring.
// The same holds for an object a reconcile created or changed (a child): the next
// reconcile must not find it missing from the cache, or as it was, and write it again.
// Keys are the caller's: an object's UID for its own status, owner and child for a child.
// Safe for concurrent reconciles; entries are forgotten once the cache moved on, or after
// a minute, so a write the cache never shows (the object deleted) blocks nothing.
type Stale struct {
	mu sync.Mutex
	m  map[string]staleEntry
}

// Absent stands for the resourceVersion of an object the cache does not hold.
const Absent = "<absent>"

type staleEntry struct {
	// before are the resourceVersions this process's recent writes replaced: a reconcile
	// may write an object twice (a finalizer, then its status), and a cached copy at
	// either older version is stale.
	before []string
	at     time.Time
}

// maxBefore bounds an entry's list; writes of one object within the cache's lag are few.
const maxBefore = 8

// Wrote records a write under key that replaced resourceVersion before (Absent: a
// create) with after. A write the API server took as a no-op (after == before) records
// nothing. Each write of an object is recorded: a copy at any version one of them
// replaced is stale until the cache moves past them all.
func (s *Stale) Wrote(key, before, after string, now time.Time) {
	if before == "" || after == before {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]staleEntry{}
	}
	if len(s.m) >= 256 {
		for k, v := range s.m {
			if now.Sub(v.at) > time.Minute {
				delete(s.m, k)
			}
		}
	}
	e, ok := s.m[key]
	if !ok || now.Sub(e.at) > time.Minute {
		e = staleEntry{}
	}
	if !slices.Contains(e.before, before) {
		if len(e.before) >= maxBefore {
			e.before = e.before[1:]
		}
		e.before = append(e.before, before)
	}
	e.at = now
	s.m[key] = e
}

// Is says whether a cached copy at resourceVersion rv (Absent: none) predates this
// process's last write under key.
func (s *Stale) Is(key, rv string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return false
	}
	if !slices.Contains(e.before, rv) || now.Sub(e.at) > time.Minute {
		delete(s.m, key)
		return false
	}
	return true
}
