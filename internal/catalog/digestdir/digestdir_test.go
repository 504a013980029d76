package digestdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeOne(content string) func(string) error {
	return func(dir string) error { return AppendFile(filepath.Join(dir, "pkg", "catalog.json"), []byte(content)) }
}

func entries(t *testing.T, root string) []string {
	t.Helper()
	es, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// The same content is the same directory; new content a new one, with the one kept and
// nothing else left; a failed fill leaves nothing behind.
func TestWrite(t *testing.T) {
	root := t.TempDir()
	a, err := Write(root, "", writeOne("a"))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Write(root, "", writeOne("a")); err != nil || again != a {
		t.Fatalf("the same content went to %s, not %s (%v)", again, a, err)
	}
	b, err := Write(root, a, writeOne("b"))
	if err != nil || b == a {
		t.Fatalf("new content: %s (%v)", b, err)
	}
	if got := entries(t, root); len(got) != 2 {
		t.Fatalf("root holds %v, want the new and the kept", got)
	}
	c, err := Write(root, b, writeOne("c"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s neither current nor kept, yet not removed", a)
	}
	if data, err := os.ReadFile(filepath.Join(c, "pkg", "catalog.json")); err != nil || string(data) != "c" {
		t.Errorf("content %q, %v", data, err)
	}
	boom := errors.New("boom")
	if _, err := Write(root, c, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("fill's error: %v", err)
	}
	if got := entries(t, root); len(got) != 2 {
		t.Errorf("after a failed write root holds %v, want the two catalogs only", got)
	}
}
