package subscription

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// Labels and annotations of the Subscriptions the manager creates for dependencies.
const (
	// LabelDependency marks a Subscription created because another operator needs it.
	LabelDependency = "operator-manager.domain/dependency"
	// AnnotationRequiredBy lists the Subscriptions that need a dependency Subscription.
	AnnotationRequiredBy = "operator-manager.domain/required-by"
)

// catalogsFor lists the catalogs a resolution may take dependencies from: the root's own
// first, then every loaded CatalogSource of the namespace and the default catalog. unread
// names, in words, the namespace's CatalogSources that are not loaded, so an
// unsatisfiable dependency says where it was not looked for (OLM says it in
// CatalogSourcesUnhealthy); their loading brings the Subscription back
// (subscriptionsOfCatalog).
func (r *Reconciler) catalogsFor(ctx context.Context, sub *omv1.Subscription, root types.NamespacedName) (refs []resolve.CatalogRef, unread []string, err error) {
	list := &omv1.CatalogSourceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(sub.Namespace)); err != nil {
		return nil, nil, err
	}
	refs = []resolve.CatalogRef{{Name: root.String(), Catalog: r.Catalogs.Get(root), Priority: 1 << 30}}
	add := func(key types.NamespacedName, priority int) bool {
		if key == root {
			return true
		}
		if cat := r.Catalogs.Get(key); cat != nil {
			refs = append(refs, resolve.CatalogRef{Name: key.String(), Catalog: cat, Priority: priority})
			return true
		}
		return false
	}
	for _, cs := range list.Items {
		if !add(client.ObjectKeyFromObject(&cs), int(cs.Spec.Priority)) {
			unread = append(unread, unreadCatalog(&cs))
		}
	}
	add(r.DefaultCatalog, 0)
	return refs, unread, nil
}

// unreadCatalog names a CatalogSource that is not loaded, with its Ready reason (not its
// words, which may change from one load attempt to the next and would make the
// Subscription's words change with them).
func unreadCatalog(cs *omv1.CatalogSource) string {
	why := "not loaded yet"
	if c := meta.FindStatusCondition(cs.Status.Conditions, omv1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
		why = "not loaded: " + c.Reason
	}
	return fmt.Sprintf("CatalogSource %s/%s (%s)", cs.Namespace, cs.Name, why)
}

// installedIn lists what serves the namespace, for the resolver:
//   - what the namespace's other Subscriptions run or are about to run: an operator
//     being installed counts, so dependencies are not planned twice;
//   - when the root needs other operators (needsOthers), the installations of other
//     namespaces whose operator watches this one (all namespaces, or it among their
//     targets). Their APIs are served here already, as OLM's global operators' are, and a
//     second installation of their package here would overlap them, which the conflict
//     check refuses: planning one left the dependent waiting on a refused dependency.
//     They are kept as they are (resolve.Installed.ServedFrom): only their own
//     Subscription changes them.
func (r *Reconciler) installedIn(ctx context.Context, sub *omv1.Subscription, needsOthers bool) ([]resolve.Installed, error) {
	list := &omv1.SubscriptionList{}
	opts := []client.ListOption{client.InNamespace(sub.Namespace)}
	if needsOthers {
		opts = nil // every namespace: a few bundles have dependencies, and only their installs read this
	}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	var out []resolve.Installed
	ogs := operatorgroup.NewReader(r.Client) // each namespace's OperatorGroup read once for all its Subscriptions
	for i := range list.Items {
		s := &list.Items[i]
		if (s.Namespace == sub.Namespace && s.Name == sub.Name) || s.Spec.Option == omv1.OptionDelete || !s.DeletionTimestamp.IsZero() {
			continue
		}
		in, b, ok := r.runs(ctx, s)
		if !ok {
			continue
		}
		if s.Namespace != sub.Namespace {
			_ = ogs.ApplyFrom(ctx, s) // its OperatorGroup's targets, where it names none
			if refusedForConflict(s) || !render.Watches(targetsOf(s, b), sub.Namespace) {
				continue
			}
			in.ServedFrom = s.Namespace + "/" + s.Name
		}
		out = append(out, in)
	}
	return out, nil
}

// runs is what Subscription s runs, or is about to: its Blueprint's target while a change
// is under way or waits (changing), what runs otherwise, or (no Blueprint written yet)
// what its intent resolves to, so two Subscriptions made together do not both plan it;
// with the bundle when its catalog has it. ok is false when neither is known.
func (r *Reconciler) runs(ctx context.Context, s *omv1.Subscription) (in resolve.Installed, b *catalog.Bundle, ok bool) {
	var csv, version, catName, pkg, from, askedBy string
	bp := &omv1.Blueprint{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(s), bp); err == nil {
		csv, version, from = bp.Heading()
		catName, pkg = bp.Spec.Catalog, bp.Spec.Package
	} else if res, err := r.resolve(s); err == nil {
		csv, version, catName, pkg = res.bundle.CSVName, res.bundle.Version.String(), res.catalog.String(), res.bundle.Package
		askedBy = s.Namespace + "/" + s.Name
	} else {
		return in, nil, false
	}
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return in, nil, false
	}
	in = resolve.Installed{Package: pkg, Version: v, CSVName: csv, Catalog: catName, ChangingFrom: from, AskedBy: askedBy,
		Pinned: s.Spec.StartingCSV != "" || !resolve.Following(intentOf(s))}
	if cat := r.Catalogs.Get(omv1.CatalogKey(catName, s.Namespace)); cat != nil {
		if b = cat.BundleByCSV(csv); b != nil {
			for _, o := range b.OwnedCRDs {
				in.Provides = append(in.Provides, o.GVK())
			}
		}
	}
	return in, b, true
}

// resolveDependencies plans what the root bundle needs. A failure is a *resolve.Error
// (Unsatisfiable) that names the constraint and the candidates: nothing is installed then.
func (r *Reconciler) resolveDependencies(ctx context.Context, sub *omv1.Subscription, res *resolution) (*resolve.Plan, error) {
	catalogs, unread, err := r.catalogsFor(ctx, sub, res.catalog)
	if err != nil {
		return nil, err
	}
	b := res.bundle
	installed, err := r.installedIn(ctx, sub, len(b.Dependencies) > 0 || len(b.RequiredCRDs) > 0)
	if err != nil {
		return nil, err
	}
	var kube semver.Version
	if r.KubeVersion != nil {
		kube = r.KubeVersion()
	}
	plan, err := resolve.Resolve(resolve.Request{Root: res.bundle, Catalogs: catalogs, Installed: installed, KubeVersion: kube})
	return plan, notSearched(err, unread)
}

// notSearched adds to an unsatisfiable resolution the catalogs of the namespace it could
// not look in, which may hold what is missing.
func notSearched(err error, unread []string) error {
	var re *resolve.Error
	if len(unread) == 0 || !errors.As(err, &re) || re.Reason != resolve.ReasonUnsatisfiable {
		return err
	}
	return &resolve.Error{Reason: re.Reason, Message: re.Message + "; not searched, since not loaded: " + strings.Join(unread, ", ")}
}

// ensureDependencies creates (or points) a managed Subscription for each dependency the
// plan installs, in the same namespace, and returns them as the Blueprint records them.
// A change that waits for approval only records them: they are installed once it is
// approved (approvedDependencies), as OLM installs an InstallPlan's CSVs together.
func (r *Reconciler) ensureDependencies(ctx context.Context, sub *omv1.Subscription, plan *resolve.Plan, create bool) ([]omv1.ResolvedDependency, error) {
	var deps []omv1.ResolvedDependency
	for _, step := range plan.Install {
		deps = append(deps, omv1.ResolvedDependency{Package: step.Package, Version: step.Version.String(), CSVName: step.CSVName,
			Catalog: step.Catalog, BundleDigest: step.Digest, Reason: step.Reason})
		if !create {
			continue
		}
		if err := r.ensureDependency(ctx, sub, step); err != nil {
			return nil, err
		}
	}
	for _, s := range plan.Satisfied {
		reason := fmt.Sprintf("%s (required by %s) is met by the installed %s%s", s.Requirement, s.RequiredBy, s.CSVName, resolve.ChangingNote(s.ChangingFrom))
		if s.ServedFrom != "" {
			reason += ", which Subscription " + s.ServedFrom + " runs for this namespace"
		}
		deps = append(deps, omv1.ResolvedDependency{Package: s.Package, Version: s.Version.String(), CSVName: s.CSVName, Reason: reason,
			ServedFrom: s.ServedFrom})
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].Package < deps[j].Package })
	// One entry per package: the list is a map keyed by package in the API.
	out := deps[:0]
	for i, d := range deps {
		if i > 0 && d.Package == deps[i-1].Package {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// awaitsApproval says whether pointing the Blueprint at target makes a change that waits
// for a person, decided as the Blueprint's Plan decides it (blueprint.AwaitsApproval) for
// the change not yet approved: a Manual Subscription's change of the running version, or
// its first install when that waits too (OLM's installPlanApproval: Manual).
func awaitsApproval(sub *omv1.Subscription, bp *omv1.Blueprint, exists bool, target string) bool {
	next := &omv1.Blueprint{}
	next.Spec.ClusterServiceVersionName = target
	if exists {
		next.Status.CurrentCSV = bp.Status.CurrentCSV
	}
	return blueprint.AwaitsApproval(blueprint.PolicyOf(sub), next)
}

// waitsForWindow says whether pointing the Blueprint at target makes an upgrade that waits
// for the Subscription's upgrade windows, decided as the Blueprint decides it
// (blueprint.WindowHold): the dependencies it brings wait with it.
func waitsForWindow(sub *omv1.Subscription, bp *omv1.Blueprint, exists bool, target string, now time.Time) bool {
	next := &omv1.Blueprint{}
	next.Spec.ClusterServiceVersionName = target
	if exists {
		next.Status.CurrentCSV = bp.Status.CurrentCSV
	}
	h, _ := blueprint.WindowHold(sub, next, now)
	return h != nil
}

// approvedDependencies installs the dependencies a change recorded while it waited for
// approval or for an upgrade window, once it goes ahead (its revision opened). Only
// missing ones are written: the others already carry this Subscription's name.
func (r *Reconciler) approvedDependencies(ctx context.Context, sub *omv1.Subscription, bp *omv1.Blueprint) error {
	if !blueprint.Attempted(bp) {
		return nil
	}
	for _, d := range bp.Spec.Dependencies {
		if d.BundleDigest == "" {
			continue // met by an installed operator
		}
		dep := &omv1.Subscription{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: d.Package}, dep)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && listHas(dep.Annotations[AnnotationRequiredBy], sub.Name) {
			continue
		}
		step := resolve.Step{Package: d.Package, CSVName: d.CSVName, Catalog: d.Catalog, Digest: d.BundleDigest, Reason: d.Reason}
		if cat := r.Catalogs.Get(omv1.CatalogKey(d.Catalog, sub.Namespace)); cat != nil {
			step.Bundle = cat.BundleByDigest(d.BundleDigest)
		}
		v, perr := semver.ParseTolerant(d.Version)
		if perr != nil {
			return fmt.Errorf("dependency %s of Blueprint %s/%s: version %q: %w", d.Package, bp.Namespace, bp.Name, d.Version, perr)
		}
		step.Version = v
		if err := r.ensureDependency(ctx, sub, step); err != nil {
			return err
		}
	}
	return nil
}

func listHas(list, name string) bool {
	for _, n := range strings.Split(list, ",") {
		if n == name {
			return true
		}
	}
	return false
}

func (r *Reconciler) ensureDependency(ctx context.Context, sub *omv1.Subscription, step resolve.Step) error {
	dep := &omv1.Subscription{}
	key := client.ObjectKey{Namespace: sub.Namespace, Name: step.Package}
	err := r.Client.Get(ctx, key, dep)
	if err == nil {
		if dep.Status.Package != "" && dep.Status.Package != step.Package {
			return fmt.Errorf("dependency %s cannot be installed: Subscription %s already exists for package %s", step.Package, key, dep.Status.Package)
		}
		if !dep.DeletionTimestamp.IsZero() {
			// Made again once it is gone (its deletion's event brings this one back).
			return &resolve.Error{Reason: omv1.ReasonUnsatisfiable, Message: fmt.Sprintf(
				"dependency %s (%s) waits: its Subscription %s is being deleted, and is made again once it is gone", step.CSVName, step.Reason, key)}
		}
		again := dep.Spec.Option == omv1.OptionDelete
		if again && dep.Labels[LabelDependency] != "true" {
			// A person's own Subscription, uninstalled on purpose: not undone behind their back.
			return &resolve.Error{Reason: omv1.ReasonUnsatisfiable, Message: fmt.Sprintf(
				"dependency %s (%s) is not installed: Subscription %s, which installs package %s here, is uninstalled (spec.option: delete); set its spec.option to create, or delete it and this Subscription installs the dependency",
				step.CSVName, step.Reason, key, step.Package)}
		}
		patch := client.MergeFrom(dep.DeepCopy())
		dep.Annotations = mergeLabels(dep.Annotations, map[string]string{AnnotationRequiredBy: addToList(dep.Annotations[AnnotationRequiredBy], sub.Name)})
		if again {
			// A dependency's Subscription, uninstalled once nothing needed it (its dependents
			// gone first): needed again, it installs again. Before, only the annotation was
			// added, and the dependent ran Ready without it (found by hand).
			dep.Spec.Option = omv1.OptionCreate
		}
		if err := r.Client.Patch(ctx, dep, patch); err != nil {
			return err
		}
		if again {
			r.Recorder.Eventf(sub, nil, "Normal", "DependencyInstalling", "Resolve", "Installing dependency %s again (its Subscription %s had been uninstalled): %s", step.CSVName, key, step.Reason)
		}
		return nil
	}
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	dep = &omv1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: step.Package, Namespace: sub.Namespace,
			Labels:      map[string]string{LabelDependency: "true"},
			Annotations: map[string]string{AnnotationRequiredBy: sub.Name}},
		Spec: omv1.SubscriptionSpec{Package: step.Package, Version: step.Version.String(), Option: omv1.OptionCreate},
	}
	// The catalog the dependency was chosen from: the default one is named by nothing, one
	// of the global catalog namespace (where an OLM Subscription's sourceNamespace may
	// point) by its namespace too.
	if k := omv1.CatalogKey(step.Catalog, sub.Namespace); k != r.DefaultCatalog {
		dep.Spec.Catalog = k.Name
		if k.Namespace != sub.Namespace {
			dep.Spec.SourceNamespace = k.Namespace
		}
	}
	// The dependency watches what the operator needing it watches, where its install modes
	// allow: an operator watching its own namespace is served by a dependency watching the
	// same, which leaves room for the same pair side by side in another namespace.
	if len(sub.Spec.TargetNamespaces) > 0 && step.Bundle != nil {
		if _, err := render.TargetNamespaces(step.Bundle.InstallModes, sub.Namespace, sub.Spec.TargetNamespaces); err == nil {
			dep.Spec.TargetNamespaces = append([]string(nil), sub.Spec.TargetNamespaces...)
		}
	}
	if err := r.Client.Create(ctx, dep); err != nil {
		return fmt.Errorf("creating the Subscription of dependency %s: %w", step.Package, err)
	}
	r.Recorder.Eventf(sub, nil, "Normal", "DependencyInstalling", "Resolve", "Installing dependency %s: %s", step.CSVName, step.Reason)
	return nil
}

func addToList(list, name string) string {
	if listHas(list, name) {
		return list
	}
	if list == "" {
		return name
	}
	return list + "," + name
}

// dependents names the other Subscriptions whose Blueprint records this one as a
// dependency (those of the namespace by package, those of other namespaces by
// ServedFrom): while there are any, it is not uninstalled.
func (r *Reconciler) dependents(ctx context.Context, sub *omv1.Subscription) ([]string, error) {
	if sub.Status.Package == "" {
		return nil, nil
	}
	// Every namespace: a Blueprint elsewhere may depend on this installation, which
	// watches its namespace (ResolvedDependency.ServedFrom). Read on an uninstall only.
	list := &omv1.BlueprintList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	var out []string
	for _, bp := range list.Items {
		if (bp.Namespace == sub.Namespace && bp.Name == sub.Name) || !bp.DeletionTimestamp.IsZero() {
			continue
		}
		if bp.DependsOn(sub.Namespace, sub.Name, sub.Status.Package) {
			if bp.Namespace == sub.Namespace {
				out = append(out, bp.Name)
			} else {
				out = append(out, bp.Namespace+"/"+bp.Name)
			}
		}
	}
	return out, nil
}
