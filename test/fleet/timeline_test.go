package fleet

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// rolloutTimeline records, from a watch, every change of the Deployments in one
// namespace, so that a lifecycle step splits into the installer's part before it changes
// a Deployment, the cluster's rollout, and the installer's part after it (its records,
// its return). A total alone could not tell an installer's own time from its cluster's:
// the manager's rollback by hand measured slower than Helm's while the manager changed
// the Deployment sooner and its cluster rolled it out slower.
type rolloutTimeline struct {
	mu   sync.Mutex
	seen []deploymentSeen
}

// deploymentSeen is one watch event of a Deployment.
type deploymentSeen struct {
	at         time.Time
	name       string
	generation int64
	// rolledOut: the controller observed this generation and every wanted replica is
	// updated and available, with no old one left.
	rolledOut bool
}

// phaseSplit is a step's time, in seconds, before a Deployment changed, during its
// rollout, and after it rolled out until the step returned.
type phaseSplit struct {
	Before  float64 `json:"before"`
	Rollout float64 `json:"rollout"`
	After   float64 `json:"after"`
}

// watchRollouts starts recording the Deployments of ns until ctx ends.
func watchRollouts(ctx context.Context, cfg *rest.Config, ns string) (*rolloutTimeline, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	tl := &rolloutTimeline{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok {
				tl.record(time.Now(), d)
			}
		}
	}()
	return tl, nil
}

func (tl *rolloutTimeline) record(at time.Time, d *appsv1.Deployment) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	done := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.seen = append(tl.seen, deploymentSeen{at: at, name: d.Name, generation: d.Generation, rolledOut: done})
}

// split divides the step that ran from start to end: for every Deployment whose
// generation rose in it, when the first rose and when the last of them was seen rolled
// out at its new generation. False when no Deployment changed or one did not roll out
// within the step (as the watch saw it).
func (tl *rolloutTimeline) split(start, end time.Time) (phaseSplit, bool) {
	if tl == nil {
		return phaseSplit{}, false
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return splitStep(tl.seen, start, end)
}

// splitStep is split's pure part.
func splitStep(seen []deploymentSeen, start, end time.Time) (phaseSplit, bool) {
	before := map[string]int64{} // each Deployment's generation when the step started
	changed := map[string]int64{}
	var first, last time.Time
	done := map[string]bool{}
	for _, e := range seen {
		if e.at.Before(start) {
			before[e.name] = max(before[e.name], e.generation)
			continue
		}
		if e.at.After(end) {
			break
		}
		if e.generation > before[e.name] && e.generation > changed[e.name] {
			if len(changed) == 0 {
				first = e.at
			}
			changed[e.name], done[e.name] = e.generation, false
		}
		if g, ok := changed[e.name]; ok && !done[e.name] && e.generation == g && e.rolledOut {
			done[e.name] = true
			last = e.at
		}
	}
	if len(changed) == 0 {
		return phaseSplit{}, false
	}
	for _, d := range done {
		if !d {
			return phaseSplit{}, false
		}
	}
	return phaseSplit{Before: hundredths(first.Sub(start)), Rollout: hundredths(last.Sub(first)), After: hundredths(end.Sub(last))}, true
}

// hundredths is d in seconds to the hundredth, as the steps are timed (stepSince).
func hundredths(d time.Duration) float64 {
	return float64(d.Round(10*time.Millisecond)) / float64(time.Second)
}

// medianSplit is the median of each part of the splits (each its own median: they need
// not add up to the median of the totals).
func medianSplit(splits []phaseSplit) phaseSplit {
	var b, r, a []float64
	for _, s := range splits {
		b, r, a = append(b, s.Before), append(r, s.Rollout), append(a, s.After)
	}
	return phaseSplit{Before: median(b), Rollout: median(r), After: median(a)}
}
