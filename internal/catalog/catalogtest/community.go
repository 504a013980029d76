// Package catalogtest finds the shared community catalog for tests and benchmarks, and
// reads its CRDs.
package catalogtest

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// EnvCommunityCatalog points at a copy of the community-operators catalog.
const EnvCommunityCatalog = "OPM_COMMUNITY_CATALOG"

// CommunityPath returns the shared community catalog: $OPM_COMMUNITY_CATALOG, or
// ../shared/catalogs/community-operators beside the checkout (the directory holding go.mod).
// It skips the test with a clear message when the catalog is absent; it is test data read
// in place and never copied into the project.
func CommunityPath(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(EnvCommunityCatalog); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("community catalog not found at $%s=%s: %v", EnvCommunityCatalog, dir, err)
		}
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "tools")); err == nil { // the main module, not a tools module
				cat := filepath.Join(filepath.Dir(dir), "shared", "catalogs", "community-operators")
				if _, err := os.Stat(cat); err != nil {
					t.Skipf("community catalog not found at %s (set $%s to use another copy)", cat, EnvCommunityCatalog)
				}
				return cat
			}
		}
		if filepath.Dir(dir) == dir {
			t.Skipf("community catalog not found: no operator-manager checkout above %s (set $%s)", wd, EnvCommunityCatalog)
			return ""
		}
	}
}

// CRDDocument is one CustomResourceDefinition document of a catalog file.
type CRDDocument struct {
	File   string
	Object *unstructured.Unstructured
}

// CRDDocuments decodes every CustomResourceDefinition document of the YAML and JSON
// files under root, and says how many files held one. A file that stops decoding part way
// keeps the documents before the fault (logged).
func CRDDocuments(tb testing.TB, root string) (files int, docs []CRDDocument) {
	tb.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte("CustomResourceDefinition")) {
			return nil // most files are CSVs and package manifests; skip decoding them
		}
		found := false
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				if !errors.Is(err, io.EOF) {
					tb.Logf("%s: stops decoding: %v", p, err)
				}
				break
			}
			u := &unstructured.Unstructured{Object: obj}
			if obj == nil || u.GetKind() != "CustomResourceDefinition" {
				continue
			}
			found = true
			docs = append(docs, CRDDocument{File: p, Object: u})
		}
		if found {
			files++
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files, docs
}
