// Package installevents reads the events the manager wrote about one installation: its
// Subscription, its Blueprint (of the same name) and every CSV it has run. The console's
// installation page and the CLI's `status` show them, as `kubectl describe` shows an
// object's events: the first place a person looks when a change went wrong, and the only
// record of steps the status keeps no trace of (a CRD kept, a storage migration, a
// certificate rotated).
package installevents

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// Event is one event about an installation.
type Event struct {
	Type    string `json:"type"` // Normal or Warning
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Object is the kind and name the event is about: Blueprint/cache,
	// ClusterServiceVersion/cache-operator.v1.2.0.
	Object string `json:"object"`
	// Time is when it was last seen.
	Time time.Time `json:"time"`
	// Count is how many times it was seen (a series the recorder merged); 1 for one.
	Count int32 `json:"count"`
}

// CSVNames are the CSVs of an installation whose events count as its own: the one its
// Blueprint wants, the one it runs and those of its retained revisions (a failed
// version's health verdict is an event of that version's CSV).
func CSVNames(bp *omv1.Blueprint) []string {
	if bp == nil {
		return nil
	}
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	add(bp.Spec.ClusterServiceVersionName)
	add(bp.Status.CurrentCSV)
	for _, h := range bp.Status.History {
		add(h.CSVName)
	}
	return names
}

// List reads the events of sub's namespace and returns those about the installation
// (Select), newest first.
func List(ctx context.Context, r client.Reader, sub *omv1.Subscription, bp *omv1.Blueprint) ([]Event, error) {
	list := &eventsv1.EventList{}
	if err := r.List(ctx, list, client.InNamespace(sub.Namespace)); err != nil {
		return nil, err
	}
	return Select(list.Items, sub.Name, CSVNames(bp)), nil
}

// Select picks from items the events about the installation named name (its
// Subscription and Blueprint) and its CSVs csvs, newest first. Only this project's kinds
// count: a Deployment or a Secret of the same name is another object.
func Select(items []eventsv1.Event, name string, csvs []string) []Event {
	var out []Event
	for i := range items {
		e := &items[i]
		about := false
		switch e.Regarding.Kind {
		case "Subscription", "Blueprint":
			about = e.Regarding.Name == name
		case "ClusterServiceVersion":
			about = slices.Contains(csvs, e.Regarding.Name)
		}
		if !about || (e.Regarding.APIVersion != "" && !strings.HasPrefix(e.Regarding.APIVersion, omv1.Group+"/")) {
			continue
		}
		out = append(out, Event{Type: e.Type, Reason: e.Reason, Message: e.Note,
			Object: e.Regarding.Kind + "/" + e.Regarding.Name, Time: lastSeen(e).UTC(), Count: count(e)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out
}

// lastSeen is when e was last seen: its series' last observation, its own time, or (an
// event written through core/v1) its last timestamp, else its creation.
func lastSeen(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func count(e *eventsv1.Event) int32 {
	switch {
	case e.Series != nil && e.Series.Count > 0:
		return e.Series.Count
	case e.DeprecatedCount > 0:
		return e.DeprecatedCount
	}
	return 1
}
