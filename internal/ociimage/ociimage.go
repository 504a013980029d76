// Package ociimage builds the operator-manager container image without a container engine:
// the static binary as the single layer of an empty base, with the configuration the
// Dockerfile gives (non-root numeric user, entrypoint, labels), written as a tarball that
// `docker load`, `podman load` and `kind load image-archive` accept. Everything that goes
// into the image has a fixed timestamp, so the same binary always gives the same digest.
package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/operator-manager/operator-manager/internal/atomicfile"
)

const (
	// BinaryPath is where the binary lives in the image, and the entrypoint.
	BinaryPath = "/operator-manager"
	// UID and GID of the user the image runs as: distroless's "nonroot", so the image
	// built here and the Dockerfile's (gcr.io/distroless/static:nonroot) agree.
	UID = 65532
	GID = 65532
	// User is the configured user, numeric so that Kubernetes' runAsNonRoot can check it
	// without reading /etc/passwd.
	User = "65532:65532"
	// CACertificatesPath is where Go (and most TLS libraries) look for the system roots on
	// Linux; distroless/static ships its bundle at the same path.
	CACertificatesPath = "/etc/ssl/certs/ca-certificates.crt"
	// DefaultTag is the reference the tarball carries when none is given.
	DefaultTag = "operator-manager:dev"
	// Source is the project's repository, for the org.opencontainers.image.source label.
	Source = "https://github.com/operator-manager/operator-manager"
)

// Entrypoint and Cmd of the image: `operator-manager run`, the controllers, as the
// Deployment runs them; `docker run IMAGE version` replaces only the verb.
var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"run"}
)

// Options say what goes into the image.
type Options struct {
	// Binary is the path of a static Linux executable built for Arch.
	Binary string
	// Arch is the GOARCH of the binary and the image (amd64 when empty).
	Arch string
	// Created is the timestamp of the image, its history and every file of the layer; the
	// zero time (1970-01-01) when unset, so builds are reproducible. See SourceDateEpoch.
	Created time.Time
	// Labels are added to the image configuration (see Labels).
	Labels map[string]string
}

// Build assembles the image: one layer on an empty base (FROM scratch) holding the binary
// at /operator-manager (root-owned, mode 0755, so the process cannot replace its own
// executable even where the root filesystem is writable), /etc/passwd and /etc/group
// naming the non-root user, the Mozilla root certificates (for HTTPS catalogs), a home
// directory for the user and a world-writable /tmp (an emptyDir is mounted there in the
// cluster, where the root filesystem is read-only).
func Build(opts Options) (v1.Image, error) {
	if opts.Arch == "" {
		opts.Arch = "amd64"
	}
	created := opts.Created.UTC()
	if opts.Created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, err
	}
	if err := CheckStaticBinary(opts.Binary, opts.Arch); err != nil {
		return nil, err
	}
	layerTar, err := layerContents(bin, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "operator-manager tools/image: " + BinaryPath + ", /etc/passwd, /etc/group, CA certificates, /home/nonroot, /tmp",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = opts.Arch
	cf.OS = "linux"
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint: Entrypoint,
		Cmd:        Cmd,
		User:       User,
		WorkingDir: "/",
		// No environment: there is nothing to find on a PATH, and Go finds the CA bundle
		// at its default path.
		Labels: opts.Labels,
	}
	return mutate.ConfigFile(img, cf)
}

// layerContents is the uncompressed tar of the single layer, entries in a fixed order with
// fixed owners, modes and times.
func layerContents(binary []byte, created time.Time) ([]byte, error) {
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		dir      bool
		data     []byte
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := "root:x:0:\n" + fmt.Sprintf("nonroot:x:%d:\n", GID)
	certs, err := caCertificates()
	if err != nil {
		return nil, err
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CACertificatesPath, "/"), mode: 0o644, data: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: GID, dir: true},
		{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, data: binary},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: created,
			Typeflag: tar.TypeReg, Size: int64(len(e.data)), Format: tar.FormatPAX,
		}
		if e.dir {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// caCertificates is the PEM bundle of the Mozilla (NSS) roots that
// golang.org/x/crypto/x509roots/fallback pins in go.sum: the same bundle on every build
// machine, with no download. Roots NSS distrusts after a date are left out, because a PEM
// file cannot carry that constraint.
func caCertificates() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, errors.New("the root certificate bundle is empty")
	}
	return buf.Bytes(), nil
}

// elfMachines maps a GOARCH to the ELF machine its binaries have.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM, "386": elf.EM_386,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV, "loong64": elf.EM_LOONGARCH,
}

// CheckStaticBinary refuses what cannot run on the empty base: anything but a Linux ELF
// executable for arch, or one that needs a dynamic loader (built with cgo).
func CheckStaticBinary(file, arch string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s is not a Linux executable: %w", file, err)
	}
	defer f.Close()
	if want, ok := elfMachines[arch]; !ok {
		return fmt.Errorf("unsupported architecture %q", arch)
	} else if f.Machine != want {
		return fmt.Errorf("%s is built for %s, not %s (%s)", file, f.Machine, arch, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it needs a program interpreter); build it with CGO_ENABLED=0", file)
		}
	}
	return nil
}

// WriteTarball writes img to file as a `docker save` archive (manifest.json with the
// reference in RepoTags, the config and the layer by digest), through a temporary file so
// that a failed build leaves no half-written tarball behind.
//
// Why this format and not an OCI image layout: it is the one every loader an administrator
// has accepts as is, `docker load`, `podman load`, `kind load image-archive`,
// `ctr images import` and `crane push`, and it carries the tag, so the loaded image is
// named what the Deployment references. An OCI layout needs newer engines (Docker 25+)
// or a conversion step, and loses the tag in some of them.
func WriteTarball(file, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	return atomicfile.WriteFunc(file, 0o644, func(w io.Writer) error {
		return tarball.Write(tag, img, w)
	})
}

// BuildOptions say how to build the binary.
type BuildOptions struct {
	// Dir is the module directory go build runs in.
	Dir string
	// Package is the main package, "./cmd/operator-manager" by default.
	Package string
	// Arch is the GOARCH (amd64 when empty); GOOS is always linux.
	Arch string
	// Output is the path of the binary.
	Output string
	// Stderr receives go build's output; nil discards it.
	Stderr io.Writer
}

// BuildBinary builds a static Linux binary as the Dockerfile does: CGO_ENABLED=0,
// -trimpath (no build paths in the binary) and -ldflags "-s -w" (no symbol tables), which
// also makes the binary, and so the image, the same from one build to the next.
func BuildBinary(ctx context.Context, opts BuildOptions) error {
	if opts.Package == "" {
		opts.Package = "./cmd/operator-manager"
	}
	if opts.Arch == "" {
		opts.Arch = "amd64"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", opts.Output, opts.Package)
	cmd.Dir = opts.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+opts.Arch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if opts.Stderr != nil {
		cmd.Stdout, cmd.Stderr = opts.Stderr, opts.Stderr
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", opts.Package, err, out.String())
	}
	return nil
}

// SourceDateEpoch is the time SOURCE_DATE_EPOCH names (https://reproducible-builds.org),
// or the zero time when it is unset.
func SourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Time{}, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds: %w", v, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// Labels are the OCI annotations of the image: title and source always, version
// (`git describe --tags --always --dirty`) and revision (the commit) when dir is in a Git
// work tree. extra override them.
func Labels(ctx context.Context, dir string, extra map[string]string) map[string]string {
	labels := map[string]string{
		"org.opencontainers.image.title":       "operator-manager",
		"org.opencontainers.image.description": "Lifecycle manager for Kubernetes operators",
		"org.opencontainers.image.source":      Source,
	}
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if v := git("describe", "--tags", "--always", "--dirty"); v != "" {
		labels["org.opencontainers.image.version"] = v
	}
	if v := git("rev-parse", "HEAD"); v != "" {
		labels["org.opencontainers.image.revision"] = v
	}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}

// Describe is a one-line summary of an image for people: digest, platform, user, entrypoint.
func Describe(img v1.Image) (string, error) {
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	keys := make([]string, 0, len(cf.Config.Labels))
	for k := range cf.Config.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var labels []string
	for _, k := range keys {
		labels = append(labels, k+"="+cf.Config.Labels[k])
	}
	return fmt.Sprintf("%s %s/%s user %s entrypoint %q cmd %q labels [%s]", digest, cf.OS, cf.Architecture,
		cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd, strings.Join(labels, " ")), nil
}
