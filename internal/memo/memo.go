// Package memo keeps a bounded number of values worked out from content-addressed keys
// (bundle digests). A digest names its content, so an entry never goes stale and needs no
// invalidation: only a bound on how many are kept, the oldest forgotten first.
package memo

import "sync"

// FIFO maps keys to values, keeping at most the number each Put is given, and forgets the
// oldest first. It is safe for concurrent use; the zero value is empty and ready. Values
// are shared, not copied: a caller that changes what it got copies it first.
type FIFO[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	order []string // keys, oldest first
}

// Get returns the value kept for key, and whether one is.
func (f *FIFO[V]) Get(key string) (V, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[key]
	return v, ok
}

// Put keeps v for key, forgetting the oldest entries beyond max. A key kept already keeps
// its value (and its place): the first to finish a piece of work keeps it.
func (f *FIFO[V]) Put(key string, v V, max int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[key]; ok {
		return
	}
	if f.m == nil {
		f.m = map[string]V{}
	}
	f.m[key] = v
	f.order = append(f.order, key)
	for len(f.order) > max {
		delete(f.m, f.order[0])
		f.order = f.order[1:]
	}
}

// Forget drops key's entry, if any.
func (f *FIFO[V]) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[key]; !ok {
		return
	}
	delete(f.m, key)
	for i, k := range f.order {
		if k == key {
			f.order = append(f.order[:i:i], f.order[i+1:]...)
			break
		}
	}
}

// Len is how many entries are kept.
func (f *FIFO[V]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m)
}
