package crdrepair

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const validSchema = `type: object
properties:
  spec:
    type: object
    properties:
      size: {type: integer, minimum: 1}
      mode: {type: string, enum: [fast, safe], default: safe}
  status:
    type: object
    x-kubernetes-preserve-unknown-fields: true
`

func TestValidV1ComesBackUnchanged(t *testing.T) {
	in := object(t, v1CRD(validSchema))
	crd, changes, err := Repair(in)
	if err != nil {
		t.Fatal(err)
	}
	assertChanges(t, changes, nil)
	var want apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(in.Object, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(crd, &want) {
		t.Errorf("valid CRD changed:\n got: %+v\nwant: %+v", crd, &want)
	}
}

func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          string
		wantSchemas []string // per version, as YAML; none to skip
		check       func(*testing.T, *apiextensionsv1.CustomResourceDefinition)
		wantChanges []string
	}{{
		name: "missing root type",
		in: v1CRD(`properties:
  spec: {type: object, properties: {size: {type: integer}}}
`),
		wantSchemas: []string{`type: object
properties:
  spec: {type: object, properties: {size: {type: integer}}}
`},
		wantChanges: []string{`spec.versions[v1].schema: added "type: object" at the root`},
	}, {
		name: "missing scope",
		in:   strings.Replace(v1CRD(validSchema), "  scope: Namespaced\n", "", 1),
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
				t.Errorf("scope %q, want Namespaced", crd.Spec.Scope)
			}
		},
		wantChanges: []string{`spec.scope: set to "Namespaced", the v1beta1 default (v1 requires it)`},
	}, {
		name: "webhook conversion without review versions",
		in: v1CRD(validSchema) + `  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {name: widgets-webhook, namespace: widgets, path: /convert}
`,
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			c := crd.Spec.Conversion
			if c == nil || c.Webhook == nil || !reflect.DeepEqual(c.Webhook.ConversionReviewVersions, []string{"v1", "v1beta1"}) {
				t.Errorf("conversion %+v, want webhook with review versions [v1 v1beta1]", c)
			}
			if c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil || c.Webhook.ClientConfig.Service.Name != "widgets-webhook" {
				t.Errorf("client config lost: %+v", c.Webhook.ClientConfig)
			}
		},
		wantChanges: []string{`spec.conversion.webhook.conversionReviewVersions: set to [v1 v1beta1]: v1 requires it for webhook conversion`},
	}, {
		// kubebuilder's scaffold (elastic-phenix-operator in the community catalog): one
		// version, a webhook, and a caBundle that is a newline for cert-manager to fill.
		name: "idle conversion webhook of a single-version CRD",
		in: v1CRD(validSchema) + `  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        caBundle: Cg==
        service: {name: widgets-webhook, namespace: widgets-system, path: /convert}
`,
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.NoneConverter || c.Webhook != nil {
				t.Errorf("conversion %+v, want strategy None without webhook", c)
			}
		},
		wantChanges: []string{`spec.conversion: set the strategy to None: the CRD has a single version, so its conversion webhook would never be called, and its caBundle is not a PEM certificate, which keeps the API server from establishing the CRD`},
	}, {
		// With two versions the webhook is needed; its caBundle is left for the webhook
		// support to replace, and the CRD is not touched.
		name: "conversion webhook of a two-version CRD kept",
		in: strings.Replace(v1CRD(validSchema), "  versions:\n", "  versions:\n  - {name: v1alpha1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}\n", 1) + `  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        caBundle: Cg==
        service: {name: widgets-webhook, namespace: widgets-system, path: /convert}
`,
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil {
				t.Errorf("conversion %+v, want the webhook kept", c)
			}
		},
	}, {
		name: "non-structural subtree fixed narrowly, siblings kept",
		in: v1CRD(`type: object
properties:
  spec:
    type: object
    properties:
      name: {type: string, pattern: '^[a-z]+$', maxLength: 20}
      listeners:
        description: a list, or an object keyed by name
        oneOf:
        - type: array
          items: {type: object, properties: {port: {type: integer}}}
        - type: object
          properties: {plain: {type: object}}
      replicas: {type: integer, minimum: 0}
`),
		wantSchemas: []string{`type: object
properties:
  spec:
    type: object
    properties:
      name: {type: string, pattern: '^[a-z]+$', maxLength: 20}
      listeners:
        description: a list, or an object keyed by name
        x-kubernetes-preserve-unknown-fields: true
      replicas: {type: integer, minimum: 0}
`},
		wantChanges: []string{
			`spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[listeners]: has no type and none can be inferred; added x-kubernetes-preserve-unknown-fields: true so it keeps accepting any value`,
			`spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[listeners]: removed oneOf, whose branches cannot be made structural (properties[spec].properties[listeners].oneOf[0].type: Forbidden: must be empty to be structural); the rest of the schema still validates`,
		},
	}, {
		name: "k8s.io group gets the approval annotation",
		in: strings.NewReplacer("widgets.example.com", "widgets.storage.k8s.io", "group: example.com", "group: storage.k8s.io").
			Replace(v1CRD(validSchema)),
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if got := crd.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation]; got != APIApprovalValue {
				t.Errorf("annotation %q, want %q", got, APIApprovalValue)
			}
		},
		wantChanges: []string{`metadata.annotations[api-approved.kubernetes.io]: added "unapproved, imported from an operator bundle by operator-manager": ` +
			`group storage.k8s.io is protected by Kubernetes and needs the annotation; a value starting with "unapproved" is accepted`},
	}, {
		name: "v1beta1 without schema",
		in: `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  version: v1alpha1
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
`,
		wantSchemas: []string{`{type: object, x-kubernetes-preserve-unknown-fields: true}`},
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			v := crd.Spec.Versions
			if len(v) != 1 || v[0].Name != "v1alpha1" || !v[0].Served || !v[0].Storage {
				t.Errorf("versions %+v, want v1alpha1 served and stored", v)
			}
			if crd.Spec.PreserveUnknownFields {
				t.Error("preserveUnknownFields still set")
			}
		},
		wantChanges: []string{
			`apiVersion: converted from apiextensions.k8s.io/v1beta1 to apiextensions.k8s.io/v1`,
			`spec.version: became spec.versions[v1alpha1] (served, storage): v1 has only the list`,
			`spec.preserveUnknownFields: removed "true" (the v1beta1 default), which v1 does not allow; unknown fields are kept instead by x-kubernetes-preserve-unknown-fields: true on the object schemas`,
			`spec.versions[v1alpha1].schema: added "type: object" with x-kubernetes-preserve-unknown-fields: true: v1 requires a schema, and this one keeps any content as the schemaless original did`,
		},
	}, {
		name: "v1beta1 top-level validation, subresources and columns move to each version",
		in: `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, kind: Widget}
  preserveUnknownFields: false
  versions:
  - {name: v1beta1, served: true, storage: false}
  - {name: v1, served: true, storage: true}
  validation:
    openAPIV3Schema:
      properties:
        spec: {type: object, properties: {size: {type: integer}}}
  subresources:
    status: {}
    scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}
  additionalPrinterColumns:
  - {name: Size, type: integer, JSONPath: .spec.size}
`,
		wantSchemas: []string{
			"type: object\nproperties:\n  spec: {type: object, properties: {size: {type: integer}}}\n",
			"type: object\nproperties:\n  spec: {type: object, properties: {size: {type: integer}}}\n",
		},
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			for _, v := range crd.Spec.Versions {
				if v.Subresources == nil || v.Subresources.Status == nil || v.Subresources.Scale == nil ||
					v.Subresources.Scale.SpecReplicasPath != ".spec.size" {
					t.Errorf("version %s subresources %+v", v.Name, v.Subresources)
				}
				want := []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}}
				if !reflect.DeepEqual(v.AdditionalPrinterColumns, want) {
					t.Errorf("version %s columns %+v, want %+v", v.Name, v.AdditionalPrinterColumns, want)
				}
			}
		},
		wantChanges: []string{
			`apiVersion: converted from apiextensions.k8s.io/v1beta1 to apiextensions.k8s.io/v1`,
			`spec.validation: moved to spec.versions[v1beta1,v1].schema: v1 has it only per version`,
			`spec.subresources: moved to spec.versions[v1beta1,v1].subresources: v1 has it only per version`,
			`spec.additionalPrinterColumns: moved to spec.versions[v1beta1,v1].additionalPrinterColumns: v1 has it only per version`,
			`spec.scope: set to "Namespaced", the v1beta1 default (v1 requires it)`,
			`spec.versions[v1beta1].schema: added "type: object" at the root`,
			`spec.versions[v1].schema: added "type: object" at the root`,
		},
	}, {
		name: "v1beta1 without pruning keeps unknown fields",
		in: `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  version: v1
  scope: Cluster
  names: {plural: widgets, kind: Widget}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        metadata: {type: object}
        spec:
          type: object
          properties:
            labels: {type: object, additionalProperties: {type: string}}
            items: {type: array, items: {type: object, properties: {n: {type: string}}}}
        status: {type: object}
`,
		wantSchemas: []string{`type: object
x-kubernetes-preserve-unknown-fields: true
properties:
  metadata: {type: object}
  spec:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      labels: {type: object, additionalProperties: {type: string}}
      items: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {n: {type: string}}}}
  status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`},
		wantChanges: []string{
			`apiVersion: converted from apiextensions.k8s.io/v1beta1 to apiextensions.k8s.io/v1`,
			`spec.version: became spec.versions[v1] (served, storage): v1 has only the list`,
			`spec.validation: moved to spec.versions[v1].schema: v1 has it only per version`,
			`spec.preserveUnknownFields: removed "true" (the v1beta1 default), which v1 does not allow; unknown fields are kept instead by x-kubernetes-preserve-unknown-fields: true on the object schemas`,
			`spec.versions[v1].schema: added x-kubernetes-preserve-unknown-fields: true to 4 object schemas, so unknown fields are kept as with v1beta1's preserveUnknownFields: true (v1 would prune them)`,
		},
	}, {
		name: "bundle quirks: server fields, column keys, short names, typos",
		in: `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, namespace: operators, resourceVersion: "42"}
spec:
  group: example.com
  version: v1
  scope: Namespaced
  preserveUnknownFields: false
  names: {plural: widgets, kind: Widget, shortNames: [WG, w_g]}
  additionalPrinterColumns:
  - {name: Size, type: int, jsonPath: .spec.size}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, properies: {size: {type: integer}}}
`,
		wantSchemas: []string{"type: object\nproperties: {spec: {type: object}}\n"},
		check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if crd.Namespace != "" || crd.ResourceVersion != "" {
				t.Errorf("namespace %q, resourceVersion %q kept", crd.Namespace, crd.ResourceVersion)
			}
			if got := crd.Spec.Names.ShortNames; !reflect.DeepEqual(got, []string{"wg"}) {
				t.Errorf("short names %q, want [wg]", got)
			}
			want := []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}}
			if got := crd.Spec.Versions[0].AdditionalPrinterColumns; !reflect.DeepEqual(got, want) {
				t.Errorf("columns %+v, want %+v", got, want)
			}
		},
		wantChanges: []string{
			`spec.additionalPrinterColumns[0]: renamed jsonPath to JSONPath, the name this API version uses`,
			`spec.validation.openAPIV3Schema.properties[spec]: removed unknown keyword "properies": the API server ignores it, a misspelling of "properties" perhaps, which never took effect`,
			`apiVersion: converted from apiextensions.k8s.io/v1beta1 to apiextensions.k8s.io/v1`,
			`spec.version: became spec.versions[v1] (served, storage): v1 has only the list`,
			`spec.validation: moved to spec.versions[v1].schema: v1 has it only per version`,
			`spec.additionalPrinterColumns: moved to spec.versions[v1].additionalPrinterColumns: v1 has it only per version`,
			`metadata.resourceVersion: removed: the API server refuses a create that carries it`,
			`metadata.namespace: removed "operators": a CRD is cluster-scoped (the API server would drop it too)`,
			`spec.versions[v1].additionalPrinterColumns[Size]: changed type "int" to "integer" (Invalid value: must be one of boolean,date,integer,number,string)`,
			`spec.names.shortNames: changed "WG" to "wg": it must be a lower-case DNS label`,
			`spec.names.shortNames: removed "w_g": not a lower-case DNS label (kubectl only uses it as an alias)`,
		},
	}, {
		// $schema stops the structural checks, so the incomplete anyOf shows in a second
		// round; the API server checks anyOf for undefined properties at the root only.
		name: "incomplete anyOf at the root, draft-6 bounds, $schema",
		in: v1CRD(`type: object
anyOf: [{properties: {x: {minLength: 1}}}, {required: [spec]}]
properties:
  spec:
    $schema: http://json-schema.org/draft-06/schema#
    type: object
    properties:
      c: {type: integer, exclusiveMinimum: 0}
`),
		wantSchemas: []string{`type: object
anyOf: [{}, {required: [spec]}]
properties:
  spec:
    type: object
    properties:
      c: {type: integer, minimum: 0, exclusiveMinimum: true}
`},
		wantChanges: []string{
			`spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[c].exclusiveMinimum: was 0; changed to {"exclusiveMinimum":true,"minimum":0}`,
			`spec.versions[v1].schema: removed $schema once: not supported in CRD schemas`,
			`spec.versions[v1].schema.openAPIV3Schema.anyOf[0]: removed properties[x] from this anyOf branch: a structural schema does not allow it there (Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[x]); only this branch is loosened`,
		},
	}, {
		name: "status subresource allows only plain constraints at the root",
		in: strings.Replace(v1CRD(`type: object
nullable: false
anyOf: [{required: [spec]}, {required: [status]}]
properties: {spec: {type: object}, status: {type: object}}
`), "    schema:\n", "    subresources: {status: {}}\n    schema:\n", 1),
		wantSchemas: []string{"type: object\nproperties: {spec: {type: object}, status: {type: object}}\n"},
		wantChanges: []string{
			`spec.versions[v1].schema: removed anyOf: [{"required":["spec"]},{"required":["status"]}] from the root: with the status subresource the API server allows only plain constraints there`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			crd, changes, err := Repair(object(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.wantSchemas {
				assertSchema(t, crd, i, s)
			}
			if tc.check != nil {
				tc.check(t, crd)
			}
			assertChanges(t, changes, tc.wantChanges)
			assertAccepted(t, crd)
		})
	}
}

// assertAccepted checks the result with the API server's validation, and that repairing
// it again changes nothing.
func assertAccepted(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	obj, err := encode(crd)
	if err != nil {
		t.Fatal(err)
	}
	errs, _, err := validate(obj)
	if err != nil || len(errs) > 0 {
		t.Fatalf("result does not validate: %v %v", err, errs)
	}
	again, changes, err := Repair(object(t, mustYAML(t, obj)))
	if err != nil || len(changes) > 0 || !reflect.DeepEqual(again, crd) {
		t.Errorf("repairing the result again: changes %q, error %v", changes, err)
	}
}
