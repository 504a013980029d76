package crdrepair

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kjson "sigs.k8s.io/json"

	"github.com/operator-manager/operator-manager/internal/spelling"
)

// Schema keywords whose values are schemas, in their JSON shapes.
var (
	schemaMapKeywords   = []string{"properties", "patternProperties", "definitions"}
	schemaListKeywords  = []string{"allOf", "anyOf", "oneOf"}
	schemaOneKeywords   = []string{"not"}
	schemaOrBoolKeyword = []string{"additionalProperties", "additionalItems"}
)

// fixShapes repairs schema values of the wrong JSON type (`required: true`,
// `type: [string, "null"]`, `maxLength: "10"`), which the API server cannot even decode.
// It runs on the bundle's own form, before conversion, so it names the bundle's paths.
func (r *repairer) fixShapes(spec map[string]any, v1beta1 bool) {
	r.fixColumnKeys(spec, v1beta1)
	if v, ok := spec["validation"].(map[string]any); ok {
		if s, ok := v["openAPIV3Schema"].(map[string]any); ok {
			r.fixNodeShapes(s, "spec.validation.openAPIV3Schema")
		}
	}
	versions, _ := spec["versions"].([]any)
	for i, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := vm["name"].(string)
		if name == "" {
			name = strconv.Itoa(i)
		}
		if sc, ok := vm["schema"].(map[string]any); ok {
			if s, ok := sc["openAPIV3Schema"].(map[string]any); ok {
				r.fixNodeShapes(s, "spec.versions["+name+"].schema.openAPIV3Schema")
			}
		}
	}
}

// fixColumnKeys renames a printer column's path key written for the other API version
// (v1beta1 says JSONPath, v1 jsonPath); decoding would drop it, and with it the column.
func (r *repairer) fixColumnKeys(spec map[string]any, v1beta1 bool) {
	want, other := "jsonPath", "JSONPath"
	if v1beta1 {
		want, other = other, want
	}
	fix := func(cols any, where string) {
		l, _ := cols.([]any)
		for i, c := range l {
			col, _ := c.(map[string]any)
			if v, ok := col[other]; ok && col[want] == nil {
				col[want] = v
				delete(col, other)
				r.record(KindPrinterColumn, fmt.Sprintf("%s[%d]", where, i), "renamed %s to %s, the name this API version uses", other, want)
			}
		}
	}
	fix(spec["additionalPrinterColumns"], "spec.additionalPrinterColumns")
	versions, _ := spec["versions"].([]any)
	for i, v := range versions {
		if vm, ok := v.(map[string]any); ok {
			fix(vm["additionalPrinterColumns"], fmt.Sprintf("spec.versions[%d].additionalPrinterColumns", i))
		}
	}
}

func (r *repairer) fixNodeShapes(n map[string]any, where string) {
	for _, k := range schemaMapKeywords {
		v, ok := n[k]
		if !ok {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				r.record(KindMalformed, where+"."+k, "removed: must be a map of schemas, was %s", jsonKind(v))
			}
			delete(n, k)
			continue
		}
		for _, name := range sortedKeys(m) {
			m[name] = r.schemaValue(m[name], fmt.Sprintf("%s.%s[%s]", where, k, name))
			r.fixNodeShapes(m[name].(map[string]any), fmt.Sprintf("%s.%s[%s]", where, k, name))
		}
	}
	for _, k := range schemaListKeywords {
		v, ok := n[k]
		if !ok {
			continue
		}
		l, ok := v.([]any)
		if !ok {
			r.record(KindMalformed, where+"."+k, "removed: must be a list of schemas, was %s", jsonKind(v))
			delete(n, k)
			continue
		}
		for i := range l {
			p := fmt.Sprintf("%s.%s[%d]", where, k, i)
			l[i] = r.schemaValue(l[i], p)
			r.fixNodeShapes(l[i].(map[string]any), p)
		}
	}
	for _, k := range schemaOneKeywords {
		if v, ok := n[k]; ok {
			if m, ok := v.(map[string]any); ok {
				r.fixNodeShapes(m, where+"."+k)
			} else {
				r.record(KindMalformed, where+"."+k, "removed: must be a schema, was %s", jsonKind(v))
				delete(n, k)
			}
		}
	}
	for _, k := range schemaOrBoolKeyword {
		switch v := n[k].(type) {
		case nil, bool:
		case map[string]any:
			r.fixNodeShapes(v, where+"."+k)
		default:
			r.record(KindMalformed, where+"."+k, "removed: must be a schema or a boolean, was %s", jsonKind(v))
			delete(n, k)
		}
	}
	switch v := n["items"].(type) {
	case nil:
	case map[string]any:
		r.fixNodeShapes(v, where+".items")
	case []any:
		for i := range v {
			p := fmt.Sprintf("%s.items[%d]", where, i)
			v[i] = r.schemaValue(v[i], p)
			r.fixNodeShapes(v[i].(map[string]any), p)
		}
	default:
		r.record(KindMalformed, where+".items", "removed: must be a schema, was %s", jsonKind(v))
		delete(n, "items")
	}
	if deps, ok := n["dependencies"].(map[string]any); ok {
		for _, name := range sortedKeys(deps) {
			if m, ok := deps[name].(map[string]any); ok {
				r.fixNodeShapes(m, fmt.Sprintf("%s.dependencies[%s]", where, name))
			}
		}
	}
	r.fixOwnShapes(n, where)
}

// schemaValue turns what stands where a schema must be into a schema: null means the
// empty schema, and a bare type name (`foo: string`) means that type.
func (r *repairer) schemaValue(v any, where string) any {
	switch t := v.(type) {
	case map[string]any:
		return t
	case nil:
		return map[string]any{}
	case string:
		if validTypes[t] {
			r.record(KindMalformed, where, "was the bare string %q; made it the schema {type: %s}", t, t)
			return map[string]any{"type": t}
		}
	}
	r.record(KindMalformed, where, "was %s, not a schema; replaced by an empty schema", jsonKind(v))
	return map[string]any{}
}

// containerKeywords are checked by fixNodeShapes itself; fixOwnShapes checks the rest.
var containerKeywords = map[string]bool{
	"properties": true, "patternProperties": true, "definitions": true, "allOf": true, "anyOf": true,
	"oneOf": true, "not": true, "additionalProperties": true, "additionalItems": true, "items": true,
	"dependencies": true,
}

// fixOwnShapes checks a node's own (non-schema) keywords by decoding them as the API server
// does; only when that fails does it look keyword by keyword, coercing the value where the
// intent is plain and removing it otherwise.
func (r *repairer) fixOwnShapes(n map[string]any, where string) {
	if t, ok := n["type"].([]any); ok {
		r.fixTypeList(n, t, where)
	}
	own := map[string]any{}
	for _, k := range sortedKeys(n) {
		switch {
		case containerKeywords[k]:
		case !isKeyword(k):
			// Decoding drops it anyway; saying so shows typos such as "properies",
			// whose content never took effect.
			delete(n, k)
			hint := ""
			if m := nearestKeyword(k); m != "" {
				hint = fmt.Sprintf(", a misspelling of %q perhaps, which never took effect", m)
			}
			r.record(KindUnknownKeyword, where, "removed unknown keyword %q: the API server ignores it%s", k, hint)
		default:
			own[k] = n[k]
		}
	}
	if decodesAsSchema(own) {
		return
	}
	for _, k := range sortedKeys(own) {
		v := own[k]
		if decodesAsSchema(map[string]any{k: v}) {
			continue
		}
		if c, ok := coerce(k, v); ok && decodesAsSchema(c) {
			delete(n, k)
			for ck, cv := range c {
				n[ck] = cv
			}
			r.record(KindMalformed, where+"."+k, "was %s; changed to %s", compactJSON(v), compactJSON(c))
			continue
		}
		delete(n, k)
		if k == "required" {
			r.record(KindMalformed, where+".required", "removed %s: required must list property names (in the parent object)", compactJSON(v))
			continue
		}
		r.record(KindMalformed, where+"."+k, "removed %s: not a valid value for %s", compactJSON(v), k)
	}
}

// fixTypeList handles `type: [string, "null"]` (JSON Schema's list form): one type plus null
// is that type with nullable; several types cannot be expressed, so the type goes.
func (r *repairer) fixTypeList(n map[string]any, list []any, where string) {
	var types []string
	null := false
	for _, t := range list {
		s, _ := t.(string)
		if s == "null" {
			null = true
		} else if s != "" {
			types = append(types, s)
		}
	}
	delete(n, "type")
	switch {
	case len(types) == 1:
		n["type"] = types[0]
		if null {
			n["nullable"] = true
			r.record(KindMalformed, where+".type", "was %s; changed to type: %s with nullable: true", compactJSON(list), types[0])
		} else {
			r.record(KindMalformed, where+".type", "was %s; changed to type: %s", compactJSON(list), types[0])
		}
	default:
		if null {
			n["nullable"] = true
		}
		r.record(KindMalformed, where+".type", "removed %s: a structural schema has one type per field", compactJSON(list))
	}
}

// coerce converts values whose intent is plain: numbers and booleans written as strings,
// one string where a list is expected, and draft-6 `exclusiveMinimum: 5`.
func coerce(k string, v any) (map[string]any, bool) {
	s, isString := v.(string)
	switch k {
	case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties":
		if isString {
			if i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
				return map[string]any{k: i}, true
			}
		}
		if f, ok := v.(float64); ok && f == float64(int64(f)) {
			return map[string]any{k: int64(f)}, true
		}
	case "maximum", "minimum", "multipleOf":
		if isString {
			if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
				return map[string]any{k: f}, true
			}
		}
	case "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "nullable",
		"x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string":
		if isString {
			if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
				return map[string]any{k: b}, true
			}
		}
		if k == "exclusiveMaximum" || k == "exclusiveMinimum" {
			if f, ok := number(v); ok {
				bound := map[string]string{"exclusiveMaximum": "maximum", "exclusiveMinimum": "minimum"}[k]
				return map[string]any{bound: f, k: true}, true
			}
		}
	case "required", "x-kubernetes-list-map-keys":
		if isString && s != "" {
			return map[string]any{k: []any{s}}, true
		}
	case "enum":
		if v != nil {
			if _, ok := v.([]any); !ok {
				return map[string]any{k: []any{v}}, true
			}
		}
	}
	return nil, false
}

func decodesAsSchema(m map[string]any) bool {
	if plainlyDecodes(m) {
		return true
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return false
	}
	var s apiextensionsv1.JSONSchemaProps
	return kjson.UnmarshalCaseSensitivePreserveInts(raw, &s) == nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// compactJSON renders a value for a change message, shortened when long.
func compactJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(raw) > 80 {
		return string(raw[:77]) + "..."
	}
	return string(raw)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// plainlyDecodes reports, without encoding anything, that m decodes as a schema because
// each of its keywords holds a value of its field's plain type: a string for a string, a
// bool for a bool, an integer for an integer, any number for a float, a list of strings for
// a list of strings, anything for a JSON value, or null. Every node of every schema is
// checked this way (fixOwnShapes), and nearly all pass; false says only "decode to be
// sure", as for keywords of richer types (x-kubernetes-validations, externalDocs).
func plainlyDecodes(m map[string]any) bool {
	for k, v := range m {
		if v == nil {
			continue
		}
		switch schemaKeywords[k] {
		case plainString:
			if _, ok := v.(string); !ok {
				return false
			}
		case plainBool:
			if _, ok := v.(bool); !ok {
				return false
			}
		case plainInt:
			if _, ok := v.(int64); !ok {
				return false
			}
		case plainFloat:
			if _, isInt := v.(int64); !isInt {
				if _, isFloat := v.(float64); !isFloat {
					return false
				}
			}
		case plainStrings:
			l, ok := v.([]any)
			if !ok {
				return false
			}
			for _, e := range l {
				if _, ok := e.(string); !ok {
					return false
				}
			}
		case plainJSONList:
			if _, ok := v.([]any); !ok {
				return false
			}
		case plainJSON:
		default:
			return false
		}
	}
	return true
}

// plainType is how a schema keyword's value decodes, for plainlyDecodes.
type plainType int

const (
	notPlain plainType = iota // a richer type (x-kubernetes-validations, a nested schema): decode to be sure
	plainString
	plainBool
	plainInt
	plainFloat
	plainStrings
	plainJSONList
	plainJSON
)

// schemaKeywords are the JSON names of JSONSchemaProps, the keywords a CRD schema may use,
// each with the plain type its value decodes as; read from the type itself so that they
// follow the API's version.
var schemaKeywords = func() map[string]plainType {
	jsonType := reflect.TypeFor[apiextensionsv1.JSON]()
	m := map[string]plainType{}
	t := reflect.TypeFor[apiextensionsv1.JSONSchemaProps]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft == jsonType:
			m[name] = plainJSON
		case ft.Kind() == reflect.Slice && ft.Elem() == jsonType:
			m[name] = plainJSONList
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			m[name] = plainStrings
		case ft.Kind() == reflect.String:
			m[name] = plainString
		case ft.Kind() == reflect.Bool:
			m[name] = plainBool
		case ft.Kind() == reflect.Int64:
			m[name] = plainInt
		case ft.Kind() == reflect.Float64:
			m[name] = plainFloat
		default:
			m[name] = notPlain
		}
	}
	return m
}()

// isKeyword says whether k is a JSON Schema keyword of a CRD schema.
func isKeyword(k string) bool {
	_, ok := schemaKeywords[k]
	return ok
}

// nearestKeyword is the keyword within two edits of k, if one is.
func nearestKeyword(k string) string {
	best, bestD := "", 3
	for _, kw := range sortedKeys(schemaKeywords) {
		if d := spelling.Distance(strings.ToLower(k), strings.ToLower(kw)); d < bestD {
			best, bestD = kw, d
		}
	}
	return best
}
