package csv

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
)

// watermarks remember the generation (and the object, by UID) at which this process last
// applied each Deployment, until the cache shows that generation or a later one. The
// health check reads Deployments from the cache, which lags a write by moments: a copy
// below the mark still describes the previous template, and is read fresh instead. A
// Deployment replaced (a new selector) is another object: its old copy in the cache,
// whatever its generation, is not this apply's.
type watermarks struct {
	mu    sync.Mutex
	marks map[types.NamespacedName]watermark
}

type watermark struct {
	uid        types.UID
	generation int64
}

// set records an apply's response.
func (w *watermarks) set(namespace, name string, uid types.UID, generation int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.marks == nil {
		w.marks = map[types.NamespacedName]watermark{}
	}
	w.marks[types.NamespacedName{Namespace: namespace, Name: name}] = watermark{uid: uid, generation: generation}
}

// covers says whether a cached Deployment has seen the last apply this process made of
// it (true when there was none: after a restart the cache starts from a fresh list). A
// mark the cache has caught up with is dropped, so the map holds only the Deployments
// applied moments ago.
func (w *watermarks) covers(d *appsv1.Deployment) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	m, ok := w.marks[key]
	if !ok {
		return true
	}
	if d.UID != m.uid || d.Generation < m.generation {
		return false
	}
	delete(w.marks, key)
	return true
}
