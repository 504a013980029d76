package catalog

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/operator-framework/api/pkg/constraints"
)

// celBound is what a CEL rule's text says a bundle it holds for must be: of one of pkgs,
// or providing one of gvks.
type celBound struct {
	pkgs []string
	gvks []GVK
}

// celHint bounds the bundles a CEL rule can hold for, from the rule's shape alone, so
// the resolver evaluates it only on those (the index finds them) and not on every bundle
// of every channel: 14 ms and 7 MB for one resolution of a rule over the community
// catalog, where the rule's bound is a few bundles. ok is false when the rule gives no
// such bound. The bound is sound, never too narrow: a rule is bounded only where it
// cannot hold without one of these properties on the bundle
//
//	properties.exists(p, p.type == 'olm.package' && p.value.packageName == 'etcd' && ...)
//	properties.exists(p, p.type == 'olm.gvk' && p.value.group == 'g' && p.value.kind == 'K' && ...)
//
// (exists_one too, and p["value"]["kind"] as well as p.value.kind), or of && (either
// side's bound) and || (both sides' bounds together) of such. The olm.package and olm.gvk
// properties a rule reads are the bundle's own package and the APIs it owns
// (Subject.celProperties), which the index keeps by package and by provided API.
// Anything else (a negation, a property type of the catalog's own, an exists over a
// list other than properties) is unbounded, and evaluated on every bundle as before.
func celHint(rule string) (celBound, bool) {
	env, err := celParseEnv()
	if err != nil {
		return celBound{}, false
	}
	parsed, iss := env.Parse(rule)
	if iss.Err() != nil {
		return celBound{}, false
	}
	native := parsed.NativeRep()
	return ruleBound(native.Expr(), native.SourceInfo())
}

// celParseEnv parses with macro calls kept, which say which comprehension is an exists.
// Parsing needs no declarations: the rule was already checked against OLM's environment.
var celParseEnv = sync.OnceValues(func() (*cel.Env, error) { return cel.NewEnv(cel.EnableMacroCallTracking()) })

// ruleBound is the bound of a whole rule (or a part joined by && and ||).
func ruleBound(e celast.Expr, info *celast.SourceInfo) (celBound, bool) {
	switch e.Kind() {
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case operators.LogicalAnd:
			// Both must hold: either's bound bounds the whole.
			if b, ok := ruleBound(args[0], info); ok {
				return b, true
			}
			return ruleBound(args[1], info)
		case operators.LogicalOr:
			return union(ruleBound(args[0], info))(ruleBound(args[1], info))
		}
	case celast.ComprehensionKind:
		macro, found := info.GetMacroCall(e.ID())
		if !found || macro.Kind() != celast.CallKind {
			return celBound{}, false
		}
		call := macro.AsCall()
		if (call.FunctionName() != "exists" && call.FunctionName() != "exists_one") || !call.IsMemberFunction() ||
			!isIdent(call.Target(), constraints.PropertiesKey) || len(call.Args()) != 2 || call.Args()[0].Kind() != celast.IdentKind {
			return celBound{}, false
		}
		return propertyBound(call.Args()[0].AsIdent(), call.Args()[1], nil)
	}
	return celBound{}, false
}

// propertyBound is the bound of an exists' predicate over one property, named v, where
// the conjunction around it already asks for known (field path -> string).
func propertyBound(v string, pred celast.Expr, known map[string]string) (celBound, bool) {
	if pred.Kind() == celast.CallKind && pred.AsCall().FunctionName() == operators.LogicalOr {
		args := pred.AsCall().Args()
		return union(propertyBound(v, args[0], known))(propertyBound(v, args[1], known))
	}
	// A conjunction: the equalities of v's fields to strings it asks for.
	facts := maps.Clone(known)
	if facts == nil {
		facts = map[string]string{}
	}
	var ors []celast.Expr
	var collect func(e celast.Expr)
	collect = func(e celast.Expr) {
		if e.Kind() != celast.CallKind {
			return
		}
		call := e.AsCall()
		switch call.FunctionName() {
		case operators.LogicalAnd:
			collect(call.Args()[0])
			collect(call.Args()[1])
		case operators.LogicalOr:
			ors = append(ors, e)
		case operators.Equals:
			a, b := call.Args()[0], call.Args()[1]
			if _, ok := stringLiteral(a); ok {
				a, b = b, a
			}
			if s, ok := stringLiteral(b); ok {
				if path, ok := fieldPath(a, v); ok {
					facts[path] = s
				}
			}
		}
	}
	collect(pred)
	switch facts["type"] {
	case PropPackage:
		if name := facts["value.packageName"]; name != "" {
			return celBound{pkgs: []string{name}}, true
		}
	case PropGVK:
		// The core group is "": asked for, though empty. No version asked: any version.
		group, grouped := facts["value.group"]
		if kind := facts["value.kind"]; kind != "" && grouped {
			return celBound{gvks: []GVK{{Group: group, Version: facts["value.version"], Kind: kind}}}, true
		}
	}
	// A disjunction within the conjunction may bound it, with what the rest asks for:
	// p.type == 'olm.package' && (p.value.packageName == 'a' || p.value.packageName == 'b').
	for _, e := range ors {
		if b, ok := propertyBound(v, e, facts); ok {
			return b, true
		}
	}
	return celBound{}, false
}

// union joins two bounds, when both have one: func(a)(b), to take both results of a call.
func union(a celBound, aok bool) func(celBound, bool) (celBound, bool) {
	return func(b celBound, bok bool) (celBound, bool) {
		if !aok || !bok {
			return celBound{}, false
		}
		return celBound{pkgs: append(slices.Clip(a.pkgs), b.pkgs...), gvks: append(slices.Clip(a.gvks), b.gvks...)}, true
	}
}

// fieldPath is the path of fields below the variable v that e reads ("type",
// "value.packageName"), by selection (p.value.kind) or index with a string (p["value"]).
func fieldPath(e celast.Expr, v string) (string, bool) {
	var parts []string
	for {
		switch e.Kind() {
		case celast.IdentKind:
			if e.AsIdent() != v || len(parts) == 0 {
				return "", false
			}
			slices.Reverse(parts)
			return strings.Join(parts, "."), true
		case celast.SelectKind:
			sel := e.AsSelect()
			if sel.IsTestOnly() {
				return "", false
			}
			parts = append(parts, sel.FieldName())
			e = sel.Operand()
		case celast.CallKind:
			call := e.AsCall()
			if call.FunctionName() != operators.Index || len(call.Args()) != 2 {
				return "", false
			}
			key, ok := stringLiteral(call.Args()[1])
			if !ok {
				return "", false
			}
			parts = append(parts, key)
			e = call.Args()[0]
		default:
			return "", false
		}
	}
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

func isIdent(e celast.Expr, name string) bool {
	return e.Kind() == celast.IdentKind && e.AsIdent() == name
}
