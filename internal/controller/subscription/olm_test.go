package subscription

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// TestIntentOfOLMStartingCSV: startingCSV pins a Subscription written in the original's
// words, and only starts one written in OLM's (spec.name): once something is installed,
// such a Subscription follows its channel.
func TestIntentOfOLMStartingCSV(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      omv1.SubscriptionSpec
		installed string
		want      resolve.Intent
		following bool
	}{
		{"original: pins, nothing installed", omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2"}, "",
			resolve.Intent{StartingCSV: "prometheus.0.22.2"}, false},
		{"original: still pins once installed", omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2"}, "prometheusoperator.0.22.2",
			resolve.Intent{StartingCSV: "prometheus.0.22.2"}, false},
		{"package and startingCSV: pins", omv1.SubscriptionSpec{Package: "etcd", StartingCSV: "etcdoperator.v0.9.2"}, "etcdoperator.v0.9.2",
			resolve.Intent{Package: "etcd", StartingCSV: "etcdoperator.v0.9.2"}, false},
		{"OLM: the first install starts at startingCSV", omv1.SubscriptionSpec{Name: "etcd", Channel: "alpha", StartingCSV: "etcdoperator.v0.9.2"}, "",
			resolve.Intent{Package: "etcd", Channel: "alpha", StartingCSV: "etcdoperator.v0.9.2"}, false},
		{"OLM: installed, the channel is followed", omv1.SubscriptionSpec{Name: "etcd", Channel: "alpha", StartingCSV: "etcdoperator.v0.9.2"}, "etcdoperator.v0.9.2",
			resolve.Intent{Package: "etcd", Channel: "alpha"}, true},
		{"OLM without startingCSV: follows", omv1.SubscriptionSpec{Name: "etcd"}, "",
			resolve.Intent{Package: "etcd"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &omv1.Subscription{Spec: tc.spec, Status: omv1.SubscriptionStatus{InstalledCSV: tc.installed}}
			got := intentOf(sub)
			if got != tc.want || resolve.Following(got) != tc.following {
				t.Errorf("intent %+v following %v, want %+v following %v", got, resolve.Following(got), tc.want, tc.following)
			}
		})
	}
}

// TestCatalogAllowed: a Subscription may name a CatalogSource of its own namespace or of
// the global catalog namespace, not of another tenant's.
func TestCatalogAllowed(t *testing.T) {
	r := &Reconciler{DefaultCatalog: types.NamespacedName{Namespace: "operator-manager-system", Name: "default"}}
	withGlobal := &Reconciler{DefaultCatalog: r.DefaultCatalog, GlobalCatalogNamespace: "olm"}
	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "etcd"}}
	for _, tc := range []struct {
		name string
		r    *Reconciler
		key  types.NamespacedName
		ok   bool
	}{
		{"own namespace", r, types.NamespacedName{Namespace: "team-a", Name: "mine"}, true},
		{"the default catalog", r, r.DefaultCatalog, true},
		{"the manager's namespace is the global one by default", r, types.NamespacedName{Namespace: "operator-manager-system", Name: "hub"}, true},
		{"another tenant's", r, types.NamespacedName{Namespace: "team-b", Name: "private"}, false},
		{"a global namespace named by flag", withGlobal, types.NamespacedName{Namespace: "olm", Name: "operatorhubio-catalog"}, true},
		{"then the manager's namespace is not global", withGlobal, types.NamespacedName{Namespace: "operator-manager-system", Name: "hub"}, false},
		{"but its default catalog still is usable", withGlobal, r.DefaultCatalog, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.catalogAllowed(sub, tc.key)
			var re *resolve.Error
			switch {
			case tc.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ok && (!errors.As(err, &re) || re.Reason != omv1.ReasonCatalogNotAllowed):
				t.Errorf("err = %v, want CatalogNotAllowed", err)
			}
		})
	}
}

func TestAwaitsApproval(t *testing.T) {
	own := &omv1.Subscription{Spec: omv1.SubscriptionSpec{Package: "cache", Approval: omv1.ApprovalManual}}
	olm := &omv1.Subscription{Spec: omv1.SubscriptionSpec{Name: "cache", InstallPlanApproval: omv1.ApprovalManual}}
	auto := &omv1.Subscription{Spec: omv1.SubscriptionSpec{Package: "cache"}}
	running := &omv1.Blueprint{Status: omv1.BlueprintStatus{CurrentCSV: "cache.v1.0.0"}}
	none := &omv1.Blueprint{}
	cases := []struct {
		name   string
		sub    *omv1.Subscription
		bp     *omv1.Blueprint
		exists bool
		target string
		want   bool
	}{
		{"approval: Manual, first install goes", own, none, false, "cache.v1.0.0", false},
		{"installPlanApproval: Manual, first install waits", olm, none, false, "cache.v1.0.0", true},
		{"installPlanApproval: Manual, Blueprint made, nothing runs yet: waits", olm, none, true, "cache.v1.0.0", true},
		{"approval: Manual, upgrade waits", own, running, true, "cache.v1.1.0", true},
		{"installPlanApproval: Manual, upgrade waits", olm, running, true, "cache.v1.1.0", true},
		{"Manual, the running version again: nothing to wait for", own, running, true, "cache.v1.0.0", false},
		{"Automatic: nothing waits", auto, running, true, "cache.v1.1.0", false},
	}
	for _, c := range cases {
		if got := awaitsApproval(c.sub, c.bp, c.exists, c.target); got != c.want {
			t.Errorf("%s: awaitsApproval = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestStateOf(t *testing.T) {
	bp := func(phase omv1.BlueprintPhase, current string) *omv1.Blueprint {
		return &omv1.Blueprint{Status: omv1.BlueprintStatus{Phase: phase, CurrentCSV: current}}
	}
	cases := []struct {
		name string
		want string // the CSV the Subscription resolves to
		bp   *omv1.Blueprint
		out  omv1.SubscriptionState
	}{
		{"installing", "a.v1", bp(omv1.BlueprintInstalling, ""), omv1.SubscriptionStateUpgradePending},
		{"Blueprint not looked at yet", "a.v1", bp("", ""), omv1.SubscriptionStateUpgradePending},
		{"first install waits for approval", "a.v1", bp(omv1.BlueprintWaitingForApproval, ""), omv1.SubscriptionStateUpgradePending},
		{"upgrade waits for approval", "a.v2", bp(omv1.BlueprintWaitingForApproval, "a.v1"), omv1.SubscriptionStateUpgradePending},
		{"upgrade held by the operator", "a.v2", bp(omv1.BlueprintUpgradeHeld, "a.v1"), omv1.SubscriptionStateUpgradePending},
		{"at the version resolved to", "a.v2", bp(omv1.BlueprintSucceeded, "a.v2"), omv1.SubscriptionStateAtLatest},
		{"held by hand below it", "a.v2", bp(omv1.BlueprintSucceeded, "a.v1"), omv1.SubscriptionStateUpgradeAvailable},
		{"upgrade rolled back", "a.v2", bp(omv1.BlueprintRolledBack, "a.v1"), omv1.SubscriptionStateUpgradeAvailable},
		{"first install failed", "a.v1", bp(omv1.BlueprintFailed, ""), ""},
		{"uninstalling", "a.v1", bp(omv1.BlueprintDeleting, "a.v1"), ""},
	}
	for _, c := range cases {
		if got := stateOf(&omv1.SubscriptionStatus{CurrentCSV: c.want}, c.bp); got != c.out {
			t.Errorf("%s: state %q, want %q", c.name, got, c.out)
		}
	}
}
