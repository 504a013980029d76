package subscription

import (
	"testing"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

// TestKeepsTarget: a new generation of a Subscription moves its Blueprint's target only
// when it asks for another version; a pause, a resume or a config edit leaves a version a
// person rolled back to, and a Blueprint from before the intent was recorded is moved as
// it always was.
func TestKeepsTarget(t *testing.T) {
	spec := omv1.SubscriptionSpec{Package: "cache-operator", Channel: "stable", Version: "1.2.0", Catalog: "samples"}
	written := spec.VersionIntent()
	paused := spec
	paused.Paused, paused.Config = true, &omv1.SubscriptionConfig{NodeSelector: map[string]string{"a": "b"}}
	paused.Approval = omv1.ApprovalManual
	for _, tc := range []struct {
		name   string
		spec   omv1.SubscriptionSpec
		intent string // recorded on the Blueprint
		target string // the Blueprint's
		want   bool
	}{
		{"rolled back by hand, then paused, configured, made Manual: kept", paused, written, "cache-operator.v1.1.0", true},
		{"rolled back by hand, another version asked for: moved", func() omv1.SubscriptionSpec { s := spec; s.Version = "1.3.0"; return s }(), written, "cache-operator.v1.1.0", false},
		{"rolled back by hand, another catalog: moved", func() omv1.SubscriptionSpec { s := spec; s.Catalog = "other"; return s }(), written, "cache-operator.v1.1.0", false},
		{"another channel: moved", func() omv1.SubscriptionSpec { s := spec; s.Channel = "fast"; return s }(), written, "cache-operator.v1.1.0", false},
		{"a Blueprint from before the intent was recorded: moved", paused, "", "cache-operator.v1.1.0", false},
		{"the target is what it resolves to: nothing to keep", paused, written, "cache-operator.v1.2.0", false},
	} {
		bp := &omv1.Blueprint{}
		bp.Spec.ClusterServiceVersionName = tc.target
		if tc.intent != "" {
			bp.Annotations = map[string]string{omv1.AnnotationSubscriptionIntent: tc.intent}
		}
		sub := &omv1.Subscription{Spec: tc.spec}
		res := &resolution{bundle: &catalog.Bundle{CSVName: "cache-operator.v1.2.0"}}
		if got := keepsTarget(sub, bp, res); got != tc.want {
			t.Errorf("%s: keepsTarget = %v, want %v", tc.name, got, tc.want)
		}
	}
}
