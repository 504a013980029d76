package subscription

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// brokenDependents says what moving sub's installation (running bp) to next would take
// from the installations that depend on it (resolve.Breaks), in words; nil when nothing,
// or when nothing runs yet. A dependent whose own Subscription asks for a version that
// accepts next does not hold it back: it waits for exactly this change (its Subscription
// Unsatisfiable until then), and holding both would leave neither able to move first.
// A dependent whose bundle its catalog no longer holds is not checked.
func (r *Reconciler) brokenDependents(ctx context.Context, sub *omv1.Subscription, bp *omv1.Blueprint, next *catalog.Bundle) ([]string, error) {
	if bp == nil || bp.Status.CurrentCSV == "" || bp.Status.CurrentCSV == next.CSVName || sub.Status.Package == "" {
		return nil, nil
	}
	list := &omv1.BlueprintList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	var deps []resolve.Dependent
	for i := range list.Items {
		d := &list.Items[i]
		if (d.Namespace == sub.Namespace && d.Name == sub.Name) || !d.DeletionTimestamp.IsZero() || !d.DependsOn(sub.Namespace, sub.Name, sub.Status.Package) {
			continue
		}
		name := d.Name
		if d.Namespace != sub.Namespace {
			name = d.Namespace + "/" + d.Name
		}
		cat := r.Catalogs.Get(omv1.CatalogKey(d.Spec.Catalog, d.Namespace))
		if cat == nil {
			continue
		}
		csv := d.Status.CurrentCSV
		if csv == "" {
			csv = d.Spec.ClusterServiceVersionName
		}
		running := cat.BundleByCSV(csv)
		if running == nil {
			continue
		}
		if wanted := r.wantedBy(ctx, d); wanted != nil && wanted.CSVName != running.CSVName &&
			len(resolve.Breaks(next, nil, []resolve.Dependent{{Name: name, Bundle: wanted}})) == 0 {
			continue
		}
		deps = append(deps, resolve.Dependent{Name: name, Bundle: running})
	}
	if len(deps) == 0 {
		return nil, nil
	}
	var current *catalog.Bundle
	if cat := r.Catalogs.Get(omv1.CatalogKey(bp.Spec.Catalog, bp.Namespace)); cat != nil {
		current = cat.BundleByCSV(bp.Status.CurrentCSV)
	}
	return resolve.Breaks(next, current, deps), nil
}

// wantedBy is the bundle the Subscription of Blueprint d asks for now, or nil.
func (r *Reconciler) wantedBy(ctx context.Context, d *omv1.Blueprint) *catalog.Bundle {
	s := &omv1.Subscription{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(d), s); err != nil {
		return nil
	}
	res, err := r.resolve(s)
	if err != nil {
		return nil
	}
	return res.bundle
}

// refusedForDependents is the resolution failure of a version change that would break
// the installations depending on this one: nothing changes, the running version stays.
func refusedForDependents(next *catalog.Bundle, bp *omv1.Blueprint, broken []string) *resolve.Error {
	return &resolve.Error{Reason: resolve.ReasonUnsatisfiable, Message: fmt.Sprintf(
		"%s is not installed, %s keeps running: %s; upgrade or uninstall them first, or ask for a version they accept",
		next.CSVName, bp.Status.CurrentCSV, resolve.BreaksMessage(broken))}
}

// heldForDependents reports whether a Subscription's last word is that it stays where it
// is for the installations that depend on it.
func heldForDependents(s *omv1.Subscription) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, omv1.ConditionResolved)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonHeldForDependents
}
