package catalogsource

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// setConnectionState writes OLM's status.connectionState from the Ready condition this
// reconcile set: READY while the catalog is loaded, TRANSIENT_FAILURE while its last load
// failed (the last good catalog may still be in use; Ready's message says so), CONNECTING
// before a first load has ended. Its time moves only when the state does, so a poll that
// changes nothing writes nothing. OLM users' scripts wait on it (`kubectl wait
// --for=jsonpath='{.status.connectionState.lastObservedState}'=READY`).
func setConnectionState(cs *omv1.CatalogSource, now metav1.Time) {
	state := omv1.ConnectionConnecting
	if c := meta.FindStatusCondition(cs.Status.Conditions, omv1.ConditionReady); c != nil {
		state = omv1.ConnectionTransientFailure
		if c.Status == metav1.ConditionTrue {
			state = omv1.ConnectionReady
		}
	}
	prev := cs.Status.ConnectionState
	if prev != nil && prev.LastObservedState == state && prev.Address == cs.Spec.Address {
		return
	}
	st := &omv1.GRPCConnectionState{Address: cs.Spec.Address, LastObservedState: state, LastConnectTime: now}
	if prev != nil && prev.LastObservedState == state {
		st.LastConnectTime = prev.LastConnectTime // only the address moved
	}
	cs.Status.ConnectionState = st
}
