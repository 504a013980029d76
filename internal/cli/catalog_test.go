package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const sampleDir = "../../samples/catalog"

// runCLI runs the command line in-process and returns stdout and the error.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestCatalogList(t *testing.T) {
	out, err := runCLI(t, "catalog", "list", sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`PACKAGE\s+DEFAULT CHANNEL`, `cache-operator\s+stable\s+stable\s+1.3.0\s+4\s+flat`, `backup-operator\s+stable\s+stable\s+0.2.0\s+2\s+bundle`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("catalog list lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, "catalog", "list", sampleDir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []packageRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 || rows[1].Name != "cache-operator" || rows[1].Bundles != 4 {
		t.Errorf("catalog list -o json = %v, %+v", err, rows)
	}
}

func TestCatalogShowAndSearch(t *testing.T) {
	out, err := runCLI(t, "catalog", "show", sampleDir, "cache-operator")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "cache-operator.v1.3.0   1.3.0     *      cache-operator.v1.2.0 (replaces)") {
		t.Errorf("catalog show does not mark the head and its edge:\n%s", out)
	}
	_, err = runCLI(t, "catalog", "show", sampleDir, "nosuch")
	if err == nil || !strings.Contains(err.Error(), "it has: backup-operator, cache-operator") {
		t.Errorf("unknown package error = %v; want the packages the catalog has", err)
	}
	out, err = runCLI(t, "catalog", "search", sampleDir, "Backup", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "csv: backup-operator.v0.2.0") || strings.Contains(out, "v0.1.0") {
		t.Errorf("search shows the newest matching version only:\n%s", out)
	}
	out, _ = runCLI(t, "catalog", "search", sampleDir, "cache", "--all")
	if strings.Count(out, "cache-operator.v1.") != 4 {
		t.Errorf("search --all shows every matching version:\n%s", out)
	}
	out, _ = runCLI(t, "catalog", "search", sampleDir, "Backup.Samples")
	if !strings.Contains(out, "provides backup.samples.operator-manager.domain/v1alpha1/Backup") || strings.Contains(out, "cache-operator") {
		t.Errorf("search by provided group:\n%s", out)
	}
}

// TestCatalogValidate: a clean catalog passes; a broken bundle is printed with its reason
// as JSON for pipelines, the rest still counts as loaded, and the command fails.
func TestCatalogValidate(t *testing.T) {
	out, err := runCLI(t, "catalog", "validate", sampleDir)
	if err != nil || !strings.Contains(out, "6 bundles, 6 loaded, 0 rejected") {
		t.Fatalf("validate sample: %v\n%s", err, out)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken-operator", "1.0.0")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "csv.yaml"), []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: broken-operator.v1.0.0}\nspec: {version: not-a-version}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(filepath.Join(sampleDir, "cache-operator/1.1.0/cache-operator.v1.1.0.clusterserviceversion.yaml"))
	if err := os.MkdirAll(filepath.Join(dir, "cache-operator", "1.1.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache-operator", "1.1.0", "csv.yaml"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, "catalog", "validate", dir, "-o", "json")
	if !errors.Is(err, errRejected) {
		t.Errorf("validate of a broken catalog returned %v, want a failure", err)
	}
	var v validation
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("-o json is not one JSON object: %v\n%s", err, out)
	}
	if v.Loaded != 1 || v.Bundles != 2 || len(v.Rejected) != 1 || v.Rejected[0].Path != "broken-operator/1.0.0" ||
		!strings.Contains(v.Rejected[0].Reason, "spec.version") {
		t.Errorf("validation = %+v", v)
	}
}
