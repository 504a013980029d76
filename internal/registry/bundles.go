package registry

import (
	"context"
	"fmt"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// Bundles pulls bundle images by digest from their registries, keeping each in an OCI
// image layout: an ociparts.Source for the catalog loader and the manager.
type Bundles struct {
	// Options say how to reach the registries; Options.Timeout (DefaultTimeout when zero)
	// bounds each pull.
	Options Options
	// Cache is the image layout pulled images are kept in and read back from; a zero
	// Layout (no Dir) keeps nothing.
	Cache ociparts.Layout
}

var _ ociparts.Source = Bundles{}

// Pull returns the parts of the bundle image ref pins (name@sha256:...; a tag is
// refused): from the cache layout when it holds the image and its copy checks out against
// the digest, else from the registry, checked from the digest down to every layer, and
// then put into the cache under ref. Content that does not match its digest gives an
// error wrapping ociparts.ErrDigestMismatch; every error names ref.
func (b Bundles) Pull(ref string) (*ociparts.Parts, error) {
	digest, err := ociparts.DigestOf(ref)
	if err != nil {
		return nil, err
	}
	var cacheErr error
	if b.Cache.Dir != "" && b.Cache.Has(digest) {
		p, err := b.Cache.Pull(ref)
		if err == nil {
			return p, nil
		}
		// A damaged copy: the registry still has the image. The copy stays (a layout
		// does not replace an image it holds) and is passed over each time.
		cacheErr = err
	}
	d, err := digestRef(ref, b.Options)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Options.timeout(DefaultTimeout))
	defer cancel()
	p, err := b.Options.puller(ctx)
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	img, parts, err := pullImage(ctx, p, d, false)
	if err != nil {
		if cacheErr != nil {
			return nil, fmt.Errorf("%w (and the cached copy: %v)", err, cacheErr)
		}
		return nil, err
	}
	if b.Cache.Dir != "" && cacheErr == nil {
		// The cache only saves a pull: failing to write it (a full disk) does not fail
		// the pull, whose parts are checked already.
		_ = b.Cache.Put(ref, img)
	}
	return parts, nil
}
