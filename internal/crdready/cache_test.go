package crdready

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestSummarize: the cached CRD keeps what readiness and the Blueprint's decisions need
// (annotations, versions served and stored, status) and drops the schemas, printer
// columns, managed fields and kubectl's last-applied copy.
func TestSummarize(t *testing.T) {
	c := crd("caches.example.com", true, "v1", "v2")
	c.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}", "operator-manager.domain/crd-hash": "sha256:1"}
	c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
	for i := range c.Spec.Versions {
		c.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
		c.Spec.Versions[i].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age"}}
	}
	c.Spec.Versions[1].Storage = true
	out, err := Summarize(c)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*apiextensionsv1.CustomResourceDefinition)
	if s.ManagedFields != nil || s.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Error("managed fields or the last-applied copy kept")
	}
	if s.Annotations["operator-manager.domain/crd-hash"] != "sha256:1" {
		t.Error("the manager's own annotations dropped")
	}
	for _, v := range s.Spec.Versions {
		if v.Schema != nil || v.AdditionalPrinterColumns != nil {
			t.Errorf("version %s keeps its schema or columns", v.Name)
		}
	}
	if !Established(s) || !s.Spec.Versions[1].Storage || !s.Spec.Versions[0].Served {
		t.Error("status or versions lost")
	}
	if other, _ := Summarize("not a CRD"); other != "not a CRD" {
		t.Error("other objects changed")
	}
}

// TestReadyFromCache: without a sighting, the cache answers; a CRD it shows not
// Established, not serving the version, or does not hold is not ready.
func TestReadyFromCache(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = apiextensionsv1.AddToScheme(scheme)
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd("ready.example.com", true, "v1"), crd("pending.example.com", false, "v1")).Build()
	m := &Memo{Cache: cached}
	for _, tc := range []struct {
		name, version string
		want          bool
	}{
		{"ready.example.com", "", true},
		{"ready.example.com", "v1", true},
		{"ready.example.com", "v2", false},
		{"pending.example.com", "", false},
		{"absent.example.com", "", false},
	} {
		if got := m.Ready(tc.name, tc.version); got != tc.want {
			t.Errorf("Ready(%s, %q) = %v, want %v", tc.name, tc.version, got, tc.want)
		}
	}
	if !m.Watched() || (&Memo{}).Watched() {
		t.Error("Watched says whether there is a cache")
	}
}
