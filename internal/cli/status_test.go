package cli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/installevents"
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
	windowed := sub("x-operator", "x.v1", "1", "x.v2")
	windowed.Spec.UpgradeWindows = []omv1.UpgradeWindow{{Schedule: "0 0 1 1 *", Duration: metav1.Duration{Duration: time.Minute}, TimeZone: "UTC"}}
	paused := sub("x-operator", "x.v1", "1", "x.v1")
	paused.Spec.Paused = true
	failing := sub("", "", "", "x.v1")
	failing.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: omv1.ReasonReconcileError, Message: "creating Blueprint ns/x: failed calling webhook"}}
	uninstalled := sub("x-operator", "", "", "x.v1")
	uninstalled.Status.Opstatus = "deleted"
	next := time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for _, tc := range []struct {
		name      string
		sub       *omv1.Subscription
		bp        *omv1.Blueprint
		want, not []string
	}{
		{"paused", paused, nil, []string{"Paused: yes: no version change, config change or drift repair until `operator-manager resume x`"}, nil},
		{"not paused", sub("x-operator", "x.v1", "1", "x.v1"), nil, nil, []string{"Paused:"}},
		{"its upgrade windows", windowed, nil, []string{`Upgrade windows: "0 0 1 1 *" for 1m0s (UTC); closed, the next upgrade window opens at ` + next}, nil},
		{"nothing installed, not resolved", sub("", "", "", ""), nil, []string{"Package: x-operator", "Installed: nothing yet"}, []string{"()", "Wanted:"}},
		{"no Blueprint to mirror: its state", failing, nil, []string{"Installed: nothing yet Wanted: x.v1 Status: failed"}, nil},
		{"waits in an InstallPlan", waiting, nil, []string{"Installed: nothing yet Wanted: x.v1", "InstallPlan: install-0123456789"}, nil},
		{"uninstalled: nothing, not yet, and nothing wanted", uninstalled, nil, []string{"Installed: nothing: uninstalled (spec.option: delete) Status: deleted"}, []string{"Wanted:", "nothing yet"}},
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

func TestDescribeWindows(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC) // a Monday
	weekdays := omv1.UpgradeWindow{Schedule: "0 2 * * 1-5", Duration: metav1.Duration{Duration: 2 * time.Hour}}
	for _, tc := range []struct {
		windows []omv1.UpgradeWindow
		want    string
	}{
		{[]omv1.UpgradeWindow{weekdays}, `"0 2 * * 1-5" for 2h0m0s (UTC); open until 2026-12-07T04:00:00Z`},
		{[]omv1.UpgradeWindow{{Schedule: "@weekly", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"}},
			`"@weekly" for 1h0m0s (Europe/Berlin); closed, the next upgrade window opens at 2026-12-12T23:00:00Z`},
		{[]omv1.UpgradeWindow{weekdays, {Schedule: "daily", Duration: metav1.Duration{Duration: time.Hour}}},
			`"0 2 * * 1-5" for 2h0m0s (UTC), "daily" for 1h0m0s (UTC); cannot be read: spec.upgradeWindows[1].schedule "daily": expected exactly 5 fields`},
	} {
		if got := describeWindows(tc.windows, now); !strings.HasPrefix(got, tc.want) {
			t.Errorf("describeWindows = %q, want %q", got, tc.want)
		}
	}
}

func TestParseWindows(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []omv1.UpgradeWindow
		err  string
	}{
		{in: []string{"0 2 * * 1-5 for 2h"}, want: []omv1.UpgradeWindow{{Schedule: "0 2 * * 1-5", Duration: metav1.Duration{Duration: 2 * time.Hour}}}},
		{in: []string{"0 2 * * 1-5 for 2h in Europe/Berlin", "@weekly for 90m"}, want: []omv1.UpgradeWindow{
			{Schedule: "0 2 * * 1-5", Duration: metav1.Duration{Duration: 2 * time.Hour}, TimeZone: "Europe/Berlin"},
			{Schedule: "@weekly", Duration: metav1.Duration{Duration: 90 * time.Minute}}}},
		{in: []string{"none"}, want: []omv1.UpgradeWindow{}},
		{in: []string{"0 2 * * 1-5"}, err: `--upgrade-window "0 2 * * 1-5": want "SCHEDULE for DURATION [in TIME-ZONE]"`},
		{in: []string{"0 2 * * 1-5 for two hours"}, err: `duration "two hours"`},
		{in: []string{"0 2 * * for 2h"}, err: `--upgrade-window "0 2 * * for 2h": schedule "0 2 * *": expected exactly 5 fields`},
		{in: []string{"@daily for 1h in Mars/Olympus"}, err: `timeZone "Mars/Olympus": not a time zone`},
		{in: []string{"0 0 30 2 * for 1h"}, err: `--upgrade-window "0 0 30 2 * for 1h": the schedule never fires`},
	} {
		got, err := parseWindows(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseWindows(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseWindows(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestDescribeWatches(t *testing.T) {
	for _, tc := range []struct {
		w    watches
		want string
	}{
		{watches{AllNamespaces: true}, "all namespaces"},
		{watches{Namespaces: []string{"a", "b"}, OperatorGroup: "og"}, "a, b (from OperatorGroup og)"},
		{watches{Namespaces: []string{"ns"}}, "ns"},
		{watches{Namespaces: []string{"a", "gone"}, Missing: []string{"gone"}}, "a, gone (does not exist)"},
		{watches{Namespaces: []string{"gone"}, Missing: []string{"gone"}, OperatorGroup: "og"}, "gone (does not exist) (from OperatorGroup og)"},
		{watches{Error: "OperatorGroup ns/og selects no namespace"}, "cannot tell: OperatorGroup ns/og selects no namespace"},
	} {
		if got := describeWatches(&tc.w); got != tc.want {
			t.Errorf("describeWatches(%+v) = %q, want %q", tc.w, got, tc.want)
		}
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	s := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}
	printStatus(tw, statusDoc{Subscription: s, Watches: &watches{Namespaces: []string{"a"}, OperatorGroup: "og"}})
	_ = tw.Flush()
	if !strings.Contains(strings.Join(strings.Fields(buf.String()), " "), "Watches: a (from OperatorGroup og)") {
		t.Errorf("status lacks what it watches:\n%s", buf.String())
	}
}

// TestPrintEvents: `status` ends with the newest events, the latest on the last line, a
// series counted, and says when there are more, none, or they cannot be read.
func TestPrintEvents(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	newest := []installevents.Event{
		{Type: "Warning", Reason: "RolledBack", Message: "Rolled back to cache-operator.v1.2.0", Object: "Blueprint/cache", Time: now.Add(-30 * time.Second), Count: 1},
		{Type: "Warning", Reason: "HealthCheckFailed", Message: "deployment cache-operator: 0 of 1 available", Object: "ClusterServiceVersion/cache-operator.v1.3.0", Time: now.Add(-2 * time.Minute), Count: 3},
	}
	for _, tc := range []struct {
		name      string
		ev        *eventsDoc
		want, not []string
	}{
		{"not asked for", nil, nil, []string{"Events", "LAST SEEN"}},
		{"oldest of the newest first, a series counted", &eventsDoc{Newest: newest, Total: 2}, []string{
			"LAST SEEN TYPE REASON OBJECT MESSAGE " +
				"2m ago (x3) Warning HealthCheckFailed ClusterServiceVersion/cache-operator.v1.3.0 deployment cache-operator: 0 of 1 available " +
				"30s ago Warning RolledBack Blueprint/cache Rolled back to cache-operator.v1.2.0"}, []string{"newest 2"}},
		{"more kept than shown", &eventsDoc{Newest: newest, Total: 7}, []string{"(the newest 2 of 7 events; --events 7 shows all)"}, nil},
		{"none", &eventsDoc{Newest: []installevents.Event{}}, []string{"Events: none kept"}, []string{"LAST SEEN"}},
		{"not readable", &eventsDoc{Error: `events.events.k8s.io is forbidden`}, []string{"Events: cannot be read: events.events.k8s.io is forbidden"}, []string{"LAST SEEN"}},
	} {
		var buf bytes.Buffer
		tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
		printEvents(tw, tc.ev, now)
		_ = tw.Flush()
		out := strings.Join(strings.Fields(buf.String()), " ")
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: want %q in\n%s", tc.name, w, buf.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("%s: %q should not be in\n%s", tc.name, n, buf.String())
			}
		}
	}
}
