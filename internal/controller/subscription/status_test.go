package subscription

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInProgress(t *testing.T) {
	for opstatus, want := range map[string]bool{
		"pending":             true,
		"installing":          true,
		"upgrading":           true,
		"rollingback":         true,
		"deleting":            true,
		"succeeded":           false,
		"failed":              false,
		"blocked":             false, // found by e2e TestCRDPreflightBlocks: 1.2.0 blocked after 1.1.0, same reason
		"rolledback":          false,
		"waitingforapproval":  false,
		"upgradeheld":         false,
		"resolve failed":      false,
		"waiting for catalog": false, // a wait outside the installation: shown at once
		"deleted":             false,
		"":                    false,
	} {
		if got := inProgress(opstatus); got != want {
			t.Errorf("inProgress(%q) = %v, want %v", opstatus, got, want)
		}
	}
}

func TestStepsOnly(t *testing.T) {
	c := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name          string
		before, after []metav1.Condition
		want          bool
	}{
		{"new words", []metav1.Condition{c("Install", "waiting for CRD x")}, []metav1.Condition{c("Install", "waiting for deployment y")}, true},
		{"to the CRDs' wait", []metav1.Condition{c("Install", "x")}, []metav1.Condition{c("WaitingForCRDs", "y")}, true},
		{"back to the revision", []metav1.Condition{c("WaitingForCRDs", "y")}, []metav1.Condition{c("Upgrade", "z")}, true},
		{"a missing native API is news", []metav1.Condition{c("Install", "x")}, []metav1.Condition{c("WaitingForNativeAPIs", "x")}, false},
		{"a bundle the catalog cannot give is news", []metav1.Condition{c("WaitingForCRDs", "x")}, []metav1.Condition{c("BundleUnavailable", "x")}, false},
		{"leaving a reason from outside is news too", []metav1.Condition{c("BundleUnavailable", "x")}, []metav1.Condition{c("Install", "x")}, false},
		{"another count", []metav1.Condition{c("Install", "x")}, nil, false},
	} {
		if got := stepsOnly(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: stepsOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}
