package nativeapi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMissing(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	got, err := Missing(mapper, []metav1.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "route.openshift.io", Version: "v1", Kind: "Route"},
		{Group: "apps", Version: "v1beta1", Kind: "Deployment"},
		{Group: "apps", Kind: "Deployment"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec.nativeAPIs[2]: route.openshift.io/v1 Route is not served by this cluster",
		"spec.nativeAPIs[3]: apps/v1beta1 Deployment is not served by this cluster",
		"spec.nativeAPIs[4]: names no kind or version (apps/ Deployment)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got, err := Missing(mapper, nil); err != nil || got != nil {
		t.Errorf("no native APIs: %q %v", got, err)
	}
}
