package config_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

// dryRunKind submits every file of root holding one object of the kind, with its apiVersion
// replaced when newAPIVersion is set, to the API server as a server-side dry run. It returns
// how many it submitted and the refusals, each naming its file.
func dryRunKind(t *testing.T, root, kind, fromAPIVersion, newAPIVersion string) (int, []string) {
	t.Helper()
	var submitted int
	var refused []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), kind) {
			return nil
		}
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal(data, &obj); err != nil || obj["kind"] != kind {
			return nil // not a single document of the kind; the catalog loader's tests cover those files
		}
		u := &unstructured.Unstructured{Object: obj}
		if fromAPIVersion != "" && u.GetAPIVersion() != fromAPIVersion {
			return nil
		}
		if newAPIVersion != "" {
			u.SetAPIVersion(newAPIVersion)
		}
		if kind != "CustomResourceDefinition" {
			u.SetNamespace("default")
		}
		submitted++
		if err := k8s.Create(ctx(t), u, client.DryRunAll); err != nil {
			rel, _ := filepath.Rel(root, path)
			refused = append(refused, rel+": "+err.Error())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return submitted, refused
}

const csvAPIVersion = "operators.coreos.com.operator-manager.domain/v1alpha1"

// TestCommunityCSVsAccepted submits every CSV of the shared community catalog, with only its
// apiVersion changed, to the API server (server-side dry run): none may be refused.
func TestCommunityCSVsAccepted(t *testing.T) {
	submitted, refused := dryRunKind(t, catalogtest.CommunityPath(t), "ClusterServiceVersion", "", csvAPIVersion)
	t.Logf("submitted %d CSVs, %d refused", submitted, len(refused))
	if submitted < 837 {
		t.Errorf("found only %d CSVs; the community catalog holds 837", submitted)
	}
	for _, r := range refused {
		t.Error(r)
	}
}

// TestSampleCatalogAccepted: the project's own sample CSVs fit the CSV kind, and its v1
// CRDs are valid as written (the v1beta1 one is converted on install).
func TestSampleCatalogAccepted(t *testing.T) {
	for _, tc := range []struct{ kind, from, to string }{
		{"ClusterServiceVersion", "", csvAPIVersion},
		{"CustomResourceDefinition", "apiextensions.k8s.io/v1", ""},
	} {
		submitted, refused := dryRunKind(t, "../samples/catalog", tc.kind, tc.from, tc.to)
		if submitted < 5 {
			t.Errorf("found only %d %s in samples/catalog", submitted, tc.kind)
		}
		for _, r := range refused {
			t.Error(r)
		}
	}
}
