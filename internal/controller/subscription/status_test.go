package subscription

import "testing"

func TestInProgress(t *testing.T) {
	for opstatus, want := range map[string]bool{
		"pending":            true,
		"installing":         true,
		"upgrading":          true,
		"rollingback":        true,
		"deleting":           true,
		"succeeded":          false,
		"failed":             false,
		"blocked":            false, // found by e2e TestCRDPreflightBlocks: 1.2.0 blocked after 1.1.0, same reason
		"rolledback":         false,
		"waitingforapproval": false,
		"upgradeheld":        false,
		"resolve failed":     false,
		"deleted":            false,
		"":                   false,
	} {
		if got := inProgress(opstatus); got != want {
			t.Errorf("inProgress(%q) = %v, want %v", opstatus, got, want)
		}
	}
}
