package subscription

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func TestConflict(t *testing.T) {
	inst := func(ns, pkg string, targets ...string) installation {
		return installation{namespace: ns, name: "sub", pkg: pkg, targets: targets}
	}
	all := func(ns, pkg string) installation { return installation{namespace: ns, name: "sub", pkg: pkg} }
	withAPI := func(i installation, apis ...string) installation { i.apiServices = apis; return i }
	for _, tc := range []struct {
		name         string
		mine, theirs installation
		reason       string
		says         []string
	}{
		{"another package", all("a", "p"), all("b", "q"), "", nil},
		{"same namespace", inst("a", "p", "a"), inst("a", "p", "x"), ReasonPackageConflict, []string{`package "p" in namespace a`}},
		{"own namespaces side by side", inst("a", "p", "a"), inst("b", "p", "b"), "", nil},
		{"disjoint multi-namespace", inst("a", "p", "x", "y"), inst("b", "p", "b", "z"), "", nil},
		{"theirs watches all", inst("a", "p", "a"), all("b", "p"), ReasonTargetsOverlap, []string{"Subscription b/sub", "watching all namespaces", "only installation"}},
		{"mine would watch all", all("a", "p"), inst("b", "p", "b"), ReasonTargetsOverlap, []string{"Subscription b/sub", "watching b", "for example [a]"}},
		{"both all", all("a", "p"), all("b", "p"), ReasonTargetsOverlap, []string{"watching all namespaces"}},
		{"overlap named", inst("a", "p", "a", "shared"), inst("b", "p", "b", "shared"), ReasonTargetsOverlap, []string{"watching b, shared", "would watch shared too"}},
		{"mine targets their namespace", inst("a", "p", "b"), inst("b", "p", "b"), ReasonTargetsOverlap, []string{"would watch b too"}},
		{"theirs serves an APIService", inst("a", "p", "a"), withAPI(inst("b", "p", "b"), "v1.metrics.example.com"), ReasonAPIServiceExclusive,
			[]string{"Subscription b/sub", "serves v1.metrics.example.com through an APIService", "only installation"}},
		{"mine serves an APIService", withAPI(inst("a", "p", "a"), "v2.metrics.example.com"), inst("b", "p", "b"), ReasonAPIServiceExclusive,
			[]string{"serves v2.metrics.example.com"}},
		{"both serve it, named once", withAPI(inst("a", "p", "a"), "v1.m.io"), withAPI(inst("b", "p", "b"), "v1.m.io"), ReasonAPIServiceExclusive,
			[]string{"serves v1.m.io through"}},
		{"another package serving one", withAPI(inst("a", "p", "a"), "v1.m.io"), withAPI(inst("b", "q", "b"), "v1.m.io"), "", nil},
		{"same namespace still says so", withAPI(inst("a", "p", "a"), "v1.m.io"), inst("a", "p", "a"), ReasonPackageConflict, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := conflict(tc.mine, tc.theirs)
			if reason != tc.reason {
				t.Fatalf("reason %q (%s), want %q", reason, msg, tc.reason)
			}
			for _, w := range tc.says {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q: %s", w, msg)
				}
			}
		})
	}
}

func TestContends(t *testing.T) {
	at := func(sec int64, name string, refused bool) *omv1.Subscription {
		s := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns-" + name, CreationTimestamp: metav1.Unix(sec, 0)}}
		if refused {
			s.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionResolved, Status: metav1.ConditionFalse, Reason: ReasonTargetsOverlap}}
		}
		return s
	}
	failing := func(reason string) *omv1.Subscription {
		s := at(1, "old", false)
		s.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionResolved, Status: metav1.ConditionFalse, Reason: reason}}
		return s
	}
	older, newer := at(1, "old", false), at(2, "new", false)
	olderRefused := at(1, "old", true)
	for _, tc := range []struct {
		name               string
		other, sub         *omv1.Subscription
		otherInst, subInst bool
		want               bool
	}{
		{"an installed one keeps a new one out, whatever their age", newer, older, true, false, true},
		{"a new one does not unseat an installed one", older, newer, false, true, false},
		{"between installed ones the older wins", older, newer, true, true, true},
		{"between installed ones the newer yields", newer, older, true, true, false},
		{"between new ones the older wins", older, newer, false, false, true},
		{"a refused older one keeps no one out", olderRefused, newer, false, false, false},
		{"an older one asking for a version that does not exist keeps no one out", failing(omv1.ReasonVersionNotFound), newer, false, false, false},
		{"an older one whose version cannot be read keeps no one out", failing("InvalidVersion"), newer, false, false, false},
		{"an older unsatisfiable one keeps no one out", failing(omv1.ReasonUnsatisfiable), newer, false, false, false},
		{"an older one whose catalog loads may install in a moment: it wins", failing(omv1.ReasonCatalogNotReady), newer, false, false, true},
		{"same second: the smaller name wins", at(1, "a", false), at(1, "b", false), false, false, true},
	} {
		if got := contends(tc.other, tc.sub, tc.otherInst, tc.subInst); got != tc.want {
			t.Errorf("%s: contends = %v", tc.name, got)
		}
	}
}

// TestIndexes: a pass reads only the Subscriptions of its package (and those naming none,
// whose package only resolving tells), and a change wakes only those refused for a
// conflict; a Subscription missing from an index is one a conflict check never sees.
func TestIndexes(t *testing.T) {
	refused := func(reason string) *omv1.Subscription {
		return &omv1.Subscription{Status: omv1.SubscriptionStatus{Conditions: []metav1.Condition{
			{Type: omv1.ConditionResolved, Status: metav1.ConditionFalse, Reason: reason}}}}
	}
	for _, tc := range []struct {
		name    string
		sub     *omv1.Subscription
		pkg     string
		refused bool
	}{
		{"names its package", &omv1.Subscription{Spec: omv1.SubscriptionSpec{Package: "cache-operator"}}, "cache-operator", false},
		{"names none (startingCSV only)", &omv1.Subscription{Spec: omv1.SubscriptionSpec{StartingCSV: "cache-operator.1.1.0"}}, packageUnnamed, false},
		{"refused: package taken", refused(ReasonPackageConflict), packageUnnamed, true},
		{"refused: targets overlap", refused(ReasonTargetsOverlap), packageUnnamed, true},
		{"refused: exclusive APIService", refused(ReasonAPIServiceExclusive), packageUnnamed, true},
		{"not resolved for another reason", refused("ConstraintsNotSatisfiable"), packageUnnamed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := indexPackage(tc.sub); len(got) != 1 || got[0] != tc.pkg {
				t.Errorf("package index = %v, want [%s]", got, tc.pkg)
			}
			if got := indexRefusedForConflict(tc.sub); (len(got) == 1 && got[0] == "true") != tc.refused {
				t.Errorf("refused index = %v, want refused: %v", got, tc.refused)
			}
		})
	}
}
