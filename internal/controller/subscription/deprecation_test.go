package subscription

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

func TestDeprecations(t *testing.T) {
	v1 := &catalog.Bundle{Package: "p", CSVName: "p.v1", Deprecation: "v1 has a CVE"}
	v2 := &catalog.Bundle{Package: "p", CSVName: "p.v2"}
	pkg := func(pkgMsg, stableMsg string) *catalog.Package {
		return &catalog.Package{Name: "p", DefaultChannel: "stable", Deprecation: pkgMsg,
			Channels: []*catalog.Channel{{Name: "stable", Deprecation: stableMsg}, {Name: "fast"}}}
	}
	for _, tc := range []struct {
		name    string
		p       *catalog.Package
		channel string
		b       *catalog.Bundle
		want    map[string]string // condition type -> message
	}{
		{"nothing deprecated", pkg("", ""), "stable", v2, nil},
		{"no package (not in the catalog)", nil, "stable", v1, nil},
		{"the version it runs", pkg("", ""), "stable", v1, map[string]string{
			omv1.ConditionBundleDeprecated: "v1 has a CVE", omv1.ConditionDeprecated: "v1 has a CVE"}},
		{"its channel, named", pkg("", "stable closes"), "stable", v2, map[string]string{
			omv1.ConditionChannelDeprecated: "stable closes", omv1.ConditionDeprecated: "stable closes"}},
		{"its channel, the default", pkg("", "stable closes"), "", v2, map[string]string{
			omv1.ConditionChannelDeprecated: "stable closes", omv1.ConditionDeprecated: "stable closes"}},
		{"another channel is deprecated, not its own", pkg("", "stable closes"), "fast", v2, nil},
		{"all three, summed up in order", pkg("use q", "stable closes"), "stable", v1, map[string]string{
			omv1.ConditionPackageDeprecated: "use q", omv1.ConditionChannelDeprecated: "stable closes",
			omv1.ConditionBundleDeprecated: "v1 has a CVE", omv1.ConditionDeprecated: "use q; stable closes; v1 has a CVE"}},
		{"a bundle of another package", pkg("", ""), "stable", &catalog.Bundle{Package: "other", CSVName: "o.v1", Deprecation: "x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deprecations(tc.p, tc.channel, tc.b)
			if len(got) != len(tc.want) {
				t.Fatalf("conditions %+v, want %v", got, tc.want)
			}
			for _, c := range got {
				if msg, ok := tc.want[c.Type]; !ok || c.Message != msg || c.Status != "True" || c.Reason != omv1.ConditionDeprecated {
					t.Errorf("condition %+v, want %s: %q", c, c.Type, msg)
				}
			}
		})
	}
}

// TestSetDeprecationsSettles: the same deprecations set again change nothing (not even a
// lastTransitionTime, which would be a status write at every reconcile); one no longer
// said goes, the others stay as they were.
func TestSetDeprecationsSettles(t *testing.T) {
	p := &catalog.Package{Name: "p", DefaultChannel: "stable", Channels: []*catalog.Channel{{Name: "stable", Deprecation: "stable closes"}}}
	v1 := &catalog.Bundle{Package: "p", CSVName: "p.v1", Deprecation: "v1 has a CVE"}
	sub := &omv1.Subscription{}
	setDeprecations(sub, deprecations(p, "stable", v1))
	first := sub.DeepCopy()
	time.Sleep(1100 * time.Millisecond) // conditions' times have a resolution of a second
	setDeprecations(sub, deprecations(p, "stable", v1))
	if !equality.Semantic.DeepEqual(first.Status, sub.Status) {
		t.Fatalf("the same deprecations set again changed the status:\n%+v\n%+v", first.Status.Conditions, sub.Status.Conditions)
	}
	setDeprecations(sub, deprecations(p, "stable", &catalog.Bundle{Package: "p", CSVName: "p.v2"}))
	if meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionBundleDeprecated) != nil {
		t.Errorf("BundleDeprecated stays after an upgrade to a version not deprecated: %+v", sub.Status.Conditions)
	}
	ch := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionChannelDeprecated)
	if was := meta.FindStatusCondition(first.Status.Conditions, omv1.ConditionChannelDeprecated); ch == nil || !ch.LastTransitionTime.Equal(&was.LastTransitionTime) {
		t.Errorf("ChannelDeprecated %+v, want it kept as it was (%+v)", ch, was)
	}
	setDeprecations(sub, nil)
	if len(sub.Status.Conditions) != 0 {
		t.Errorf("conditions left once nothing is deprecated: %+v", sub.Status.Conditions)
	}
}
