package spelling

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"same", "same", 0},
		{"cache-operatr", "cache-operator", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestTypo(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"cache-operatr", "cache-operator", true},
		{"etcd-operatro", "etcd-operator", true},
		{"same", "same", false}, // not a typo: the name itself
		{"ab", "ac", false},     // one edit in two letters: too short to tell
		{"prometheus", "promethues", true},
		{"strimzi-kafka-operator", "amq-streams", false},
	} {
		if got := Typo(tc.a, tc.b); got != tc.want {
			t.Errorf("Typo(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSimilar(t *testing.T) {
	names := []string{"backup-operator", "cache-operator", "guard-operator"}
	for _, tc := range []struct {
		name, want string
	}{
		{"cache", "; similar: cache-operator"},
		{"cache-operatr", "; similar: cache-operator"},
		{"operator", "; similar: backup-operator, cache-operator, guard-operator"},
		{"cache-operator", ""}, // itself is not a suggestion
		{"prometheus", ""},
		{"", ""},
	} {
		if got := Suggest(tc.name, names); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
