package ociparts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// RefNameAnnotation is the OCI annotation a layout's index gives each image: the
// reference it was pulled or mirrored from.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Layout is an OCI image layout directory holding images by digest: the bundle images of
// a mirrored catalog (`catalog mirror`), and the manager's cache of pulled bundle images.
type Layout struct{ Dir string }

// layoutLocks serialises writes to each layout's index.json within the process.
var layoutLocks sync.Map

func (l Layout) lock() func() {
	mu, _ := layoutLocks.LoadOrStore(filepath.Clean(l.Dir), &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// IsLayout reports whether dir is an OCI image layout (it holds an oci-layout file).
func IsLayout(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "oci-layout"))
	return err == nil && st.Mode().IsRegular()
}

// ErrNotInLayout is wrapped by Pull for an image the layout does not hold.
var ErrNotInLayout = errors.New("image not in the layout")

// Pull returns the parts of the image ref pins, read from the layout and verified.
func (l Layout) Pull(ref string) (*Parts, error) {
	digest, err := DigestOf(ref)
	if err != nil {
		return nil, err
	}
	img, err := l.image(digest)
	if err != nil {
		return nil, fmt.Errorf("%s from %s: %w", ref, l.Dir, err)
	}
	p, err := FromImage(img)
	if err != nil {
		return nil, fmt.Errorf("%s from %s: %w", ref, l.Dir, err)
	}
	if err := p.Verify(digest); err != nil {
		return nil, fmt.Errorf("%s from %s: %w", ref, l.Dir, err)
	}
	return p, nil
}

func (l Layout) image(digest string) (v1.Image, error) {
	if !IsLayout(l.Dir) {
		return nil, ErrNotInLayout
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, err
	}
	ii, im, err := l.index()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Digest == h {
			return ii.Image(h)
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNotInLayout, digest)
}

// index reads the layout's index.json.
func (l Layout) index() (v1.ImageIndex, *v1.IndexManifest, error) {
	p, err := layout.FromPath(l.Dir)
	if err != nil {
		return nil, nil, err
	}
	ii, err := p.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	return ii, im, nil
}

// Has reports whether the layout lists the image with this digest.
func (l Layout) Has(digest string) bool {
	_, err := l.image(digest)
	return err == nil
}

// Put writes img to the layout, listed under ref, unless the layout holds it already.
func (l Layout) Put(ref string, img v1.Image) error {
	unlock := l.lock()
	defer unlock()
	d, err := img.Digest()
	if err != nil {
		return err
	}
	if l.Has(d.String()) {
		return nil
	}
	var p layout.Path
	if IsLayout(l.Dir) {
		p, err = layout.FromPath(l.Dir)
	} else {
		if err := os.MkdirAll(l.Dir, 0o755); err != nil {
			return err
		}
		p, err = layout.Write(l.Dir, empty.Index)
	}
	if err != nil {
		return fmt.Errorf("opening the image layout %s: %w", l.Dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{RefNameAnnotation: ref})); err != nil {
		return fmt.Errorf("writing %s to the image layout %s: %w", ref, l.Dir, err)
	}
	return nil
}

// Images lists the images of the layout: digest and the reference each was put under.
func (l Layout) Images() (map[string]string, error) {
	_, im, err := l.index()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range im.Manifests {
		out[d.Digest.String()] = d.Annotations[RefNameAnnotation]
	}
	return out, nil
}

// Image returns the image with this digest from the layout, for copying it elsewhere.
func (l Layout) Image(digest string) (v1.Image, error) { return l.image(digest) }
