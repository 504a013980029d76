package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
	"github.com/operator-manager/operator-manager/test/registryserver"
)

// TestCatalogVerbsReadRegistryServers: the inspecting verbs read what a registry server
// (operator-registry's own, as `opm serve` runs it) serves with --address, as they read a
// directory; a server that is not there is an error naming the address.
func TestCatalogVerbsReadRegistryServers(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cat, err := catalog.Load(sampleDir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := registryserver.ServeCatalog(t, cat)

	out, err := runCLI(t, "catalog", "list", "--address", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"cache-operator", "reloader-operator", "guard-operator", "backup-operator"} {
		if !strings.Contains(out, p) {
			t.Errorf("catalog list --address does not name %s:\n%s", p, out)
		}
	}
	if v := validateJSON(t, "--address", addr); v.Loaded != len(cat.Bundles()) || v.Bundles != v.Loaded {
		t.Errorf("validate --address = %+v, want all %d bundles loaded", v, len(cat.Bundles()))
	}
	out, err = runCLI(t, "catalog", "show", "--address", addr, "cache-operator")
	if err != nil || !strings.Contains(out, "cache-operator.v1.3.0") {
		t.Errorf("show --address: %v\n%s", err, out)
	}

	if out, err := runCLI(t, "catalog", "list", "--address", "127.0.0.1:1"); err == nil || !strings.Contains(err.Error()+out, "registry server 127.0.0.1:1") {
		t.Errorf("no server: err %v, out %s", err, out)
	}
	if _, err := runCLI(t, "catalog", "list", "--address", addr, "--image", "x/y:z"); err == nil {
		t.Error("--address with --image accepted")
	}
}

// TestCatalogAddressPullsBundleImages: a registry server whose catalog names its bundles
// by image only (as opm renders one, and OLM reads by unpacking the images) is read with
// --address, and each bundle is pulled from its image when read: validate parses them all.
func TestCatalogAddressPullsBundleImages(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	reg := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	pub, err := imagecatalog.Publish(context.Background(), sampleDir, strings.TrimPrefix(reg.URL, "http://")+"/om/catalog:v1")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(sampleDir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := registryserver.ServeImageOnly(t, cat, registryserver.Images(pub))
	if v := validateJSON(t, "--address", addr); v.Loaded != len(cat.Bundles()) || v.Bundles != v.Loaded {
		t.Errorf("validate --address of an image-only catalog = %+v, want all %d bundles pulled and loaded", v, len(cat.Bundles()))
	}
}

// validateJSON runs `catalog validate -o json` with args and returns what it printed. A
// catalog with rejections exits non-zero after printing them, which is not an error here.
func validateJSON(t *testing.T, args ...string) validation {
	t.Helper()
	out, err := runCLI(t, append([]string{"catalog", "validate", "-o", "json"}, args...)...)
	if err != nil && !errors.Is(err, errRejected) {
		t.Fatalf("validate %v: %v\n%s", args, err, out)
	}
	var v validation
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("validate %v printed no JSON: %v\n%s", args, err, out)
	}
	return v
}
