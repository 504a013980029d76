package resolve

import (
	"testing"

	"github.com/blang/semver/v4"
)

// TestSatisfies: what runs is what the intent asks for in each of its forms.
func TestSatisfies(t *testing.T) {
	v := semver.MustParse("1.1.0")
	for _, tc := range []struct {
		name string
		in   Intent
		want bool
	}{
		{"startingCSV, the CSV's name", Intent{StartingCSV: "cache-operator.v1.1.0"}, true},
		{"startingCSV, package.version", Intent{StartingCSV: "cache-operator.1.1.0"}, true},
		{"startingCSV, another version", Intent{StartingCSV: "cache-operator.1.2.0"}, false},
		{"exact version", Intent{Package: "cache-operator", Version: "1.1.0"}, true},
		{"exact version, with a v", Intent{Package: "cache-operator", Version: "v1.1.0"}, true},
		{"another exact version", Intent{Package: "cache-operator", Version: "1.2.0"}, false},
		{"in range", Intent{Package: "cache-operator", Version: ">=1.0.0 <1.2.0"}, true},
		{"out of range", Intent{Package: "cache-operator", Version: ">=1.2.0"}, false},
		{"a channel", Intent{Package: "cache-operator", Channel: "stable"}, true},
		{"another package", Intent{Package: "backup-operator"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Satisfies(tc.in, "cache-operator", "cache-operator.v1.1.0", v); got != tc.want {
				t.Errorf("Satisfies = %v, want %v", got, tc.want)
			}
		})
	}
}
