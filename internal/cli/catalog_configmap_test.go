package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/catalog/configmapcatalog"
)

// TestCatalogVerbsReadConfigMaps: the inspecting verbs read an OLM ConfigMap catalog from
// its manifest (a file, or stdin) with --configmap; validate names an unusable entry by
// its key and index and fails; a manifest of another kind is refused naming it.
func TestCatalogVerbsReadConfigMaps(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	read := func(rel string) []byte {
		data, err := os.ReadFile(filepath.Join(sampleDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	stray := []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: stray.v1.0.0}\nspec: {version: 1.0.0}\n")
	data, err := configmapcatalog.Data([][]byte{read("cache-operator/1.2.0/caches.crd.yaml")},
		[][]byte{read("cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml"), read("cache-operator/1.2.0/cache-operator.v1.2.0.clusterserviceversion.yaml"), stray},
		[][]byte{[]byte("packageName: cache-operator\nchannels: [{name: stable, currentCSV: cache-operator.v1.2.0}]\n")})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := yaml.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "olm-catalog", Namespace: "olm"}, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "catalog-configmap.yaml")
	if err := os.WriteFile(file, manifest, 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, "catalog", "list", "--configmap", file)
	if err != nil || !strings.Contains(out, "cache-operator") || !strings.Contains(out, "1.2.0") {
		t.Errorf("list --configmap: %v\n%s", err, out)
	}
	out, err = runCLI(t, "catalog", "show", "--configmap", file, "cache-operator")
	if err != nil || !strings.Contains(out, "cache-operator.v1.1.0") || !strings.Contains(out, "cache-operator.v1.2.0") {
		t.Errorf("show --configmap: %v\n%s", err, out)
	}
	v := validateJSON(t, "--configmap", file)
	if v.Loaded != 2 || len(v.Rejected) != 1 || v.Rejected[0].Path != "clusterServiceVersions[2] (stray.v1.0.0)" ||
		!strings.Contains(v.Rejected[0].Reason, "in no package") {
		t.Errorf("validate --configmap = %+v, want 2 loaded and the stray CSV named by key and index", v)
	}

	root := NewRoot()
	root.SetIn(strings.NewReader(string(manifest)))
	var buf strings.Builder
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetArgs([]string{"catalog", "list", "--configmap", "-"})
	if err := root.Execute(); err != nil || !strings.Contains(buf.String(), "cache-operator") {
		t.Errorf("list --configmap - (stdin): %v\n%s", err, buf.String())
	}

	if _, err := runCLI(t, "catalog", "list", "--configmap", filepath.Join(sampleDir, "cache-operator/1.2.0/caches.crd.yaml")); err == nil ||
		!strings.Contains(err.Error(), `kind is "CustomResourceDefinition", want ConfigMap`) {
		t.Errorf("a CRD taken for a ConfigMap: %v", err)
	}
	if _, err := runCLI(t, "catalog", "list", "--configmap", file, "--url", "http://x"); err == nil {
		t.Error("--configmap with --url accepted")
	}
}
