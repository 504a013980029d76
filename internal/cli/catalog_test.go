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
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 4 || rows[1].Name != "cache-operator" || rows[1].Bundles != 4 {
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
	if strings.Contains(out, "REQUIRES") {
		t.Errorf("catalog show lists requirements of a package that has none:\n%s", out)
	}
	// What each version needs of other operators, newest first.
	out, err = runCLI(t, "catalog", "show", sampleDir, "backup-operator")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "backup-operator.v0.2.0   olm.package cache-operator >=1.1.0 <1.3.0\n                         required CRD Cache.v1.cache.samples.operator-manager.domain") {
		t.Errorf("catalog show does not list what backup-operator requires:\n%s", out)
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
	if err != nil || !strings.Contains(out, "10 bundles, 10 loaded, 0 rejected") {
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

// TestCatalogURL: list, search, show and validate read a served catalog with --url in
// place of DIR, and say the same as they do of the directory.
func TestCatalogURL(t *testing.T) {
	s := startServe(t, sampleDir)
	for _, args := range [][]string{
		{"list"},
		{"list", "-o", "json"},
		{"search", "cache", "--all"},
		{"search", "Backup.Samples"},
		{"show", "cache-operator"},
		{"show", "backup-operator", "-o", "yaml"},
		{"validate", "-o", "json"},
	} {
		fromDir, dirErr := runCLI(t, append([]string{"catalog", args[0], sampleDir}, args[1:]...)...)
		fromURL, urlErr := runCLI(t, append([]string{"catalog", args[0], "--url", s.url}, args[1:]...)...)
		if dirErr != nil || urlErr != nil {
			t.Fatalf("%v: %v / %v", args, dirErr, urlErr)
		}
		if fromDir != fromURL {
			t.Errorf("%v with --url:\n%s\nwith DIR:\n%s", args, fromURL, fromDir)
		}
	}
	_, err := runCLI(t, "catalog", "show", "--url", s.url, "nosuch")
	if err == nil || !strings.Contains(err.Error(), "not in catalog "+s.url+"; it has: backup-operator, cache-operator") {
		t.Errorf("unknown package: %v", err)
	}
	for _, args := range [][]string{
		{"list", "--url", s.url, sampleDir},
		{"search", "--url", s.url},
		{"list"},
	} {
		if _, err := runCLI(t, append([]string{"catalog"}, args...)...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	s.stop()
	if _, err := runCLI(t, "catalog", "list", "--url", s.url); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(s.url, "http://")) {
		t.Errorf("server gone: %v", err)
	}
}

// TestCatalogValidateURL: validate --url reports what the server rejected when loading,
// and a served bundle that does not match its digest, and fails.
func TestCatalogValidateURL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(dir, os.DirFS(sampleDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cache-operator", "9.9.9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache-operator", "9.9.9", "broken.yaml"), []byte("kind: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, "--reload", "0")
	// Changed on disk after loading: the server refuses to serve it as the indexed bundle.
	crd := filepath.Join(dir, "cache-operator", "1.1.0", "caches.crd.yaml")
	data, err := os.ReadFile(crd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crd, append(data, "\n# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "catalog", "validate", "--url", s.url, "-o", "json")
	if !errors.Is(err, errRejected) {
		t.Errorf("validate --url of a broken catalog returned %v, want a failure", err)
	}
	var v validation
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if v.Bundles != 11 || v.Loaded != 9 || len(v.Rejected) != 2 || v.Rejected[0].Path != "cache-operator/9.9.9" ||
		v.Rejected[1].Path != "cache-operator/1.1.0" || !strings.Contains(v.Rejected[1].Reason, "does not match its digest") {
		t.Errorf("validation = %+v", v)
	}
}
