package subscription

import (
	"testing"

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
