package csv

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// deepChecks remember when each CSV last had the kinds that are not watched (Secrets,
// ConfigMaps, the bundle's other kinds) read back from the API server, so that read
// happens once per resyncAfterGate, not on every pass.
//
// A check counts only once it has read everything: one cut short by an error (the API
// server busy, a timeout) is forgotten, so the next pass checks again rather than a
// Secret deleted by hand going unrepaired for ten minutes. A CSV gone is forgotten too,
// or the map would keep every CSV the process ever saw.
type deepChecks struct {
	mu   sync.Mutex
	last map[types.UID]time.Time
}

// due says whether a CSV's deep check is due now, and if so counts it as started.
func (d *deepChecks) due(uid types.UID, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.last[uid]; ok && now.Sub(t) < resyncAfterGate && !now.Before(t) {
		return false
	}
	if d.last == nil {
		d.last = map[types.UID]time.Time{}
	}
	d.last[uid] = now
	return true
}

// forget makes a CSV's next pass check again: its check failed, or it is gone.
func (d *deepChecks) forget(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, uid)
}
