package csv

import (
	"testing"

	"github.com/blang/semver/v4"
)

func TestConversionHolder(t *testing.T) {
	peer := func(ns, version string) conversionPeer {
		return conversionPeer{Namespace: ns, Name: "guard-operator.v" + version, Service: "guard-operator-service", Version: semver.MustParse(version), Proven: true}
	}
	unproven := func(ns, version string) conversionPeer {
		p := peer(ns, version)
		p.Proven = false
		return p
	}
	for _, tc := range []struct {
		name    string
		peers   []conversionPeer
		current string
		want    string // namespace of the holder, "" for none
	}{
		{name: "no one serves it", want: ""},
		{name: "alone", peers: []conversionPeer{peer("a", "1.0.0")}, want: "a"},
		{name: "the newest version converts, whatever the CRD names",
			peers: []conversionPeer{peer("a", "1.0.0"), peer("b", "1.1.0")}, current: "a/guard-operator-service", want: "b"},
		{name: "a pre-release is older than its release",
			peers: []conversionPeer{peer("a", "1.1.0-rc.1"), peer("b", "1.0.0"), peer("c", "1.1.0")}, want: "c"},
		{name: "among equal versions, the one the CRD names keeps it",
			peers: []conversionPeer{peer("a", "1.1.0"), peer("b", "1.1.0")}, current: "b/guard-operator-service", want: "b"},
		{name: "among equal versions named by none, the first namespace",
			peers: []conversionPeer{peer("c", "1.1.0"), peer("b", "1.1.0")}, current: "gone/guard-operator-service", want: "b"},
		{name: "a newer installation not yet past its health gate waits for it",
			peers: []conversionPeer{peer("a", "1.0.0"), unproven("b", "1.1.0")}, current: "a/guard-operator-service", want: "a"},
		{name: "the holder's own upgrade keeps it through the gate (the same Service)",
			peers: []conversionPeer{peer("a", "1.0.0"), unproven("b", "1.2.0")}, current: "b/guard-operator-service", want: "b"},
		{name: "the holder's upgrade to an older version gives it to the newest proven",
			peers: []conversionPeer{peer("a", "1.1.0"), unproven("b", "1.0.0")}, current: "b/guard-operator-service", want: "a"},
		{name: "none proven (all installing at once): the newest",
			peers: []conversionPeer{unproven("a", "1.0.0"), unproven("b", "1.1.0")}, want: "b"},
		{name: "a Service of the same name in another namespace is not the one named",
			peers: []conversionPeer{peer("a", "1.1.0"), {Namespace: "b", Name: "x", Service: "other-service", Version: semver.MustParse("1.1.0")}}, current: "b/guard-operator-service", want: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := conversionHolder(tc.peers, tc.current)
			if (tc.want != "") != ok || got.Namespace != tc.want {
				t.Errorf("holder = %q (ok %v), want %q", got.Namespace, ok, tc.want)
			}
		})
	}
}
