package crdrepair

import (
	"testing"
)

func TestOddScratch(t *testing.T) {
	for _, s := range []string{
		"type: object\nproperties: {a: {type: 'null'}}\n",
		"type: object\nproperties: {a: {type: [string, integer]}}\n",
		"type: object\nproperties: {a: {type: object, nullable: true, properties: {b: {type: string}}, required: [b], additionalProperties: {type: string}}}\n",
		"type: object\nnullable: true\nadditionalProperties: {type: string}\n",
		"type: object\nproperties: {kind: {type: integer}, apiVersion: {}, metadata: {type: string}}\n",
		"type: object\nproperties: {spec: {type: object, properties: {a: {type: string}}, oneOf: [{properties: {a: {enum: [x]}}, required: [a]}, {properties: {b: {type: string}}}]}}\n",
		"type: object\nproperties: {spec: {type: object, properties: {a: {type: string}}, anyOf: [{properties: {b: {type: string}}}]}}\n",
		"type: object\nproperties: {spec: {type: object, not: {properties: {a: {type: string, description: x}}}}}\n",
		"type: object\nproperties: {e: {type: object, x-kubernetes-embedded-resource: true}}\n",
		"type: object\nproperties: {e: {type: string, x-kubernetes-int-or-string: true, x-kubernetes-preserve-unknown-fields: true}}\n",
		"type: object\nproperties: {l: {type: array, x-kubernetes-list-type: set, items: {type: object, properties: {a: {type: string}}}}}\n",
		"type: object\nproperties: {l: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [zz], items: {type: object, properties: {a: {type: string}}}}}\n",
		"type: object\nproperties: {l: {x-kubernetes-list-type: atomic}}\n",
		"type: object\nproperties: {m: {type: string, x-kubernetes-map-type: granular}}\n",
		"type: object\nproperties: {m: {type: object, x-kubernetes-map-type: weird}}\n",
		"type: object\nproperties: {d: {type: object, properties: {a: {type: string}}, default: {a: x, b: y}}}\n",
		"type: object\nproperties: {metadata: {type: object, default: {name: x}}}\n",
		"type: object\nproperties: {r: {type: object, x-kubernetes-validations: [{rule: 'self.a == oldSelf.a'}], properties: {a: {type: string}}}}\n",
		"type: object\ndefinitions: {x: {type: string}}\nproperties: {a: {$ref: '#/definitions/x'}}\n",
		"type: object\n$schema: http://json-schema.org/draft-04/schema#\nid: x\nproperties: {a: {type: string, dependencies: {b: [c]}, additionalItems: false}}\n",
		"type: object\nproperties: {a: {type: string, enum: [1, 2]}}\n",
		"type: object\nproperties: {a: {type: integer, format: int-or-string}}\n",
		"type: object\nproperties: {a: {allOf: [{type: string}, {minLength: 1}]}}\n",
		"type: object\nproperties: {a: {type: object, properties: {x: {type: string}}, allOf: [{$ref: '#/x'}]}}\n",
		"type: object\nproperties: {spec: {type: object, anyOf: [{properties: {metadata: {type: object}}}]}}\n",
	} {
		crd, changes, err := Repair(object(t, v1CRD(s)))
		t.Logf("IN: %s", s)
		if err != nil {
			t.Logf("  ERR %v", err)
			continue
		}
		for _, c := range changes {
			t.Logf("  %s", c)
		}
		t.Logf("  OUT: %s", mustYAML(t, crd.Spec.Versions[0].Schema.OpenAPIV3Schema))
	}
}
