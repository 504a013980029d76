package crdrepair

import (
	"fmt"
	"sort"
	"strings"
)

// Repairs of single keywords the API server refuses in CRD schemas.

// removeRule removes the x-kubernetes-validations rule an error names (one that does not
// compile, costs too much or is malformed); the node's other rules stay. Rules are only
// marked here and removed at the end of the round, so other errors' indexes stay right.
func (s *schemaFix) removeRule(n map[string]any, k int, kw seg) bool {
	l, _ := n["x-kubernetes-validations"].([]any)
	i := atoi(kw.key)
	if !kw.hasKey || i < 0 || i >= len(l) {
		if len(l) == 0 {
			return false
		}
		delete(n, "x-kubernetes-validations")
		s.record(KindValidationRule, k, "removed x-kubernetes-validations (%s)", errText(s.e))
		return true
	}
	rule, _ := l[i].(map[string]any)
	if rule == nil || rule[removeMark] == true {
		return rule != nil
	}
	rule[removeMark] = true
	s.r.pendingRules = true
	s.record(KindValidationRule, k, "removed x-kubernetes-validations rule %s (%s)", compactJSON(rule["rule"]), errText(s.e))
	return true
}

// tupleItems replaces JSON Schema's tuple form of items (a schema per position), which CRD
// schemas do not have: one schema is kept as is, several become items that keep anything.
func (s *schemaFix) tupleItems(n map[string]any, k int) bool {
	l, _ := n["items"].([]any)
	if len(l) == 1 {
		n["items"] = l[0]
		s.record(KindUnsupported, k, "made the one-element items list its item schema: CRD schemas have one schema for all items")
	} else {
		n["items"] = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
		s.record(KindUnsupported, k, "replaced the items list (a schema per position) by items with x-kubernetes-preserve-unknown-fields: true: CRD schemas have one schema for all items")
	}
	s.r.touch(s.field(k))
	return true
}

// uniqueItems is refused for its quadratic cost; for scalar items a set list checks the same.
func (s *schemaFix) uniqueItems(n map[string]any, k int) bool {
	delete(n, "uniqueItems")
	items, _ := n["items"].(map[string]any)
	it, _ := items["type"].(string)
	_, hasList := n["x-kubernetes-list-type"]
	if n["type"] == "array" && !hasList && (it == "string" || it == "integer" || it == "number" || it == "boolean") {
		n["x-kubernetes-list-type"] = "set"
		s.record(KindUnsupported, k, "replaced \"uniqueItems: true\" (refused for its cost) by \"x-kubernetes-list-type: set\", which also requires unique items")
		return true
	}
	s.record(KindUnsupported, k, "removed \"uniqueItems: true\": the API server refuses it for its quadratic cost")
	return true
}

// unsupported removes a JSON Schema keyword CRD schemas do not support. Where it carried
// the field's content ($ref, patternProperties), the field keeps any content instead.
func (s *schemaFix) unsupported(n map[string]any, k int, kw string) bool {
	v, ok := n[kw]
	if !ok {
		return false
	}
	delete(n, kw)
	s.r.touch(s.field(k))
	switch kw {
	case "$ref", "patternProperties":
		if t, _ := n["type"].(string); t == "" || t == "object" {
			n["x-kubernetes-preserve-unknown-fields"] = true
			s.record(KindUnsupported, k, "replaced %s %s (not supported in CRD schemas) by x-kubernetes-preserve-unknown-fields: true, so the content it described is kept",
				kw, compactJSON(v))
			return true
		}
	}
	s.record(KindUnsupported, k, "removed %s %s: not supported in CRD schemas", kw, compactJSON(v))
	return true
}

// unsupportedEverywhere handles the schema conversion's own refusals, which name a keyword
// but not where it is.
func (s *schemaFix) unsupportedEverywhere(detail string) bool {
	rest := strings.TrimPrefix(detail, "OpenAPIV3Schema '")
	name, _, _ := strings.Cut(rest, "'")
	key := map[string]string{"schema": "$schema", "id": "id", "$ref": "$ref", "patternProperties": "patternProperties",
		"dependencies": "dependencies", "additionalItems": "additionalItems", "definitions": "definitions", "items": "items"}[name]
	if key == "" {
		return false
	}
	count := 0
	walkAll(s.chain[0].n, func(n map[string]any) {
		v, ok := n[key]
		if !ok {
			return
		}
		if key == "items" {
			l, isList := v.([]any)
			if !isList {
				return
			}
			if len(l) == 1 {
				n["items"] = l[0]
			} else {
				n["items"] = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
			}
		} else {
			delete(n, key)
			if key == "$ref" || key == "patternProperties" {
				n["x-kubernetes-preserve-unknown-fields"] = true
			}
		}
		count++
	})
	if count == 0 {
		return false
	}
	s.r.touch(s.field(0))
	where := "once"
	if count > 1 {
		where = fmt.Sprintf("in %d places", count)
	}
	s.record(KindUnsupported, 0, "removed %s %s: not supported in CRD schemas", key, where)
	return true
}

// rootFieldsWithStatus are the JSON names of what the API server allows at the schema
// root when the status subresource is enabled.
var rootFieldsWithStatus = map[string]bool{
	"description": true, "type": true, "format": true, "title": true, "maximum": true, "exclusiveMaximum": true,
	"minimum": true, "exclusiveMinimum": true, "maxLength": true, "minLength": true, "pattern": true, "maxItems": true,
	"minItems": true, "uniqueItems": true, "multipleOf": true, "required": true, "items": true, "properties": true,
	"externalDocs": true, "example": true, "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-validations": true,
}

func (s *schemaFix) statusRoot() bool {
	root := s.chain[0].n
	var removed []string
	for _, k := range sortedKeys(root) {
		if rootFieldsWithStatus[k] {
			continue
		}
		if isZero(root[k]) {
			delete(root, k)
			continue
		}
		removed = append(removed, fmt.Sprintf("%s: %s", k, compactJSON(root[k])))
		delete(root, k)
	}
	if len(removed) == 0 {
		return false
	}
	sort.Strings(removed)
	s.r.touch(s.field(0))
	s.record(KindStatusRoot, 0, "removed %s from the root: with the status subresource the API server allows only plain constraints there",
		strings.Join(removed, ", "))
	return true
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	case int64:
		return x == 0
	case float64:
		return x == 0
	}
	return false
}
