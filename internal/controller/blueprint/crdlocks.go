package blueprint

import (
	"slices"
	"sync"
)

// crdLocks serialises, within this process, what installations do to one CRD between
// reading it and writing it: the plan's read (is it there, at which version, with whose
// provider records), the preflight and the apply. Side by side, installations of one
// package share their CRDs, and the Blueprint controller runs several workers. An
// existing CRD is applied with the resourceVersion the plan read as a precondition, so a
// write in between fails and is planned again; but a CRD read as absent has nothing to
// hold it to, and server-side apply creates it or, if another installation made it a
// moment ago, changes it. Found by hand: six installations of cache-operator at 1.0.0,
// 1.1.0 and 1.2.0, created at once, each read no CRD and applied its own; the last, at
// 1.0.0, stood, an older schema over the newer versions' (whose custom resources' newer
// fields the API server then prunes), with three of the six provider records. Only the
// leader reconciles, so a lock of the process is a lock of the cluster's writers that
// matter; a person's write in between is met by the precondition, or by the next plan.
type nameLocks struct {
	mu   sync.Mutex
	held map[string]*nameLock
}

type nameLock struct {
	sync.Mutex
	refs int // holders and waiters: the entry goes when none are left
}

// lock takes the lock of each name, in sorted order (two callers sharing several names
// never wait on each other crosswise), and returns what releases them.
func (l *nameLocks) lock(names []string) (unlock func()) {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	taken := make([]*nameLock, len(names))
	for i, n := range names {
		l.mu.Lock()
		if l.held == nil {
			l.held = map[string]*nameLock{}
		}
		e := l.held[n]
		if e == nil {
			e = &nameLock{}
			l.held[n] = e
		}
		e.refs++
		l.mu.Unlock()
		e.Lock()
		taken[i] = e
	}
	return func() {
		for i := len(taken) - 1; i >= 0; i-- {
			taken[i].Unlock()
			l.mu.Lock()
			if taken[i].refs--; taken[i].refs == 0 {
				delete(l.held, names[i])
			}
			l.mu.Unlock()
		}
	}
}
