package crdrepair

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kjson "sigs.k8s.io/json"
)

// normalize copies a decoded manifest without a JSON round trip when it can; the copy must
// be exactly what the round trip gives, and anything it cannot copy so must be left to the
// round trip.
func TestCopyDecodedMatchesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     any
		copied bool
	}{
		{"decoded manifest", map[string]any{"a": "x", "b": int64(3), "c": 1.5, "d": true, "e": nil,
			"f": []any{"y", int64(-1), map[string]any{"g": []any{}}}, "h": map[string]any{}, "<&>": "<tag>"}, true},
		{"nil map", map[string]any(nil), true},
		{"nil list", []any(nil), true},
		{"tiny float", 1.5e-9, true},
		{"integral float becomes int64", map[string]any{"maxLength": float64(316), "minimum": float64(-2)}, true},
		{"negative zero", math.Copysign(0, -1), true},
		{"largest exact integral float", float64(-(1 << 53)), true},
		{"integral float beyond 2^53", float64(1 << 62), false},
		{"integral float written with an exponent", 1e21, false},
		{"tiny fraction", 0.1, true},
		{"infinity", math.Inf(1), false},
		{"int", map[string]any{"a": 3}, false},
		{"int32", []any{int32(3)}, false},
		{"json.Number", map[string]any{"a": json.Number("3")}, false},
		{"string that is not UTF-8", "a\xffb", false},
		{"key that is not UTF-8", map[string]any{"a\xff": "b"}, false},
		{"typed map", map[string]any{"a": map[string]string{"b": "c"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := copyDecoded(tc.in)
			if ok != tc.copied {
				t.Fatalf("copied = %v, want %v", ok, tc.copied)
			}
			if !ok {
				return
			}
			raw, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("copy %#v, round trip %#v", got, want)
			}
		})
	}
}

// The copy shares nothing with what it copied: repairs change it in place.
func TestCopyDecodedIsDeep(t *testing.T) {
	in := map[string]any{"spec": map[string]any{"versions": []any{map[string]any{"name": "v1"}}}}
	out, ok := copyDecoded(in)
	if !ok {
		t.Fatal("not copied")
	}
	out.(map[string]any)["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["name"] = "v2"
	if in["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["name"] != "v1" {
		t.Error("changing the copy changed the original")
	}
}

// plainlyDecodes may only say yes where decoding succeeds, and should say yes for the
// nodes schemas are made of; its no leaves the answer to the decode.
func TestPlainlyDecodes(t *testing.T) {
	roundTrip := func(m map[string]any) bool {
		raw, err := json.Marshal(m)
		if err != nil {
			return false
		}
		var s apiextensionsv1.JSONSchemaProps
		return kjson.UnmarshalCaseSensitivePreserveInts(raw, &s) == nil
	}
	for _, tc := range []struct {
		name  string
		node  map[string]any
		plain bool
	}{
		{"typical string property", map[string]any{"type": "string", "description": "d", "format": "date-time", "pattern": "^a$", "maxLength": int64(63)}, true},
		{"number bounds", map[string]any{"type": "number", "minimum": int64(0), "maximum": 1.5, "multipleOf": 0.5, "exclusiveMinimum": true}, true},
		{"list and map markers", map[string]any{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name"}, "required": []any{"a", "b"}, "nullable": true}, true},
		{"JSON values", map[string]any{"enum": []any{"a", int64(1), nil, map[string]any{}}, "default": map[string]any{"a": []any{}}, "example": "x"}, true},
		{"nulls", map[string]any{"description": nil, "maxLength": nil, "required": nil}, true},
		{"empty", map[string]any{}, true},
		{"integer as a float", map[string]any{"maxLength": 1.5}, false},
		{"type as a list", map[string]any{"type": []any{"string", "null"}}, false},
		{"required as a string", map[string]any{"required": "a"}, false},
		{"required with a number", map[string]any{"required": []any{"a", int64(1)}}, false},
		{"enum as a string", map[string]any{"enum": "a"}, false},
		{"bool as a string", map[string]any{"nullable": "true"}, false},
		{"validation rules", map[string]any{"x-kubernetes-validations": []any{map[string]any{"rule": "self > 0"}}}, false},
		{"external docs", map[string]any{"externalDocs": map[string]any{"url": "https://example.com"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plainlyDecodes(tc.node); got != tc.plain {
				t.Errorf("plainlyDecodes = %v, want %v", got, tc.plain)
			}
			if plainlyDecodes(tc.node) && !roundTrip(tc.node) {
				t.Errorf("plainlyDecodes says yes, but decoding fails")
			}
			if decodesAsSchema(tc.node) != roundTrip(tc.node) {
				t.Errorf("decodesAsSchema = %v, decoding says %v", decodesAsSchema(tc.node), roundTrip(tc.node))
			}
		})
	}
}

// The plain types come from JSONSchemaProps itself; these are the ones schemas lean on.
func TestSchemaKeywords(t *testing.T) {
	for k, want := range map[string]plainType{
		"type": plainString, "description": plainString, "$ref": plainString, "x-kubernetes-list-type": plainString,
		"nullable": plainBool, "x-kubernetes-preserve-unknown-fields": plainBool, "x-kubernetes-int-or-string": plainBool,
		"maxLength": plainInt, "minItems": plainInt, "minimum": plainFloat, "multipleOf": plainFloat,
		"required": plainStrings, "x-kubernetes-list-map-keys": plainStrings,
		"enum": plainJSONList, "default": plainJSON, "example": plainJSON,
		"x-kubernetes-validations": notPlain, "externalDocs": notPlain, "properties": notPlain,
	} {
		if got, ok := schemaKeywords[k]; !ok || got != want {
			t.Errorf("%s: %v (a keyword: %v), want %v", k, got, ok, want)
		}
	}
}
