// Package crdready tells whether a CRD is Established and serves a version, and what the
// cluster's copy of a CRD carries in its annotations, without reading whole CRDs again
// and again.
//
// The manager's own cache holds no CRDs (an informer would hold every CRD schema of the
// cluster, often hundreds of KiB each). Two things stand in for reads:
//
//   - A cache of its own (NewCache) of every CRD without its schemas, a few KiB each: it
//     answers "Established? serving v1?" and gives the annotations the Blueprint controller
//     decides by, and its watch brings an installation back the moment its CRD becomes
//     Established (no polling).
//   - A memo of sightings: a CRD read from the API server or returned by an apply moments
//     ago Established is Established now, trusted for TTL, and only a positive sighting:
//     the apply's response often says so before the cache has the CRD at all. The cost of
//     trusting it is bounded by TTL: a CRD deleted since is reported missing at most TTL
//     later.
package crdready

import (
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TTL is how long a sighting is trusted.
const TTL = 30 * time.Second

// maxEntries bounds the memo; expired entries are dropped when it is reached.
const maxEntries = 4096

// Memo is safe for concurrent use; its zero value is ready, and a nil *Memo remembers
// nothing (every question is answered "read it").
type Memo struct {
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Cache, when set, holds every CRD of the cluster without its schemas (NewCache): a
	// CRD it shows Established and serving the version asked for is ready without a read.
	Cache client.Reader

	mu sync.Mutex
	m  map[string]sighting
}

type sighting struct {
	served map[string]bool
	at     time.Time
}

func (m *Memo) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Established reports whether crd's status says the API server established it.
func Established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// Saw records a CRD just read from the API server (or returned by a write): remembered
// when Established, forgotten otherwise (a CRD being replaced or refused).
func (m *Memo) Saw(crd *apiextensionsv1.CustomResourceDefinition) {
	if m == nil || crd == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !Established(crd) {
		delete(m.m, crd.Name)
		return
	}
	now := m.now()
	if m.m == nil {
		m.m = map[string]sighting{}
	}
	if len(m.m) >= maxEntries {
		for k, s := range m.m {
			if now.Sub(s.at) > TTL {
				delete(m.m, k)
			}
		}
	}
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served[v.Name] = true
		}
	}
	m.m[crd.Name] = sighting{served: served, at: now}
}

// Forget drops what is known of a CRD: the caller saw it gone, or changed it.
func (m *Memo) Forget(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, name)
}

// Ready reports whether the CRD name was seen Established within TTL, serving version
// (any version when version is empty). False means: read it.
func (m *Memo) Ready(name, version string) bool {
	if m == nil {
		return false
	}
	if m.sighted(name, version) {
		return true
	}
	crd, ok := m.Cached(name)
	return ok && Established(crd) && (version == "" || served(crd, version))
}

func (m *Memo) sighted(name, version string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[name]
	if !ok {
		return false
	}
	if m.now().Sub(s.at) > TTL {
		delete(m.m, name)
		return false
	}
	return version == "" || s.served[version]
}

func served(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}
