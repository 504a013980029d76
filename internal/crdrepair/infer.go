package crdrepair

import (
	"fmt"
	"math"
)

var validTypes = map[string]bool{"object": true, "array": true, "string": true, "integer": true, "number": true, "boolean": true}

// typeAliases maps type names seen in hand-written schemas to OpenAPI v3 types.
var typeAliases = map[string]string{
	"int": "integer", "int32": "integer", "int64": "integer", "long": "integer", "uint": "integer",
	"uint32": "integer", "uint64": "integer", "float": "number", "double": "number", "float64": "number",
	"float32": "number", "decimal": "number", "bool": "boolean", "str": "string", "text": "string",
	"map": "object", "dict": "object", "struct": "object", "list": "array",
	"Object": "object", "Array": "array", "String": "string", "Integer": "integer", "Number": "number",
	"Boolean": "boolean", "OBJECT": "object", "STRING": "string", "INTEGER": "integer", "BOOLEAN": "boolean",
}

var stringFormats = map[string]bool{
	"date-time": true, "date": true, "time": true, "duration": true, "byte": true, "binary": true,
	"password": true, "email": true, "uri": true, "url": true, "hostname": true, "ipv4": true, "ipv6": true,
	"cidr": true, "mac": true, "uuid": true, "uuid3": true, "uuid4": true, "uuid5": true, "isbn": true,
	"creditcard": true, "ssn": true, "hexcolor": true, "rgbcolor": true, "datetime": true, "bsonobjectid": true,
}

// inferType says which type a schema without one evidently describes, and why; "" when
// nothing in it tells.
func inferType(n map[string]any) (string, string) {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := n[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties"):
		return "object", "it has properties"
	case has("additionalProperties", "maxProperties", "minProperties", "x-kubernetes-map-type", "x-kubernetes-embedded-resource"):
		return "object", "it describes an object (additionalProperties, property limits or object extensions)"
	case has("items", "maxItems", "minItems", "uniqueItems", "x-kubernetes-list-type"):
		return "array", "it describes a list (items, item limits or list extensions)"
	}
	if f, ok := n["format"].(string); ok {
		switch {
		case f == "int32" || f == "int64":
			return "integer", fmt.Sprintf("its format is %s", f)
		case f == "float" || f == "double":
			return "number", fmt.Sprintf("its format is %s", f)
		case stringFormats[f]:
			return "string", fmt.Sprintf("its format is %s", f)
		}
	}
	if has("pattern", "maxLength", "minLength") {
		return "string", "it has a pattern or length limits, which apply to strings"
	}
	if l, ok := n["enum"].([]any); ok && len(l) > 0 {
		if t := commonJSONType(l); t != "" {
			return t, "its enum values are all of that type"
		}
	}
	if d, ok := n["default"]; ok && d != nil {
		if t := jsonType(d); t != "" {
			if t == "integer" {
				t = "number" // a default of 1 may well be for a number
			}
			return t, "its default is of that type"
		}
	}
	if has("maximum", "minimum", "multipleOf", "exclusiveMaximum", "exclusiveMinimum") {
		return "number", "it has numeric bounds"
	}
	if t := branchesType(n); t != "" {
		return t, "all its anyOf/allOf/oneOf branches have that type"
	}
	return "", ""
}

// branchesType is the type every typed branch of the node's junctors agrees on.
func branchesType(n map[string]any) string {
	common := ""
	for _, j := range []string{"allOf", "anyOf", "oneOf"} {
		l, _ := n[j].([]any)
		for _, b := range l {
			bm, _ := b.(map[string]any)
			t, _ := bm["type"].(string)
			if t == "" {
				if j == "allOf" {
					continue // an untyped allOf branch constrains nothing about the type
				}
				return ""
			}
			if common != "" && common != t {
				return ""
			}
			common = t
		}
	}
	if !validTypes[common] {
		return ""
	}
	return common
}

// commonJSONType is the OpenAPI type all values share: integer when all are whole numbers.
func commonJSONType(l []any) string {
	t := ""
	for _, v := range l {
		vt := jsonType(v)
		if vt == "" {
			return ""
		}
		if t == "integer" && vt == "number" || t == "number" && vt == "integer" {
			vt = "number"
		} else if t != "" && vt != t {
			return ""
		}
		t = vt
	}
	return t
}

func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// intOrString recognises an anyOf or oneOf of one integer and one string branch that means
// "int or string" but lacks x-kubernetes-int-or-string. It returns the replacement: the
// one exact anyOf the API server accepts, and, where the branches constrained their type
// (minimum for the integer, pattern for the string), an allOf that keeps those checks;
// they apply only to values of their type, so the meaning is unchanged. Other branch
// keywords cannot be kept and are listed in dropped.
func intOrString(n map[string]any) (fix intOrStringFix, ok bool) {
	junctor := ""
	var l []any
	for _, j := range []string{"anyOf", "oneOf"} {
		if b, isList := n[j].([]any); isList && len(b) == 2 {
			if junctor != "" {
				return fix, false
			}
			junctor, l = j, b
		}
	}
	if junctor == "" {
		return fix, false
	}
	if t, _ := n["type"].(string); t != "" && t != "string" && t != "integer" {
		return fix, false
	}
	keep := map[string]map[string]bool{
		"integer": {"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true},
		"string":  {"minLength": true, "maxLength": true, "pattern": true, "format": true},
	}
	var checks []any
	seen := map[string]bool{}
	for _, b := range l {
		bm, isMap := b.(map[string]any)
		if !isMap {
			return fix, false
		}
		t, _ := bm["type"].(string)
		if keep[t] == nil || seen[t] {
			return fix, false
		}
		seen[t] = true
		c := map[string]any{}
		for _, k := range sortedKeys(bm) {
			switch {
			case k == "type" || docKeyword(k):
			case keep[t][k]:
				c[k] = bm[k]
			default:
				fix.dropped = append(fix.dropped, fmt.Sprintf("%s (of the %s branch)", k, t))
			}
		}
		if len(c) > 0 {
			checks = append(checks, c)
		}
	}
	pattern := []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
	fix.junctor = junctor
	if len(checks) == 0 {
		fix.set = map[string]any{"anyOf": pattern}
		return fix, true
	}
	allOf := append([]any{map[string]any{"anyOf": pattern}}, checks...)
	if prev, isList := n["allOf"].([]any); isList {
		allOf = append(allOf, prev...)
	}
	fix.set = map[string]any{"allOf": allOf}
	return fix, true
}

// intOrStringFix replaces the junctor (anyOf or oneOf) and the type of a node by set and
// x-kubernetes-int-or-string.
type intOrStringFix struct {
	junctor string
	set     map[string]any
	dropped []string
}
