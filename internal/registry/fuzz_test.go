package registry

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// FuzzParseDockerConfig: a pull secret's .dockerconfigjson is whatever its author wrote;
// parsing and matching it against a registry gives credentials or an error, never a panic.
func FuzzParseDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry.example:5000":{"auth":"dXNlcjpwYXNz"}}}`), "registry.example:5000/ns/catalog")
	f.Add([]byte(`{"auths":{"https://*.example.com/v1/":{"username":"u","password":"p"}}}`), "quay.example.com/a/b")
	f.Add([]byte(`{"registry.example":{"auth":"!!"}}`), "registry.example/x")
	f.Add([]byte(`{"auths":{"":{}}}`), "docker.io/library/x")
	f.Fuzz(func(t *testing.T, config []byte, ref string) {
		kc, err := ParseDockerConfig(config)
		if err != nil {
			return
		}
		r, err := name.ParseReference(ref)
		if err != nil {
			return
		}
		_, _ = kc.Resolve(r.Context())
	})
}

// layersOf builds tar layers from a script, one entry a line: "f NAME=DATA" a regular
// file, "d NAME" a directory, "l NAME=TARGET" a symbolic link, "h NAME=TARGET" a hard
// link, "---" the start of the next layer. Whiteouts are files named .wh.NAME and
// .wh..wh..opq. A script makes well-formed archives of any names, which random bytes
// seldom are, so the fuzzer spends its time on paths, kinds and whiteouts.
func layersOf(script string) [][]byte {
	var layers [][]byte
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	flush := func() {
		_ = tw.Close()
		layers = append(layers, bytes.Clone(buf.Bytes()))
		buf.Reset()
		tw = tar.NewWriter(&buf)
	}
	for _, line := range strings.Split(script, "\n") {
		if line == "---" {
			flush()
			continue
		}
		op, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		name, data, _ := strings.Cut(rest, "=")
		h := &tar.Header{Name: name, Mode: 0o644}
		switch op {
		case "f":
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		case "d":
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case "l":
			h.Typeflag, h.Linkname = tar.TypeSymlink, data
		case "h":
			h.Typeflag, h.Linkname = tar.TypeLink, data
		default:
			continue
		}
		if tw.WriteHeader(h) != nil {
			continue // a name tar cannot hold
		}
		if h.Typeflag == tar.TypeReg {
			_, _ = tw.Write([]byte(data))
		}
	}
	flush()
	return layers
}

// FuzzExtract: a catalog image's layers are whatever its registry serves (their digests
// only say the registry chose them). Streaming them to disk must write only regular files
// and directories, only inside its directory, never panic, and end with the same files as
// ociparts unpacking the same layers in memory (the path a bundle image takes), whenever
// both succeed.
func FuzzExtract(f *testing.F) {
	f.Add("f configs/a/catalog.json=a\nf configs/b/catalog.json=b\nf etc/passwd=x", "configs", []byte(nil))
	f.Add("f configs/a/catalog.json=a\nf configs/a/old.json=old\n---\nf configs/a/.wh..wh..opq=\nf configs/a/new.json=new", "configs", []byte(nil))
	f.Add("f srv/fbc/old/catalog.json=old\n---\nf srv/.wh..wh..opq=\nf srv/fbc/new/catalog.json=new", "/srv/fbc", []byte(nil))
	f.Add("f ../../escape=x\nf /abs/catalog.json=y\nf configs/../../up=z\nl configs/link=/etc/passwd\nh configs/hard=etc/passwd\nd configs/dir", "configs", []byte(nil))
	f.Add("f configs/x/catalog.json=a\n---\nf configs/x=file now", "configs", []byte(nil))
	f.Add("f configs/a=1\n---\nf configs/.wh.a=\nf configs/a/b=2", "", []byte(nil))
	f.Add("", "configs", []byte("not a tar"))
	f.Fuzz(func(t *testing.T, script, dir string, raw []byte) {
		layers := layersOf(script)
		if len(raw) > 0 {
			layers = append(layers, raw)
		}
		root := t.TempDir()
		out, sentinel := filepath.Join(root, "out"), filepath.Join(root, "sentinel")
		for _, d := range []string{out, sentinel} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		x := &extractor{tmp: out, dir: strings.Trim(path.Clean("/"+dir), "/")}
		var err error
		for _, l := range layers {
			if err = x.untar(tar.NewReader(bytes.NewReader(l))); err != nil {
				break
			}
		}
		if err == nil {
			_, err = x.finish()
		}

		// Whatever happened: nothing beside out, and out holds directories and regular
		// files only.
		if entries, _ := os.ReadDir(root); len(entries) != 2 {
			t.Fatalf("the extraction wrote beside its directory: %v", entries)
		}
		if entries, _ := os.ReadDir(sentinel); len(entries) != 0 {
			t.Fatalf("the extraction wrote into a sibling directory: %v", entries)
		}
		got := map[string][]byte{}
		walkErr := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case d.IsDir():
			case d.Type().IsRegular():
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(out, p)
				got[filepath.ToSlash(rel)] = data
			default:
				t.Fatalf("the extraction wrote %s, of mode %v: only directories and regular files", p, d.Type())
			}
			return nil
		})
		if walkErr != nil {
			t.Fatal(walkErr)
		}

		want, perr := (&ociparts.Parts{Layers: layers}).Files(dir)
		if err != nil || perr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("streamed to disk: %q\nunpacked in memory: %q", keys(got), keys(want))
		}
		for name, data := range want {
			if g, ok := got[name]; !ok || !bytes.Equal(g, data) {
				t.Fatalf("%s: streamed to disk %q, unpacked in memory %q", name, g, data)
			}
		}
	})
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOverlayReplaces: an entry of an upper layer replaces what a lower layer had at its
// path, as in the overlay filesystem a container would see, both when a catalog image is
// streamed to disk and when a bundle image is unpacked in memory. Before, the memory kept
// a directory's files under a file that replaced it, and the disk refused a file beneath
// one a lower layer had.
func TestOverlayReplaces(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"a file over a directory", "f configs/x/catalog.json=a\nf configs/y.json=y\n---\nf configs/x=file", []string{"x", "y.json"}},
		{"a file beneath a file", "f configs/a=1\n---\nf configs/a/b=2", []string{"a/b"}},
		{"a directory over a file", "f configs/a=1\nf configs/c=3\n---\nd configs/a", []string{"c"}},
		{"a link over a file", "f configs/a=1\nf configs/c=3\n---\nl configs/a=/etc/passwd", []string{"c"}},
		{"a hard link over a directory", "f configs/d/f=1\nf configs/c=3\n---\nh configs/d=configs/c", []string{"c"}},
		{"a file where the configs directory was", "f configs/a=1\n---\nf configs=x", nil},
		{"a link elsewhere", "f configs/a=1\n---\nl etc=configs", []string{"a"}},
		{"a whiteout naming nothing", "f configs/a/b=1\n---\nf configs/a/.wh.=", []string{"a/b"}},
		{"the root", "f configs/a=1\n---\nd /\nf /=x", []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layers := layersOf(tc.script)
			disk := streamed(t, t.TempDir(), "configs", layers)
			files, err := (&ociparts.Parts{Layers: layers}).Files("configs")
			if err != nil {
				t.Fatalf("in memory: %v", err)
			}
			mem := keys(files)
			if strings.Join(disk, ",") != strings.Join(tc.want, ",") || strings.Join(mem, ",") != strings.Join(tc.want, ",") {
				t.Errorf("streamed to disk %q, in memory %q; want %q", disk, mem, tc.want)
			}
		})
	}
}

// TestWhiteoutsNamingNoFile: ".wh." alone, ".wh.." and ".wh..." name no file, so they
// delete nothing. Read as whiteouts of "", "." and "..", they deleted the whiteout's own
// directory and, at the top of a catalog image read whole, the extraction's directory
// itself or the one holding it (FuzzExtract found it: "f .wh..", the output directory
// gone). Both unpackings must keep every file, and nothing beside the directory may go.
func TestWhiteoutsNamingNoFile(t *testing.T) {
	for _, dir := range []string{"", "configs"} {
		for _, wh := range []string{".wh.", ".wh..", ".wh..."} {
			for _, at := range []string{"", "configs/", "configs/a/"} {
				script := "f configs/a/b=1\nf configs/c=2\n---\nf " + at + wh + "="
				t.Run(dir+"|"+at+wh, func(t *testing.T) {
					root := t.TempDir()
					out, sentinel := filepath.Join(root, "out"), filepath.Join(root, "sentinel")
					for _, d := range []string{out, sentinel} {
						if err := os.Mkdir(d, 0o755); err != nil {
							t.Fatal(err)
						}
					}
					disk := streamed(t, out, dir, layersOf(script))
					for _, p := range []string{out, sentinel} {
						if _, err := os.Stat(p); err != nil {
							t.Fatalf("%s is gone: %v", p, err)
						}
					}
					want := []string{"configs/a/b", "configs/c"}
					if dir == "configs" {
						want = []string{"a/b", "c"}
					}
					files, err := (&ociparts.Parts{Layers: layersOf(script)}).Files(dir)
					if err != nil {
						t.Fatal(err)
					}
					if mem := keys(files); strings.Join(disk, ",") != strings.Join(want, ",") || strings.Join(mem, ",") != strings.Join(want, ",") {
						t.Errorf("streamed to disk %q, in memory %q; want %q", disk, mem, want)
					}
				})
			}
		}
	}
}

// streamed streams layers into out as a catalog image's are (its configs directory dir)
// and returns the regular files out holds then, sorted, by slash path.
func streamed(t *testing.T, out, dir string, layers [][]byte) []string {
	t.Helper()
	x := &extractor{tmp: out, dir: dir}
	for _, l := range layers {
		if err := x.untar(tar.NewReader(bytes.NewReader(l))); err != nil {
			t.Fatalf("streamed: %v", err)
		}
	}
	if _, err := x.finish(); err != nil {
		t.Fatal(err)
	}
	var disk []string
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(out, p)
			disk = append(disk, filepath.ToSlash(rel))
		}
		return err
	})
	sort.Strings(disk)
	return disk
}
