package cli

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

// TestCatalogVerbsReadImages: the inspecting verbs read a catalog image with --image, as
// they read a directory: `list` names its packages, and `show` gives each bundle's image
// by digest, whose manifests `permissions` then reads by pulling it.
func TestCatalogVerbsReadImages(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/om/catalog:v1"
	pub, err := imagecatalog.Publish(context.Background(), sampleDir, ref)
	if err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, "catalog", "list", "--image", ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"cache-operator", "reloader-operator", "guard-operator", "backup-operator"} {
		if !strings.Contains(out, p) {
			t.Errorf("catalog list --image does not name %s:\n%s", p, out)
		}
	}

	out, err = runCLI(t, "catalog", "show", "--image", ref, "cache-operator")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range pub.Bundles {
		if b.Package == "cache-operator" && !strings.Contains(out, b.Image) {
			t.Errorf("catalog show --image does not give the bundle image %s:\n%s", b.Image, out)
		}
	}
	out, err = runCLI(t, "catalog", "show", "--image", ref, "cache-operator", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var detail struct {
		Bundles []struct {
			CSVName string `json:"csvName"`
			Image   string `json:"image"`
		} `json:"bundles"`
	}
	if err := json.Unmarshal([]byte(out), &detail); err != nil || len(detail.Bundles) != 4 {
		t.Fatalf("show -o json: %v, %d bundles\n%s", err, len(detail.Bundles), out)
	}

	// validate reads every bundle's manifests: each image is pulled and checked.
	out, err = runCLI(t, "catalog", "validate", "--image", ref, "-o", "json")
	if err != nil {
		t.Fatalf("validate --image: %v\n%s", err, out)
	}
	var v validation
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Loaded != len(pub.Bundles) || len(v.Rejected) != 0 {
		t.Fatalf("validate --image -o json: %v %+v; want %d bundles loaded\n%s", err, v, len(pub.Bundles), out)
	}

	if _, err := runCLI(t, "catalog", "list", "--image", ref, "--url", "http://x"); err == nil {
		t.Error("--image with --url was accepted")
	}
}
