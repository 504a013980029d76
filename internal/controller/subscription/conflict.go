package subscription

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// Reasons of a Resolved=False for an installation refused because of another of the same
// package.
const (
	// ReasonPackageConflict: another Subscription of the namespace installs the package;
	// both would own the same Deployments.
	ReasonPackageConflict = "PackageAlreadySubscribed"
	// ReasonTargetsOverlap: an installation of the package in another namespace watches a
	// namespace this one would watch too (or all of them); both operators would reconcile
	// the same custom resources.
	ReasonTargetsOverlap = "TargetNamespacesOverlap"
	// ReasonAPIServiceExclusive: the package serves an API through an APIService, which a
	// cluster has one of; two installations would take it from each other.
	ReasonAPIServiceExclusive = "APIServiceExclusive"
)

// installation is what the conflict check knows of one Subscription: where it runs, the
// package, and the namespaces it watches (nil: all).
type installation struct {
	namespace, name, pkg string
	targets              []string
	// apiServices are the APIServices its version serves ("<version>.<group>").
	apiServices []string
}

func (i installation) String() string { return "Subscription " + i.namespace + "/" + i.name }

func (i installation) watching() string {
	if i.targets == nil {
		return "all namespaces"
	}
	return strings.Join(i.targets, ", ")
}

// conflict says why mine may not run next to theirs, an older installation of the same
// package, or "" when both may (pure, table-tested). One namespace runs one version of a
// package; across namespaces, installations of a package run side by side when the
// namespaces they watch do not overlap, so an AllNamespaces one is the only one, and
// neither serves an APIService (cluster-scoped: a cluster has one of each name).
func conflict(mine, theirs installation) (reason, message string) {
	if mine.pkg != theirs.pkg {
		return "", ""
	}
	if mine.namespace == theirs.namespace {
		return ReasonPackageConflict, fmt.Sprintf(
			"Subscription %s already installs package %q in namespace %s; one namespace runs one version of a package (run another version side by side in another namespace, with spec.targetNamespaces that do not overlap)",
			theirs.name, mine.pkg, mine.namespace)
	}
	if apis := slices.Concat(mine.apiServices, theirs.apiServices); len(apis) > 0 {
		slices.Sort(apis)
		return ReasonAPIServiceExclusive, fmt.Sprintf(
			"%s already installs package %q, which serves %s through an APIService; a cluster has one APIService of a name, so an installation of a package that serves one is the only installation of that package",
			theirs, mine.pkg, strings.Join(slices.Compact(apis), ", "))
	}
	switch {
	case theirs.targets == nil:
		return ReasonTargetsOverlap, fmt.Sprintf(
			"%s installs package %q watching all namespaces, so it is the only installation of that package; remove it, or give both spec.targetNamespaces that do not overlap",
			theirs, mine.pkg)
	case mine.targets == nil:
		return ReasonTargetsOverlap, fmt.Sprintf(
			"%s already installs package %q watching %s; an installation watching all namespaces would watch those too: set spec.targetNamespaces (for example [%s]) so that the two do not overlap",
			theirs, mine.pkg, theirs.watching(), mine.namespace)
	}
	var both []string
	for _, ns := range mine.targets {
		if slices.Contains(theirs.targets, ns) {
			both = append(both, ns)
		}
	}
	if len(both) > 0 {
		return ReasonTargetsOverlap, fmt.Sprintf(
			"%s already installs package %q watching %s; this one would watch %s too: the target namespaces of two installations of one package must not overlap",
			theirs, mine.pkg, theirs.watching(), strings.Join(both, ", "))
	}
	return "", ""
}

// targetsOf are the namespaces a Subscription's operator watches with bundle b: its
// spec.targetNamespaces, or the default of b's install modes (nil: all namespaces). A
// Subscription whose bundle is unknown, or whose request the bundle cannot meet, counts as
// asking: its spec, and all namespaces when that is empty.
func targetsOf(sub *omv1.Subscription, b *catalog.Bundle) []string {
	if b != nil {
		if t, err := render.TargetNamespaces(b.InstallModes, sub.Namespace, sub.Spec.TargetNamespaces); err == nil {
			return t
		}
	}
	if len(sub.Spec.TargetNamespaces) == 0 {
		return nil
	}
	return sub.Spec.TargetNamespaces
}

// checkConflict refuses an installation that may not run next to another of the same
// package (conflict says when; contends says which others count). The package of every
// other Subscription is resolved from its spec (not read from its status, which may not
// be written yet).
func (r *Reconciler) checkConflict(ctx context.Context, sub *omv1.Subscription, b *catalog.Bundle) error {
	// Only Subscriptions that name this package, or name none (resolved below), can
	// contend: read through an index, not by listing (and copying) every Subscription
	// of the cluster on every pass, which grew with the square of the fleet.
	list := &omv1.SubscriptionList{}
	for _, pkg := range []string{b.Package, packageUnnamed} {
		some := &omv1.SubscriptionList{}
		if err := r.Client.List(ctx, some, client.MatchingFields{IndexPackage: pkg}); err != nil {
			return err
		}
		list.Items = append(list.Items, some.Items...)
	}
	// installed says whether a Subscription has its Blueprint; uncached: confirmed with the
	// API server when the cache holds none.
	installed := func(s *omv1.Subscription, uncached bool) (bool, error) {
		key := client.ObjectKeyFromObject(s)
		err := r.Client.Get(ctx, key, &omv1.Blueprint{})
		if apierrors.IsNotFound(err) && uncached {
			err = r.APIReader.Get(ctx, key, &omv1.Blueprint{})
		}
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	subInstalled, err := installed(sub, false)
	if err != nil {
		return err
	}
	fresh := !subInstalled && r.APIReader != nil
	if fresh {
		// About to install: the cache may not hold yet another Subscription of the namespace
		// created in the same instant, or its Blueprint, and deciding without them would
		// install the package twice (e2e TestSecondSubscriptionOfAPackageRefused: two
		// Subscriptions created at once, which the finalizer's write before this check once
		// gave the cache time to show). One uncached list of the namespace, before the first
		// install only.
		ns := &omv1.SubscriptionList{}
		if err := r.APIReader.List(ctx, ns, client.InNamespace(sub.Namespace)); err != nil {
			return err
		}
		for _, s := range ns.Items {
			if !slices.ContainsFunc(list.Items, func(c omv1.Subscription) bool { return c.Namespace == s.Namespace && c.Name == s.Name }) {
				list.Items = append(list.Items, s)
			}
		}
	}
	// In a stable order, so the condition names the same installation on every pass.
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	mine := installation{namespace: sub.Namespace, name: sub.Name, pkg: b.Package, targets: targetsOf(sub, b), apiServices: b.OwnedAPIServices}
	ogs := operatorgroup.NewReader(r.Client) // the namespaces listed once for all the others
	for i := range list.Items {
		other := &list.Items[i]
		if (other.Namespace == sub.Namespace && other.Name == sub.Name) || other.Spec.Option == omv1.OptionDelete ||
			!other.DeletionTimestamp.IsZero() || (other.Spec.PackageName() != "" && other.Spec.PackageName() != b.Package) {
			continue // (the package test first: no need to resolve what names another package)
		}
		otherInstalled, err := installed(other, fresh)
		if err != nil {
			return err
		}
		if !contends(other, sub, otherInstalled, subInstalled) {
			continue
		}
		ob, pkg := r.bundleOf(other)
		if pkg != b.Package {
			continue
		}
		// What the other watches: its OperatorGroup's targets where it names none (with
		// several OperatorGroups, it counts as written).
		_ = ogs.ApplyFrom(ctx, other)
		theirs := installation{namespace: other.Namespace, name: other.Name, pkg: pkg, targets: targetsOf(other, ob)}
		if ob != nil {
			theirs.apiServices = ob.OwnedAPIServices
		}
		if reason, msg := conflict(mine, theirs); reason != "" {
			return &resolve.Error{Reason: reason, Message: msg}
		}
	}
	return nil
}

// contends says whether other, in conflict with sub, keeps sub from installing (pure,
// table-tested). What is installed (has a Blueprint) stays and what is not waits; between
// two installed ones, or two that are not, the older wins (then the smaller name), so two
// Subscriptions created in the same instant agree on which installs. One that is not
// installed and cannot be resolved (refused for a conflict, or for its own spec: a
// package or version the catalog lacks, unmet dependencies) runs nothing and keeps no one
// out: it would otherwise block, for as long as it stays wrong, every installation of its
// package that overlaps it (a mistyped `--version 9.0` in one namespace held a dependency
// in another for good). Should it resolve later, the installed one stands and it waits. A
// catalog still loading is not such a failure: that one may install in a moment.
func contends(other, sub *omv1.Subscription, otherInstalled, subInstalled bool) bool {
	switch {
	case otherInstalled != subInstalled:
		return otherInstalled
	case otherInstalled:
		return first(other, sub)
	default:
		return first(other, sub) && !unresolved(other)
	}
}

// unresolved reports whether a Subscription's last word is that it cannot be resolved,
// for any reason but its catalog loading.
func unresolved(s *omv1.Subscription) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, omv1.ConditionResolved)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason != omv1.ReasonCatalogNotReady
}

// refusedForConflict reports whether a Subscription's last word is that another
// installation is in its way.
func refusedForConflict(s *omv1.Subscription) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, omv1.ConditionResolved)
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == ReasonPackageConflict || c.Reason == ReasonTargetsOverlap || c.Reason == ReasonAPIServiceExclusive)
}

// first reports whether a comes before b: created earlier, or at the same second with the
// smaller name.
func first(a, b *omv1.Subscription) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Namespace < b.Namespace
}

// bundleOf is the bundle and package a Subscription asks for, resolved against its
// catalog; when its catalog cannot tell, no bundle and the package its spec or status
// names.
func (r *Reconciler) bundleOf(sub *omv1.Subscription) (*catalog.Bundle, string) {
	if res, err := r.resolve(sub); err == nil {
		return res.bundle, res.bundle.Package
	}
	if sub.Spec.PackageName() != "" {
		return nil, sub.Spec.PackageName()
	}
	return nil, sub.Status.Package
}

// waitingOnOthers maps a change of any Subscription to the Subscriptions refused for a
// conflict, which it may have resolved (by going, or by changing its target namespaces),
// to those whose dependencies could not be met, which it may now meet (a Subscription
// of another namespace watching theirs, upgraded into range: its status changes when the
// upgrade ends), and to those held or refused for the installations depending on them,
// which it may no longer hold back (upgraded, or uninstalled).
func (r *Reconciler) waitingOnOthers(ctx context.Context, obj client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, index := range []string{IndexRefusedForConflict, IndexUnsatisfiable} {
		list := &omv1.SubscriptionList{}
		if err := r.Client.List(ctx, list, client.MatchingFields{index: "true"}); err != nil {
			return nil
		}
		for i := range list.Items {
			s := &list.Items[i]
			if s.Namespace == obj.GetNamespace() && s.Name == obj.GetName() {
				continue
			}
			if refusedForConflict(s) || unsatisfiable(s) || heldForDependents(s) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)})
			}
		}
	}
	return out
}

// unsatisfiable reports whether a Subscription's last word is that its dependencies
// cannot be met.
func unsatisfiable(s *omv1.Subscription) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, omv1.ConditionResolved)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == resolve.ReasonUnsatisfiable
}

// Cache indexes of Subscriptions, so that a pass of one Subscription reads the few others
// it is about instead of every Subscription of the cluster.
const (
	// IndexPackage is the package a Subscription names (packageUnnamed: none).
	IndexPackage = "operator-manager.domain/package"
	// IndexRefusedForConflict is "true" for a Subscription refused because another
	// installation is in its way.
	IndexRefusedForConflict = "operator-manager.domain/refused-for-conflict"
	// IndexUnsatisfiable is "true" for a Subscription whose dependencies cannot be met,
	// or that its dependents hold (HeldForDependents).
	IndexUnsatisfiable = "operator-manager.domain/unsatisfiable"
)

// packageUnnamed stands for "names no package" in IndexPackage: such a Subscription's
// package is known only once it is resolved.
const packageUnnamed = "-"

// indexPackage and indexRefusedForConflict compute the two indexes of a Subscription.
func indexPackage(obj client.Object) []string {
	if pkg := obj.(*omv1.Subscription).Spec.PackageName(); pkg != "" {
		return []string{pkg}
	}
	return []string{packageUnnamed}
}

func indexRefusedForConflict(obj client.Object) []string {
	if refusedForConflict(obj.(*omv1.Subscription)) {
		return []string{"true"}
	}
	return nil
}

func indexUnsatisfiable(obj client.Object) []string {
	if s := obj.(*omv1.Subscription); unsatisfiable(s) || heldForDependents(s) {
		return []string{"true"}
	}
	return nil
}

// AddIndexes registers the Subscription indexes with the manager's cache.
func AddIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &omv1.Subscription{}, IndexPackage, indexPackage); err != nil {
		return fmt.Errorf("indexing Subscriptions by package: %w", err)
	}
	if err := indexer.IndexField(ctx, &omv1.Subscription{}, IndexRefusedForConflict, indexRefusedForConflict); err != nil {
		return fmt.Errorf("indexing Subscriptions refused for a conflict: %w", err)
	}
	if err := indexer.IndexField(ctx, &omv1.Subscription{}, IndexUnsatisfiable, indexUnsatisfiable); err != nil {
		return fmt.Errorf("indexing unsatisfiable Subscriptions: %w", err)
	}
	return nil
}

// SubscribedAlready is the Subscription of subs (one namespace's), other than one named
// name, that installs the package a new Subscription name of spec would, or nil: what
// the CLI and the console check before they create one, since the manager refuses it
// (ReasonPackageConflict) and it was left behind, failed, for a person who meant the one
// already there under another name. A startingCSV names its package as
// <package>.<version> or <package>.v<version>, where a package name may hold dots; it is
// matched against each package installed, and only where the rest is a version.
func SubscribedAlready(subs []omv1.Subscription, name string, spec omv1.SubscriptionSpec) *omv1.Subscription {
	want := spec.PackageName() // "" for a startingCSV alone
	for i := range subs {
		pkg := PackageOf(&subs[i])
		if pkg == "" || subs[i].Name == name || !subs[i].DeletionTimestamp.IsZero() {
			continue
		}
		if want == pkg {
			return &subs[i]
		}
		if rest, ok := strings.CutPrefix(spec.StartingCSV, pkg+"."); ok && want == "" {
			if _, err := semver.ParseTolerant(strings.TrimPrefix(rest, "v")); err == nil {
				return &subs[i]
			}
		}
	}
	return nil
}

// PackageOf is the package a Subscription installs: as resolved (its status), else as
// its spec names it ("" for a startingCSV not yet resolved).
func PackageOf(sub *omv1.Subscription) string {
	if sub.Status.Package != "" {
		return sub.Status.Package
	}
	return sub.Spec.PackageName()
}
