package catalog

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ErrDigestMismatch is wrapped when a bundle's files no longer match the digest recorded
// at load: the catalog changed on disk and must be reloaded.
// It is the same error as a pulled image's parts not matching theirs.
var ErrDigestMismatch = ociparts.ErrDigestMismatch

// ErrNoContent is wrapped when a File-Based Catalog bundle carries no manifests of its
// own (only an image reference, which this package does not pull).
var ErrNoContent = errors.New("bundle content not in the catalog")

// BundleContent is the parsed content of a bundle, read on demand.
type BundleContent struct {
	Bundle *Bundle
	CSV    *v1alpha1.ClusterServiceVersion
	// CRDs are CustomResourceDefinitions as written, of any apiextensions version.
	CRDs []*unstructured.Unstructured
	// Objects are the other manifests (RBAC, Services, ConfigMaps, ...).
	Objects []*unstructured.Unstructured
	// Files are the bundle's files, when the content was parsed from them.
	Files []File
}

// Files reads a bundle's files back and checks them against the digest recorded at load:
// from the catalog directory, or through the file source given to FromIndex.
func (c *Catalog) Files(b *Bundle) ([]File, error) {
	if c.files != nil {
		files, err := c.files(b)
		if err != nil {
			return nil, fmt.Errorf("reading bundle %s: %w", b.Ref(), err)
		}
		if err := VerifyFiles(files, b.Digest); err != nil {
			return nil, fmt.Errorf("reading bundle %s: %w", b.Ref(), err)
		}
		return files, nil
	}
	root, err := os.OpenRoot(c.Root)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: %w", b.Ref(), err)
	}
	defer root.Close()
	r := &fsReader{root: root, maxSize: c.opts.MaxFileSize}
	var files []File
	if b.Layout == LayoutFBC {
		files, err = c.fbcFiles(r, b)
	} else {
		files, err = dirFiles(r, b)
	}
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: %w", b.Ref(), err)
	}
	if got := DigestFiles(files); got != b.Digest {
		return nil, fmt.Errorf("reading bundle %s from %s: %w (loaded %s, now %s)", b.Ref(), b.RelPath, ErrDigestMismatch, b.Digest, got)
	}
	if b.imageOnly() {
		return c.pullImage(b, files)
	}
	return files, nil
}

// pullImage adds the parts of an image-only bundle's image to its entry's files.
func (c *Catalog) pullImage(b *Bundle, entry []File) ([]File, error) {
	if c.images == nil {
		return nil, fmt.Errorf("reading bundle %s: %w: its manifests are only in the image %q, and %v", b.Ref(), ErrNoContent, b.Image, errNoImageSource)
	}
	parts, err := c.images.Pull(b.Image)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: pulling %s: %w", b.Ref(), b.Image, err)
	}
	files := append(slices.Clone(entry), imageFiles(parts)...)
	if err := VerifyFiles(files, b.Digest); err != nil {
		return nil, fmt.Errorf("reading bundle %s: %w", b.Ref(), err)
	}
	return files, nil
}

func dirFiles(r *fsReader, b *Bundle) ([]File, error) {
	files := make([]File, 0, len(b.Files))
	for _, name := range b.Files {
		data, err := r.readFile(path.Join(b.RelPath, name))
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: name, Data: data})
	}
	return files, nil
}

// fbcFiles re-reads the catalog file holding an FBC bundle and rebuilds its files.
func (c *Catalog) fbcFiles(r *fsReader, b *Bundle) ([]File, error) {
	data, err := r.readFile(b.RelPath)
	if err != nil {
		return nil, err
	}
	blobs, _ := parseFBC(data)
	for _, blob := range blobs {
		if blob.Schema == SchemaBundle && blob.Package == b.Package && blob.Name == b.CSVName {
			_, files, err := fbcBundleFiles(r, b.RelPath, blob, true)
			return files, err
		}
	}
	return nil, fmt.Errorf("%s: olm.bundle %q of package %q: %w", b.RelPath, b.CSVName, b.Package, ErrNotFound)
}

// Content reads a bundle back (see Files), checks its digest and parses its manifests.
func (c *Catalog) Content(b *Bundle) (*BundleContent, error) {
	if c.files == nil && b.imageOnly() && c.images == nil {
		return nil, fmt.Errorf("reading bundle %s: %w: the catalog entry has no olm.bundle.object, its manifests are only in the image %q, and %v", b.Ref(), ErrNoContent, b.Image, errNoImageSource)
	}
	files, err := c.Files(b)
	if err != nil {
		return nil, err
	}
	bc, err := ContentFromFiles(files)
	if err != nil {
		return nil, fmt.Errorf("parsing bundle %s: %w", b.Ref(), err)
	}
	bc.Bundle = b
	if bc.CSV.Spec.Version.Version.Equals(zeroVersion) {
		// spec.version was absent; the loader derived the version from the names.
		bc.CSV.Spec.Version.Version = b.Version
	}
	return bc, nil
}

// ContentFromFiles parses a bundle's files, as returned by Catalog.Files or fetched from
// a remote catalog: metadata/ and the FBC blob file are skipped, every other file's
// documents are the bundle's manifests, exactly one of them a CSV.
//
// At most two bundles are parsed at once in a process: a bundle's CRDs decode into maps
// of tens of MiB for the largest, and the manager's workers would otherwise parse as many
// at once as they run, which set its peak memory (231 MiB with 159 installations starting
// together, in the fleet benchmark).
func ContentFromFiles(files []File) (*BundleContent, error) {
	parsing <- struct{}{}
	defer func() { <-parsing }()
	bc := &BundleContent{Files: files}
	manifests, err := bundleManifests(files)
	if err != nil {
		return nil, err
	}
	if err := eachManifest(manifests, bc.add); err != nil {
		return nil, err
	}
	if bc.CSV == nil {
		return nil, errors.New("no ClusterServiceVersion among the bundle's files")
	}
	return bc, nil
}

// parsing holds a slot per bundle being parsed (ContentFromFiles).
var parsing = make(chan struct{}, 2)

// ObjectsFromFiles parses only a bundle's manifests besides its CSV and CRDs (RBAC,
// Services, ConfigMaps, ...), which is all an installed CSV needs of its bundle at each
// reconcile: the CSV and CRD documents, by far the largest, are recognised by their
// top-level kind and skipped unparsed.
func ObjectsFromFiles(files []File) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	manifests, err := bundleManifests(files)
	if err != nil {
		return nil, err
	}
	err = eachManifest(manifests, func(file string, doc document) error {
		if k := sniffKind(doc.data); k == csvKind || k == crdKind {
			return nil
		}
		obj, err := decodeManifest(file, doc)
		if err == nil && obj.GetKind() != csvKind && obj.GetKind() != crdKind {
			out = append(out, obj)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bundleManifests returns the files whose documents are the bundle's manifests: the files
// themselves, or for a pulled bundle image those its layers hold (not any
// olm.bundle.object the catalog entry also carries for display).
func bundleManifests(files []File) ([]File, error) {
	_, parts, err := splitImage(files)
	if err != nil || parts == nil {
		return files, err
	}
	manifests, err := imageManifests(parts)
	if err != nil {
		return nil, fmt.Errorf("bundle image: %w", err)
	}
	return manifests, nil
}

// eachManifest calls fn on every document of the bundle's manifests: metadata/ and the
// FBC blob file are not manifests.
func eachManifest(files []File, fn func(file string, doc document) error) error {
	for _, f := range files {
		if f.Name == fbcBlobFile || strings.HasPrefix(f.Name, "metadata/") {
			continue
		}
		for _, doc := range splitDocuments(f.Data) {
			if err := fn(f.Name, doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeManifest decodes one document of a manifest file into an object with a kind.
func decodeManifest(file string, doc document) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := noPanic("decoding manifest", func() error { return yaml.Unmarshal(doc.data, &obj.Object) }); err != nil {
		return nil, docError(file, doc, err)
	}
	if obj.GetKind() == "" {
		return nil, docError(file, doc, errors.New("not a Kubernetes object: kind is missing"))
	}
	return obj, nil
}

func (bc *BundleContent) add(file string, doc document) error {
	if sniffKind(doc.data) == csvKind {
		if err := bc.addCSV(file, doc); !errors.Is(err, errNotCSV) {
			return err
		}
	}
	obj, err := decodeManifest(file, doc)
	if err != nil {
		return err
	}
	switch obj.GetKind() {
	case csvKind:
		return bc.addCSV(file, doc)
	case crdKind:
		bc.CRDs = append(bc.CRDs, obj)
	default:
		bc.Objects = append(bc.Objects, obj)
	}
	return nil
}

func (bc *BundleContent) addCSV(file string, doc document) error {
	csv, versionErr, err := parseCSV(doc.data)
	if err == nil && versionErr != nil && !errors.Is(versionErr, errVersionAbsent) {
		err = versionErr
	}
	if err != nil {
		return docError(file, doc, err)
	}
	if bc.CSV != nil {
		return fmt.Errorf("%s: a second ClusterServiceVersion, %q", file, csv.Name)
	}
	bc.CSV = csv
	return nil
}

var zeroVersion semver.Version
