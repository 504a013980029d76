package ociimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/operator-manager/operator-manager/internal/ociimage"
)

// The test binaries are built for the machine's own architecture, so they can be run
// after they come back out of the image.
var arch = runtime.GOARCH

// tinyBinary builds a small static program the way BuildBinary builds operator-manager.
func tinyBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module tiny\n\ngo 1.26\n")
	write("main.go", `package main

import (
	"fmt"
	"os"
)

func main() { fmt.Println("tiny", os.Args[1:], os.Getuid()) }
`)
	out := filepath.Join(dir, "tiny")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := ociimage.BuildBinary(ctx, ociimage.BuildOptions{Dir: dir, Package: ".", Arch: arch, Output: out}); err != nil {
		t.Fatal(err)
	}
	return out
}

// loaded is what a loader sees in an image tarball.
type loaded struct {
	manifest tarball.Manifest
	image    v1.Image
	config   *v1.ConfigFile
	digest   v1.Hash
	files    map[string]*tar.Header
	contents map[string][]byte
}

// load reads an image tarball back as `docker load` would: manifest.json, then the image
// of the tag, its config and the files of its layers.
func load(t *testing.T, file, ref string) *loaded {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	l := &loaded{files: map[string]*tar.Header{}, contents: map[string][]byte{}}
	if l.manifest, err = tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) }); err != nil {
		t.Fatalf("reading manifest.json of %s: %v", file, err)
	}
	if l.image, err = tarball.ImageFromPath(file, &tag); err != nil {
		t.Fatalf("reading %s as %s: %v", file, ref, err)
	}
	if l.config, err = l.image.ConfigFile(); err != nil {
		t.Fatal(err)
	}
	if l.digest, err = l.image.Digest(); err != nil {
		t.Fatal(err)
	}
	layers, err := l.image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("image has %d layers, want 1 (the binary on an empty base)", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := "/" + strings.TrimSuffix(hdr.Name, "/")
		l.files[p] = hdr
		if hdr.Typeflag == tar.TypeReg {
			if l.contents[p], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	return l
}

// checkImage checks what a cluster relies on in the image configuration and layer.
func checkImage(t *testing.T, l *loaded, ref string, created time.Time) {
	t.Helper()
	if len(l.manifest) != 1 || len(l.manifest[0].RepoTags) != 1 || l.manifest[0].RepoTags[0] != ref {
		t.Errorf("manifest.json = %+v, want one image tagged %s", l.manifest, ref)
	}
	cf := l.config
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("platform = %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/operator-manager" {
		t.Errorf("entrypoint = %q, want [/operator-manager]", got)
	}
	if got := cf.Config.Cmd; len(got) != 1 || got[0] != "run" {
		t.Errorf("cmd = %q, want [run]", got)
	}
	// runAsNonRoot can only verify a numeric user; a name would make the kubelet refuse
	// the pod.
	uid, gid, ok := strings.Cut(cf.Config.User, ":")
	u, uerr := strconv.Atoi(uid)
	g, gerr := strconv.Atoi(gid)
	if !ok || uerr != nil || gerr != nil || u == 0 || g == 0 {
		t.Errorf("user = %q, want numeric non-root uid:gid", cf.Config.User)
	}
	if cf.Config.WorkingDir != "/" {
		t.Errorf("working dir = %q, want /", cf.Config.WorkingDir)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("created = %s, want %s", cf.Created.Time, created)
	}
	for _, h := range cf.History {
		if !h.Created.Time.Equal(created) {
			t.Errorf("history created = %s, want %s", h.Created.Time, created)
		}
	}
	for _, k := range []string{"org.opencontainers.image.source", "org.opencontainers.image.title"} {
		if cf.Config.Labels[k] == "" {
			t.Errorf("label %s missing: %v", k, cf.Config.Labels)
		}
	}
	if len(cf.RootFS.DiffIDs) != 1 {
		t.Errorf("rootfs diff_ids = %v, want one", cf.RootFS.DiffIDs)
	}

	bin := l.files["/operator-manager"]
	switch {
	case bin == nil:
		t.Fatalf("the layer has no /operator-manager; it has %v", keys(l.files))
	case bin.Typeflag != tar.TypeReg || bin.Mode&0o777 != 0o755:
		t.Errorf("/operator-manager: type %c mode %o, want a regular file 0755", bin.Typeflag, bin.Mode)
	case bin.Uid != 0 || bin.Gid != 0:
		t.Errorf("/operator-manager is owned by %d:%d, want root (the process must not own its executable)", bin.Uid, bin.Gid)
	}
	if tmp := l.files["/tmp"]; tmp == nil || tmp.Typeflag != tar.TypeDir || tmp.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp = %+v, want a directory with mode 1777", tmp)
	}
	if home := l.files["/home/nonroot"]; home == nil || home.Uid != u || home.Gid != g {
		t.Errorf("/home/nonroot = %+v, want a directory owned by %d:%d", home, u, g)
	}
	if passwd := string(l.contents["/etc/passwd"]); !strings.Contains(passwd, ":"+uid+":"+gid+":") {
		t.Errorf("/etc/passwd names no user %s:%s:\n%s", uid, gid, passwd)
	}
	if group := string(l.contents["/etc/group"]); !strings.Contains(group, ":"+gid+":") {
		t.Errorf("/etc/group names no group %s:\n%s", gid, group)
	}
	pool := x509.NewCertPool()
	if certs := l.contents[ociimage.CACertificatesPath]; !pool.AppendCertsFromPEM(certs) || bytes.Count(certs, []byte("BEGIN CERTIFICATE")) < 100 {
		t.Errorf("%s does not hold the root certificates (%d bytes)", ociimage.CACertificatesPath, len(certs))
	}
	for p, hdr := range l.files {
		if !hdr.ModTime.Equal(created) {
			t.Errorf("%s has mtime %s, want %s", p, hdr.ModTime, created)
		}
	}
}

// runFromImage writes the binary of the image to disk and runs it with args.
func runFromImage(t *testing.T, l *loaded, args ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "from-image")
	if err := os.WriteFile(exe, l.contents["/operator-manager"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("running the binary of the image: %v\n%s", err, out)
	}
	return string(out)
}

func keys(m map[string]*tar.Header) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestImageTarballReadsBackReproducibly builds the image twice from one binary and reads
// the tarballs back: the configuration and layer are what a cluster needs, the binary
// runs after the round trip, and both builds have the same digest and bytes.
func TestImageTarballReadsBackReproducibly(t *testing.T) {
	bin := tinyBinary(t)
	const ref = "registry.example/operator-manager:v0.0.1-test"
	dir := t.TempDir()
	var tarballs []string
	for i := range 2 {
		img, err := ociimage.Build(ociimage.Options{Binary: bin, Arch: arch, Labels: ociimage.Labels(context.Background(), ".", nil)})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "build"+strconv.Itoa(i), "image.tar")
		if err := ociimage.WriteTarball(out, ref, img); err != nil {
			t.Fatal(err)
		}
		tarballs = append(tarballs, out)
	}
	first, second := load(t, tarballs[0], ref), load(t, tarballs[1], ref)
	checkImage(t, first, ref, time.Unix(0, 0))
	if first.digest != second.digest {
		t.Errorf("two builds of one binary differ: %s and %s", first.digest, second.digest)
	}
	a, _ := os.ReadFile(tarballs[0])
	b, _ := os.ReadFile(tarballs[1])
	if !bytes.Equal(a, b) {
		t.Errorf("the two tarballs differ (%d and %d bytes)", len(a), len(b))
	}
	if out := runFromImage(t, first, "run"); !strings.HasPrefix(out, "tiny [run]") {
		t.Errorf("the binary of the image printed %q", out)
	}
}

// TestSourceDateEpochSetsEveryTimestamp: SOURCE_DATE_EPOCH dates the image, its history
// and the files, and so changes the digest.
func TestSourceDateEpochSetsEveryTimestamp(t *testing.T) {
	bin := tinyBinary(t)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	created, err := ociimage.SourceDateEpoch()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(1700000000, 0); !created.Equal(want) {
		t.Fatalf("SourceDateEpoch = %s, want %s", created, want)
	}
	img, err := ociimage.Build(ociimage.Options{Binary: bin, Arch: arch, Created: created, Labels: ociimage.Labels(context.Background(), ".", nil)})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := ociimage.WriteTarball(out, ociimage.DefaultTag, img); err != nil {
		t.Fatal(err)
	}
	dated := load(t, out, ociimage.DefaultTag)
	checkImage(t, dated, ociimage.DefaultTag, created)

	undated, err := ociimage.Build(ociimage.Options{Binary: bin, Arch: arch, Labels: ociimage.Labels(context.Background(), ".", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := undated.Digest(); d == dated.digest {
		t.Errorf("the digest does not depend on the timestamp: %s", d)
	}

	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := ociimage.SourceDateEpoch(); err == nil {
		t.Error("SOURCE_DATE_EPOCH=yesterday accepted")
	}
}

// TestBuildRefusesWhatCannotRunOnAnEmptyBase: a binary of another architecture, a file
// that is no executable and a dynamically linked program.
func TestBuildRefusesWhatCannotRunOnAnEmptyBase(t *testing.T) {
	bin := tinyBinary(t)
	other := "arm64"
	if arch == "arm64" {
		other = "amd64"
	}
	if _, err := ociimage.Build(ociimage.Options{Binary: bin, Arch: other}); err == nil || !strings.Contains(err.Error(), "built for") {
		t.Errorf("a %s binary in a %s image: %v, want refused", arch, other, err)
	}
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ociimage.Build(ociimage.Options{Binary: script, Arch: arch}); err == nil {
		t.Error("a shell script accepted as the binary")
	}
	// The machine's own shell is dynamically linked on every usual distribution.
	if f, err := elf.Open("/bin/sh"); err == nil {
		dynamic := false
		for _, p := range f.Progs {
			dynamic = dynamic || p.Type == elf.PT_INTERP
		}
		f.Close()
		if err := ociimage.CheckStaticBinary("/bin/sh", arch); dynamic && (err == nil || !strings.Contains(err.Error(), "dynamically linked")) {
			t.Errorf("the dynamically linked /bin/sh: %v, want refused", err)
		}
	}
	img, err := ociimage.Build(ociimage.Options{Binary: bin, Arch: arch})
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteTarball(filepath.Join(t.TempDir(), "x.tar"), "Not A Reference", img); err == nil {
		t.Error("an invalid reference accepted")
	}
}

// TestMakeImage runs what `make image` runs, building the real binary (about a minute on
// two cores), and checks the result as a cluster would use it.
func TestMakeImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const ref = "operator-manager:image-test"
	out := filepath.Join(t.TempDir(), "operator-manager-image.tar")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./tools/image", "--tag", ref, "--output", out, "--goarch", arch)
	cmd.Dir = root
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./tools/image: %v\n%s", err, log)
	} else {
		t.Logf("%s", log)
	}
	l := load(t, out, ref)
	checkImage(t, l, ref, time.Unix(0, 0))
	if l.config.Config.Labels["org.opencontainers.image.revision"] == "" {
		t.Errorf("no revision label from git: %v", l.config.Config.Labels)
	}
	if err := ociimage.CheckStaticBinary(writeTemp(t, l.contents["/operator-manager"]), arch); err != nil {
		t.Error(err)
	}
	if got := runFromImage(t, l, "version"); !strings.HasPrefix(got, "operator-manager ") {
		t.Errorf("operator-manager version from the image printed %q", got)
	}
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(f, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}
