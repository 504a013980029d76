package crdsafety

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func crd(versions []string, stored []string, sizeMax float64, required ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "caches.example.com"}}
	for _, v := range versions {
		max := sizeMax
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Schema: &apiextensionsv1.CustomResourceValidation{
			OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Required: required, Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"size": {Type: "integer", Maximum: &max}, "mode": {Type: "string"}}},
			}}}})
	}
	c.Status.StoredVersions = stored
	return c
}

func cr(name string, size int64) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Cache",
		"metadata": map[string]any{"name": name, "namespace": "ops"}, "spec": map[string]any{"size": size}}}
	return u
}

func TestStoredVersions(t *testing.T) {
	live := crd([]string{"v1alpha1", "v1"}, []string{"v1alpha1", "v1"}, 10)
	if v := StoredVersions(live, crd([]string{"v1alpha1", "v1", "v2"}, nil, 10)); v != nil {
		t.Errorf("adding a version refused: %v", v)
	}
	v := StoredVersions(live, crd([]string{"v1"}, nil, 10))
	if v == nil || v.Version != "v1alpha1" || !strings.Contains(v.Error(), "CRD caches.example.com version v1alpha1") ||
		!strings.Contains(v.Error(), "status.storedVersions [v1alpha1 v1]") {
		t.Errorf("dropping a stored version: %v", v)
	}
}

func TestObjects(t *testing.T) {
	objs := []unstructured.Unstructured{cr("small", 2), cr("big", 8)}
	for _, tc := range []struct {
		name   string
		next   *apiextensionsv1.CustomResourceDefinition
		object string
		msg    string
	}{
		{"compatible", crd([]string{"v1"}, nil, 16), "", ""},
		{"tighter maximum", crd([]string{"v1"}, nil, 4), "ops/big", "spec.size"},
		{"new required field", crd([]string{"v1"}, nil, 16, "mode"), "ops/small", "spec.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Objects(tc.next, "v1", objs)
			if err != nil {
				t.Fatal(err)
			}
			if tc.object == "" {
				if v != nil {
					t.Fatalf("refused: %v", v)
				}
				return
			}
			if v == nil || v.Object != tc.object || !strings.Contains(v.Message, tc.msg) || !strings.Contains(v.Error(), "custom resource "+tc.object+" would become invalid") {
				t.Fatalf("got %v, want %s refused on %s", v, tc.object, tc.msg)
			}
		})
	}
}
