// Package recommend answers what `operator-manager recommend` and the console say about a
// package for one namespace of a cluster: the newest version that fits (its minKubeVersion
// met, its dependencies resolved against what the namespace runs or another namespace runs
// for it, its CRDs passing the preflight against the live cluster), the newer versions
// passed over with their reasons, and the RBAC the recommended version would be granted.
package recommend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdrepair"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/grants"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// Request is what to judge, and the clients of the person asking.
type Request struct {
	// Client and Dynamic read the namespace's installations and the cluster's CRDs and
	// custom resources, as the person.
	Client  client.Client
	Dynamic dynamic.Interface
	// Catalog is where the package comes from; CatalogName names it in the answer.
	Catalog     *catalog.Catalog
	CatalogName string
	Package     string
	// Channel is walked; empty means the package's default channel.
	Channel     string
	Namespace   string
	KubeVersion semver.Version
	// Note, when set, receives each note as soon as it is known (the CLI prints them on
	// standard error as it goes); they are in Result.Notes too.
	Note func(string)
}

// Result is the answer of Evaluate.
type Result struct {
	// Recommendation is resolve's answer: the bundle (nil when the installed version
	// stays), the channel, the upgrade path, the versions passed over.
	*resolve.Recommendation
	// Installed is the version of the package the namespace runs, nil when none.
	Installed *resolve.Installed
	// Notes are what installing the recommended version would do besides (storage
	// version migrations of its CRDs), one line each, ending in a newline.
	Notes []string
	// Grants is the RBAC the recommended version would be granted in the namespace.
	Grants []grants.Grant
}

// Evaluate recommends a version of req.Package for req.Namespace.
func Evaluate(ctx context.Context, req Request) (*Result, error) {
	ns, err := readNamespace(ctx, req.Client, req.Namespace, req.Catalog, req.Package)
	if err != nil {
		return nil, err
	}
	from := ns.from
	res := &Result{Installed: from}
	var dependents []resolve.Dependent
	var current *catalog.Bundle
	if from != nil {
		dependents = dependentsOf(ns.blueprints, ns.own, req.Catalog, req.Package)
		current = req.Catalog.BundleByCSV(from.CSVName)
	}
	rec, err := resolve.Recommend(resolve.RecommendRequest{Package: req.Package, Channel: req.Channel, KubeVersion: req.KubeVersion,
		Catalogs: []resolve.CatalogRef{{Name: req.CatalogName, Catalog: req.Catalog}}, Installed: ns.installed, From: from,
		Check: func(b *catalog.Bundle) error {
			// As the manager holds it: a version the installations depending on this
			// one would no longer accept is not installed.
			if broken := resolve.Breaks(b, current, dependents); len(broken) > 0 {
				return errors.New(resolve.BreaksMessage(broken))
			}
			notes, err := Preflight(ctx, req.Client, req.Dynamic, req.Catalog, b)
			for _, n := range notes {
				if req.Note != nil {
					req.Note(n)
				}
				res.Notes = append(res.Notes, n)
			}
			return err
		}})
	if err != nil {
		return nil, err
	}
	res.Recommendation = rec
	if rec.Bundle != nil {
		// An upgrade keeps the installation's target namespaces: its grants are rendered
		// for them, as the manager would render them (an operator watching its own
		// namespace gets Roles there, not the ClusterRoles of one watching all).
		var targets []string
		if ns.own != nil {
			if targets, err = installedTargets(ctx, req.Client, ns.own); err != nil {
				return nil, err
			}
		}
		if res.Grants, err = grants.Of(req.Catalog, rec.Bundle, req.Namespace, targets); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// KubeVersion is the cluster's version from its /version, as major.minor.patch.
func KubeVersion(cfg *rest.Config) (semver.Version, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return semver.Version{}, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return semver.Version{}, fmt.Errorf("reading the cluster's version (or pass --kube-version): %w", err)
	}
	v, err := semver.ParseTolerant(info.GitVersion)
	if err != nil {
		return semver.Version{}, fmt.Errorf("the cluster reports version %q: %w", info.GitVersion, err)
	}
	return semver.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}, nil
}

// namespaceState is what a namespace runs, read once for a recommendation.
type namespaceState struct {
	// installed is what the namespace's Subscriptions run, and what other namespaces run
	// for it (servedFromElsewhere).
	installed []resolve.Installed
	// from is the namespace's installation of the package, nil when there is none; own
	// is its Blueprint.
	from *resolve.Installed
	own  *omv1.Blueprint
	// blueprints are the namespace's Blueprints.
	blueprints []omv1.Blueprint
}

// readNamespace reads what namespace ns runs, and its installation of pkg.
func readNamespace(ctx context.Context, c client.Client, ns string, cat *catalog.Catalog, pkg string) (*namespaceState, error) {
	bps := &omv1.BlueprintList{}
	if err := c.List(ctx, bps, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	st := &namespaceState{blueprints: bps.Items}
	fromAt := -1
	for i := range bps.Items {
		bp := &bps.Items[i]
		// The package asked about is upgraded from what runs; the others that run count
		// as where they are going, as the manager resolves them.
		csv, version, from := bp.Status.CurrentCSV, bp.Status.CurrentVersion, ""
		if bp.Spec.Package != pkg && csv != "" {
			csv, version, from = bp.Heading()
		}
		v, err := semver.ParseTolerant(version)
		if csv == "" || err != nil {
			continue
		}
		in := resolve.Installed{Package: bp.Spec.Package, Version: v, CSVName: csv, ChangingFrom: from}
		if b := cat.BundleByCSV(csv); b != nil {
			for _, o := range b.OwnedCRDs {
				in.Provides = append(in.Provides, o.GVK())
			}
		}
		st.installed = append(st.installed, in)
		if in.Package == pkg {
			fromAt, st.own = len(st.installed)-1, bp
		}
	}
	elsewhere, err := servedFromElsewhere(ctx, c, ns, cat)
	if err != nil {
		return nil, err
	}
	st.installed = append(st.installed, elsewhere...)
	if fromAt >= 0 {
		st.from = &st.installed[fromAt]
	}
	return st, nil
}

// installedTargets is the target namespaces of the installation of Blueprint own: its
// Subscription's, else its OperatorGroup's (nil: the install mode's default).
func installedTargets(ctx context.Context, c client.Client, own *omv1.Blueprint) ([]string, error) {
	sub := &omv1.Subscription{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(own), sub); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	// An OperatorGroup that gives no answer holds the installation as it is; its own
	// targets stand for the preview.
	_ = operatorgroup.ApplyFrom(ctx, c, sub)
	return sub.Spec.TargetNamespaces, nil
}

// dependentsOf lists, among the namespace's Blueprints, the installations depending on
// own's (Blueprint.DependsOn, as the manager counts them), each with the bundle it runs
// as cat holds it. Those of other namespaces (servedFrom) are the manager's to count: a
// person may not read them.
func dependentsOf(blueprints []omv1.Blueprint, own *omv1.Blueprint, cat *catalog.Catalog, pkg string) []resolve.Dependent {
	var out []resolve.Dependent
	for i := range blueprints {
		bp := &blueprints[i]
		if bp.Name == own.Name || !bp.DeletionTimestamp.IsZero() || !bp.DependsOn(own.Namespace, own.Name, pkg) {
			continue
		}
		if b := cat.BundleByCSV(bp.Status.CurrentCSV); b != nil {
			out = append(out, resolve.Dependent{Name: bp.Name, Bundle: b})
		}
	}
	return out
}

// servedFromElsewhere lists the installations of other namespaces whose operator watches
// ns (all namespaces, or ns among their targets), as the manager's resolution counts them
// (resolve.Installed.ServedFrom): their APIs are served in ns already. The install modes
// come from cat; an installation whose CSV cat does not hold, or a person who may not
// list Subscriptions and Blueprints of every namespace, leaves them out.
func servedFromElsewhere(ctx context.Context, c client.Client, ns string, cat *catalog.Catalog) ([]resolve.Installed, error) {
	subs, bps := &omv1.SubscriptionList{}, &omv1.BlueprintList{}
	for _, list := range []client.ObjectList{subs, bps} {
		if err := c.List(ctx, list); err != nil {
			if apierrors.IsForbidden(err) {
				return nil, nil
			}
			return nil, err
		}
	}
	running := map[client.ObjectKey]*omv1.Blueprint{}
	for i := range bps.Items {
		running[client.ObjectKeyFromObject(&bps.Items[i])] = &bps.Items[i]
	}
	var out []resolve.Installed
	for i := range subs.Items {
		sub := &subs.Items[i]
		bp := running[client.ObjectKeyFromObject(sub)]
		if sub.Namespace == ns || bp == nil || bp.Status.CurrentCSV == "" || !sub.DeletionTimestamp.IsZero() {
			continue
		}
		csv, version, from := bp.Heading() // where it is going, as the manager resolves it
		b := cat.BundleByCSV(csv)
		v, err := semver.ParseTolerant(version)
		if b == nil || err != nil {
			continue
		}
		_ = operatorgroup.ApplyFrom(ctx, c, sub) // its OperatorGroup's targets, where it names none (RBAC allowing)
		targets, err := render.TargetNamespaces(b.InstallModes, sub.Namespace, sub.Spec.TargetNamespaces)
		if err != nil || !render.Watches(targets, ns) {
			continue
		}
		in := resolve.Installed{Package: bp.Spec.Package, Version: v, CSVName: csv, ChangingFrom: from, ServedFrom: sub.Namespace + "/" + sub.Name}
		for _, o := range b.OwnedCRDs {
			in.Provides = append(in.Provides, o.GVK())
		}
		out = append(out, in)
	}
	return out, nil
}

// Preflight runs the CRD preflight of a bundle against the live cluster. The storage
// version migrations a bundle that passes would need are returned as notes, and so is a
// preflight the caller may not run (it may not read CRDs or their custom resources).
func Preflight(ctx context.Context, c client.Client, dyn dynamic.Interface, cat *catalog.Catalog, b *catalog.Bundle) ([]string, error) {
	content, err := cat.Content(b)
	if errors.Is(err, catalog.ErrNoContent) {
		return nil, nil // an image-only bundle: nothing to check here
	} else if err != nil {
		return nil, err
	}
	var notes []string
	for _, u := range content.CRDs {
		crd, _, err := crdrepair.Repair(u)
		if err != nil {
			return nil, fmt.Errorf("its CRD %s cannot be installed: %v", u.GetName(), err)
		}
		_, m, v, err := crdsafety.Preflight(ctx, c, dyn, crd, b.Package)
		if apierrors.IsForbidden(err) {
			// Whoever asks may not read CRDs or their custom resources (a namespace's own
			// user): the version is not at fault, and the manager runs the same preflight
			// with its own rights before it installs anything.
			notes = append(notes, fmt.Sprintf("%s: the CRD preflight of %s was not run here, as you may not read what it reads (%v); the manager runs it before installing\n",
				b.CSVName, u.GetName(), err))
			continue
		}
		if err != nil {
			return nil, err
		} else if v != nil {
			return nil, fmt.Errorf("the CRD preflight refuses it: %v", v)
		}
		if m != nil { // only reported: recommend changes nothing
			notes = append(notes, fmt.Sprintf("%s: CRD %s drops %s, listed in its status.storedVersions: installing it first rewrites every custom resource in storage version %s and removes %s from status.storedVersions\n",
				b.CSVName, m.CRD, strings.Join(m.Drop, ", "), m.StorageVersion, strings.Join(m.Drop, ", ")))
		}
	}
	return notes, nil
}
