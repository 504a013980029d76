package resolve

import (
	"testing"

	"github.com/blang/semver/v4"
)

func TestFollowing(t *testing.T) {
	for in, want := range map[Intent]bool{
		{StartingCSV: "cache-operator.1.1.0"}:                       false,
		{Package: "cache-operator"}:                                 true,
		{Package: "cache-operator", Channel: "stable"}:              true,
		{Package: "cache-operator", Version: "1.1.0"}:               false,
		{Package: "cache-operator", Version: ">=1.0.0 <1.3.0"}:      true,
		{Package: "cache-operator", Version: "v1.1.0", Channel: ""}: false,
	} {
		if got := Following(in); got != want {
			t.Errorf("Following(%+v) = %v, want %v", in, got, want)
		}
	}
}

func TestNextInChannel(t *testing.T) {
	cat := load(t, "../../samples/catalog")
	for _, tc := range []struct {
		in      Intent
		current string
		want    string
	}{
		{Intent{Package: "cache-operator"}, "1.1.0", "cache-operator.v1.2.0"}, // one edge at a time, each through the health gate
		{Intent{Package: "cache-operator"}, "1.2.0", "cache-operator.v1.3.0"},
		{Intent{Package: "cache-operator"}, "1.3.0", ""},                            // at the head
		{Intent{Package: "cache-operator", Version: ">=1.0.0 <1.3.0"}, "1.2.0", ""}, // the range stops it
		{Intent{Package: "backup-operator", Channel: "stable"}, "0.1.0", "backup-operator.v0.2.0"},
	} {
		v := semver.MustParse(tc.current)
		csv := tc.in.Package + ".v" + tc.current
		got := NextInChannel(cat, tc.in, csv, v)
		name := ""
		if got != nil {
			name = got.CSVName
		}
		if name != tc.want {
			t.Errorf("NextInChannel(%+v from %s) = %q, want %q", tc.in, tc.current, name, tc.want)
		}
	}
}
