// Package imagecatalog publishes a directory catalog as OCI images: one bundle image per
// bundle, laid out as an OLM registry+v1 bundle image (/manifests, /metadata), and a
// File-Based Catalog image (/configs) whose olm.bundle entries name those bundle images by
// digest, as real catalogs do.
//
// Everything built here is a function of the catalog's files: entries are sorted, owners,
// modes and timestamps are fixed, so the same directory always gives the same digests and
// publishing it twice changes nothing in the registry.
package imagecatalog

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// Bundle image annotations (metadata/annotations.yaml, and the image config's labels), as
// operator-sdk and opm write them.
const (
	AnnotationMediaType      = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifests      = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationMetadata       = "operators.operatorframework.io.bundle.metadata.v1"
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"

	// MediaTypeRegistryV1 is the bundle format written: manifests/ and metadata/.
	MediaTypeRegistryV1 = "registry+v1"
	// ManifestsDir and MetadataDir are the bundle image's directories, as the
	// annotations name them.
	ManifestsDir = "manifests/"
	MetadataDir  = "metadata/"
	// AnnotationsFile is the bundle's annotations, relative to the image root.
	AnnotationsFile = "metadata/annotations.yaml"

	// LabelConfigs is the catalog image label naming where its File-Based Catalog is.
	LabelConfigs = "operators.operatorframework.io.index.configs.v1"
	// ConfigsDir is where CatalogImage puts the File-Based Catalog.
	ConfigsDir = "/configs"
)

// epoch is the timestamp of every image, history entry and file built here.
var epoch = time.Unix(0, 0).UTC()

// BundleImage builds a bundle image from a bundle's files as catalog.Catalog.Files returns
// them: one layer holding the manifests under /manifests/ and the metadata under
// /metadata/. Files already under manifests/ or metadata/ (the bundle layout) keep their
// place; manifest files at the bundle root (the flat and package-manifest layouts) and a
// File-Based Catalog bundle's objects/ go to /manifests/; an FBC bundle's virtual
// olm.bundle.json is left out. The annotations of metadata/annotations.yaml are also the
// image config's labels.
//
// Without metadata/annotations.yaml one is written with the standard annotations. Files
// alone do not say the package and channels of a flat or package-manifest bundle: use
// BundleFiles, which adds them from the catalog. Failing that, the package is read from
// the CSV's name (the part before its version) and the channel is catalog.FlatChannel.
func BundleImage(files []catalog.File) (v1.Image, error) {
	entries := map[string][]byte{}
	for _, f := range files {
		target, err := bundlePath(f.Name)
		if err != nil {
			return nil, err
		}
		if target == "" {
			continue
		}
		if _, dup := entries[target]; dup {
			return nil, fmt.Errorf("bundle file %s: two files of the bundle go to /%s", f.Name, target)
		}
		entries[target] = f.Data
	}
	if !slices.ContainsFunc(slices.Collect(maps.Keys(entries)), func(n string) bool { return strings.HasPrefix(n, ManifestsDir) }) {
		return nil, errors.New("the bundle has no manifests")
	}
	var annotations map[string]string
	if data, ok := annotationsData(entries); ok {
		var err error
		if annotations, err = parseAnnotations(data); err != nil {
			return nil, fmt.Errorf("bundle file %s: %w", AnnotationsFile, err)
		}
	} else {
		pkg, err := packageFromCSV(files)
		if err != nil {
			return nil, err
		}
		annotations = Annotations(pkg, []string{catalog.FlatChannel}, catalog.FlatChannel)
		if entries[AnnotationsFile], err = annotationsYAML(annotations); err != nil {
			return nil, err
		}
	}
	layer, err := tarLayer(entries)
	if err != nil {
		return nil, err
	}
	return imageOf(layer, annotations, "operator-manager imagecatalog: registry+v1 bundle")
}

// bundlePath maps a bundle file to its path in the image, relative to the root; "" leaves
// it out.
func bundlePath(name string) (string, error) {
	clean := path.Clean(name)
	if name == "" || path.IsAbs(name) || clean != name || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\\") {
		return "", fmt.Errorf("bundle file %q: want a clean slash path relative to the bundle", name)
	}
	switch {
	case name == "olm.bundle.json":
		return "", nil // a File-Based Catalog bundle's blob: the catalog's, not the image's
	case strings.HasPrefix(name, ManifestsDir), strings.HasPrefix(name, MetadataDir):
		return name, nil
	case strings.HasPrefix(name, "objects/") && !strings.Contains(strings.TrimPrefix(name, "objects/"), "/"):
		return ManifestsDir + path.Base(name), nil
	case !strings.Contains(name, "/") && isManifestName(name):
		return ManifestsDir + name, nil
	}
	return "", fmt.Errorf("bundle file %q: neither a manifest at the bundle root nor under manifests/ or metadata/", name)
}

func isManifestName(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func annotationsData(entries map[string][]byte) ([]byte, bool) {
	for _, n := range []string{AnnotationsFile, "metadata/annotations.yml"} {
		if data, ok := entries[n]; ok {
			return data, true
		}
	}
	return nil, false
}

// parseAnnotations reads metadata/annotations.yaml as a map of strings. YAML v2 keeps an
// unquoted channel name such as 1.0 as "1.0", as the catalog loader reads it.
func parseAnnotations(data []byte) (map[string]string, error) {
	var f struct {
		Annotations map[string]string `yaml:"annotations"`
	}
	if err := yamlv2.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Annotations[AnnotationPackage] == "" {
		return nil, fmt.Errorf("annotation %s is missing", AnnotationPackage)
	}
	return f.Annotations, nil
}

// Annotations returns the standard registry+v1 bundle annotations.
func Annotations(pkg string, channels []string, defaultChannel string) map[string]string {
	a := map[string]string{
		AnnotationMediaType: MediaTypeRegistryV1,
		AnnotationManifests: ManifestsDir,
		AnnotationMetadata:  MetadataDir,
		AnnotationPackage:   pkg,
		AnnotationChannels:  strings.Join(channels, ","),
	}
	if defaultChannel != "" {
		a[AnnotationDefaultChannel] = defaultChannel
	}
	return a
}

func annotationsYAML(a map[string]string) ([]byte, error) {
	return yaml.Marshal(map[string]any{"annotations": a})
}

// packageFromCSV reads a package name from the CSV's name: "cache-operator.v1.2.0" is
// package cache-operator.
func packageFromCSV(files []catalog.File) (string, error) {
	bc, err := catalog.ContentFromFiles(files)
	if err != nil {
		return "", fmt.Errorf("no %s and no CSV to name the package: %w", AnnotationsFile, err)
	}
	csv := bc.CSV.Name
	for i := 0; i < len(csv)-1; i++ {
		if csv[i] != '.' {
			continue
		}
		if c := strings.TrimPrefix(csv[i+1:], "v"); c != "" && c[0] >= '0' && c[0] <= '9' && i > 0 {
			return csv[:i], nil
		}
	}
	return "", fmt.Errorf("no %s, and the CSV name %q holds no <package>.v<version> to name the package", AnnotationsFile, csv)
}

// BundleFiles returns a bundle's files (catalog.Catalog.Files) with a
// metadata/annotations.yaml naming its package, channels and the package's default
// channel added when the bundle has none (the flat and package-manifest layouts). A
// bundle in no channel is annotated with the default channel, since the format requires
// one; the catalog, not the bundle image, says which channels a bundle is in.
func BundleFiles(cat *catalog.Catalog, b *catalog.Bundle) ([]catalog.File, error) {
	files, err := cat.Files(b)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.Name == AnnotationsFile || f.Name == "metadata/annotations.yml" {
			return files, nil
		}
	}
	p := cat.Package(b.Package)
	if p == nil {
		return nil, fmt.Errorf("bundle %s: package %q is not in the catalog", b.Ref(), b.Package)
	}
	channels := b.Channels
	if len(channels) == 0 && p.DefaultChannel != "" {
		channels = []string{p.DefaultChannel}
	}
	if len(channels) == 0 {
		channels = []string{catalog.FlatChannel}
	}
	data, err := annotationsYAML(Annotations(b.Package, channels, p.DefaultChannel))
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(files), catalog.File{Name: AnnotationsFile, Data: data}), nil
}

// CatalogImage builds a catalog image from File-Based Catalog files (RenderFBC's), keyed
// by slash paths relative to the catalog root: one layer holding them under /configs, and
// the config label LabelConfigs naming that directory.
func CatalogImage(fbc map[string][]byte) (v1.Image, error) {
	if len(fbc) == 0 {
		return nil, errors.New("the catalog has no files")
	}
	entries := make(map[string][]byte, len(fbc))
	for name, data := range fbc {
		clean := path.Clean(name)
		if name == "" || path.IsAbs(name) || clean != name || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\\") {
			return nil, fmt.Errorf("catalog file %q: want a clean slash path relative to the catalog", name)
		}
		entries[strings.TrimPrefix(ConfigsDir, "/")+"/"+name] = data
	}
	layer, err := tarLayer(entries)
	if err != nil {
		return nil, err
	}
	return imageOf(layer, map[string]string{LabelConfigs: ConfigsDir}, "operator-manager imagecatalog: File-Based Catalog")
}

// tarLayer writes files (slash paths relative to the root) and their parent directories
// as an uncompressed tar, sorted by name, root-owned, with fixed modes and timestamps.
func tarLayer(files map[string][]byte) ([]byte, error) {
	dirs := map[string]bool{}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	names := slices.Collect(maps.Keys(files))
	for d := range dirs {
		if _, clash := files[strings.TrimSuffix(d, "/")]; clash {
			return nil, fmt.Errorf("%s is both a file and a directory", strings.TrimSuffix(d, "/"))
		}
		names = append(names, d)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		hdr := &tar.Header{Name: n, ModTime: epoch, Format: tar.FormatPAX}
		if strings.HasSuffix(n, "/") {
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
		} else {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(files[n]))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// imageOf makes a single-layer OCI image of an uncompressed tar, with labels.
func imageOf(layerTar []byte, labels map[string]string, createdBy string) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: createdBy},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{Labels: labels}
	return mutate.ConfigFile(img, cf)
}
