package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

// TestCatalogPush pushes the sample catalog to an in-process registry through the command
// line: -o json names every bundle with an image by digest and the catalog image, and the
// table names every bundle too.
func TestCatalogPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	cat, err := catalog.Load(sampleDir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, "catalog", "push", sampleDir, host+"/om/catalog:v1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var pub imagecatalog.Published
	if err := json.Unmarshal([]byte(out), &pub); err != nil {
		t.Fatalf("-o json does not parse: %v\n%s", err, out)
	}
	if !strings.HasPrefix(pub.Catalog, host+"/om/catalog@sha256:") || pub.Digest == "" {
		t.Errorf("catalog %q, digest %q", pub.Catalog, pub.Digest)
	}
	if len(pub.Bundles) != len(cat.Bundles()) {
		t.Fatalf("%d bundles in the output, the catalog has %d", len(pub.Bundles), len(cat.Bundles()))
	}
	for i, b := range cat.Bundles() {
		pb := pub.Bundles[i]
		if pb.Package != b.Package || pb.CSV != b.CSVName || pb.Version != b.Version.String() ||
			!strings.HasPrefix(pb.Image, host+"/om/catalog/"+b.Package+"@sha256:") {
			t.Errorf("bundle %d = %+v, want %s by digest", i, pb, b.Ref())
		}
	}

	// The table, and the same digests a second time.
	root := NewRoot()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"catalog", "push", sampleDir, host + "/om/catalog:v1"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	out = stdout.String()
	if n := strings.Count(stderr.String(), "pushed bundle "); n != len(pub.Bundles) || !strings.Contains(stderr.String(), "pushed catalog "+pub.Catalog) {
		t.Errorf("progress on stderr: %d bundles, want %d, and the catalog:\n%s", n, len(pub.Bundles), stderr.String())
	}
	for _, pb := range pub.Bundles {
		if !strings.Contains(out, pb.Image) {
			t.Errorf("the table lacks %s:\n%s", pb.Image, out)
		}
	}
	if !strings.Contains(out, "Catalog: "+pub.Catalog) {
		t.Errorf("the table does not name the catalog image %s (a second push gives the same digest):\n%s", pub.Catalog, out)
	}

	// A bad reference is a failure naming it.
	if _, err := runCLI(t, "catalog", "push", sampleDir, "Not/A Ref"); err == nil || !strings.Contains(err.Error(), `"Not/A Ref"`) {
		t.Errorf("bad reference: %v", err)
	}
	if _, err := runCLI(t, "catalog", "push", sampleDir); exitCode(err) != ExitUsage {
		t.Errorf("one argument: exit %d, %v", exitCode(err), err)
	}
}
