package resolve

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// TestBreaks: a version of a dependency that would take from its dependents what they
// were resolved against is named, requirement by requirement; one that keeps it is not.
func TestBreaks(t *testing.T) {
	cacheGVK := catalog.CRDRef{Group: "cache.example.com", Version: "v1", Kind: "Cache"}
	cache := func(v string, owns bool, labels ...string) *catalog.Bundle {
		b := &catalog.Bundle{Package: "cache-operator", CSVName: "cache-operator.v" + v, Version: semver.MustParse(v)}
		if owns {
			b.OwnedCRDs = []catalog.CRDRef{cacheGVK}
		}
		for _, l := range labels {
			raw, _ := json.Marshal(map[string]string{"label": l})
			b.Properties = append(b.Properties, catalog.Property{Type: catalog.PropLabel, Value: raw})
		}
		return b
	}
	rng := func(s string) catalog.VersionRange {
		r, err := catalog.ParseVersionRange(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	backup := &catalog.Bundle{Package: "backup-operator", CSVName: "backup-operator.v0.2.0",
		Dependencies: []catalog.Dependency{{Type: catalog.DependencyPackage, Package: "cache-operator", Versions: rng(">=1.1.0 <1.3.0")}}}
	byGVK := &catalog.Bundle{Package: "reports", CSVName: "reports.v1",
		Dependencies: []catalog.Dependency{{Type: catalog.DependencyGVK, GVK: cacheGVK.GVK()}}}
	byCRD := &catalog.Bundle{Package: "audit", CSVName: "audit.v1", RequiredCRDs: []catalog.CRDRef{cacheGVK}}
	byLabel := &catalog.Bundle{Package: "metrics", CSVName: "metrics.v1",
		Dependencies: []catalog.Dependency{{Type: catalog.DependencyLabel, Label: "fast"}}}
	other := &catalog.Bundle{Package: "x", CSVName: "x.v1",
		Dependencies: []catalog.Dependency{{Type: catalog.DependencyPackage, Package: "other-operator", Versions: rng("<1.0.0")}}}

	for _, tc := range []struct {
		name          string
		next, current *catalog.Bundle
		dependents    []Dependent
		want          []string
	}{
		{"in range", cache("1.2.0", true), cache("1.1.0", true), []Dependent{{"backup", backup}}, nil},
		{"out of range", cache("1.3.0", true), cache("1.2.0", true), []Dependent{{"backup", backup}},
			[]string{"backup (backup-operator.v0.2.0) requires olm.package cache-operator >=1.1.0 <1.3.0, which cache-operator.v1.3.0 is outside"}},
		{"below the range", cache("1.0.0", true), cache("1.2.0", true), []Dependent{{"team/backup", backup}},
			[]string{"team/backup (backup-operator.v0.2.0) requires olm.package cache-operator >=1.1.0 <1.3.0, which cache-operator.v1.0.0 is outside"}},
		{"another package's range", cache("9.0.0", true), nil, []Dependent{{"x", other}}, nil},
		{"an API it served, gone", cache("2.0.0", false), cache("1.2.0", true), []Dependent{{"reports", byGVK}, {"audit", byCRD}}, []string{
			"reports (reports.v1) requires olm.gvk Cache.v1.cache.example.com, which cache-operator.v2.0.0 does not provide",
			"audit (audit.v1) requires CRD Cache.v1.cache.example.com, which cache-operator.v2.0.0 does not provide"}},
		{"an API it never served (another operator does)", cache("2.0.0", false), cache("1.2.0", false), []Dependent{{"reports", byGVK}, {"audit", byCRD}}, nil},
		{"the API kept", cache("2.0.0", true), cache("1.2.0", true), []Dependent{{"reports", byGVK}}, nil},
		{"a label it had, gone", cache("2.0.0", true), cache("1.2.0", true, "fast"), []Dependent{{"metrics", byLabel}},
			[]string{"metrics (metrics.v1) requires olm.label \"fast\", which cache-operator.v2.0.0 does not meet"}},
		{"a label kept", cache("2.0.0", true, "fast"), cache("1.2.0", true, "fast"), []Dependent{{"metrics", byLabel}}, nil},
		{"what runs unknown: only ranges are checked", cache("2.0.0", false), nil, []Dependent{{"reports", byGVK}, {"backup", backup}},
			[]string{"backup (backup-operator.v0.2.0) requires olm.package cache-operator >=1.1.0 <1.3.0, which cache-operator.v2.0.0 is outside"}},
		{"a dependent whose bundle is unknown", cache("1.3.0", true), nil, []Dependent{{"backup", nil}}, nil},
	} {
		if got := Breaks(tc.next, tc.current, tc.dependents); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
