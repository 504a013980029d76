package csv

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/metrics"
)

// setPhase writes the decided phase, its transition time, the Ready condition derived
// from it, an event on each change, and the install metrics.
func (r *Reconciler) setPhase(s *scope) {
	csv := s.csv
	if s.phase == "" {
		return
	}
	if csv.Status.Phase != s.phase {
		now := metav1.NewTime(s.now)
		csv.Status.LastTransitionTime = &now
		// Told once the new phase is written: a reconcile working from a cached copy that
		// has not seen the last write yet decides the same change again, and its
		// optimistically locked patch is refused; its event and count must not happen.
		phase, reason, message := s.phase, s.reason, s.message
		s.onWritten = append(s.onWritten, func() {
			r.event(csv, phase == omv1alpha1.CSVFailed, reason, "%s: %s", phase, message)
			pkg := csv.Labels[omv1.LabelPackage]
			switch phase {
			case omv1alpha1.CSVSucceeded:
				metrics.Installs.WithLabelValues(pkg, string(phase)).Inc()
			case omv1alpha1.CSVFailed:
				metrics.Installs.WithLabelValues(pkg, string(phase)).Inc()
				metrics.InstallFailures.WithLabelValues(pkg, reason).Inc()
			}
		})
	}
	csv.Status.Phase, csv.Status.Reason, csv.Status.Message = s.phase, s.reason, s.message
	csv.Status.Package = csv.Labels[omv1.LabelPackage]
	csv.Status.ObservedGeneration = csv.Generation
	ready := metav1.Condition{Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: s.reason, Message: s.message, ObservedGeneration: csv.Generation}
	if s.phase == omv1alpha1.CSVSucceeded {
		ready.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&csv.Status.Conditions, ready)
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
