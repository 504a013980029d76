package remote

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// TestServeMirroredCatalog: a mirrored catalog (File-Based Catalog, bundle images in an
// images/ OCI layout) served by `catalog serve` gives its clients whole bundles: the
// entry and the image's parts, which the client checks through the chain before use.
func TestServeMirroredCatalog(t *testing.T) {
	src, err := catalog.Load("../../../samples/catalog", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layout := ociparts.Layout{Dir: filepath.Join(dir, catalog.ImagesDir)}
	fbc, err := imagecatalog.RenderFBC(src, func(b *catalog.Bundle) string {
		files, err := imagecatalog.BundleFiles(src, b)
		if err != nil {
			t.Fatal(err)
		}
		img, err := imagecatalog.BundleImage(files)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		ref := "registry.example/samples/" + b.Package + "@" + d.String()
		if err := layout.Put(ref, img); err != nil {
			t.Fatal(err)
		}
		return ref
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range fbc {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mirrored, err := catalog.Load(dir, catalog.Options{})
	if err != nil || len(mirrored.Rejections) > 0 || len(mirrored.Bundles()) != len(src.Bundles()) {
		t.Fatalf("loading the mirror: %v %v", err, mirrored.Rejections)
	}

	srv := httptest.NewServer(Handler(mirrored))
	defer srv.Close()
	client := &Client{BaseURL: srv.URL, CacheDir: filepath.Join(t.TempDir(), "cache")}
	cat, err := client.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := cat.BundleByCSV("cache-operator.v1.2.0")
	if b == nil || !b.ImageOnly() {
		t.Fatalf("served bundle %+v: want the image-only entry", b)
	}
	content, err := cat.Content(b)
	if err != nil {
		t.Fatal(err)
	}
	if content.CSV.Name != "cache-operator.v1.2.0" || len(content.CRDs) != 1 || len(content.Objects) != 1 {
		t.Fatalf("content: CSV %s, %d CRDs, %d objects; want the CSV, its CRD and its Service", content.CSV.Name, len(content.CRDs), len(content.Objects))
	}
	if !strings.HasPrefix(content.Files[len(content.Files)-1].Name, "image/") {
		t.Errorf("the served files lack the image parts: last is %s", content.Files[len(content.Files)-1].Name)
	}
	// The copy the client cached is checked through the chain when read back.
	if _, err := client.CachedFiles(b.Digest); err != nil {
		t.Errorf("reading the cached copy back: %v", err)
	}
}
