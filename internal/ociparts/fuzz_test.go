package ociparts

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"
)

func tarOf(t testing.TB, entries map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	tw.Close()
	return buf.Bytes()
}

// FuzzPartsFiles feeds layers as a registry could serve them (after their digests check
// out: a registry chooses what it hashes): unpacking must return files or an error, never
// a path outside the root, never panic.
func FuzzPartsFiles(f *testing.F) {
	f.Add(tarOf(f, map[string]string{"manifests/csv.yaml": "kind: x", "metadata/annotations.yaml": "a: b"}), "manifests")
	f.Add(tarOf(f, map[string]string{"../../etc/passwd": "x", "/abs": "y"}), "")
	f.Add(tarOf(f, map[string]string{"configs/.wh..wh..opq": "", "configs/.wh.p": ""}), "configs")
	f.Add([]byte("not a tar"), "configs")
	f.Fuzz(func(t *testing.T, layer []byte, dir string) {
		p := &Parts{Layers: [][]byte{layer, layer}}
		files, err := p.Files(dir)
		if err != nil {
			return
		}
		for name := range files {
			if strings.HasPrefix(name, "/") || strings.HasPrefix(name, "../") || strings.Contains(name, "/../") || name == ".." {
				t.Fatalf("unpacked path %q leaves the root", name)
			}
		}
	})
}

// FuzzVerify: parts that are not what their digest says are refused, never accepted and
// never a panic.
func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"config":{"digest":"sha256:00"},"layers":[]}`), []byte(`{}`), []byte("x"))
	f.Fuzz(func(t *testing.T, manifest, config, layer []byte) {
		p := &Parts{Manifest: manifest, Config: config, Layers: [][]byte{layer}}
		if err := p.Verify("sha256:0000000000000000000000000000000000000000000000000000000000000000"); err == nil {
			t.Fatal("parts verified against a digest no manifest has")
		}
		_ = p.Verify(sha(manifest))
	})
}
