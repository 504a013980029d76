package crdrepair

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestFallbackEscalates checks the order in which an error no specific repair knows is
// handled, each time it comes back: first the keyword leaves its anyOf branch, then the
// anyOf goes, then its node is replaced, then each enclosing node, and siblings stay.
func TestFallbackEscalates(t *testing.T) {
	obj, err := normalize(object(t, v1CRD(`type: object
properties:
  spec:
    type: object
    properties:
      a: {type: integer, multipleOf: 2, anyOf: [{minimum: 1}, {maximum: -1}]}
      b: {type: string, maxLength: 3}
`)).Object)
	if err != nil {
		t.Fatal(err)
	}
	r := &repairer{obj: obj}
	e := field.Invalid(field.NewPath("spec", "versions").Index(0).Child("schema", "openAPIV3Schema", "properties").Key("spec").
		Child("properties").Key("a").Child("anyOf").Index(0).Child("minimum"), 1, "an error no repair knows")
	const at = "spec.versions[v1].schema.openAPIV3Schema.properties[spec]"
	for attempt, want := range []struct{ spec, change string }{
		{`{type: object, properties: {a: {type: integer, multipleOf: 2, anyOf: [{}, {maximum: -1}]}, b: {type: string, maxLength: 3}}}`,
			at + `.properties[a].anyOf[0]: removed minimum from this anyOf branch`},
		{`{type: object, properties: {a: {type: integer, multipleOf: 2}, b: {type: string, maxLength: 3}}}`,
			at + `.properties[a]: removed anyOf, whose branches cannot be made structural`},
		{`{type: object, properties: {a: {type: integer}, b: {type: string, maxLength: 3}}}`,
			at + `.properties[a]: replaced this subtree by {"type":"integer"}`},
		{`{type: object, x-kubernetes-preserve-unknown-fields: true}`,
			at + `: replaced this subtree by {"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{`{type: object, x-kubernetes-preserve-unknown-fields: true}`,
			`spec.versions[v1].schema: replaced the root schema by {"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
	} {
		before := len(r.changes)
		if !r.fix(e, attempt) {
			t.Fatalf("attempt %d changed nothing", attempt)
		}
		if len(r.changes) != before+1 || !strings.HasPrefix(r.changes[before].String(), want.change) {
			t.Errorf("attempt %d: changes %v, want one starting %q", attempt, r.changes[before:], want.change)
		}
		root := r.versions()[0]["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		if attempt < 4 {
			got := root["properties"].(map[string]any)["spec"]
			if mustYAML(t, got) != mustYAML(t, schemaMap(t, want.spec)) {
				t.Errorf("attempt %d: spec schema\n%s\nwant\n%s", attempt, mustYAML(t, got), want.spec)
			}
		} else if mustYAML(t, root) != mustYAML(t, schemaMap(t, want.spec)) {
			t.Errorf("attempt %d: root schema\n%s\nwant\n%s", attempt, mustYAML(t, root), want.spec)
		}
	}
	if r.fix(e, 5) {
		t.Error("attempt 5 found something left to replace above the root")
	}
}

func schemaMap(t testing.TB, doc string) map[string]any {
	return object(t, doc).Object
}

func TestParseFieldPath(t *testing.T) {
	for in, want := range map[string]string{
		"spec.versions[0].schema.openAPIV3Schema.properties[app.kubernetes.io/name].type": "spec|versions[0]|schema|openAPIV3Schema|properties[app.kubernetes.io/name]|type",
		"spec.validation.openAPIV3Schema.anyOf[1].properties[a]b].items":                  "spec|validation|openAPIV3Schema|anyOf[1]|properties[a]b]|items",
		"metadata.annotations[api-approved.kubernetes.io]":                                "metadata|annotations[api-approved.kubernetes.io]",
		"a[0][1]": "a[0]|[1]",
		"[":       "[]",
		"":        "",
		"x.[y":    "x[y]",
	} {
		var parts []string
		for _, s := range parseFieldPath(in) {
			parts = append(parts, s.String())
		}
		if got := strings.Join(parts, "|"); got != want {
			t.Errorf("parseFieldPath(%q) = %q, want %q", in, got, want)
		}
	}
}
