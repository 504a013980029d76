package resolve

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// reqKind is what a requirement asks for.
type reqKind int

const (
	reqPackage reqKind = iota // olm.package: a package in a version range
	reqGVK                    // olm.gvk: a bundle owning a CRD version
	reqCRD                    // a CSV's required CRD: the same, written elsewhere
	reqMatch                  // olm.label or olm.constraint: one bundle meeting dep
)

// requirement is one dependency of one chosen bundle.
type requirement struct {
	kind  reqKind
	pkg   string
	rng   catalog.VersionRange
	gvk   catalog.GVK
	dep   catalog.Dependency // as the catalog wrote it (none for reqCRD)
	by    *choice            // the bundle imposing it
	depth int                // 1 for the root's own dependencies
}

// constraint writes the requirement as the catalog states it, after the author's
// failureMessage when there is one.
func (r *requirement) constraint() string {
	if r.kind == reqMatch {
		return r.dep.String()
	}
	if r.dep.Message != "" {
		return strconv.Quote(r.dep.Message) + " (" + r.statement() + ")"
	}
	return r.statement()
}

func (r *requirement) statement() string {
	switch r.kind {
	case reqPackage:
		return fmt.Sprintf("%s %s %s", catalog.DependencyPackage, r.pkg, r.rng.Raw)
	case reqGVK:
		return fmt.Sprintf("%s %s", catalog.DependencyGVK, r.gvk.Text())
	}
	return "required CRD " + r.gvk.Text()
}

// reason is why a bundle chosen for this requirement is in the plan.
func (r *requirement) reason() string {
	switch r.kind {
	case reqPackage:
		return fmt.Sprintf("required by %s: %s", r.by.csv, r.constraint())
	case reqMatch:
		return fmt.Sprintf("meets %s required by %s", r.constraint(), r.by.csv)
	}
	return fmt.Sprintf("provides %s required by %s", r.gvk.Text(), r.by.csv)
}

// choice is one package's decided version: the root, a bundle from a catalog (possibly
// an upgrade of an installed operator), or an installed operator kept as it is.
type choice struct {
	pkg       string
	bundle    *catalog.Bundle // nil when an installed operator is kept
	installed *Installed      // the installed operator kept or upgraded
	version   semver.Version
	csv       string
	catalog   string
	req       *requirement // the requirement that chose it; nil for the root
	root      bool
}

func (c *choice) provides(g catalog.GVK) bool {
	if c.bundle != nil {
		return c.bundle.Provides(g)
	}
	return slices.ContainsFunc(c.installed.Provides, func(p catalog.GVK) bool { return p.Meets(g) })
}

// search is the state of one resolution: the choices so far, the requirements they
// impose (processed in order, so the agenda doubles as the search's trail), and counters.
type search struct {
	cats      []CatalogRef
	installed map[string]*Installed
	// installedList is installed by package name, for a deterministic scan.
	installedList []*Installed
	chosen        map[string]*choice
	order         []*choice
	agenda        []*requirement
	root          *choice
	kube          semver.Version
	maxDepth      int
	maxSteps      int
	steps         int
	gaveUp        bool
	// reach caches, per installed package, the CSV names reachable from the installed
	// version by upgrade edges in its own catalog.
	reach map[string]map[string]bool
}

func (s *search) choose(c *choice) {
	s.chosen[c.pkg] = c
	s.order = append(s.order, c)
}

func (s *search) unchoose(c *choice, agendaLen int) {
	delete(s.chosen, c.pkg)
	s.order = s.order[:len(s.order)-1]
	s.agenda = s.agenda[:agendaLen]
}

// push appends the requirements of a newly chosen bundle: package ranges first, since
// they constrain most and so fail fastest, then olm.gvk, then olm.label and olm.constraint
// (which may name any package), then required CRDs the bundle neither owns itself nor
// already asks for by olm.gvk. A kept installed operator adds
// nothing: what it needs was settled when it was installed.
func (s *search) push(c *choice) {
	if c.bundle == nil {
		return
	}
	depth := 1
	if c.req != nil {
		depth = c.req.depth + 1
	}
	b := c.bundle
	for _, d := range b.Dependencies {
		if d.Type == catalog.DependencyPackage {
			s.agenda = append(s.agenda, &requirement{kind: reqPackage, pkg: d.Package, rng: d.Versions, dep: d, by: c, depth: depth})
		}
	}
	for _, d := range b.Dependencies {
		if d.Type == catalog.DependencyGVK {
			s.agenda = append(s.agenda, &requirement{kind: reqGVK, gvk: d.GVK, dep: d, by: c, depth: depth})
		}
	}
	for _, d := range b.Dependencies {
		if d.Type == catalog.DependencyLabel || d.Type == catalog.DependencyConstraint {
			s.agenda = append(s.agenda, &requirement{kind: reqMatch, dep: d, by: c, depth: depth})
		}
	}
	for _, crd := range b.RequiredCRDs {
		g := crd.GVK()
		if b.Provides(g) || hasGVKDependency(b, g) {
			continue
		}
		s.agenda = append(s.agenda, &requirement{kind: reqCRD, gvk: g, by: c, depth: depth})
	}
}

func hasGVKDependency(b *catalog.Bundle, g catalog.GVK) bool {
	for _, d := range b.Dependencies {
		if d.Type == catalog.DependencyGVK && d.GVK == g {
			return true
		}
	}
	return false
}

// satisfier returns the choice that meets r, or nil: for a package range, the package's
// choice when its version is in range; for a GVK, the first choice owning it; for a label
// or constraint, the first choice meeting it.
func (s *search) satisfier(r *requirement) *choice {
	switch r.kind {
	case reqPackage:
		if c := s.chosen[r.pkg]; c != nil && r.rng.Contains(c.version) {
			return c
		}
		return nil
	case reqMatch:
		for _, c := range s.order {
			if ok, _ := r.dep.Matches(s.subject(c)); ok {
				return c
			}
		}
		return nil
	}
	for _, c := range s.order {
		if c.provides(r.gvk) {
			return c
		}
	}
	return nil
}

// solve meets the requirements from agenda[i] on, choosing providers for those not met
// yet. It returns nil on success, with the choices in place, or the failure that stopped
// it. The backtracking is conflict-directed: a failure carries the decisions it depends
// on, and a decision not among them is not retried (its alternatives would fail the same
// way), which keeps the search small and the reported failure the one that matters.
func (s *search) solve(i int) *failure {
	for ; i < len(s.agenda); i++ {
		r := s.agenda[i]
		if s.satisfier(r) != nil {
			continue
		}
		if r.depth > s.maxDepth {
			return s.depthFailure(r)
		}
		if r.kind == reqPackage {
			if c := s.chosen[r.pkg]; c != nil {
				return s.conflictFailure(r, c)
			}
		}
		return s.decide(i, r)
	}
	return nil
}

// decide tries r's candidates in order of preference, each followed by the rest of the
// agenda.
func (s *search) decide(i int, r *requirement) *failure {
	f := newFailure(r)
	opts := s.candidates(r, f)
	for k := range opts {
		o := &opts[k]
		if o.why == "" && o.b != nil {
			o.why = s.kubeRefusal(o.b)
		}
		if o.why != "" {
			continue
		}
		if s.steps >= s.maxSteps {
			s.gaveUp = true
		}
		if s.gaveUp {
			return f
		}
		s.steps++
		c := o.choice(r)
		if why, with := s.ownershipConflict(c); why != "" {
			o.why = why
			f.blame(with)
			continue
		}
		mark := len(s.agenda)
		s.choose(c)
		s.push(c)
		sub := s.solve(i + 1)
		if sub == nil {
			return nil
		}
		s.unchoose(c, mark)
		if s.gaveUp || !sub.deps[c] {
			return sub // backjump: this choice is not what failed
		}
		o.why = "is refused because " + sub.leaf().headline()
		f.absorb(sub, c)
	}
	return f
}

// ownershipConflict refuses a new bundle that would own a CRD another chosen or installed
// package owns: two operators reconciling one kind fight over its objects, and
// uninstalling either could take the CRD from the other.
func (s *search) ownershipConflict(c *choice) (string, *choice) {
	if c.bundle == nil {
		return "", nil
	}
	for _, crd := range c.bundle.OwnedCRDs {
		g := catalog.GVK{Group: crd.Group, Kind: crd.Kind}
		for _, o := range s.order {
			if o.pkg != c.pkg && o.provides(g) {
				return fmt.Sprintf("would also own %s, which %s owns", g.Text(), o.csv), o
			}
		}
		for _, in := range s.installedList {
			if in.Package != c.pkg && s.chosen[in.Package] == nil && (&choice{installed: in}).provides(g) {
				return fmt.Sprintf("would also own %s, which installed %s owns", g.Text(), in.CSVName), nil
			}
		}
	}
	return "", nil
}

// subject is a choice as a constraint sees it: a catalog bundle's own properties, or an
// installed operator's package, version and APIs, with its catalog bundle's properties
// when its catalog still has it.
func (s *search) subject(c *choice) catalog.Subject {
	if c.bundle != nil {
		return catalog.SubjectOf(c.bundle)
	}
	return s.installedSubject(c.installed)
}

func (s *search) installedSubject(in *Installed) catalog.Subject {
	sub := catalog.Subject{Package: in.Package, Version: in.Version, APIs: in.Provides}
	if cat, _ := s.installedPackage(in); cat.Catalog != nil {
		if b := cat.Catalog.BundleByCSV(in.CSVName); b != nil && b.Package == in.Package {
			sub.Properties = b.Properties
		}
	}
	return sub
}
