package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/operator-manager/operator-manager/internal/ociparts"
	"sigs.k8s.io/yaml"
)

// A File-Based Catalog bundle whose manifests are only in its bundle image (the usual
// case in published catalogs) is pulled when first needed. Its files are then the catalog
// entry (olm.bundle.json) plus the image's raw parts under image/:
//
//	image/manifest.json   the manifest; its sha256 is the digest the entry's image: pins
//	image/config.json     the config; its sha256 is named by the manifest
//	image/layers/NNN.tar  each layer uncompressed; its sha256 is a diff_id of the config
//
// The bundle's digest stays the digest of the entry alone, known when the catalog loads,
// and the image parts are checked through that chain (VerifyFiles). So a bundle pulled
// once is checked the same way wherever it is read back from: the local cache, the copy
// kept in the cluster, an export archive, or a catalog server.
const (
	imageDir          = "image/"
	imageManifestFile = imageDir + "manifest.json"
	imageConfigFile   = imageDir + "config.json"
	imageLayerDir     = imageDir + "layers/"
)

// ImagesDir is the directory of a catalog root that holds the bundle images of a
// mirrored catalog, as an OCI image layout (`operator-manager catalog mirror` writes it).
// The loader does not take it for a package.
const ImagesDir = "images"

// Bundle image labels (operator-registry's names) saying where the manifests are.
const labelManifests = "operators.operatorframework.io.bundle.manifests.v1"

// isImageFile reports whether a bundle file is one of its image's parts.
func isImageFile(name string) bool { return strings.HasPrefix(name, imageDir) }

// imageOnly reports whether an FBC bundle's entry holds no manifests of its own.
func (b *Bundle) imageOnly() bool {
	return b.Layout == LayoutFBC && !slices.ContainsFunc(b.Files, func(f string) bool { return f != fbcBlobFile })
}

// ImageOnly reports whether the bundle's manifests are only in its bundle image.
func (b *Bundle) ImageOnly() bool { return b.imageOnly() }

// imageFiles turns an image's parts into bundle files.
func imageFiles(p *ociparts.Parts) []File {
	files := []File{{Name: imageManifestFile, Data: p.Manifest}, {Name: imageConfigFile, Data: p.Config}}
	for i, l := range p.Layers {
		files = append(files, File{Name: fmt.Sprintf("%s%03d.tar", imageLayerDir, i), Data: l})
	}
	return files
}

// splitImage separates a bundle's files into the entry's and the image's parts (nil when
// the files hold no image).
func splitImage(files []File) (entry []File, parts *ociparts.Parts, err error) {
	var layers []File
	for _, f := range files {
		switch {
		case !isImageFile(f.Name):
			entry = append(entry, f)
		case f.Name == imageManifestFile:
			parts = orNew(parts)
			parts.Manifest = f.Data
		case f.Name == imageConfigFile:
			parts = orNew(parts)
			parts.Config = f.Data
		case strings.HasPrefix(f.Name, imageLayerDir) && strings.HasSuffix(f.Name, ".tar"):
			parts = orNew(parts)
			layers = append(layers, f)
		default:
			return nil, nil, fmt.Errorf("%s: not an image part (image/manifest.json, image/config.json or image/layers/NNN.tar)", f.Name)
		}
	}
	if parts == nil {
		return entry, nil, nil
	}
	slices.SortFunc(layers, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	for i, l := range layers {
		if want := fmt.Sprintf("%s%03d.tar", imageLayerDir, i); l.Name != want {
			return nil, nil, fmt.Errorf("%s: layers must be numbered from 000 without gaps (expected %s)", l.Name, want)
		}
		parts.Layers = append(parts.Layers, l.Data)
	}
	return entry, parts, nil
}

func orNew(p *ociparts.Parts) *ociparts.Parts {
	if p == nil {
		return &ociparts.Parts{}
	}
	return p
}

// BundleDigest returns the digest a bundle's files are known by: DigestFiles of every
// file but the image parts, which the entry pins by the image digest instead.
func BundleDigest(files []File) string {
	if !slices.ContainsFunc(files, func(f File) bool { return isImageFile(f.Name) }) {
		return DigestFiles(files)
	}
	return DigestFiles(slices.DeleteFunc(slices.Clone(files), func(f File) bool { return isImageFile(f.Name) }))
}

// VerifyFiles checks a bundle's files against its digest: the digest of the entry, and
// for a pulled image the chain from the entry's image reference to every layer. A
// mismatch wraps ErrDigestMismatch.
func VerifyFiles(files []File, digest string) error {
	entry, parts, err := splitImage(files)
	if err != nil {
		return err
	}
	if got := DigestFiles(entry); got != digest {
		return fmt.Errorf("its files have digest %s, not %s: %w", got, digest, ErrDigestMismatch)
	}
	if parts == nil {
		return nil
	}
	ref, err := entryImage(entry)
	if err != nil {
		return err
	}
	imageDigest, err := ociparts.DigestOf(ref)
	if err != nil {
		return err
	}
	if err := parts.Verify(imageDigest); err != nil {
		return fmt.Errorf("bundle image %s: %w", ref, err)
	}
	return nil
}

// entryImage returns the image: of a bundle's olm.bundle.json.
func entryImage(entry []File) (string, error) {
	for _, f := range entry {
		if f.Name != fbcBlobFile {
			continue
		}
		var blob struct {
			Image string `json:"image"`
		}
		if err := json.Unmarshal(f.Data, &blob); err != nil {
			return "", fmt.Errorf("%s: %w", fbcBlobFile, err)
		}
		if blob.Image == "" {
			return "", fmt.Errorf("%s has no image, yet the bundle holds image parts", fbcBlobFile)
		}
		return blob.Image, nil
	}
	return "", fmt.Errorf("the bundle holds image parts but no %s naming the image", fbcBlobFile)
}

// imageManifests returns the manifest files of a pulled bundle image, named
// "manifests/<file>", and its metadata files, named "metadata/<file>", as a directory
// bundle's files are. The manifests directory is the one the image's labels (or its
// metadata/annotations.yaml) name, manifests/ by default.
func imageManifests(parts *ociparts.Parts) ([]File, error) {
	all, err := parts.Files("")
	if err != nil {
		return nil, err
	}
	dir := "manifests"
	labels, err := parts.Labels()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	if d := labels[labelManifests]; d != "" {
		dir = d
	} else if data, ok := all["metadata/annotations.yaml"]; ok {
		var a struct {
			Annotations map[string]string `json:"annotations"`
		}
		if yaml.Unmarshal(data, &a) == nil && a.Annotations[labelManifests] != "" {
			dir = a.Annotations[labelManifests]
		}
	}
	dir = strings.Trim(path.Clean("/"+dir), "/")
	var files []File
	for name, data := range all {
		switch {
		case strings.HasPrefix(name, dir+"/") && isManifestFile(name):
			files = append(files, File{Name: "manifests/" + strings.TrimPrefix(name, dir+"/"), Data: data})
		case strings.HasPrefix(name, "metadata/"):
			files = append(files, File{Name: name, Data: data})
		}
	}
	if !slices.ContainsFunc(files, func(f File) bool { return strings.HasPrefix(f.Name, "manifests/") }) {
		return nil, fmt.Errorf("the bundle image holds no manifests under /%s", dir)
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}

// errNoImageSource is returned for an image-only bundle of a catalog that has no way to
// pull images.
var errNoImageSource = errors.New("this catalog has no image source to pull it from")
