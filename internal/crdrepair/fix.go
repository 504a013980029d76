package crdrepair

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxRounds bounds the validate-and-fix loop. Each round fixes every reported error it can,
// so real CRDs need a handful; the bound only stops a fix that never converges.
const maxRounds = 60

// fixUntilValid validates in-process and repairs what the API server reports, round after
// round, until the CRD validates. An error that survives its specific repair escalates:
// first its anyOf/allOf/oneOf/not is dropped, then its node, then each enclosing node is
// replaced by a schema that keeps its data, so the widest replacement is only reached when
// every narrower one failed.
func (r *repairer) fixUntilValid() error {
	tries := map[string]int{}
	for round := 0; ; round++ {
		errs, crd, err := validate(r.obj)
		if err != nil {
			return err
		}
		if len(errs) == 0 {
			r.valid = crd
			return nil
		}
		if round == maxRounds {
			return refused(errs)
		}
		r.dirty = nil
		progress := false
		fixed := map[string]bool{}
		for _, e := range errs {
			if r.isDirty(e.Field) || fixed[e.Field] {
				// Something at or above it changed this round (the API server often reports
				// one problem twice); validate again before touching it.
				continue
			}
			key := string(e.Type) + " " + e.Field + ": " + e.Detail
			n := tries[key]
			tries[key]++
			if r.fix(e, n) {
				progress = true
				fixed[e.Field] = true
			}
		}
		r.compactRules()
		if !progress {
			return refused(errs)
		}
	}
}

// refused explains a CRD that cannot be repaired with the API server's remaining errors.
func refused(errs field.ErrorList) error {
	const most = 10
	var msgs []string
	for i, e := range errs {
		if i == most {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(errs)-most))
			break
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s", e.Field, errText(e)))
	}
	return fmt.Errorf("the API server would refuse it and it cannot be repaired: %s", strings.Join(msgs, "; "))
}

// errText is an error's type and detail for a one-line change message, without its bad
// value, which can be a whole schema.
func errText(e *field.Error) string {
	d, _, _ := strings.Cut(strings.TrimSpace(e.Detail), "\n")
	d = strings.TrimSpace(d)
	if rest, ok := strings.CutPrefix(d, "in body "); ok {
		d = "the value " + rest // the default validator's detail lacks its subject
	}
	if len(d) > 200 {
		d = d[:197] + "..."
	}
	if d == "" {
		return e.Type.String()
	}
	return e.Type.String() + ": " + d
}

// fix repairs one reported error in each version it concerns; attempt counts the rounds
// that reported it before, which escalates the repair.
func (r *repairer) fix(e *field.Error, attempt int) bool {
	segs := parseFieldPath(e.Field)
	loc, ok := locateSchema(segs)
	if !ok {
		return r.fixSpec(e, segs)
	}
	changed := false
	for i, v := range r.versions() {
		if !loc.all && i != loc.version {
			continue
		}
		name, _ := v["name"].(string)
		sc, _ := v["schema"].(map[string]any)
		root, _ := sc["openAPIV3Schema"].(map[string]any)
		if root == nil {
			if len(segs) == loc.base && e.Type == field.ErrorTypeRequired {
				v["schema"] = map[string]any{"openAPIV3Schema": preservingSchema()}
				r.record(KindNoSchema, "spec.versions["+name+"].schema", "added \"type: object\" with x-kubernetes-preserve-unknown-fields: true: "+
					"v1 requires a schema, and this one keeps any content as the schemaless original did")
				changed = true
			}
			continue
		}
		s := &schemaFix{r: r, e: e, segs: segs, base: loc.base, version: name}
		s.chain, s.leaf = resolve(root, segs[loc.base:])
		if s.run(attempt) {
			changed = true
		}
	}
	return changed
}

// preservingSchema is an object schema that keeps any content: what a version without a
// schema meant in v1beta1, and the widest replacement of a subtree.
func preservingSchema() map[string]any {
	return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
}

// versions returns spec.versions of the v1 object.
func (r *repairer) versions() []map[string]any {
	spec, _ := r.obj["spec"].(map[string]any)
	l, _ := spec["versions"].([]any)
	var out []map[string]any
	for _, v := range l {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// touch marks an error path rewritten this round: errors at or below it are stale.
func (r *repairer) touch(path string) { r.dirty = append(r.dirty, path) }

func (r *repairer) isDirty(p string) bool {
	for _, d := range r.dirty {
		if strings.HasPrefix(p, d) && (len(p) == len(d) || p[len(d)] == '.' || p[len(d)] == '[') {
			return true
		}
	}
	return false
}

// schemaFix is one API server error located in one version's schema.
type schemaFix struct {
	r       *repairer
	e       *field.Error
	segs    []seg // the whole error path
	base    int   // segments before the schema root
	version string
	chain   []hop // schema nodes from the root to the deepest one the path reaches
	leaf    []seg // the rest of the path: a keyword, maybe followed by more
}

// run applies the specific repair the first time an error is seen; when the error comes
// back, or has none, the fallback.
func (s *schemaFix) run(attempt int) bool {
	if attempt == 0 && s.specific() {
		return true
	}
	return s.fallback()
}

// where names hop k for a person: spec.versions[v1].schema.openAPIV3Schema.properties[spec].
func (s *schemaFix) where(k int) string {
	var b strings.Builder
	b.WriteString("spec.versions[" + s.version + "].schema.openAPIV3Schema")
	for _, h := range s.chain[1 : k+1] {
		if h.via.name != "" {
			b.WriteByte('.')
		}
		b.WriteString(h.via.String())
	}
	return b.String()
}

// field is hop k's error path, to mark what a rewrite made stale.
func (s *schemaFix) field(k int) string { return renderPath(s.segs[:s.base+k]) }

func (s *schemaFix) record(kind Kind, k int, format string, args ...any) {
	where := s.where(k)
	if k == 0 {
		where = "spec.versions[" + s.version + "].schema"
	}
	s.r.record(kind, where, format, args...)
}

// subject returns the node holding the keyword the error is about, that node's hop, and the
// keyword segment: for `...properties[a].type` the node a and `type`; for
// `...properties[metadata]` (an error about a whole property) the parent and
// `properties[metadata]`.
func (s *schemaFix) subject() (map[string]any, int, seg) {
	last := len(s.chain) - 1
	if len(s.leaf) > 0 {
		return s.chain[last].n, last, s.leaf[0]
	}
	if last == 0 {
		return s.chain[0].n, 0, seg{}
	}
	return s.chain[last-1].n, last - 1, s.chain[last].via
}

// fallback applies the narrowest escalation that still changes something: drop the
// anyOf/allOf/oneOf/not the error sits in, else replace the deepest structural node by a
// schema that keeps its data, else its parent, and so on. Each step is done once, so an
// error that survives a step escalates to the next when it comes back.
func (s *schemaFix) fallback() bool {
	type candidate func() bool
	var cands []candidate
	lastStructural := len(s.chain) - 1
	if fj := firstJunctor(s.chain); fj > 0 {
		lastStructural = fj - 1
		cands = append(cands, func() bool { return s.dropJunctor(fj, s.e) })
	}
	for k := lastStructural; k >= 0; k-- {
		cands = append(cands, func() bool { return s.preserve(k) })
	}
	for _, c := range cands {
		if c() {
			return true
		}
	}
	return false
}

// dropJunctor removes the anyOf/allOf/oneOf/not that hop j was reached through.
func (s *schemaFix) dropJunctor(j int, why *field.Error) bool {
	holder, kw := s.chain[j-1].n, s.chain[j].via.name
	if _, ok := holder[kw]; !ok {
		return false
	}
	delete(holder, kw)
	s.r.touch(s.field(j - 1))
	s.record(KindValueValidation, j-1, "removed %s, whose branches cannot be made structural (%s: %s); the rest of the schema still validates",
		kw, renderPath(s.segs[s.base:]), errText(why))
	return true
}

// preserve replaces node k by a schema of the same type that keeps any content.
func (s *schemaFix) preserve(k int) bool {
	n := s.chain[k].n
	t, _ := n["type"].(string)
	repl := map[string]any{}
	switch {
	case k == 0:
		repl = preservingSchema()
	case k == 1 && s.chain[1].via.name == "properties" && s.chain[1].via.key == "metadata":
		repl["type"] = "object"
	case k == 1 && s.chain[1].via.name == "properties" && (s.chain[1].via.key == "kind" || s.chain[1].via.key == "apiVersion"):
		repl["type"] = "string"
	case t == "object":
		repl = preservingSchema()
	case t == "array":
		repl["type"] = "array"
		repl["items"] = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
	case validTypes[t]:
		repl["type"] = t
	default:
		repl["x-kubernetes-preserve-unknown-fields"] = true
	}
	for _, keep := range []string{"description", "nullable"} {
		if v, ok := n[keep]; ok && k > 0 {
			repl[keep] = v
		}
	}
	if reflect.DeepEqual(repl, n) {
		return false
	}
	clear(n)
	for key, v := range repl {
		n[key] = v
	}
	s.r.touch(s.field(k))
	what := "the root schema"
	if k > 0 {
		what = "this subtree"
	}
	s.record(KindPreservedSubtree, k, "replaced %s by %s, as it cannot be made structural (%s: %s)",
		what, compactJSON(repl), renderPath(s.segs[s.base:]), errText(s.e))
	return true
}

// compactRules removes x-kubernetes-validations rules marked for removal during a round;
// removing them at once keeps the indexes in the round's other errors valid.
func (r *repairer) compactRules() {
	if !r.pendingRules {
		return
	}
	r.pendingRules = false
	for _, v := range r.versions() {
		sc, _ := v["schema"].(map[string]any)
		if root, ok := sc["openAPIV3Schema"].(map[string]any); ok {
			walkAll(root, func(n map[string]any) {
				l, ok := n["x-kubernetes-validations"].([]any)
				if !ok {
					return
				}
				kept := l[:0]
				for _, rule := range l {
					if m, ok := rule.(map[string]any); ok && m[removeMark] == true {
						continue
					}
					kept = append(kept, rule)
				}
				if len(kept) == 0 {
					delete(n, "x-kubernetes-validations")
				} else {
					n["x-kubernetes-validations"] = kept
				}
			})
		}
	}
}

const removeMark = "\x00remove"

// walkAll visits every schema node, value validations included.
func walkAll(n map[string]any, visit func(map[string]any)) {
	visit(n)
	for _, k := range []string{"properties", "patternProperties", "definitions", "dependencies"} {
		m, _ := n[k].(map[string]any)
		for _, name := range sortedKeys(m) {
			if c, ok := m[name].(map[string]any); ok {
				walkAll(c, visit)
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "items"} {
		l, _ := n[k].([]any)
		for _, c := range l {
			if cm, ok := c.(map[string]any); ok {
				walkAll(cm, visit)
			}
		}
	}
	for _, k := range []string{"not", "items", "additionalProperties", "additionalItems"} {
		if c, ok := n[k].(map[string]any); ok {
			walkAll(c, visit)
		}
	}
}

func atoi(s string) int {
	i, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return i
}
