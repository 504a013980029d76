package console

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestRowDeprecation: the installed list says an installation is deprecated, in its
// catalog's words, exactly while the Subscription's Deprecated condition is True.
func TestRowDeprecation(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: "R", Message: msg}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"none", nil, ""},
		{"deprecated", []metav1.Condition{cond(omv1.ConditionReady, metav1.ConditionTrue, "running"),
			cond(omv1.ConditionBundleDeprecated, metav1.ConditionTrue, "1.1.0 has a CVE"),
			cond(omv1.ConditionDeprecated, metav1.ConditionTrue, "1.1.0 has a CVE")}, "1.1.0 has a CVE"},
		{"only a part, no summary", []metav1.Condition{cond(omv1.ConditionChannelDeprecated, metav1.ConditionTrue, "stable closes")}, ""},
		{"not true", []metav1.Condition{cond(omv1.ConditionDeprecated, metav1.ConditionFalse, "")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache"}}
			sub.Status.Conditions = tc.conds
			if got := rowOf(sub, nil).Deprecation; got != tc.want {
				t.Errorf("deprecation %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRowState: the installed list colours Ready by the state the metrics and alerts
// give it, so an uninstall done as asked or a change under way does not read as a fault.
func TestRowState(t *testing.T) {
	ready := func(st metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: omv1.ConditionReady, Status: st, Reason: reason}}
	}
	for _, tc := range []struct {
		opstatus string
		conds    []metav1.Condition
		want     string
	}{
		{"succeeded", ready(metav1.ConditionTrue, "Succeeded"), "ready"},
		{"deleted", ready(metav1.ConditionFalse, "Uninstalled"), "uninstalled"},
		{"installing", ready(metav1.ConditionFalse, "Install"), "progressing"},
		{"rolledback", ready(metav1.ConditionFalse, "RolledBack"), "failed"},
	} {
		sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache"}}
		sub.Status.Opstatus, sub.Status.Conditions = tc.opstatus, tc.conds
		if got := rowOf(sub, nil).State; got != tc.want {
			t.Errorf("opstatus %s, Ready %s: state %q, want %q", tc.opstatus, tc.conds[0].Reason, got, tc.want)
		}
	}
}
