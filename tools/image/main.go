// Command image builds the operator-manager container image without a container engine
// (`make image`): a static Linux binary as the single layer of an empty base, non-root,
// written as a `docker save` tarball that `docker load`, `podman load` and
// `kind load image-archive` accept. The Dockerfile builds the same image with an engine.
//
//	go run ./tools/image --tag operator-manager:dev --output bin/operator-manager-image.tar
//
// The image is reproducible: every timestamp is SOURCE_DATE_EPOCH (or 1970-01-01), so the
// same source and Go version give the same digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/operator-manager/operator-manager/internal/ociimage"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }

func (l labelFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	l[k] = val
	return nil
}

func run() error {
	tag := flag.String("tag", ociimage.DefaultTag, "image reference the tarball carries (what `docker load` names the image)")
	output := flag.String("output", "bin/operator-manager-image.tar", "path of the image tarball")
	binary := flag.String("binary", "", "a static linux binary to put in the image instead of building ./cmd/operator-manager")
	arch := flag.String("goarch", "amd64", "GOARCH of the binary and the image (GOOS is linux)")
	labels := labelFlags{}
	flag.Var(labels, "label", "KEY=VALUE label to add to the image configuration (repeatable)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	created, err := ociimage.SourceDateEpoch()
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	bin := *binary
	if bin == "" {
		tmp, err := os.MkdirTemp("", "operator-manager-image-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "operator-manager")
		fmt.Fprintf(os.Stderr, "building ./cmd/operator-manager for linux/%s (CGO_ENABLED=0)\n", *arch)
		if err := ociimage.BuildBinary(ctx, ociimage.BuildOptions{Dir: wd, Arch: *arch, Output: bin, Stderr: os.Stderr}); err != nil {
			return err
		}
	}
	img, err := ociimage.Build(ociimage.Options{
		Binary: bin, Arch: *arch, Created: created, Labels: ociimage.Labels(ctx, wd, labels),
	})
	if err != nil {
		return err
	}
	if err := ociimage.WriteTarball(*output, *tag, img); err != nil {
		return err
	}
	summary, err := ociimage.Describe(img)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s as %s: %s\n", *output, *tag, summary)
	fmt.Fprintf(os.Stderr, "load it with `docker load -i %[1]s`, `podman load -i %[1]s` or `kind load image-archive %[1]s`\n", *output)
	return nil
}
