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

// TestCommunityCSVsAccepted submits every CSV of the shared community catalog, with only its
// apiVersion changed, to the API server (server-side dry run): none may be refused.
func TestCommunityCSVsAccepted(t *testing.T) {
	root := catalogtest.CommunityPath(t)
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
		if !strings.Contains(string(data), "ClusterServiceVersion") {
			return nil
		}
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal(data, &obj); err != nil || obj["kind"] != "ClusterServiceVersion" {
			return nil // not a single CSV document; the catalog loader's tests cover those files
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("operators.coreos.com.operator-manager.domain/v1alpha1")
		u.SetNamespace("default")
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
	t.Logf("submitted %d CSVs, %d refused", submitted, len(refused))
	if submitted < 837 {
		t.Errorf("found only %d CSVs; the community catalog holds 837", submitted)
	}
	for _, r := range refused {
		t.Error(r)
	}
}
