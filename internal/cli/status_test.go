package cli

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestPrintStatus: `status` says what runs, what is wanted when that differs, and says
// plainly when nothing runs yet, naming the package asked for.
func TestPrintStatus(t *testing.T) {
	sub := func(pkg, installed, version, current string) *omv1.Subscription {
		s := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}, Spec: omv1.SubscriptionSpec{Package: "x-operator"}}
		s.Status.Package, s.Status.InstalledCSV, s.Status.InstalledVersion, s.Status.CurrentCSV = pkg, installed, version, current
		return s
	}
	withDeps := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}
	withDeps.Spec.Dependencies = []omv1.ResolvedDependency{
		{Package: "cache-operator", CSVName: "cache-operator.v1.2.0", Reason: "required by x.v1: olm.package cache-operator >=1.1.0"},
		{Package: "db-operator", CSVName: "db-operator.v2.0.0", ServedFrom: "dbs/db", Reason: "required by x.v1: olm.gvk Database"},
	}
	waiting := sub("x-operator", "", "", "x.v1")
	waiting.Status.InstallPlanRef = &corev1.ObjectReference{Kind: "InstallPlan", Namespace: "ns", Name: "install-0123456789"}
	for _, tc := range []struct {
		name      string
		sub       *omv1.Subscription
		bp        *omv1.Blueprint
		want, not []string
	}{
		{"nothing installed, not resolved", sub("", "", "", ""), nil, []string{"Package: x-operator", "Installed: nothing yet"}, []string{"()", "Wanted:"}},
		{"waits in an InstallPlan", waiting, nil, []string{"Installed: nothing yet Wanted: x.v1", "InstallPlan: install-0123456789"}, nil},
		{"runs what it wants", sub("x-operator", "x.v1", "1", "x.v1"), nil, []string{"Installed: 1 (x.v1) Status"}, []string{"Wanted:"}},
		{"held below what it wants", sub("x-operator", "x.v1", "1", "x.v2"), nil, []string{"Installed: 1 (x.v1) Wanted: x.v2"}, []string{"DEPENDS ON", "InstallPlan:"}},
		{"its dependencies, and who installs each", sub("x-operator", "x.v1", "1", "x.v1"), withDeps, []string{
			"DEPENDS ON CSV INSTALLED BY WHY",
			"cache-operator cache-operator.v1.2.0 its package's Subscription in ns required by x.v1: olm.package cache-operator >=1.1.0",
			"db-operator db-operator.v2.0.0 dbs/db required by x.v1: olm.gvk Database"}, nil},
	} {
		var buf bytes.Buffer
		tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
		printStatus(tw, statusDoc{Subscription: tc.sub, Blueprint: tc.bp})
		_ = tw.Flush()
		out := strings.Join(strings.Fields(buf.String()), " ") // the columns' widths aside
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: lacks %q:\n%s", tc.name, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("%s: has %q:\n%s", tc.name, n, out)
			}
		}
	}
}
