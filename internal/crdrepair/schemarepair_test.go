package crdrepair

import (
	"strings"
	"testing"
)

// TestSchemaRepairs covers each schema repair on a v1 CRD: the repaired schema and the
// recorded change text.
func TestSchemaRepairs(t *testing.T) {
	const at = "spec.versions[v1].schema.openAPIV3Schema"
	for _, tc := range []struct {
		name, in, want string
		changes        []string
	}{{
		name: "field types inferred from content",
		in: `type: object
properties:
  spec:
    properties:
      tags: {items: {type: string}}
      mode: {enum: [a, b]}
      when: {format: date-time}
      anything: {description: free form}
`,
		want: `type: object
properties:
  spec:
    type: object
    properties:
      tags: {type: array, items: {type: string}}
      mode: {type: string, enum: [a, b]}
      when: {type: string, format: date-time}
      anything: {description: free form, x-kubernetes-preserve-unknown-fields: true}
`,
		changes: []string{
			at + `.properties[spec]: added "type: object" (it has properties)`,
			at + `.properties[spec].properties[anything]: has no type and none can be inferred; added x-kubernetes-preserve-unknown-fields: true so it keeps accepting any value`,
			at + `.properties[spec].properties[mode]: added "type: string" (its enum values are all of that type)`,
			at + `.properties[spec].properties[tags]: added "type: array" (it describes a list (items, item limits or list extensions))`,
			at + `.properties[spec].properties[when]: added "type: string" (its format is date-time)`,
		},
	}, {
		name: "int-or-string without its marker",
		in: `type: object
properties:
  port:
    anyOf: [{type: string}, {type: integer}]
  size:
    oneOf: [{type: integer, minimum: 1}, {type: string, pattern: '^[0-9]+Gi$'}]
`,
		want: `type: object
properties:
  port:
    x-kubernetes-int-or-string: true
    anyOf: [{type: integer}, {type: string}]
  size:
    x-kubernetes-int-or-string: true
    allOf:
    - anyOf: [{type: integer}, {type: string}]
    - minimum: 1
    - pattern: '^[0-9]+Gi$'
`,
		changes: []string{
			at + `.properties[port]: added x-kubernetes-int-or-string: true: its branches of integer and string mean int-or-string, which a structural schema expresses with that marker`,
			at + `.properties[size]: added x-kubernetes-int-or-string: true: its branches of integer and string mean int-or-string, which a structural schema expresses with that marker (the branches' own bounds are kept in allOf, where they apply to their type only)`,
		},
	}, {
		name: "metadata restricted to name and generateName",
		in: `type: object
properties:
  metadata:
    type: object
    description: standard metadata
    properties:
      name: {type: string, maxLength: 40}
      labels: {type: object, additionalProperties: {type: string}}
`,
		want: `type: object
properties:
  metadata:
    type: object
    properties:
      name: {type: string, maxLength: 40}
`,
		changes: []string{at + `.properties[metadata]: reduced to "type: object" and its constraints on name: the API server defines metadata itself and lets a CRD restrict only name and generateName`},
	}, {
		name: "additionalProperties beside properties",
		in: `type: object
properties:
  strict: {type: object, additionalProperties: false, properties: {a: {type: string}}}
  mixed: {type: object, additionalProperties: {type: string}, properties: {a: {type: integer}}}
`,
		want: `type: object
properties:
  strict: {type: object, properties: {a: {type: string}}}
  mixed: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}}}
`,
		changes: []string{
			at + `.properties[mixed]: replaced additionalProperties {"type":"string"} by x-kubernetes-preserve-unknown-fields: true (Forbidden: additionalProperties and properties are mutual exclusive): other fields are kept, unvalidated`,
			at + `.properties[strict]: removed "additionalProperties: false" (Forbidden: additionalProperties and properties are mutual exclusive): unknown fields are pruned instead of refused`,
		},
	}, {
		name: "value validations cleaned, not dropped",
		in: `type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      b: {type: string}
    anyOf:
    - {type: object, description: needs a, required: [a]}
    - {type: object, description: needs b, required: [b]}
`,
		want: `type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      b: {type: string}
    anyOf:
    - {required: [a]}
    - {required: [b]}
`,
		changes: []string{
			at + `.properties[spec].anyOf[0]: removed "description": a structural schema allows no description inside anyOf/allOf/oneOf/not (it documents only)`,
			at + `.properties[spec].anyOf[0]: removed "type: object": the field's own schema already says so, and a structural schema allows no type inside anyOf`,
			at + `.properties[spec].anyOf[1]: removed "description": a structural schema allows no description inside anyOf/allOf/oneOf/not (it documents only)`,
			at + `.properties[spec].anyOf[1]: removed "type: object": the field's own schema already says so, and a structural schema allows no type inside anyOf`,
		},
	}, {
		name: "x-kubernetes extensions misused",
		in: `type: object
properties:
  a: {type: string, x-kubernetes-preserve-unknown-fields: false}
  b: {type: array, items: {type: object, properties: {k: {type: string}}}, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k]}
  c: {x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`,
		want: `type: object
properties:
  a: {type: string}
  b: {type: array, items: {type: object, properties: {k: {type: string}}}}
  c: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`,
		changes: []string{
			at + `.properties[a]: removed x-kubernetes-preserve-unknown-fields: false (Invalid value: must be true or undefined)`,
			at + `.properties[b]: removed x-kubernetes-list-type "map" and its map keys (Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property): the list is atomic now, which validates the same and only merges as a whole in server-side apply`,
			at + `.properties[c]: added "type: object": x-kubernetes-embedded-resource requires it`,
		},
	}, {
		name: "invalid defaults, patterns, types and rules",
		in: `type: object
properties:
  a: {type: string, default: 5}
  b: {type: string, pattern: '^(?!x)'}
  c: {type: int}
  d: {type: string, x-kubernetes-validations: [{rule: self.size() > 1}, {rule: "1 + 1"}]}
  e: {type: array, uniqueItems: true, items: {type: string}}
`,
		want: `type: object
properties:
  a: {type: string}
  b: {type: string}
  c: {type: integer}
  d: {type: string, x-kubernetes-validations: [{rule: self.size() > 1}]}
  e: {type: array, x-kubernetes-list-type: set, items: {type: string}}
`,
		// Defaults and rules are checked only once the schema is structural: a second round.
		changes: []string{
			at + `.properties[b]: removed pattern "^(?!x)": not a regular expression the API server can compile (RE2 syntax)`,
			at + `.properties[c]: changed "type: int" to "type: integer", the OpenAPI name of that type`,
			at + `.properties[e]: replaced "uniqueItems: true" (refused for its cost) by "x-kubernetes-list-type: set", which also requires unique items`,
			at + `.properties[a]: removed default 5: Invalid value: the value must be of type string: "integer"`,
			at + `.properties[d]: removed x-kubernetes-validations rule "1 + 1" (Invalid value: cel expression must evaluate to a bool)`,
		},
	}, {
		name: "JSON shapes the API server cannot decode",
		in: `type: object
properties:
  a: {type: [string, "null"], maxLength: "10"}
  b: {type: object, properties: {x: {type: string, required: true}}}
  c: string
`,
		want: `type: object
properties:
  a: {type: string, nullable: true, maxLength: 10}
  b: {type: object, properties: {x: {type: string}}}
  c: {type: string}
`,
		changes: []string{
			at + `.properties[a].type: was ["string","null"]; changed to type: string with nullable: true`,
			at + `.properties[a].maxLength: was "10"; changed to {"maxLength":10}`,
			at + `.properties[b].properties[x].required: removed true: required must list property names (in the parent object)`,
			at + `.properties[c]: was the bare string "string"; made it the schema {type: string}`,
		},
	}, {
		name: "unsupported keywords",
		in: `type: object
properties:
  a: {$ref: '#/definitions/thing'}
  b: {type: object, patternProperties: {'^x-': {type: string}}}
  c: {type: array, items: [{type: string}]}
`,
		want: `type: object
properties:
  a: {x-kubernetes-preserve-unknown-fields: true}
  b: {type: object, x-kubernetes-preserve-unknown-fields: true}
  c: {type: array, items: {type: string}}
`,
		changes: []string{
			at + `.properties[a]: replaced $ref "#/definitions/thing" (not supported in CRD schemas) by x-kubernetes-preserve-unknown-fields: true, so the content it described is kept`,
			at + `.properties[b]: replaced patternProperties {"^x-":{"type":"string"}} (not supported in CRD schemas) by x-kubernetes-preserve-unknown-fields: true, so the content it described is kept`,
			at + `.properties[c]: made the one-element items list its item schema: CRD schemas have one schema for all items`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			crd, changes, err := Repair(object(t, v1CRD(tc.in)))
			if err != nil {
				t.Fatal(err)
			}
			assertSchema(t, crd, 0, tc.want)
			assertChanges(t, changes, tc.changes)
			assertAccepted(t, crd)
		})
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{{
		name: "not a CRD",
		in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		want: `kind is "ConfigMap", not CustomResourceDefinition`,
	}, {
		name: "name that is not plural.group",
		in:   strings.Replace(v1CRD(validSchema), "name: widgets.example.com", "name: gadgets.example.com", 1),
		want: `repairing CRD "gadgets.example.com": the API server would refuse it and it cannot be repaired: metadata.name: Invalid value`,
	}, {
		name: "no storage version",
		in:   strings.Replace(v1CRD(validSchema), "storage: true", "storage: false", 1),
		want: "spec.versions: Invalid value: must have exactly one version marked as storage version",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Repair(object(t, tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
