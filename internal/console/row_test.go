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
