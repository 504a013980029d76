package csv

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// TestPhaseEvent: a CSV a Blueprint carries out tells failures, recoveries and being
// replaced, not the steps of its gate, which the Blueprint's events tell; a CSV made by
// hand tells every phase.
func TestPhaseEvent(t *testing.T) {
	const (
		none        = omv1alpha1.CSVPhase("")
		pending     = omv1alpha1.CSVPending
		installing  = omv1alpha1.CSVInstalling
		succeeded   = omv1alpha1.CSVSucceeded
		failed      = omv1alpha1.CSVFailed
		replacing   = omv1alpha1.CSVReplacing
		installRdy  = omv1alpha1.CSVInstallReady
		byBlueprint = true
		byHand      = false
	)
	tests := []struct {
		from, to omv1alpha1.CSVPhase
		by       bool
		want     bool
	}{
		{none, pending, byBlueprint, false},
		{pending, installRdy, byBlueprint, false},
		{none, installing, byBlueprint, false},
		{installing, succeeded, byBlueprint, false}, // the Blueprint's Succeeded tells it
		{installing, failed, byBlueprint, true},
		{succeeded, failed, byBlueprint, true},
		{failed, succeeded, byBlueprint, true}, // recovered after the gate
		{succeeded, replacing, byBlueprint, true},
		{none, installing, byHand, true},
		{installing, succeeded, byHand, true},
	}
	for _, tc := range tests {
		if got := phaseEvent(tc.from, tc.to, tc.by); got != tc.want {
			t.Errorf("phaseEvent(%q -> %q, byBlueprint %v) = %v, want %v", tc.from, tc.to, tc.by, got, tc.want)
		}
	}
}

// TestProgressOnly: only a new message under the same phase and reason (and condition
// words) is progress; a new phase, reason or any other field is written at once.
func TestProgressOnly(t *testing.T) {
	base := func() omv1alpha1.ClusterServiceVersionStatus {
		return omv1alpha1.ClusterServiceVersionStatus{Phase: omv1alpha1.CSVInstalling, Reason: ReasonInstalling, Message: "0/1 available",
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonInstalling, Message: "0/1 available"}}}
	}
	tests := []struct {
		name   string
		change func(*omv1alpha1.ClusterServiceVersionStatus)
		want   bool
	}{
		{"new message", func(s *omv1alpha1.ClusterServiceVersionStatus) {
			s.Message, s.Conditions[0].Message = "1/1 updated, 0 available", "1/1 updated, 0 available"
		}, true},
		{"new phase", func(s *omv1alpha1.ClusterServiceVersionStatus) { s.Phase = omv1alpha1.CSVSucceeded }, false},
		{"new reason", func(s *omv1alpha1.ClusterServiceVersionStatus) { s.Reason = "Other" }, false},
		{"condition turns", func(s *omv1alpha1.ClusterServiceVersionStatus) { s.Conditions[0].Status = metav1.ConditionTrue }, false},
		{"another field", func(s *omv1alpha1.ClusterServiceVersionStatus) { s.RenderHash = "sha256:1" }, false},
	}
	for _, tc := range tests {
		after := base()
		tc.change(&after)
		if got := progressOnly(base(), after); got != tc.want {
			t.Errorf("%s: progressOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
	if progressOnly(omv1alpha1.ClusterServiceVersionStatus{}, base()) {
		t.Error("a first phase is not progress")
	}
}
