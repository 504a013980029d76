package subscription

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func TestJudgeCatalog(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: "community"}
	source := func(gen, observed int64, conds ...metav1.Condition) *omv1.CatalogSource {
		cs := &omv1.CatalogSource{}
		cs.Generation = gen
		cs.Status.ObservedGeneration = observed
		cs.Status.Conditions = conds
		return cs
	}
	ready := func(status metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
		return metav1.Condition{Type: omv1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	for _, tc := range []struct {
		name           string
		namedBy        string
		cs             *omv1.CatalogSource
		quiet, loading bool
		says           []string
	}{
		{name: "no such CatalogSource", namedBy: "spec.catalog", cs: nil,
			says: []string{"CatalogSource team-a/community does not exist", "spec.catalog names", "namespace team-a"}},
		{name: "no such CatalogSource, named in OLM's words", namedBy: "spec.source", cs: nil,
			says: []string{"CatalogSource team-a/community does not exist", "spec.source names"}},
		{name: "the default catalog is gone: not what the Subscription named", cs: nil,
			says: []string{"CatalogSource team-a/community, the default catalog, does not exist", "a manager started with --catalog creates it", "name another CatalogSource in spec.catalog"}},
		{name: "first load under way: nothing said yet", cs: source(1, 0), loading: true,
			says: []string{"catalog team-a/community is not loaded yet", "is loading it", "kubectl get catalogsource -n team-a community"}},
		{name: "loaded by another process (a restart, a new leader)", cs: source(1, 1, ready(metav1.ConditionTrue, omv1.ReasonLoaded, "3 packages", 1)), quiet: true},
		{name: "its load failed: the CatalogSource's words", cs: source(1, 1, ready(metav1.ConditionFalse, omv1.ReasonLoadFailed, "reading the catalog at http://x: connection refused", 1)),
			says: []string{"catalog team-a/community is not loaded: its CatalogSource failed to load it", "connection refused"}},
		{name: "spec changed since it loaded: loading again", cs: source(2, 1, ready(metav1.ConditionTrue, omv1.ReasonLoaded, "3 packages", 1)), loading: true,
			says: []string{"is loading it"}},
		{name: "spec changed since its load failed: loading again", cs: source(2, 1, ready(metav1.ConditionFalse, omv1.ReasonLoadFailed, "old failure", 1)), loading: true,
			says: []string{"is loading it"}},
		{name: "condition current but status not yet observed", cs: source(2, 1, ready(metav1.ConditionTrue, omv1.ReasonLoaded, "3 packages", 2)), loading: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeCatalog(key, tc.namedBy, tc.cs)
			if got.quiet != tc.quiet || got.loading != tc.loading {
				t.Errorf("quiet %v loading %v, want quiet %v loading %v (%q)", got.quiet, got.loading, tc.quiet, tc.loading, got.message)
			}
			for _, s := range tc.says {
				if !strings.Contains(got.message, s) {
					t.Errorf("message %q does not say %q", got.message, s)
				}
			}
			if !tc.quiet && got.message == "" {
				t.Error("no message for a Subscription that must say why it waits or failed")
			}
		})
	}
}
