package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/constraints"
)

// Dependency and property types beyond olm.package and olm.gvk (OLM's names).
const (
	// DependencyConstraint is OLM's generic constraint: a package, a GVK, a CEL rule
	// over a bundle's properties, or all/any/not of constraints, met by one bundle.
	DependencyConstraint = constraints.OLMConstraintType
	// DependencyLabel requires a bundle carrying an olm.label property with that label
	// (metadata/dependencies.yaml's olm.label; olm.label.required in a File-Based Catalog).
	DependencyLabel   = "olm.label"
	PropLabel         = "olm.label"
	PropLabelRequired = "olm.label.required"
)

// maxConstraintDepth bounds the nesting of compound constraints, as OLM's design asks of
// tools that read them: a deeper tree is refused at load, not evaluated.
const maxConstraintDepth = 10

// Property is a bundle property the index keeps for constraints to read (olm.label and any
// type of the catalog's own, such as "certified"): the ones it models otherwise
// (olm.package, olm.gvk, the required ones, manifests, CSV metadata) are not repeated.
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// keptProperty says whether a property of this type is kept in Bundle.Properties.
func keptProperty(typ string) bool {
	switch typ {
	case PropPackage, PropGVK, PropPackageRequired, PropGVKRequired, PropLabelRequired, propBundleObject,
		PropCSVMetadata, DependencyConstraint, "":
		return false
	}
	return true
}

// parseConstraint reads an olm.constraint value as OLM does (operator-framework/api's
// constraints.Parse: unknown fields and values over 128 KiB refused) and checks what OLM
// would find only while resolving: exactly one kind per constraint, version ranges that
// parse, CEL rules that compile to a bool, nesting within maxConstraintDepth. Errors name
// the field ("all.constraints[1].package.versionRange"). A top-level package or gvk
// constraint is returned as the plain dependency it means, so it is resolved and reported
// like olm.package.required and olm.gvk.required.
func parseConstraint(raw json.RawMessage) (Dependency, error) {
	c, err := constraints.Parse(raw)
	if err != nil {
		return Dependency{}, err
	}
	if err := checkConstraint(&c, "", 0); err != nil {
		return Dependency{}, err
	}
	var dep Dependency
	switch {
	case c.Package != nil:
		dep, _ = packageDependency(c.Package.PackageName, c.Package.VersionRange)
	case c.GVK != nil:
		dep, _ = gvkDependency(c.GVK.Group, c.GVK.Version, c.GVK.Kind)
	default:
		return Dependency{Type: DependencyConstraint, Constraint: &c}, nil
	}
	dep.Message = strings.TrimSpace(c.FailureMessage)
	return dep, nil
}

func checkConstraint(c *constraints.Constraint, at string, depth int) error {
	// field names a field of this constraint; at is the path to it ("" at the top).
	field := func(f string) string {
		if at == "" {
			return f
		}
		return at + "." + f
	}
	here := func(msg string) error {
		if at == "" {
			return errors.New(msg)
		}
		return fmt.Errorf("%s: %s", at, msg)
	}
	if depth > maxConstraintDepth {
		return here(fmt.Sprintf("nested deeper than %d compound constraints", maxConstraintDepth))
	}
	var kinds []string
	for _, k := range []struct {
		set  bool
		name string
	}{{c.Package != nil, "package"}, {c.GVK != nil, "gvk"}, {c.Cel != nil, "cel"}, {c.All != nil, "all"}, {c.Any != nil, "any"}, {c.Not != nil, "not"}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	switch {
	case len(kinds) == 0:
		return here("none of package, gvk, cel, all, any or not is set")
	case len(kinds) > 1:
		return here(strings.Join(kinds, " and ") + " are set, and a constraint is one of them")
	}
	switch {
	case c.Package != nil:
		if _, err := packageDependency(c.Package.PackageName, c.Package.VersionRange); err != nil {
			return fmt.Errorf("%s: %w", field("package"), err)
		}
	case c.GVK != nil:
		if _, err := gvkDependency(c.GVK.Group, c.GVK.Version, c.GVK.Kind); err != nil {
			return fmt.Errorf("%s: %w", field("gvk"), err)
		}
	case c.Cel != nil:
		if _, err := celProgram(c.Cel.Rule); err != nil {
			return fmt.Errorf("%s: %w", field("cel.rule"), err)
		}
	default:
		name, cc := compound(c)
		if len(cc.Constraints) == 0 {
			return fmt.Errorf("%s: no constraints", field(name+".constraints"))
		}
		for i := range cc.Constraints {
			if err := checkConstraint(&cc.Constraints[i], field(fmt.Sprintf("%s.constraints[%d]", name, i)), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// compound returns a compound constraint's kind and members.
func compound(c *constraints.Constraint) (string, *constraints.CompoundConstraint) {
	switch {
	case c.All != nil:
		return "all", c.All
	case c.Any != nil:
		return "any", c.Any
	case c.Not != nil:
		return "not", c.Not
	}
	return "", nil
}

// celEnv is OLM's CEL environment (operator-framework/api): a list "properties" of
// {type, value} maps, and semver_compare. Built once: it takes milliseconds.
var celEnv = sync.OnceValue(constraints.NewCelEnvironment)

// celPrograms memoises compiled rules: a catalog repeats one rule across a package's
// versions, and the resolver evaluates each for many bundles. At most maxCELPrograms are
// kept, so catalogs that change their rules at each poll cannot grow it without end.
var (
	celPrograms    sync.Map // rule -> celCompiled
	celProgramsN   atomic.Int32
	maxCELPrograms int32 = 1024
)

type celCompiled struct {
	prog constraints.CelProgram
	err  error
	// bound, when bounded, narrows the bundles the rule can hold for (celHint).
	bound   celBound
	bounded bool
}

func celProgram(rule string) (constraints.CelProgram, error) {
	c := celCompile(rule)
	return c.prog, c.err
}

func celCompile(rule string) celCompiled {
	if v, ok := celPrograms.Load(rule); ok {
		return v.(celCompiled)
	}
	var c celCompiled
	if strings.TrimSpace(rule) == "" {
		c.err = errors.New("is empty")
	} else if c.prog, c.err = celEnv().Validate(rule); c.err != nil {
		c.err = errors.New(celErrorLine(c.err))
	} else {
		c.bound, c.bounded = celHint(rule)
	}
	if celProgramsN.Add(1) <= maxCELPrograms {
		celPrograms.Store(rule, c)
	}
	return c
}

// celErrorLine writes CEL's compile errors on one line, for a catalog's rejection list and
// a CatalogSource's status: CEL repeats the rule under each error with a caret (" | ..."),
// which the column in the error already says.
func celErrorLine(err error) string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "|") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// Subject is what a constraint is evaluated against: one bundle, from a catalog or
// installed.
type Subject struct {
	Package    string
	Version    semver.Version
	APIs       []GVK
	Properties []Property
	// bundle, for a catalog bundle, stands for APIs (its owned CRDs), read in place: the
	// resolver evaluates a constraint on every bundle of a catalog.
	bundle *Bundle
}

// SubjectOf is a catalog bundle as a constraint sees it.
func SubjectOf(b *Bundle) Subject {
	return Subject{Package: b.Package, Version: b.Version, Properties: b.Properties, bundle: b}
}

func (s Subject) provides(g GVK) bool {
	if s.bundle != nil {
		return s.bundle.Provides(g)
	}
	return slices.ContainsFunc(s.APIs, func(a GVK) bool { return a.Meets(g) })
}

func (s Subject) apis() []GVK {
	if s.bundle == nil {
		return s.APIs
	}
	out := make([]GVK, 0, len(s.bundle.OwnedCRDs))
	for _, c := range s.bundle.OwnedCRDs {
		out = append(out, c.GVK())
	}
	return out
}

// Hint narrows the bundles that can meet d to those of some packages or owning some
// GVKs, which the index finds without evaluating d on every bundle; ok is false when d
// gives no such bound (a label, not, a CEL rule whose shape names no package or GVK it
// needs: celHint). A bundle outside the hint never meets d; one inside must still be
// checked with Matches.
func (d Dependency) Hint() (pkgs []string, gvks []GVK, ok bool) {
	switch d.Type {
	case DependencyPackage:
		return []string{d.Package}, nil, true
	case DependencyGVK:
		return nil, []GVK{d.GVK}, true
	case DependencyConstraint:
		return hint(d.Constraint)
	}
	return nil, nil, false
}

func hint(c *constraints.Constraint) (pkgs []string, gvks []GVK, ok bool) {
	switch {
	case c.Package != nil:
		return []string{c.Package.PackageName}, nil, true
	case c.GVK != nil:
		return nil, []GVK{{Group: c.GVK.Group, Version: c.GVK.Version, Kind: c.GVK.Kind}}, true
	case c.Cel != nil:
		if cc := celCompile(c.Cel.Rule); cc.err == nil && cc.bounded {
			return slices.Clone(cc.bound.pkgs), slices.Clone(cc.bound.gvks), true
		}
	case c.All != nil:
		// Every member must hold, so any member's bound bounds the whole.
		for i := range c.All.Constraints {
			if p, g, ok := hint(&c.All.Constraints[i]); ok {
				return p, g, true
			}
		}
	case c.Any != nil:
		// One member must hold: the union of their bounds, if each has one.
		for i := range c.Any.Constraints {
			p, g, ok := hint(&c.Any.Constraints[i])
			if !ok {
				return nil, nil, false
			}
			pkgs, gvks = append(pkgs, p...), append(gvks, g...)
		}
		return pkgs, gvks, true
	}
	return nil, nil, false
}

// Matches says whether s meets d, an olm.constraint or olm.label dependency. An error is
// a CEL rule that failed on s's properties (a field s lacks, a version that is not
// semver): s does not meet it, and the error is kept for the message when nothing does.
func (d Dependency) Matches(s Subject) (bool, error) {
	switch d.Type {
	case DependencyLabel:
		return s.hasLabel(d.Label), nil
	case DependencyConstraint:
		return matches(d.Constraint, s)
	case DependencyPackage:
		return s.Package == d.Package && d.Versions.Contains(s.Version), nil
	case DependencyGVK:
		return s.provides(d.GVK), nil
	}
	return false, fmt.Errorf("dependency type %q is not evaluated", d.Type)
}

func (s Subject) hasLabel(label string) bool {
	for _, p := range s.Properties {
		if p.Type != PropLabel {
			continue
		}
		var v struct {
			Label string `json:"label"`
		}
		if json.Unmarshal(p.Value, &v) == nil && v.Label == label {
			return true
		}
	}
	return false
}

func matches(c *constraints.Constraint, s Subject) (bool, error) {
	switch {
	case c.Package != nil:
		if s.Package != c.Package.PackageName {
			return false, nil
		}
		r, err := ParseVersionRange(c.Package.VersionRange) // checked at load: it parses
		return err == nil && r.Contains(s.Version), err
	case c.GVK != nil:
		return s.provides(GVK{Group: c.GVK.Group, Version: c.GVK.Version, Kind: c.GVK.Kind}), nil
	case c.Cel != nil:
		prog, err := celProgram(c.Cel.Rule)
		if err != nil {
			return false, err
		}
		ok, err := prog.Evaluate(map[string]any{constraints.PropertiesKey: s.celProperties()})
		if err != nil {
			return false, fmt.Errorf("cel rule %q on %s %s: %w", c.Cel.Rule, s.Package, s.Version, err)
		}
		return ok, nil
	}
	name, cc := compound(c)
	var firstErr error
	for i := range cc.Constraints {
		ok, err := matches(&cc.Constraints[i], s)
		if firstErr == nil {
			firstErr = err
		}
		switch {
		case name == "all" && !ok:
			return false, firstErr
		case name == "any" && ok:
			return true, nil
		case name == "not" && ok:
			return false, nil
		}
	}
	if name == "any" {
		return false, firstErr
	}
	return true, nil
}

// celProperties is the "properties" a CEL rule reads, as OLM gives them: the bundle's
// olm.package and one olm.gvk per API, then its other properties, values decoded.
func (s Subject) celProperties() []any {
	props := []any{map[string]any{"type": PropPackage, "value": map[string]any{"packageName": s.Package, "version": s.Version.String()}}}
	for _, a := range s.apis() {
		props = append(props, map[string]any{"type": PropGVK, "value": map[string]any{"group": a.Group, "version": a.Version, "kind": a.Kind}})
	}
	for _, p := range s.Properties {
		var v any
		if json.Unmarshal(p.Value, &v) != nil {
			continue
		}
		props = append(props, map[string]any{"type": p.Type, "value": v})
	}
	return props
}

func constraintText(c *constraints.Constraint) string {
	switch {
	case c.Package != nil:
		return fmt.Sprintf("package %s %s", c.Package.PackageName, c.Package.VersionRange)
	case c.GVK != nil:
		return "gvk " + GVK{Group: c.GVK.Group, Version: c.GVK.Version, Kind: c.GVK.Kind}.Text()
	case c.Cel != nil:
		return "cel " + strconv.Quote(c.Cel.Rule)
	}
	name, cc := compound(c)
	parts := make([]string, len(cc.Constraints))
	for i := range cc.Constraints {
		parts[i] = constraintText(&cc.Constraints[i])
	}
	word := map[string]string{"all": "all of", "any": "any of", "not": "none of"}[name]
	return word + " (" + strings.Join(parts, ", ") + ")"
}

// labelDependency reads an olm.label value ({"label": "..."}), as a requirement
// (olm.label in dependencies.yaml, olm.label.required) or to check a provided label.
func labelDependency(raw json.RawMessage) (Dependency, error) {
	var v struct {
		Label string `json:"label"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Dependency{}, err
	}
	if strings.TrimSpace(v.Label) == "" {
		return Dependency{}, errors.New("label: is empty")
	}
	return Dependency{Type: DependencyLabel, Label: v.Label}, nil
}
