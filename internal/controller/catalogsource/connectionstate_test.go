package catalogsource

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestSetConnectionState: OLM's connectionState follows Ready, and its time moves only
// when the state does, so an unchanged poll writes nothing.
func TestSetConnectionState(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	ready := func(ok bool) []metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return []metav1.Condition{{Type: omv1.ConditionReady, Status: s, Reason: "x"}}
	}
	state := func(s string, at metav1.Time) *omv1.GRPCConnectionState {
		return &omv1.GRPCConnectionState{LastObservedState: s, LastConnectTime: at}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		prev  *omv1.GRPCConnectionState
		want  *omv1.GRPCConnectionState
	}{
		{"nothing said yet", nil, nil, state(omv1.ConnectionConnecting, t1)},
		{"loaded", ready(true), nil, state(omv1.ConnectionReady, t1)},
		{"still loaded: unchanged", ready(true), state(omv1.ConnectionReady, t0), state(omv1.ConnectionReady, t0)},
		{"load failed", ready(false), state(omv1.ConnectionReady, t0), state(omv1.ConnectionTransientFailure, t1)},
		{"still failing: unchanged", ready(false), state(omv1.ConnectionTransientFailure, t0), state(omv1.ConnectionTransientFailure, t0)},
		{"loaded again", ready(true), state(omv1.ConnectionTransientFailure, t0), state(omv1.ConnectionReady, t1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &omv1.CatalogSource{Status: omv1.CatalogSourceStatus{Conditions: tc.conds, ConnectionState: tc.prev}}
			setConnectionState(cs, t1)
			if got := cs.Status.ConnectionState; *got != *tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	cs := &omv1.CatalogSource{Spec: omv1.CatalogSourceSpec{Address: "registry.olm:50051"}, Status: omv1.CatalogSourceStatus{Conditions: ready(true)}}
	setConnectionState(cs, t1)
	if cs.Status.ConnectionState.Address != "registry.olm:50051" {
		t.Errorf("address %q, want spec.address", cs.Status.ConnectionState.Address)
	}
}
