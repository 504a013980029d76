package crdrepair

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// FuzzRepair feeds Repair whatever YAML decodes to an object: it must never panic, and a
// CRD it returns must validate and come back unchanged when repaired again.
//
//	go test ./internal/crdrepair/ -run '^$' -fuzz FuzzRepair -fuzztime 30s
func FuzzRepair(f *testing.F) {
	for _, seed := range []string{
		v1CRD(validSchema),
		v1CRD("properties: {spec: {properties: {a: {anyOf: [{type: string}, {type: integer}]}}}}\n"),
		v1CRD("type: object\nproperties:\n  metadata: {type: object, properties: {labels: {type: object}}}\n" +
			"  s: {oneOf: [{type: array, items: {}}, {type: object}], default: 1}\n  t: {type: [string, 'null'], required: true}\n"),
		v1CRD("type: object\nproperties: {a: {$ref: '#/x', patternProperties: {x: {}}}, b: {items: [{}, {}], uniqueItems: true}}\n"),
		v1CRD("type: object\nproperties: {a: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: string}}}\n"),
		`apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.storage.k8s.io, namespace: x, resourceVersion: "1"}
spec:
  group: storage.k8s.io
  version: v1
  names: {plural: widgets, kind: Widget, shortNames: [W_1]}
  validation: {openAPIV3Schema: {properties: {spec: {additionalProperties: false, properties: {a: {}}}}}}
  subresources: {status: {}}
  additionalPrinterColumns: [{name: A, type: int, jsonPath: spec.a}]
  conversion: {strategy: Webhook, webhookClientConfig: {url: "https://x/convert"}}
`,
		"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {versions: [1, {name: v1}]}\n",
		"kind: CustomResourceDefinition\n",
		// Schemas, wrapped in a CRD by the target.
		validSchema,
		"properties: {spec: {properties: {a: {anyOf: [{type: integer, minimum: 1}, {type: string}]}, b: {not: {type: string}}}}}\n",
		"type: object\nproperties: {metadata: {properties: {name: {type: string}}}, status: {additionalProperties: true, properties: {}}}\n",
		"type: object\nproperties: {a: {type: object, x-kubernetes-validations: [{rule: 'self.x == oldSelf.x'}], properties: {x: {type: string}}}}\n",
		"type: object\nproperties: {a: {items: {type: object, properties: {k: {type: string, nullable: true}}}, x-kubernetes-list-type: set}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		if _, ok := obj["kind"]; !ok {
			// Random bytes rarely make a whole CRD; reaching the schema repairs more often
			// pays off, so an object without a kind is taken as a schema in a CRD.
			obj = wrapSchema(obj, len(data)%2 == 0)
		}
		crd, changes, err := Repair(&unstructured.Unstructured{Object: obj})
		if err != nil {
			return
		}
		if crd == nil {
			t.Fatalf("no CRD and no error (changes %q)", changes)
		}
		out, err := encode(crd)
		if err != nil {
			t.Fatal(err)
		}
		if errs, _, err := validate(out); err != nil || len(errs) > 0 {
			t.Fatalf("repaired CRD does not validate: %v %v", err, errs)
		}
		again, more, err := Repair(&unstructured.Unstructured{Object: out})
		if err != nil || len(more) > 0 || !reflect.DeepEqual(again, crd) {
			t.Fatalf("repairing the result again: changes %q, error %v\n%s\n%s", more, err, mustYAML(t, crd), mustYAML(t, again))
		}
	})
}

// wrapSchema puts a fuzzed object in a CRD as the schema, of v1 or of v1beta1.
func wrapSchema(schema map[string]any, v1 bool) map[string]any {
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1beta1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group":      "example.com",
			"names":      map[string]any{"plural": "widgets", "kind": "Widget"},
			"version":    "v1",
			"validation": map[string]any{"openAPIV3Schema": schema},
		},
	}
	if v1 {
		crd["apiVersion"] = "apiextensions.k8s.io/v1"
		crd["spec"] = map[string]any{
			"group": "example.com",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "kind": "Widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": schema}}},
		}
	}
	return crd
}
