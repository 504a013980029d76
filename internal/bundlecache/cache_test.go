package bundlecache

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

func TestPutGetDelete(t *testing.T) {
	c := &Cache{Dir: filepath.Join(t.TempDir(), "bundles")}
	files := []catalog.File{{Name: "csv.yaml", Data: []byte("kind: ClusterServiceVersion\n")}, {Name: "crd.yaml", Data: []byte("kind: CustomResourceDefinition\n")}}
	digest := catalog.DigestFiles(files)
	if _, err := c.Get(digest); !errors.Is(err, ErrNotCached) {
		t.Fatalf("Get before Put = %v, want ErrNotCached", err)
	}
	if err := c.Put(digest, files); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(digest)
	if err != nil || catalog.DigestFiles(got) != digest {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if err := c.Put("sha256:"+strings.Repeat("0", 64), files); err == nil {
		t.Error("Put accepted files under a digest they do not have")
	}
	// A corrupted entry is refused, not returned.
	p, _ := c.path(digest)
	var e entry
	data, _ := os.ReadFile(p)
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	e.Files[0].Data = []byte("kind: Tampered\n")
	data, _ = json.Marshal(e)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(digest); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Get of a corrupted entry = %v", err)
	}
	if err := c.Delete(digest); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(digest); !errors.Is(err, ErrNotCached) {
		t.Errorf("Get after Delete = %v", err)
	}
	if _, err := c.Get("../../etc/passwd"); err == nil || !strings.Contains(err.Error(), "invalid bundle digest") {
		t.Errorf("Get of a path = %v", err)
	}
}

func TestList(t *testing.T) {
	c := &Cache{Dir: filepath.Join(t.TempDir(), "bundles")}
	if got, err := c.List(); err != nil || len(got) != 0 {
		t.Fatalf("List of a missing directory = %v, %v; want an empty cache", got, err)
	}
	var digests []string
	for _, kind := range []string{"A", "B"} {
		files := []catalog.File{{Name: "csv.yaml", Data: []byte("kind: " + kind + "\n")}}
		d := catalog.DigestFiles(files)
		if err := c.Put(d, files); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	// Not entries: a torn temporary file of a Put, and a stray file.
	for _, name := range []string{".put-123", "notes.json"} {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.List()
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %+v, %v; want the two entries", got, err)
	}
	for _, e := range got {
		if e.Size == 0 || e.ModTime.IsZero() || (e.Digest != digests[0] && e.Digest != digests[1]) {
			t.Errorf("entry %+v", e)
		}
	}
}
