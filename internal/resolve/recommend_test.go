package resolve

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

func passedOver(r *Recommendation) []string {
	var out []string
	for _, p := range r.PassedOver {
		out = append(out, p.CSVName+" "+p.Reason)
	}
	return out
}

func TestRecommend(t *testing.T) {
	cats := testCatalogs(t)
	from := func(v string) *Installed { in := installed("hop", v, "main"); return &in }
	refuse200 := func(b *catalog.Bundle) error {
		if b.CSVName == "hop.v2.0.0" {
			return errors.New("CRD preflight: hops.hop.example.com would drop stored version v1")
		}
		return nil
	}
	cases := []struct {
		name    string
		pkg     string
		channel string
		from    *Installed
		kube    string
		check   func(*catalog.Bundle) error
		want    string // CSV, or "" for staying on the installed version
		path    []string
		passed  []string
		wantErr string
	}{
		{name: "fresh install takes the head", pkg: "hop", want: "hop.v2.0.0"},
		{name: "fresh install on an old cluster", pkg: "hop", kube: "1.28.0", want: "hop.v1.5.0",
			passed: []string{"hop.v2.0.0 needs Kubernetes 1.30.0 or newer, the cluster runs 1.28.0"}},
		{name: "check refuses the head", pkg: "hop", check: refuse200, want: "hop.v1.5.0",
			passed: []string{"hop.v2.0.0 fails the check: CRD preflight: hops.hop.example.com would drop stored version v1"}},
		{name: "upgrade through replaces and skipRange", pkg: "hop", from: from("1.0.0"), want: "hop.v2.0.0",
			path: []string{"hop.v1.1.0", "hop.v2.0.0"}},
		{name: "upgrade passes over unreachable, too new and unresolvable versions", pkg: "hop", from: from("1.0.0"), kube: "1.28.0",
			want: "hop.v1.1.0", path: []string{"hop.v1.1.0"}, passed: []string{
				"hop.v2.0.0 needs Kubernetes 1.30.0 or newer, the cluster runs 1.28.0",
				"hop.v1.5.0 is not reachable from installed hop.v1.0.0 by the upgrade edges of channel stable",
				"hop.v1.4.0 has dependencies that cannot be met: hop.v1.4.0 requires olm.package nowhere >=1.0.0, " +
					"but no catalog has package nowhere. Catalogs searched: main (priority 0).",
			}},
		{name: "upgrade from a pruned version by skipRange", pkg: "hop", from: from("1.2.0"), kube: "1.28.0",
			want: "hop.v1.5.0", path: []string{"hop.v1.5.0"}, passed: []string{
				"hop.v2.0.0 needs Kubernetes 1.30.0 or newer, the cluster runs 1.28.0",
			}},
		{name: "already at the head", pkg: "hop", from: from("2.0.0"), want: ""},
		{name: "no upgrade passes", pkg: "hop", from: from("1.4.0"), kube: "1.28.0", want: "", passed: []string{
			"hop.v2.0.0 needs Kubernetes 1.30.0 or newer, the cluster runs 1.28.0",
			"hop.v1.5.0 is not reachable from installed hop.v1.4.0 by the upgrade edges of channel stable",
		}},
		{name: "non-default channel", pkg: "db", channel: "fast", kube: "1.28.0", want: "db.v1.5.0"},
		{name: "nothing installable", pkg: "stuck", kube: "1.30.0",
			wantErr: `no version of package "stuck" in channel "stable" of catalog main can be installed on this cluster: ` +
				"stuck.v2.0.0 needs Kubernetes 1.40.0 or newer, the cluster runs 1.30.0; " +
				"stuck.v1.0.0 has dependencies that cannot be met: stuck.v1.0.0 requires olm.package nowhere >=1.0.0, " +
				"but no catalog has package nowhere. Catalogs searched: main (priority 0)."},
		{name: "unknown channel", pkg: "hop", channel: "beta",
			wantErr: `package "hop" in catalog main has no channel "beta"; its channels: stable (default)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := RecommendRequest{Package: tc.pkg, Channel: tc.channel, Catalogs: cats[:1], From: tc.from, Check: tc.check}
			if tc.kube != "" {
				req.KubeVersion = semver.MustParse(tc.kube)
			}
			rec, err := Recommend(req)
			if tc.wantErr != "" {
				var re *Error
				if !errors.As(err, &re) || re.Message != tc.wantErr {
					t.Fatalf("got %v, %v\nwant %s", rec, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if rec.Bundle != nil {
				got = rec.Bundle.CSVName
				if rec.Plan == nil || rec.Plan.Root != rec.Bundle {
					t.Errorf("plan %v is not for %s", rec.Plan, got)
				}
			}
			if got != tc.want || !slices.Equal(rec.Path, tc.path) || !slices.Equal(passedOver(rec), tc.passed) {
				t.Errorf("got %q path %v passed over:\n%s\nwant %q path %v passed over:\n%s", got, rec.Path,
					strings.Join(passedOver(rec), "\n"), tc.want, tc.path, strings.Join(tc.passed, "\n"))
			}
		})
	}
}

func TestRecommendSamples(t *testing.T) {
	cat := load(t, "../../samples/catalog")
	cats := []CatalogRef{{"default", 0, cat}}
	kube := semver.MustParse("1.37.2")

	rec, err := Recommend(RecommendRequest{Package: "backup-operator", Catalogs: cats, KubeVersion: kube})
	if err != nil || rec.Bundle.CSVName != "backup-operator.v0.2.0" || len(rec.Plan.Install) != 1 || rec.Plan.Install[0].CSVName != "cache-operator.v1.2.0" {
		t.Fatalf("backup-operator: %+v, %v", rec, err)
	}

	// The broken 1.3.0 is the head; a preflight that knows it is refused leaves 1.2.0.
	in := installed("cache-operator", "1.1.0", "default")
	broken := func(b *catalog.Bundle) error {
		if b.Version.Equals(semver.MustParse("1.3.0")) {
			return fmt.Errorf("%s failed its health check here before", b.CSVName)
		}
		return nil
	}
	rec, err = Recommend(RecommendRequest{Package: "cache-operator", Catalogs: cats, KubeVersion: kube, From: &in, Check: broken})
	if err != nil || rec.Bundle.CSVName != "cache-operator.v1.2.0" || !slices.Equal(rec.Path, []string{"cache-operator.v1.2.0"}) ||
		!slices.Equal(passedOver(rec), []string{"cache-operator.v1.3.0 fails the check: cache-operator.v1.3.0 failed its health check here before"}) {
		t.Fatalf("cache-operator: %+v, %v", rec, err)
	}
	rec, err = Recommend(RecommendRequest{Package: "cache-operator", Catalogs: cats, From: &in})
	if err != nil || rec.Bundle.CSVName != "cache-operator.v1.3.0" || !slices.Equal(rec.Path, []string{"cache-operator.v1.2.0", "cache-operator.v1.3.0"}) {
		t.Fatalf("cache-operator upgrade: %+v, %v", rec, err)
	}

	var re *Error
	if _, err := Recommend(RecommendRequest{Package: "cache", Catalogs: cats}); !errors.As(err, &re) || re.Reason != ReasonPackageNotFound {
		t.Fatalf("unknown package: %v", err)
	}
}
