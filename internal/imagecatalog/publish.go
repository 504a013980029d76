package imagecatalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Published is what Publish pushed.
type Published struct {
	// Catalog is the catalog image by digest: <catalog repository>@sha256:...
	Catalog string `json:"catalog"`
	// Tag is the catalog reference as given, with its tag (latest when none was given),
	// now naming Catalog.
	Tag string `json:"tag"`
	// Digest is the catalog image's digest.
	Digest string `json:"digest"`
	// Bundles are the catalog's bundles, by package and ascending version.
	Bundles []PublishedBundle `json:"bundles"`
}

// PublishedBundle is one bundle of a published catalog.
type PublishedBundle struct {
	Package string `json:"package"`
	Version string `json:"version"`
	CSV     string `json:"csv"`
	// Image is the bundle image by digest, as the catalog names it.
	Image string `json:"image"`
	// Tag is the version tag the bundle image was also given; empty when the bundle was
	// not pushed.
	Tag string `json:"tag,omitempty"`
	// Pushed is false for a File-Based Catalog bundle that is only an image reference in
	// the directory: its image is named as it is, since there is nothing to build it from.
	Pushed bool `json:"pushed"`
}

// Event reports one image pushed, for progress output.
type Event struct {
	// Kind is "bundle" or "catalog".
	Kind string
	// Package and Version name the bundle; empty for the catalog.
	Package, Version string
	// Ref is the image by digest.
	Ref string
}

// Publisher pushes a directory catalog as images. The zero value pushes anonymously
// over HTTPS (HTTP for localhost and loopback registries, as go-containerregistry does).
type Publisher struct {
	// Remote are the options of every registry request (auth, transport).
	Remote []remote.Option
	// Insecure allows plain HTTP to the registry for every reference.
	Insecure bool
	// AllowRejected publishes a catalog although the loader rejected some of its bundles
	// (they are left out); by default Publish refuses, since the published catalog would
	// silently lack them.
	AllowRejected bool
	// Progress, if set, is called after each image is pushed.
	Progress func(Event)
}

// Publish loads the catalog in dir and publishes it with a zero Publisher given opts; see
// Publisher.Publish.
func Publish(ctx context.Context, dir, catalogRef string, opts ...remote.Option) (*Published, error) {
	return (&Publisher{Remote: opts}).Publish(ctx, dir, catalogRef)
}

// BundleRepository is where Publish pushes the bundle images of a package: the catalog's
// repository followed by the package name, "<registry>/<catalog repository>/<package>".
func BundleRepository(catalogRepo name.Repository, pkg string, opts ...name.Option) (name.Repository, error) {
	return name.NewRepository(catalogRepo.Name()+"/"+pkg, opts...)
}

// VersionTag is the tag a bundle image is given besides its digest: the version, with
// the '+' of build metadata, which tags cannot hold, as '_' (as Helm does).
func VersionTag(v string) string { return strings.ReplaceAll(v, "+", "_") }

// Publish loads the catalog in dir and pushes it: each bundle's image (BundleImage of
// BundleFiles) to BundleRepository by digest, also tagged with its version, then the
// File-Based Catalog rendered with those digest references (RenderFBC) as a catalog image
// (CatalogImage) to catalogRef. Everything goes in a fixed order (packages by name,
// bundles by version) and every image is reproducible, so publishing the same directory
// to the same repository twice gives the same digests. Errors name the reference.
func (p *Publisher) Publish(ctx context.Context, dir, catalogRef string) (*Published, error) {
	var nameOpts []name.Option
	if p.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	tag, err := name.NewTag(catalogRef, nameOpts...)
	if err != nil {
		return nil, fmt.Errorf("catalog reference %q: %w (want REGISTRY/REPOSITORY[:TAG])", catalogRef, err)
	}
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		return nil, err
	}
	if len(cat.Rejections) > 0 && !p.AllowRejected {
		return nil, fmt.Errorf("catalog %s has %d rejected bundle(s) that the published catalog would lack, the first %s (see `operator-manager catalog validate %s`)",
			dir, len(cat.Rejections), cat.Rejections[0], dir)
	}
	if len(cat.Bundles()) == 0 {
		return nil, fmt.Errorf("catalog %s has no bundles", dir)
	}
	pusher, err := remote.NewPusher(p.Remote...)
	if err != nil {
		return nil, err
	}
	out := &Published{Tag: tag.Name()}
	images := map[*catalog.Bundle]string{}
	for _, b := range cat.Bundles() {
		pb, err := p.pushBundle(ctx, pusher, cat, b, tag.Repository, nameOpts)
		if err != nil {
			return nil, err
		}
		images[b] = pb.Image
		out.Bundles = append(out.Bundles, *pb)
	}
	fbc, err := RenderFBC(cat, func(b *catalog.Bundle) string { return images[b] })
	if err != nil {
		return nil, fmt.Errorf("rendering the File-Based Catalog of %s: %w", dir, err)
	}
	img, err := CatalogImage(fbc)
	if err != nil {
		return nil, fmt.Errorf("building the catalog image %s: %w", tag, err)
	}
	d, err := push(ctx, pusher, img, tag.Repository, tag)
	if err != nil {
		return nil, fmt.Errorf("pushing the catalog image %s: %w", tag, err)
	}
	out.Digest = d.String()
	out.Catalog = tag.Repository.Digest(out.Digest).String()
	if p.Progress != nil {
		p.Progress(Event{Kind: "catalog", Ref: out.Catalog})
	}
	return out, nil
}

func (p *Publisher) pushBundle(ctx context.Context, pusher *remote.Pusher, cat *catalog.Catalog, b *catalog.Bundle, catalogRepo name.Repository, nameOpts []name.Option) (*PublishedBundle, error) {
	pb := &PublishedBundle{Package: b.Package, Version: b.Version.String(), CSV: b.CSVName}
	if b.Layout == catalog.LayoutFBC && b.Image != "" && !hasObjects(b) {
		pb.Image = b.Image
		return pb, nil
	}
	repo, err := BundleRepository(catalogRepo, b.Package, nameOpts...)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: repository for package %q: %w", b.Ref(), b.Package, err)
	}
	tag := repo.Tag(VersionTag(pb.Version))
	files, err := BundleFiles(cat, b)
	if err != nil {
		return nil, err
	}
	img, err := BundleImage(files)
	if err != nil {
		return nil, fmt.Errorf("building the bundle image of %s: %w", b.Ref(), err)
	}
	d, err := push(ctx, pusher, img, repo, tag)
	if err != nil {
		return nil, fmt.Errorf("pushing bundle %s to %s: %w", b.Ref(), tag, err)
	}
	pb.Image, pb.Tag, pb.Pushed = repo.Digest(d.String()).String(), tag.Name(), true
	if p.Progress != nil {
		p.Progress(Event{Kind: "bundle", Package: pb.Package, Version: pb.Version, Ref: pb.Image})
	}
	return pb, nil
}

// hasObjects reports whether a File-Based Catalog bundle carries its manifests.
func hasObjects(b *catalog.Bundle) bool {
	for _, f := range b.Files {
		if strings.HasPrefix(f, "objects/") {
			return true
		}
	}
	return false
}

// push writes img to repo by digest, then points tag at it.
func push(ctx context.Context, pusher *remote.Pusher, img v1.Image, repo name.Repository, tag name.Tag) (v1.Hash, error) {
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := pusher.Push(ctx, repo.Digest(d.String()), img); err != nil {
		return v1.Hash{}, err
	}
	if err := pusher.Put(ctx, tag, img); err != nil {
		return v1.Hash{}, err
	}
	return d, nil
}
