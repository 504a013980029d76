package resolve

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
)

// maxClauses bounds the candidates a message lists one by one; the rest are counted.
// Ranked by preference, the first few are the ones a person would pick anyway.
const maxClauses = 8

// maxGroupVersions bounds the versions written in one "out of range" clause.
const maxGroupVersions = 6

// failure is why a requirement could not be met: the candidates and why each was
// refused, or the earlier choice it conflicts with. deps are the choices it depends on
// (the bundle imposing it, choices its candidates conflicted with, and what nested
// failures depended on): only those are worth revisiting.
type failure struct {
	req      *requirement
	conflict *choice  // a package already chosen at a version out of range
	disjoint bool     // no version of the package in the catalogs meets both ranges
	opts     []option // candidates in order of preference, each with its refusal
	groups   []string // bundles refused together: out of range, not an upgrade, ...
	none     string   // set when there was no candidate at all
	// evalErr is the first error evaluating a constraint's rule on a bundle, and
	// evalErrs how many bundles it failed on, for the message when nothing meets it.
	evalErr  error
	evalErrs int
	depth    int // set to the bound when the chain was too deep
	deps     map[*choice]bool
	cause    *failure // the first nested failure, for the detail of a message
}

func newFailure(r *requirement) *failure {
	f := &failure{req: r, deps: map[*choice]bool{}}
	f.blame(r.by)
	return f
}

// blame records that f depends on choice c; the root and installed operators are fixed.
func (f *failure) blame(c *choice) {
	if c != nil && !c.root {
		f.deps[c] = true
	}
}

// absorb takes over what a nested failure under candidate c depends on, except c itself.
func (f *failure) absorb(sub *failure, c *choice) {
	for d := range sub.deps {
		if d != c {
			f.deps[d] = true
		}
	}
	if f.cause == nil {
		f.cause = sub
	}
}

// leaf follows first causes down to the failure where the trouble started.
func (f *failure) leaf() *failure {
	for f.cause != nil {
		f = f.cause
	}
	return f
}

// group adds one clause for several versions of a package refused for the same reason.
func (f *failure) group(pkg, catName string, vs []semver.Version, why string) {
	if len(vs) == 0 {
		return
	}
	list := make([]string, 0, min(len(vs), maxGroupVersions))
	for _, v := range vs[:min(len(vs), maxGroupVersions)] {
		list = append(list, v.String())
	}
	more, verb := "", "is"
	if len(vs) > maxGroupVersions {
		more = fmt.Sprintf(" and %d more", len(vs)-maxGroupVersions)
	}
	if len(vs) > 1 {
		verb = "are"
	}
	f.groups = append(f.groups, fmt.Sprintf("%s %s%s (catalog %s) %s %s", pkg, strings.Join(list, ", "), more, catName, verb, why))
}

// headline is one sentence: who requires what, and the gist of why it fails.
func (f *failure) headline() string {
	r := f.req
	lead := fmt.Sprintf("%s requires %s", r.by.csv, r.constraint())
	switch {
	case f.depth > 0:
		return fmt.Sprintf("%s, but that is deeper than %d dependencies from the operator being installed", lead, f.depth)
	case f.conflict != nil && f.disjoint:
		return fmt.Sprintf("%s, but %s %s is already chosen (%s), and no version of %s in the catalogs is in both ranges",
			lead, f.conflict.pkg, f.conflict.version, f.conflict.describe(), f.conflict.pkg)
	case f.conflict != nil:
		return fmt.Sprintf("%s, but %s %s is already chosen (%s)", lead, f.conflict.pkg, f.conflict.version, f.conflict.describe())
	case f.none != "":
		return lead + ", but " + f.none
	}
	return lead + ", and no candidate fits"
}

// full is the headline followed by one clause per candidate.
func (f *failure) full() string {
	var clauses []string
	for i := range f.opts {
		o := &f.opts[i]
		why := o.why
		if why == "" {
			why = "was not tried (search bound reached)"
		}
		clauses = append(clauses, o.label()+" "+why)
	}
	clauses = append(clauses, f.groups...)
	if len(clauses) == 0 {
		return f.headline()
	}
	if len(clauses) > maxClauses {
		clauses = append(clauses[:maxClauses], fmt.Sprintf("and %d more", len(clauses)-maxClauses))
	}
	return f.headline() + ": " + strings.Join(clauses, "; ")
}

// message is the text of the *Error for a failed search: the failure, its first cause
// when that has detail of its own, and the catalogs searched.
func (s *search) message(f *failure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot install %s: ", s.root.csv)
	if s.gaveUp {
		fmt.Fprintf(&b, "gave up after trying %d candidates (the bound); when it stopped, ", s.steps)
	}
	b.WriteString(f.full())
	if c := f.leaf(); c != f && c.full() != c.headline() {
		b.WriteString(". First cause: ")
		b.WriteString(c.full())
	}
	b.WriteString(". Catalogs searched: ")
	for i, c := range s.cats {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (priority %d)", c.Name, c.Priority)
	}
	b.WriteString(".")
	return b.String()
}

// depthFailure fails a requirement past the depth bound; it depends on the whole chain
// of choices that led to it.
func (s *search) depthFailure(r *requirement) *failure {
	f := newFailure(r)
	f.depth = s.maxDepth
	for c := r.by; c != nil && c.req != nil; c = c.req.by {
		f.blame(c)
	}
	return f
}

// conflictFailure fails a package range against the version already chosen for it.
func (s *search) conflictFailure(r *requirement, c *choice) *failure {
	f := newFailure(r)
	f.conflict = c
	f.blame(c)
	if c.req != nil && c.req.kind == reqPackage {
		f.disjoint = true
		for _, cat := range s.cats {
			if p := cat.Catalog.Package(r.pkg); p != nil {
				for _, b := range p.Bundles {
					if r.rng.Contains(b.Version) && c.req.rng.Contains(b.Version) {
						f.disjoint = false
					}
				}
			}
		}
	}
	return f
}

// evaluated counts a constraint evaluation's error, keeping the first.
func (f *failure) evaluated(err error) {
	if err == nil {
		return
	}
	if f.evalErr == nil {
		f.evalErr = err
	}
	f.evalErrs++
}
