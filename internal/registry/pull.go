package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// maxManifestSize bounds a manifest or an index, and maxConfigSize an image config: both
// are kilobytes in practice.
const (
	maxManifestSize = 4 << 20
	maxConfigSize   = 4 << 20
)

// Resolve returns the digest ("sha256:<hex>") the reference (a tag or a digest) points at
// now. It asks with a HEAD request, which registries do not count as a pull, and falls
// back to a GET of the manifest when the HEAD is refused or says too little.
func Resolve(ctx context.Context, ref string, o Options) (string, error) {
	r, err := name.ParseReference(ref, o.NameOptions()...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout(DefaultTimeout))
	defer cancel()
	p, err := o.puller(ctx)
	if err != nil {
		return "", err
	}
	return resolve(ctx, p, r)
}

func resolve(ctx context.Context, p *remote.Puller, r name.Reference) (string, error) {
	desc, err := p.Head(ctx, r)
	if err == nil {
		return desc.Digest.String(), nil
	}
	if ctx.Err() != nil {
		return "", explain("resolving", r.String(), err)
	}
	// A HEAD response has no body to say why it failed, and some registries refuse HEAD
	// or send no Docker-Content-Digest: the GET says why, or gives the manifest to hash.
	d, err := p.Get(ctx, r)
	if err != nil {
		return "", explain("resolving", r.String(), err)
	}
	if _, isDigest := r.(name.Digest); !isDigest && sha(d.Manifest) != d.Digest.String() {
		// go-containerregistry takes a schema 1 manifest's digest from the registry's
		// header; such a manifest is refused when pulled anyway.
		return "", fmt.Errorf("resolving %s: the registry names the manifest %s, it hashes to %s", r, d.Digest, sha(d.Manifest))
	}
	return d.Digest.String(), nil
}

// puller returns a go-containerregistry puller for one operation bounded by ctx.
func (o Options) puller(ctx context.Context) (*remote.Puller, error) {
	opts, err := o.RemoteOptions(ctx)
	if err != nil {
		return nil, err
	}
	return remote.NewPuller(opts...)
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PullImage pulls the image a digest reference pins and returns it held in memory, every
// part checked against the digest (ociparts.Parts.Verify), ready to be written elsewhere
// (Push, an image layout). A tag reference is refused. An index is refused too: a bundle
// image is a single manifest.
func PullImage(ctx context.Context, ref string, o Options) (v1.Image, error) {
	d, err := digestRef(ref, o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout(DefaultTimeout))
	defer cancel()
	p, err := o.puller(ctx)
	if err != nil {
		return nil, err
	}
	img, _, err := pullImage(ctx, p, d, false)
	if err != nil {
		return nil, err
	}
	return img, nil
}

// digestRef parses a reference that must pin a digest (ociparts.DigestOf).
func digestRef(ref string, o Options) (name.Digest, error) {
	if _, err := ociparts.DigestOf(ref); err != nil {
		return name.Digest{}, err
	}
	d, err := name.NewDigest(ref, o.NameOptions()...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	return d, nil
}

// pullImage fetches the image d pins, every blob read whole and checked against its
// digest before it is used, and returns it with its verified parts. With index, an index
// is resolved to its linux/amd64 image or its only one (pickImage); else it is refused.
// Errors name d.
func pullImage(ctx context.Context, p *remote.Puller, d name.Digest, index bool) (v1.Image, *ociparts.Parts, error) {
	desc, err := p.Get(ctx, d)
	if err != nil {
		return nil, nil, explain("pulling", d.String(), err)
	}
	if err := checkBlob(desc.Manifest, d.DigestStr(), maxManifestSize, "the manifest"); err != nil {
		return nil, nil, explain("pulling", d.String(), err)
	}
	if desc.MediaType.IsIndex() {
		if !index {
			return nil, nil, fmt.Errorf("pulling %s: it is an image index (a multi-platform image); a bundle image is a single image manifest", d)
		}
		im, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return nil, nil, fmt.Errorf("pulling %s: the index: %w", d, err)
		}
		child, err := pickImage(im)
		if err != nil {
			return nil, nil, fmt.Errorf("pulling %s: %w", d, err)
		}
		img, parts, err := pullImage(ctx, p, d.Context().Digest(child.String()), false)
		if err != nil {
			return nil, nil, fmt.Errorf("pulling %s: %w", d, err)
		}
		return img, parts, nil
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, nil, fmt.Errorf("pulling %s: the manifest (%s) is not an image manifest: %w", d, desc.MediaType, err)
	}
	mem := &memImage{manifest: desc.Manifest, mediaType: desc.MediaType, blobs: map[v1.Hash]memLayer{}}
	if mem.mediaType == "" {
		mem.mediaType = m.MediaType
	}
	if mem.config, err = fetchBlob(ctx, p, d, m.Config, maxConfigSize, "the config"); err != nil {
		return nil, nil, err
	}
	for i, l := range m.Layers {
		if len(l.URLs) > 0 {
			return nil, nil, fmt.Errorf("pulling %s: layer %d is a foreign layer, served from elsewhere; not supported", d, i)
		}
		data, err := fetchBlob(ctx, p, d, l, ociparts.MaxLayerSize, fmt.Sprintf("layer %d", i))
		if err != nil {
			return nil, nil, err
		}
		mem.blobs[l.Digest] = memLayer{digest: l.Digest, data: data, mediaType: l.MediaType}
	}
	img := mem.image()
	parts, err := ociparts.FromImage(img)
	if err == nil {
		err = parts.Verify(d.DigestStr())
	}
	if err != nil {
		return nil, nil, explain("pulling", d.String(), err)
	}
	return img, parts, nil
}

// fetchBlob reads one blob of the image d whole, bounded by limit, and checks its digest.
func fetchBlob(ctx context.Context, p *remote.Puller, d name.Digest, desc v1.Descriptor, limit int64, what string) ([]byte, error) {
	if desc.Size > limit {
		return nil, fmt.Errorf("pulling %s: %s is %d bytes, more than the %d MiB allowed", d, what, desc.Size, limit>>20)
	}
	l, err := p.Layer(ctx, d.Context().Digest(desc.Digest.String()))
	if err != nil {
		return nil, explain("pulling", d.String(), fmt.Errorf("%s: %w", what, err))
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, explain("pulling", d.String(), fmt.Errorf("%s: %w", what, err))
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, explain("pulling", d.String(), fmt.Errorf("%s: %w", what, err))
	}
	if err := checkBlob(data, desc.Digest.String(), limit, what); err != nil {
		return nil, explain("pulling", d.String(), err)
	}
	return data, nil
}

// checkBlob checks a blob read whole against its digest and size bound.
func checkBlob(data []byte, digest string, limit int64, what string) error {
	if int64(len(data)) > limit {
		return fmt.Errorf("%s is more than the %d MiB allowed", what, limit>>20)
	}
	if got := sha(data); got != digest {
		return fmt.Errorf("%w: %s has digest %s, not %s", ociparts.ErrDigestMismatch, what, got, digest)
	}
	return nil
}

// amd64 is the platform taken from a multi-platform catalog image: a catalog's files are
// the same on every platform, and linux/amd64 is the one every catalog is built for.
var amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}

// pickImage chooses the image of an index to read files from: its linux/amd64 image, or
// its only image. Attestation manifests (platform unknown/unknown, as buildx adds) and
// nested indexes are not images to choose.
func pickImage(im *v1.IndexManifest) (v1.Hash, error) {
	var images []v1.Descriptor
	var platforms []string
	for _, m := range im.Manifests {
		if !m.MediaType.IsImage() {
			continue
		}
		if m.Platform != nil && m.Platform.OS == "unknown" && m.Platform.Architecture == "unknown" {
			continue
		}
		images = append(images, m)
		if m.Platform != nil {
			platforms = append(platforms, m.Platform.String())
		}
	}
	for _, m := range images {
		if m.Platform != nil && m.Platform.OS == amd64.OS && m.Platform.Architecture == amd64.Architecture {
			return m.Digest, nil
		}
	}
	switch len(images) {
	case 0:
		return v1.Hash{}, errors.New("the image index lists no image")
	case 1:
		return images[0].Digest, nil
	}
	return v1.Hash{}, fmt.Errorf("the image index has no linux/amd64 image and %d others (%s): which to read is unclear", len(images), strings.Join(platforms, ", "))
}

// memImage is an image whose every part was read from a registry and checked against
// its digest: reading it again reads memory, and writing it elsewhere (an image layout, a
// registry) writes exactly the bytes that were checked.
type memImage struct {
	manifest  []byte
	mediaType types.MediaType
	config    []byte
	blobs     map[v1.Hash]memLayer
}

var _ partial.CompressedImageCore = (*memImage)(nil)

func (m *memImage) RawManifest() ([]byte, error)        { return m.manifest, nil }
func (m *memImage) RawConfigFile() ([]byte, error)      { return m.config, nil }
func (m *memImage) MediaType() (types.MediaType, error) { return m.mediaType, nil }

func (m *memImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := m.blobs[h]; ok {
		return l, nil
	}
	if h.String() == sha(m.config) {
		return memLayer{digest: h, data: m.config, mediaType: types.OCIConfigJSON}, nil
	}
	return nil, fmt.Errorf("the image has no blob %s", h)
}

// image returns m as a v1.Image.
func (m *memImage) image() v1.Image {
	img, err := partial.CompressedToImage(m)
	if err != nil {
		panic(err) // CompressedToImage fails for no CompressedImageCore
	}
	return img
}

// memLayer is one blob of a memImage, as served (compressed).
type memLayer struct {
	digest    v1.Hash
	data      []byte
	mediaType types.MediaType
}

func (l memLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l memLayer) Size() (int64, error)                { return int64(len(l.data)), nil }
func (l memLayer) MediaType() (types.MediaType, error) { return l.mediaType, nil }
func (l memLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.data)), nil
}
