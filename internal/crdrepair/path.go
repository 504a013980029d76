package crdrepair

import (
	"strconv"
	"strings"
)

// seg is one step of a field path as the API server prints it: a name, a name with a key
// or index (`properties[spec]`, `anyOf[0]`), or a bare key.
type seg struct {
	name   string
	key    string
	hasKey bool
}

func (s seg) String() string {
	if s.hasKey {
		return s.name + "[" + s.key + "]"
	}
	return s.name
}

// parseFieldPath splits a field.Path string. A key runs to the "]" followed by ".", "[" or
// the end, so property names with dots (`properties[app.kubernetes.io/name]`) stay whole.
func parseFieldPath(p string) []seg {
	var segs []seg
	for i := 0; i < len(p); {
		switch p[i] {
		case '.':
			i++
		case '[':
			end := len(p)
			for k := i + 1; k < len(p); k++ {
				if p[k] == ']' && (k+1 == len(p) || p[k+1] == '.' || p[k+1] == '[') {
					end = k
					break
				}
			}
			key := p[i+1 : end]
			if n := len(segs); n > 0 && !segs[n-1].hasKey {
				segs[n-1].key, segs[n-1].hasKey = key, true
			} else {
				segs = append(segs, seg{key: key, hasKey: true})
			}
			i = end + 1
		default:
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			segs = append(segs, seg{name: p[i:j]})
			i = j
		}
	}
	return segs
}

func renderPath(segs []seg) string {
	var b strings.Builder
	for i, s := range segs {
		if i > 0 && s.name != "" {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// schemaLoc is where in the CRD a schema error points.
type schemaLoc struct {
	// all is set for spec.validation: the API server's internal form holds one top-level
	// schema when every version's schema is identical, so a repair applies to all versions.
	all     bool
	version int
	base    int // segments before the schema root
}

// locateSchema recognises spec.validation.openAPIV3Schema... and
// spec.versions[i].schema.openAPIV3Schema...
func locateSchema(segs []seg) (schemaLoc, bool) {
	is := func(i int, name string, keyed bool) bool {
		return i < len(segs) && segs[i].name == name && segs[i].hasKey == keyed
	}
	if is(0, "spec", false) && is(1, "validation", false) && is(2, "openAPIV3Schema", false) {
		return schemaLoc{all: true, base: 3}, true
	}
	if is(0, "spec", false) && is(1, "versions", true) && is(2, "schema", false) && is(3, "openAPIV3Schema", false) {
		i, err := strconv.Atoi(segs[1].key)
		if err != nil || i < 0 {
			return schemaLoc{}, false
		}
		return schemaLoc{version: i, base: 4}, true
	}
	return schemaLoc{}, false
}

// hop is one schema node on the way from the root to an error: the node, and the
// segment that led to it from its parent (empty for the root).
type hop struct {
	n   map[string]any
	via seg
}

var junctors = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "not": true}

// resolve follows segs through schema nodes as far as they lead to schema objects; the
// rest (a keyword such as `type`, possibly followed by more) is returned as leaf.
func resolve(root map[string]any, segs []seg) ([]hop, []seg) {
	chain := []hop{{n: root}}
	cur := root
	for i, s := range segs {
		next := child(cur, s)
		if next == nil {
			return chain, segs[i:]
		}
		chain = append(chain, hop{n: next, via: s})
		cur = next
	}
	return chain, nil
}

// child returns the schema that segment s leads to from n, or nil.
func child(n map[string]any, s seg) map[string]any {
	switch s.name {
	case "properties", "patternProperties", "definitions", "dependencies":
		if !s.hasKey {
			return nil
		}
		m, _ := n[s.name].(map[string]any)
		c, _ := m[s.key].(map[string]any)
		return c
	case "allOf", "anyOf", "oneOf", "items":
		if !s.hasKey {
			c, _ := n[s.name].(map[string]any)
			return c
		}
		l, _ := n[s.name].([]any)
		i, err := strconv.Atoi(s.key)
		if err != nil || i < 0 || i >= len(l) {
			return nil
		}
		c, _ := l[i].(map[string]any)
		return c
	case "additionalProperties", "additionalItems", "not":
		if s.hasKey {
			return nil
		}
		c, _ := n[s.name].(map[string]any)
		return c
	}
	return nil
}

// firstJunctor is the index of the first hop reached through anyOf/allOf/oneOf/not, or -1.
func firstJunctor(chain []hop) int {
	for i, h := range chain {
		if junctors[h.via.name] {
			return i
		}
	}
	return -1
}
