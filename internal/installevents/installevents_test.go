package installevents

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func TestSelect(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	gv := omv1.GroupVersion.String()
	ev := func(kind, name, reason string, mod func(*eventsv1.Event)) eventsv1.Event {
		e := eventsv1.Event{Reason: reason, Note: reason + " note", Type: corev1.EventTypeNormal,
			Regarding: corev1.ObjectReference{APIVersion: gv, Kind: kind, Name: name}}
		if mod != nil {
			mod(&e)
		}
		return e
	}
	at := func(d time.Duration) func(*eventsv1.Event) {
		return func(e *eventsv1.Event) { e.EventTime = metav1.NewMicroTime(t0.Add(d)) }
	}
	items := []eventsv1.Event{
		ev("Blueprint", "cache", "Started", at(0)),
		// A series: last seen later than its first time, seen 3 times.
		ev("ClusterServiceVersion", "cache-operator.v1.3.0", "HealthCheckFailed", func(e *eventsv1.Event) {
			e.Type = corev1.EventTypeWarning
			e.EventTime = metav1.NewMicroTime(t0.Add(time.Second))
			e.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(5 * time.Minute))}
		}),
		// Written through core/v1: no event time, a last timestamp and a count.
		ev("Subscription", "cache", "Resolve", func(e *eventsv1.Event) {
			e.DeprecatedLastTimestamp = metav1.NewTime(t0.Add(2 * time.Minute))
			e.DeprecatedCount = 2
		}),
		// Only a creation time.
		ev("Blueprint", "cache", "Recovered", func(e *eventsv1.Event) { e.CreationTimestamp = metav1.NewTime(t0.Add(3 * time.Minute)) }),
		// Not this installation's: another name, a CSV it never ran, another group's kind
		// of the same name, a Deployment.
		ev("Blueprint", "other", "Started", at(time.Hour)),
		ev("ClusterServiceVersion", "other-operator.v1.0.0", "Succeeded", at(time.Hour)),
		ev("Subscription", "cache", "ResolutionFailed", func(e *eventsv1.Event) {
			e.Regarding.APIVersion = "operators.coreos.com/v1alpha1"
			e.EventTime = metav1.NewMicroTime(t0.Add(time.Hour))
		}),
		ev("Deployment", "cache", "ScalingReplicaSet", at(time.Hour)),
	}
	got := Select(items, "cache", []string{"cache-operator.v1.2.0", "cache-operator.v1.3.0"})
	want := []Event{
		{Type: "Warning", Reason: "HealthCheckFailed", Message: "HealthCheckFailed note", Object: "ClusterServiceVersion/cache-operator.v1.3.0", Time: t0.Add(5 * time.Minute), Count: 3},
		{Type: "Normal", Reason: "Recovered", Message: "Recovered note", Object: "Blueprint/cache", Time: t0.Add(3 * time.Minute), Count: 1},
		{Type: "Normal", Reason: "Resolve", Message: "Resolve note", Object: "Subscription/cache", Time: t0.Add(2 * time.Minute), Count: 2},
		{Type: "Normal", Reason: "Started", Message: "Started note", Object: "Blueprint/cache", Time: t0, Count: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Select:\n got %+v\nwant %+v", got, want)
	}
}

func TestCSVNames(t *testing.T) {
	if got := CSVNames(nil); got != nil {
		t.Errorf("no Blueprint: %v", got)
	}
	bp := &omv1.Blueprint{
		Spec:   omv1.BlueprintSpec{ClusterServiceVersionName: "cache-operator.v1.3.0"},
		Status: omv1.BlueprintStatus{CurrentCSV: "cache-operator.v1.2.0"},
	}
	bp.Status.History = []omv1.Revision{{CSVName: "cache-operator.v1.1.0"}, {CSVName: "cache-operator.v1.2.0"}, {CSVName: "cache-operator.v1.3.0"}}
	want := []string{"cache-operator.v1.3.0", "cache-operator.v1.2.0", "cache-operator.v1.1.0"}
	if got := CSVNames(bp); !reflect.DeepEqual(got, want) {
		t.Errorf("CSVNames = %v, want %v", got, want)
	}
}
