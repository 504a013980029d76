package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// OneSeries keeps one series per object in a gauge whose labels say the object's state:
// setting other label values replaces the object's series, and setting the same ones
// leaves it in place, so a scrape never finds the object without a series and an alert's
// "for" counts from the moment the state began.
type OneSeries struct {
	vec  *prometheus.GaugeVec
	mu   sync.Mutex
	last map[string][]string
}

// NewOneSeries keeps one series per object in vec.
func NewOneSeries(vec *prometheus.GaugeVec) *OneSeries {
	return &OneSeries{vec: vec, last: map[string][]string{}}
}

// Set gives the object named key the series of labels (in vec's label order) with value.
func (o *OneSeries) Set(key string, value float64, labels ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, ok := o.last[key]; ok && !slices.Equal(prev, labels) {
		o.vec.DeleteLabelValues(prev...)
	}
	o.last[key] = slices.Clone(labels)
	o.vec.WithLabelValues(labels...).Set(value)
}

// Delete removes the object's series.
func (o *OneSeries) Delete(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, ok := o.last[key]; ok {
		o.vec.DeleteLabelValues(prev...)
		delete(o.last, key)
	}
}
