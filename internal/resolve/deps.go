package resolve

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// ReasonUnsatisfiable is the reason of an *Error when a bundle's dependencies (or its
// minKubeVersion) cannot be met; it is the API's condition reason of the same name.
const ReasonUnsatisfiable = "Unsatisfiable"

// Bounds of the backtracking search. Real catalogs need a handful of steps per package
// (every bundle of the community catalog resolves in at most 3), so the bounds only ever stop a
// pathological catalog, and then with an error that says so instead of a hung reconcile.
const (
	// DefaultMaxDepth bounds the length of a dependency chain (the root's own
	// dependencies are depth 1). OLM has no such bound; chains in real catalogs are 1 or
	// 2 long, and a longer one is almost certainly a loop of distinct packages.
	DefaultMaxDepth = 16
	// DefaultMaxSteps bounds the candidates tried in one resolution, over all
	// backtracking. At a few microseconds a step this caps a resolution at tens of
	// milliseconds.
	DefaultMaxSteps = 10000
)

// CatalogRef is a catalog the resolver may take bundles from.
type CatalogRef struct {
	// Name identifies the catalog in plans and messages (a CatalogSource's namespace/name).
	Name string
	// Priority orders catalogs as OLM's CatalogSource spec.priority does: higher first.
	Priority int
	Catalog  *catalog.Catalog
}

// Installed is an operator already on the cluster.
type Installed struct {
	Package string
	Version semver.Version
	CSVName string
	// Provides are the CRD versions it owns.
	Provides []catalog.GVK
	// Catalog is the name of the catalog it came from; an upgrade of it is only taken
	// from there, as its own Subscription would.
	Catalog string
	// Pinned says its own Subscription fixes its version (a startingCSV or an exact
	// version), so a resolution must not plan an upgrade of it.
	Pinned bool
	// ServedFrom, when set, is the Subscription ("namespace/name") of an installation in
	// another namespace whose operator watches the one being resolved for (all
	// namespaces, or it among its targets). Its APIs are served there already, and only
	// its own Subscription changes it: a resolution keeps it as it is, like a pinned one.
	ServedFrom string
	// ChangingFrom, when set, is the CSV that runs while its installation changes to
	// CSVName (a revision under way or waiting for approval or a window): a dependent is
	// resolved against where it is going, not against what is about to be replaced.
	ChangingFrom string
	// AskedBy, when set, is the Subscription ("namespace/name") that asks for CSVName and
	// has installed nothing yet (no Blueprint): it counts as installed, so two
	// Subscriptions made together do not both plan it, but messages must not call it so.
	AskedBy string
}

// label names it in messages: "installed X", and where it is going when it is changing;
// or, before anything is installed, the Subscription that asks for it.
func (in *Installed) label() string {
	if in.AskedBy != "" {
		return in.CSVName + ", which Subscription " + in.AskedBy + " asks for (nothing installed yet),"
	}
	return in.ref()
}

// ref names it inside a clause: "installed X", or "X (asked for by Subscription S,
// nothing installed yet)".
func (in *Installed) ref() string {
	if in.AskedBy != "" {
		return in.CSVName + " (asked for by Subscription " + in.AskedBy + ", nothing installed yet)"
	}
	return "installed " + in.CSVName + ChangingNote(in.ChangingFrom)
}

// ChangingNote is the words every message adds after an installed operator's CSV name
// when its installation is changing to that CSV from another (Installed.ChangingFrom):
// " (its installation is changing to it from Y)", or "" when from is "".
func ChangingNote(from string) string {
	if from == "" {
		return ""
	}
	return " (its installation is changing to it from " + from + ")"
}

// fixed says why a resolution may not change an installed operator ("" when it may), as
// a clause for messages.
func (in *Installed) fixed() string {
	switch {
	case in.ServedFrom != "":
		return "it runs for this namespace from Subscription " + in.ServedFrom + ", which alone changes it"
	case in.Pinned:
		return "its Subscription pins that version"
	}
	return ""
}

// Request is what Resolve needs: the bundle already chosen for a Subscription, where
// dependencies may come from, and what the cluster has.
type Request struct {
	// Root is the bundle being installed; its package's installed version (if any) is
	// the one it replaces and is ignored.
	Root *catalog.Bundle
	// Catalogs are searched for dependencies. Catalogs[0] is the root's own catalog; the
	// others are ordered by Priority (higher first), then by name, so their order in the
	// slice does not matter.
	Catalogs []CatalogRef
	// Installed are the operators on the cluster. When several entries share a package,
	// the newest version counts.
	Installed []Installed
	// KubeVersion is the cluster's version; the zero value means unknown, and then no
	// minKubeVersion is checked.
	KubeVersion semver.Version
	// MaxDepth and MaxSteps override DefaultMaxDepth and DefaultMaxSteps when positive.
	MaxDepth, MaxSteps int
}

// Step is a bundle the plan installs because another bundle needs it.
type Step struct {
	Package string
	Version semver.Version
	CSVName string
	Catalog string
	Digest  string
	// Reason says which constraint chose it, for example
	// "required by backup-operator.v0.2.0: olm.package cache-operator >=1.1.0 <1.3.0".
	Reason string
	// Upgrades is the CSV name of the installed version this step upgrades, if any.
	Upgrades string
	Bundle   *catalog.Bundle
}

// Satisfied is a dependency an installed operator already meets.
type Satisfied struct {
	// Requirement is the constraint, for example "olm.package cache-operator >=1.1.0".
	Requirement string
	// RequiredBy is the CSV name of the bundle that imposes it.
	RequiredBy string
	// Package, Version and CSVName name the installed operator meeting it.
	Package string
	Version semver.Version
	CSVName string
	// ServedFrom is the installed operator's Subscription when it runs in another
	// namespace (Installed.ServedFrom).
	ServedFrom string
	// ChangingFrom is what runs while the installation changes to CSVName
	// (Installed.ChangingFrom).
	ChangingFrom string
}

// Plan is the answer of Resolve.
type Plan struct {
	Root        *catalog.Bundle
	RootCatalog string
	// Install lists the dependencies to install, dependencies before their dependents.
	// Members of a dependency cycle come in package-name order among themselves.
	Install []Step
	// Satisfied lists the dependencies met by installed operators, in the order the
	// search met them.
	Satisfied []Satisfied
	// Steps is the number of candidates the search tried.
	Steps int
}

// Resolve chooses the operators that Root needs, transitively: the olm.package and
// olm.gvk dependencies and the required CRDs of every chosen bundle. At most one version
// of each package is chosen, an installed operator is kept when it satisfies, and every
// chosen bundle's minKubeVersion is checked. Providers are preferred in this order: the
// installed operator, a bundle of the dependent's own catalog, catalogs by priority, then
// (for a package range) the default channel before other channels, and the highest
// version. When that first choice leads to a conflict further down, the search backtracks
// (bounded by MaxDepth and MaxSteps). A failure is an *Error with ReasonUnsatisfiable
// whose message names the constraint, who imposes it, each candidate and why it was
// refused, and the catalogs searched.
func Resolve(req Request) (*Plan, error) {
	if req.Root == nil {
		return nil, errors.New("resolving dependencies: no root bundle")
	}
	if len(req.Catalogs) == 0 || req.Catalogs[0].Catalog == nil {
		return nil, fmt.Errorf("resolving dependencies of %s: no catalog", req.Root.CSVName)
	}
	s := newSearch(req)
	if why := s.kubeRefusal(req.Root); why != "" {
		return nil, &Error{ReasonUnsatisfiable, fmt.Sprintf("cannot install %s: it %s", req.Root.CSVName, why)}
	}
	s.push(s.root)
	if f := s.solve(0); f != nil {
		return nil, &Error{ReasonUnsatisfiable, s.message(f)}
	}
	return s.plan(), nil
}

// newSearch orders the catalogs and indexes the installed operators.
func newSearch(req Request) *search {
	cats := slices.Clone(req.Catalogs[1:])
	slices.SortStableFunc(cats, func(a, b CatalogRef) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), strings.Compare(a.Name, b.Name))
	})
	cats = append([]CatalogRef{req.Catalogs[0]}, cats...)
	s := &search{
		cats:      cats,
		installed: map[string]*Installed{},
		chosen:    map[string]*choice{},
		kube:      normalKube(req.KubeVersion),
		maxDepth:  cmp.Or(max(req.MaxDepth, 0), DefaultMaxDepth),
		maxSteps:  cmp.Or(max(req.MaxSteps, 0), DefaultMaxSteps),
		reach:     map[string]map[string]bool{},
	}
	for i := range req.Installed {
		in := &req.Installed[i]
		if in.Package == req.Root.Package {
			continue // the root replaces it
		}
		if prev := s.installed[in.Package]; prev == nil || in.Version.GT(prev.Version) ||
			(in.Version.Equals(prev.Version) && in.CSVName < prev.CSVName) {
			s.installed[in.Package] = in
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(s.installed)) {
		s.installedList = append(s.installedList, s.installed[pkg])
	}
	s.root = &choice{pkg: req.Root.Package, bundle: req.Root, version: req.Root.Version, csv: req.Root.CSVName, catalog: cats[0].Name, root: true}
	s.choose(s.root)
	return s
}

// plan turns the final choices into the install order and the satisfied list.
func (s *search) plan() *Plan {
	p := &Plan{Root: s.root.bundle, RootCatalog: s.root.catalog, Steps: s.steps}
	// before[x] lists the new bundles x must wait for.
	before := map[*choice][]*choice{}
	seen := map[string]bool{}
	for _, r := range s.agenda {
		by := s.satisfier(r)
		if by == nil {
			continue // cannot happen after a successful search
		}
		if by.bundle == nil {
			sat := Satisfied{Requirement: r.constraint(), RequiredBy: r.by.csv, Package: by.pkg, Version: by.version, CSVName: by.csv,
				ServedFrom: by.installed.ServedFrom, ChangingFrom: by.installed.ChangingFrom}
			if key := sat.Requirement + "\x00" + sat.RequiredBy + "\x00" + sat.CSVName; !seen[key] {
				seen[key] = true
				p.Satisfied = append(p.Satisfied, sat)
			}
			continue
		}
		if by != r.by && !by.root && !r.by.root {
			before[r.by] = append(before[r.by], by)
		}
	}
	for _, c := range installOrder(s.order, before) {
		st := Step{Package: c.pkg, Version: c.version, CSVName: c.csv, Catalog: c.catalog, Digest: c.bundle.Digest, Reason: c.req.reason(), Bundle: c.bundle}
		if c.installed != nil {
			st.Upgrades = c.installed.CSVName
		}
		p.Install = append(p.Install, st)
	}
	return p
}

// installOrder sorts the new bundles among choices so that each comes after the bundles
// it needs. Among bundles that are ready together, and to break a cycle (whose members
// need each other, so none can go strictly first), the package name decides, which keeps
// the order independent of the search's path.
func installOrder(choices []*choice, before map[*choice][]*choice) []*choice {
	var pending []*choice
	for _, c := range choices {
		if c.bundle != nil && !c.root {
			pending = append(pending, c)
		}
	}
	slices.SortFunc(pending, func(a, b *choice) int { return strings.Compare(a.pkg, b.pkg) })
	done := map[*choice]bool{}
	out := make([]*choice, 0, len(pending))
	for len(pending) > 0 {
		pick := 0 // when every pending bundle waits on another (a cycle), take the first by name
		for i, c := range pending {
			if !slices.ContainsFunc(before[c], func(d *choice) bool { return !done[d] }) {
				pick = i
				break
			}
		}
		done[pending[pick]] = true
		out = append(out, pending[pick])
		pending = slices.Delete(pending, pick, pick+1)
	}
	return out
}

// kubeRefusal says why b cannot run on the cluster, or "".
func (s *search) kubeRefusal(b *catalog.Bundle) string { return kubeRefusal(s.kube, b) }
