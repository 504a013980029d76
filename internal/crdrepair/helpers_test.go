package crdrepair

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// v1CRD is a small v1 CRD of widgets.example.com with the given schema (YAML, indented as
// the value of openAPIV3Schema) for version v1.
func v1CRD(schema string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
` + indent(schema, "        ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func object(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("test YAML: %v\n%s", err, doc)
	}
	return &unstructured.Unstructured{Object: obj}
}

// schemaJSON decodes a schema written in YAML the way the API server decodes it.
func schemaOf(t testing.TB, doc string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("test YAML: %v", err)
	}
	var s apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("test schema: %v", err)
	}
	return &s
}

func assertSchema(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version int, want string) {
	t.Helper()
	if len(crd.Spec.Versions) <= version || crd.Spec.Versions[version].Schema == nil {
		t.Fatalf("version %d has no schema", version)
	}
	got := crd.Spec.Versions[version].Schema.OpenAPIV3Schema
	w := schemaOf(t, want)
	if !reflect.DeepEqual(normalizeSchema(t, got), normalizeSchema(t, w)) {
		gy, _ := yaml.Marshal(got)
		wy, _ := yaml.Marshal(w)
		t.Errorf("schema of version %d:\n got:\n%s\nwant:\n%s", version, gy, wy)
	}
}

// normalizeSchema compares schemas as JSON values, so that raw JSON fields (default,
// enum) compare by content rather than by their bytes.
func normalizeSchema(t testing.TB, s *apiextensionsv1.JSONSchemaProps) any {
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func assertChanges(t *testing.T, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes:\n got: %s\nwant: %s", strings.Join(quoteAll(got), "\n      "), strings.Join(quoteAll(want), "\n      "))
	}
}

func quoteAll(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = "`" + s + "`"
	}
	return out
}

func mustYAML(t testing.TB, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
