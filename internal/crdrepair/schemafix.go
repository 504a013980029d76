package crdrepair

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// specific applies the repair made for this error, if there is one. Each repair changes
// as little as it can: a keyword, not its node; a node, not its parent.
func (s *schemaFix) specific() bool {
	n, k, kw := s.subject()
	d := s.e.Detail
	fj := firstJunctor(s.chain)
	nested := fj >= 0 && k >= fj // the keyword sits inside anyOf/allOf/oneOf/not

	switch {
	case s.e.Type == field.ErrorTypeRequired && strings.HasPrefix(d, "because it is defined in "):
		return s.incomplete(strings.TrimPrefix(d, "because it is defined in "))
	case strings.HasPrefix(d, "OpenAPIV3Schema '"):
		return s.unsupportedEverywhere(d)
	case strings.Contains(d, "fields are allowed at the root of the schema if the status subresource is enabled"):
		return s.statusRoot()
	case strings.Contains(d, "x-kubernetes-list-map-keys, so it") || strings.Contains(d, "when x-kubernetes-list-type is") ||
		strings.Contains(d, "parent array's x-kubernetes-list-type is map") || strings.Contains(d, "if x-kubernetes-list-type is map"):
		return s.demoteList(k)
	case strings.Contains(d, "as item of a list with x-kubernetes-list-type=set"):
		return s.demoteList(k - 1)
	}

	switch kw.name {
	case "pattern":
		if strings.Contains(d, "valid regular expression") {
			p := n["pattern"]
			delete(n, "pattern")
			s.record(KindPattern, k, "removed pattern %s: not a regular expression the API server can compile (RE2 syntax)", compactJSON(p))
			return true
		}
	case "x-kubernetes-validations":
		if nested {
			return s.semantic(n, k, kw)
		}
		return s.removeRule(n, k, kw)
	case "default":
		if nested {
			return s.docDelete(n, k, kw)
		}
		v := n["default"]
		delete(n, "default")
		s.record(KindDefault, k, "removed default %s: %s", compactJSON(v), errText(s.e))
		return true
	}
	if nested {
		switch {
		case kw.name == "type":
			return s.nestedType(n, k, fj)
		case docKeyword(kw.name):
			return s.docDelete(n, k, kw)
		}
		return s.semantic(n, k, kw)
	}

	switch kw.name {
	case "type":
		return s.fixType(n, k)
	case "items":
		switch {
		case strings.Contains(d, "must be specified"):
			n["items"] = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
			s.record(KindMissingType, k, "added items with x-kubernetes-preserve-unknown-fields: true: a list needs an item schema, and this keeps any items")
			return true
		case strings.Contains(d, "not an array"):
			return s.tupleItems(n, k)
		}
	case "additionalProperties":
		return s.additionalProperties(n, k)
	case "properties":
		switch {
		case kw.key == "metadata" && strings.Contains(d, "other than name and generateName"):
			return s.restrictMetadata(n, k)
		case !kw.hasKey && strings.Contains(d, "x-kubernetes-embedded-resource"):
			n["x-kubernetes-preserve-unknown-fields"] = true
			s.record(KindExtension, k, "added x-kubernetes-preserve-unknown-fields: true: an embedded resource without properties must keep its fields")
			return true
		}
	case "nullable":
		if k == 0 {
			delete(n, "nullable")
			s.record(KindStatusRoot, 0, "removed \"nullable: true\" at the root: a resource cannot be null")
			return true
		}
	case "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-map-type":
		v := n[kw.name]
		delete(n, kw.name)
		s.record(KindExtension, k, "removed %s: %s (%s)", kw.name, compactJSON(v), errText(s.e))
		return true
	case "x-kubernetes-list-type", "x-kubernetes-list-map-keys":
		return s.demoteList(k)
	case "uniqueItems":
		return s.uniqueItems(n, k)
	case "id", "$schema", "definitions", "dependencies", "additionalItems", "$ref", "patternProperties":
		return s.unsupported(n, k, kw.name)
	}
	return false
}

// docKeyword says whether a keyword only documents or marks, without validating: removing
// it from inside anyOf/allOf/oneOf/not changes what is accepted not at all (nulls never
// reach those branches, so nullable there is moot too).
func docKeyword(k string) bool {
	switch k {
	case "description", "title", "default", "example", "externalDocs", "nullable":
		return true
	}
	return strings.HasPrefix(k, "x-kubernetes-") && k != "x-kubernetes-validations"
}

func (s *schemaFix) docDelete(n map[string]any, k int, kw seg) bool {
	if _, ok := n[kw.name]; !ok {
		return false
	}
	delete(n, kw.name)
	s.record(KindValueValidation, k, "removed %q: a structural schema allows no %s inside anyOf/allOf/oneOf/not (it documents only)", kw.name, kw.name)
	return true
}

// nestedType handles a type inside anyOf/allOf/oneOf/not: the integer-or-string pattern
// gets its marker, a type the field's own schema already has is redundant and goes, and a
// different type is a semantic conflict.
func (s *schemaFix) nestedType(n map[string]any, k, fj int) bool {
	owner := s.chain[fj-1].n
	if fix, ok := intOrString(owner); ok {
		s.markIntOrString(owner, fj-1, fix)
		return true
	}
	c := owner
	for _, h := range s.chain[fj+1 : k+1] {
		if junctors[h.via.name] {
			continue // a branch describes the same value as its holder
		}
		if c = child(c, h.via); c == nil {
			break
		}
	}
	if t, _ := n["type"].(string); c != nil && t != "" && c["type"] == t {
		delete(n, "type")
		s.record(KindValueValidation, k, "removed \"type: %s\": the field's own schema already says so, and a structural schema allows no type inside %s",
			t, s.chain[fj].via.name)
		return true
	}
	return s.semantic(n, k, seg{name: "type"})
}

func (s *schemaFix) markIntOrString(n map[string]any, k int, fix intOrStringFix) {
	delete(n, "type")
	delete(n, fix.junctor)
	for key, v := range fix.set {
		n[key] = v // an allOf there includes the node's previous allOf
	}
	n["x-kubernetes-int-or-string"] = true
	s.r.touch(s.field(k))
	msg := "added x-kubernetes-int-or-string: true: its branches of integer and string mean int-or-string, which a structural schema expresses with that marker"
	if _, ok := fix.set["allOf"]; ok {
		msg += " (the branches' own bounds are kept in allOf, where they apply to their type only)"
	}
	if len(fix.dropped) > 0 {
		msg += "; dropped " + strings.Join(fix.dropped, ", ") + ", which cannot be kept"
	}
	s.record(KindIntOrString, k, "%s", msg)
}

// semantic removes a keyword that changes what a branch accepts. Inside anyOf and allOf,
// removing it only loosens that branch; under oneOf or not, loosening a branch could
// refuse valid objects, so the whole oneOf/not goes instead.
func (s *schemaFix) semantic(n map[string]any, k int, kw seg) bool {
	fj := firstJunctor(s.chain)
	if fj < 0 {
		return false
	}
	for j := fj; j <= k && j < len(s.chain); j++ {
		if v := s.chain[j].via.name; v == "oneOf" || v == "not" {
			return s.dropJunctor(j, s.e)
		}
	}
	if kw.hasKey && (kw.name == "properties" || kw.name == "patternProperties") {
		m, _ := n[kw.name].(map[string]any)
		if _, ok := m[kw.key]; !ok {
			return false
		}
		delete(m, kw.key)
		if len(m) == 0 {
			delete(n, kw.name)
		}
	} else {
		if _, ok := n[kw.name]; !ok {
			return false
		}
		delete(n, kw.name)
	}
	s.r.touch(s.field(k))
	s.record(KindValueValidation, k, "removed %s from this %s branch: a structural schema does not allow it there (%s); only this branch is loosened",
		kw, s.chain[fj].via.name, errText(s.e))
	return true
}

// incomplete handles a property (or items) that anyOf/allOf/oneOf/not constrains but the
// structural part of the schema does not define, by removing it from the branch.
func (s *schemaFix) incomplete(vpath string) bool {
	segs := parseFieldPath(vpath)
	loc, ok := locateSchema(segs)
	if !ok {
		return false
	}
	t := &schemaFix{r: s.r, e: s.e, segs: segs, base: loc.base, version: s.version}
	t.chain, t.leaf = resolve(s.chain[0].n, segs[loc.base:])
	n, k, kw := t.subject()
	return t.semantic(n, k, kw)
}

func (s *schemaFix) fixType(n map[string]any, k int) bool {
	d := s.e.Detail
	t, _ := n["type"].(string)
	switch {
	case s.e.Type == field.ErrorTypeNotSupported || strings.Contains(d, "type cannot be set to null"):
		return s.fixTypeName(n, k, t)
	case strings.Contains(d, "x-kubernetes-embedded-resource"):
		if t == "" {
			n["type"] = "object"
			s.record(KindExtension, k, "added \"type: object\": x-kubernetes-embedded-resource requires it")
		} else {
			delete(n, "x-kubernetes-embedded-resource")
			s.record(KindExtension, k, "removed x-kubernetes-embedded-resource: it requires type object, and this field is a %s", t)
		}
		return true
	case strings.Contains(d, "x-kubernetes-map-type"):
		if t == "" {
			n["type"] = "object"
			s.record(KindExtension, k, "added \"type: object\": x-kubernetes-map-type requires it")
		} else {
			delete(n, "x-kubernetes-map-type")
			s.record(KindExtension, k, "removed x-kubernetes-map-type: it requires type object, and this field is a %s", t)
		}
		return true
	case strings.Contains(d, "x-kubernetes-list-type"):
		if _, ok := n["items"]; ok && t == "" {
			n["type"] = "array"
			s.record(KindExtension, k, "added \"type: array\": x-kubernetes-list-type requires it")
			return true
		}
		return s.demoteList(k)
	case strings.Contains(d, "must not be empty"):
		if k == 0 {
			n["type"] = "object"
			s.record(KindRootType, 0, "added \"type: object\" at the root")
			return true
		}
		return s.inferMissing(n, k)
	case strings.Contains(d, "must be object at the root") || strings.Contains(d, `only "object" is allowed as the type at the root`):
		n["type"] = "object"
		s.record(KindRootType, 0, "changed the root's \"type: %s\" to \"type: object\": a resource is an object", t)
		return true
	case d == "must be string":
		n["type"] = "string"
		s.record(KindMetadata, k, "set \"type: string\": kind and apiVersion are strings")
		return true
	case d == "must be object":
		n["type"] = "object"
		s.record(KindMetadata, k, "set \"type: object\": metadata is an object")
		return true
	}
	return false
}

func (s *schemaFix) fixTypeName(n map[string]any, k int, t string) bool {
	if t == "" {
		return false
	}
	if t == "null" {
		delete(n, "type")
		n["nullable"] = true
		s.record(KindInvalidType, k, "replaced \"type: null\" by \"nullable: true\", the OpenAPI v3 way to allow null")
		return true
	}
	if a, ok := typeAliases[t]; ok {
		n["type"] = a
		s.record(KindInvalidType, k, "changed \"type: %s\" to \"type: %s\", the OpenAPI name of that type", t, a)
		return true
	}
	delete(n, "type")
	s.record(KindInvalidType, k, "removed \"type: %s\", which is not an OpenAPI type", t)
	return true
}

// inferMissing gives a field without a type the type its content shows; when nothing
// shows one, the field keeps accepting any value, as it did.
func (s *schemaFix) inferMissing(n map[string]any, k int) bool {
	if fix, ok := intOrString(n); ok {
		s.markIntOrString(n, k, fix)
		return true
	}
	if t, why := inferType(n); t != "" {
		n["type"] = t
		s.record(KindMissingType, k, "added \"type: %s\" (%s)", t, why)
		return true
	}
	n["x-kubernetes-preserve-unknown-fields"] = true
	s.record(KindMissingType, k, "has no type and none can be inferred; added x-kubernetes-preserve-unknown-fields: true so it keeps accepting any value")
	return true
}

func (s *schemaFix) additionalProperties(n map[string]any, k int) bool {
	ap, ok := n["additionalProperties"]
	if !ok {
		return false
	}
	delete(n, "additionalProperties")
	s.r.touch(s.field(k))
	if ap == false {
		s.record(KindAdditionalProperties, k, "removed \"additionalProperties: false\" (%s): unknown fields are pruned instead of refused", errText(s.e))
		return true
	}
	n["x-kubernetes-preserve-unknown-fields"] = true
	s.record(KindAdditionalProperties, k, "replaced additionalProperties %s by x-kubernetes-preserve-unknown-fields: true (%s): other fields are kept, unvalidated",
		compactJSON(ap), errText(s.e))
	return true
}

// restrictMetadata reduces the root's metadata schema to what the API server allows:
// type object and constraints on name and generateName. Everything else in metadata is
// the API server's own schema.
func (s *schemaFix) restrictMetadata(n map[string]any, k int) bool {
	props, _ := n["properties"].(map[string]any)
	md, _ := props["metadata"].(map[string]any)
	if md == nil {
		return false
	}
	repl := map[string]any{"type": "object"}
	var kept []string
	if mp, ok := md["properties"].(map[string]any); ok {
		keep := map[string]any{}
		for _, name := range []string{"name", "generateName"} {
			if v, ok := mp[name]; ok {
				keep[name] = v
				kept = append(kept, name)
			}
		}
		if len(keep) > 0 {
			repl["properties"] = keep
		}
	}
	props["metadata"] = repl
	s.r.touch(s.field(k) + ".properties[metadata]")
	msg := "reduced to \"type: object\""
	if len(kept) > 0 {
		msg += " and its constraints on " + strings.Join(kept, " and ")
	}
	s.r.record(KindMetadata, s.where(k)+".properties[metadata]", "%s: the API server defines metadata itself and lets a CRD restrict only name and generateName", msg)
	return true
}

// demoteList turns a map or set list whose keys or items the API server refuses into an
// atomic list: validation is the same, only server-side apply merges it as a whole.
func (s *schemaFix) demoteList(k int) bool {
	for j := min(k, len(s.chain)-1); j >= 0; j-- {
		n := s.chain[j].n
		lt, ok := n["x-kubernetes-list-type"]
		if !ok {
			if _, keys := n["x-kubernetes-list-map-keys"]; !keys {
				continue
			}
		}
		delete(n, "x-kubernetes-list-type")
		delete(n, "x-kubernetes-list-map-keys")
		s.r.touch(s.field(j))
		s.record(KindExtension, j, "removed x-kubernetes-list-type %s and its map keys (%s): the list is atomic now, which validates the same "+
			"and only merges as a whole in server-side apply", compactJSON(lt), errText(s.e))
		return true
	}
	return false
}
