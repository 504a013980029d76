package csv

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/metrics"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
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
		tell := phaseEvent(csv.Status.Phase, phase, csv.Annotations[omv1.AnnotationRevision] != "")
		s.onWritten = append(s.onWritten, func() {
			if tell {
				r.event(csv, phase == omv1alpha1.CSVFailed, reason, "%s: %s", phase, message)
			}
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

// phaseEvent says whether a CSV's change of phase gets an event. A CSV a Blueprint carries
// out (byBlueprint) is told about by the Blueprint's events while its health gate runs
// (the revision started, succeeded, failed or rolled back, and the CSV's own event of
// what it applied as whom), so its steps through Pending, InstallReady and Installing,
// and its first Succeeded, would only repeat them: one write each. A failure, a recovery
// after the gate (Failed ComponentUnhealthy back to Succeeded) and being replaced are
// told. A CSV made by hand has no Blueprint: every phase is told, as OLM does.
func phaseEvent(from, to omv1alpha1.CSVPhase, byBlueprint bool) bool {
	if !byBlueprint {
		return true
	}
	switch to {
	case omv1alpha1.CSVFailed, omv1alpha1.CSVReplacing, omv1alpha1.CSVDeleting:
		return true
	case omv1alpha1.CSVSucceeded:
		return from == omv1alpha1.CSVFailed
	}
	return false
}

// progressOnly says whether a CSV's status changed only in words: the same phase for the
// same reason, with another message ("1/2 replicas available", then "2/2 updated, 1
// available"), and conditions changed only in their words.
func progressOnly(before, after omv1alpha1.ClusterServiceVersionStatus) bool {
	if before.Phase == "" || before.Phase != after.Phase || before.Reason != after.Reason {
		return false
	}
	before.Message, after.Message = "", ""
	return statuswrite.StatusProgressOnly(before, after, func(s *omv1alpha1.ClusterServiceVersionStatus) *[]metav1.Condition { return &s.Conditions })
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
