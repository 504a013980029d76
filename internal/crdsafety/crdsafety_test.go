package crdsafety

import (
	"reflect"
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
		{"tighter maximum", crd([]string{"v1"}, nil, 4), "ops/big", "spec.size: Invalid value: 8"},
		{"new required field", crd([]string{"v1"}, nil, 16, "mode"), "ops/small", "spec.mode: Required value"},
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
			if v == nil || v.Object != tc.object || !strings.HasPrefix(v.Message, tc.msg) || !strings.Contains(v.Error(), "custom resource "+tc.object+" would become invalid") {
				t.Fatalf("got %v, want %s refused on %s", v, tc.object, tc.msg)
			}
		})
	}
}

// storageCRD is a CRD whose versions are all served, with storage the storage version.
func storageCRD(versions []string, storage string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
	c := crd(versions, stored, 10)
	for i := range c.Spec.Versions {
		c.Spec.Versions[i].Storage = c.Spec.Versions[i].Name == storage
	}
	return c
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name       string
		live, next *apiextensionsv1.CustomResourceDefinition
		// want: nil for nothing to do, else the migration
		want *Migration
		// refused: the version a refusal names, "" for none
		refused string
	}{
		{name: "same versions",
			live: storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1", "v1"), next: storageCRD([]string{"v1alpha1", "v1"}, "v1")},
		{name: "a version added",
			live: storageCRD([]string{"v1"}, "v1", "v1"), next: storageCRD([]string{"v1", "v2"}, "v2")},
		{name: "a served version never stored dropped",
			live: storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1"), next: storageCRD([]string{"v1"}, "v1")},
		{name: "an old stored version dropped (camel-k 1.0.1 to 1.1.0)",
			live: storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1", "v1"), next: storageCRD([]string{"v1"}, "v1"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v1", Drop: []string{"v1alpha1"}, StoredVersions: []string{"v1"}}},
		{name: "two old stored versions dropped, the storage version moves on",
			live: storageCRD([]string{"v1alpha1", "v1beta1", "v1"}, "v1", "v1alpha1", "v1beta1", "v1"),
			next: storageCRD([]string{"v1", "v2"}, "v2"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v1", Drop: []string{"v1alpha1", "v1beta1"}, StoredVersions: []string{"v1"}}},
		{name: "one old stored version dropped, another kept",
			live: storageCRD([]string{"v1alpha1", "v1beta1", "v1"}, "v1", "v1alpha1", "v1beta1", "v1"),
			next: storageCRD([]string{"v1beta1", "v1"}, "v1"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v1", Drop: []string{"v1alpha1"}, StoredVersions: []string{"v1beta1", "v1"}}},
		{name: "storage version missing from storedVersions (status edited)",
			live: storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1"), next: storageCRD([]string{"v1"}, "v1"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v1", Drop: []string{"v1alpha1"}, StoredVersions: []string{"v1"}}},
		// Dropping the storage version itself: the storage version is switched first, which
		// Preflight allows only while no custom resource exists.
		{name: "the storage version dropped",
			live: storageCRD([]string{"v1"}, "v1", "v1"), next: storageCRD([]string{"v2"}, "v2"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v2", SwitchFrom: "v1", Drop: []string{"v1"}, StoredVersions: []string{"v2"}}},
		{name: "the storage version and an old one dropped",
			live: storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1", "v1"), next: storageCRD([]string{"v2"}, "v2"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v2", SwitchFrom: "v1", Drop: []string{"v1alpha1", "v1"}, StoredVersions: []string{"v2"}}},
		{name: "an old stored version dropped, the storage version not kept",
			live: storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1"), next: storageCRD([]string{"v2"}, "v2"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v2", SwitchFrom: "v1", Drop: []string{"v1alpha1"}, StoredVersions: []string{"v2"}}},
		{name: "the storage version dropped, the new CRD stores in a version the live one serves",
			live: storageCRD([]string{"v1", "v2"}, "v1", "v1"), next: storageCRD([]string{"v2"}, "v2"),
			want: &Migration{CRD: "caches.example.com", StorageVersion: "v2", SwitchFrom: "v1", Drop: []string{"v1"}, StoredVersions: []string{"v2"}}},
		{name: "the live storage version not served",
			live: func() *apiextensionsv1.CustomResourceDefinition {
				c := storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1", "v1")
				c.Spec.Versions[1].Served = false
				return c
			}(), next: storageCRD([]string{"v1"}, "v1"), refused: "v1alpha1"},
		{name: "no storage version in the live CRD",
			live: storageCRD([]string{"v1alpha1", "v1"}, "", "v1alpha1", "v1"), next: storageCRD([]string{"v1"}, "v1"), refused: "v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, v := Plan(tc.live, tc.next)
			if tc.refused != "" {
				if m != nil || v == nil || v.Version != tc.refused || !strings.Contains(v.Error(), "the new CRD drops version "+tc.refused) {
					t.Fatalf("got %+v, %v; want a refusal naming %s", m, v, tc.refused)
				}
				if want := StoredVersions(tc.live, tc.next); v.Error() != want.Error() {
					t.Errorf("refusal %q; want it as StoredVersions words it: %q", v, want)
				}
				return
			}
			if v != nil {
				t.Fatalf("refused: %v", v)
			}
			if tc.want != nil && tc.want.SwitchFrom != "" {
				// The version switched to is defined as the new CRD defines it.
				if m.Switch == nil || m.Switch.Name != tc.want.StorageVersion || !m.Switch.Storage {
					t.Fatalf("switch to %+v; want the new CRD's %s", m.Switch, tc.want.StorageVersion)
				}
				mid := m.Intermediate(tc.live)
				var storage []string
				served := map[string]bool{}
				for _, v := range mid.Spec.Versions {
					if v.Storage {
						storage = append(storage, v.Name)
					}
					served[v.Name] = v.Served
				}
				if !reflect.DeepEqual(storage, []string{tc.want.StorageVersion}) || !served[tc.want.SwitchFrom] || !served[tc.want.StorageVersion] {
					t.Errorf("intermediate CRD versions %+v: want %s the storage version, %s still served", mid.Spec.Versions, tc.want.StorageVersion, tc.want.SwitchFrom)
				}
				m.Switch = nil
			}
			if !reflect.DeepEqual(m, tc.want) {
				t.Fatalf("got %+v; want %+v", m, tc.want)
			}
		})
	}
}

func TestMigrationDescribe(t *testing.T) {
	m := &Migration{StorageVersion: "v1", Drop: []string{"v1alpha1"}}
	if got, want := m.Describe(3), "migrated 3 custom resources to storage version v1 and removed v1alpha1 from status.storedVersions (the new CRD drops it)"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}

}
