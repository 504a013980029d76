package console_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog/configmapcatalog"
)

// TestConfigMapCatalog: the console lists and reads an OLM ConfigMap catalog, the
// ConfigMap read with the person's identity.
func TestConfigMapCatalog(t *testing.T) {
	ctx := context.Background()
	read := func(rel string) []byte {
		data, err := os.ReadFile(filepath.Join(sample, rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	data, err := configmapcatalog.Data([][]byte{read("cache-operator/1.2.0/caches.crd.yaml")},
		[][]byte{read("cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml"), read("cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml")},
		[][]byte{[]byte("packageName: cache-operator\nchannels: [{name: stable, currentCSV: cache-operator.v1.2.0}]\n")})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "olm-catalog"}, Data: data}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "olm-configmap"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceConfigMap, ConfigMap: "olm-catalog"}}); err != nil {
		t.Fatal(err)
	}
	ts, _ := local(t)
	var cats []map[string]any
	r := call(t, ts, "GET", "/api/catalogs", nil, nil)
	ok(t, r)
	r.decode(t, &cats)
	found := false
	for _, c := range cats {
		if c["namespace"] == ns && c["name"] == "olm-configmap" {
			found = c["type"] == "configmap" && c["source"] == "ConfigMap olm-catalog"
		}
	}
	if !found {
		t.Errorf("catalogs = %v", cats)
	}
	var pkgs []struct{ Name, Latest, DefaultChannel string }
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/olm-configmap/packages", nil, nil)
	ok(t, r)
	r.decode(t, &pkgs)
	if len(pkgs) != 1 || pkgs[0].Name != "cache-operator" || pkgs[0].Latest != "1.2.0" || pkgs[0].DefaultChannel != "stable" {
		t.Errorf("packages = %+v", pkgs)
	}
}
