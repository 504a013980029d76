package imagecatalog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

type packageProp struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
}

type gvkProp struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// csvMetadata is operator-registry's olm.csv.metadata property: the CSV's fields a UI or a
// resolver needs without pulling the bundle image.
//
// The CRD descriptions are written twice: under "crdDescriptions", the key opm writes and
// reads, and under "customresourcedefinitions", the key internal/catalog's loader reads
// (its csvMetadata), so that a catalog rendered here loads with the same required CRDs and
// CRD plurals in both.
type csvMetadata struct {
	Annotations           map[string]string                   `json:"annotations,omitempty"`
	APIServiceDefinitions *v1alpha1.APIServiceDefinitions     `json:"apiServiceDefinitions,omitempty"`
	CRDDescriptions       *v1alpha1.CustomResourceDefinitions `json:"crdDescriptions,omitempty"`
	Description           string                              `json:"description,omitempty"`
	DisplayName           string                              `json:"displayName,omitempty"`
	InstallModes          []v1alpha1.InstallMode              `json:"installModes,omitempty"`
	Keywords              []string                            `json:"keywords,omitempty"`
	Labels                map[string]string                   `json:"labels,omitempty"`
	Links                 []v1alpha1.AppLink                  `json:"links,omitempty"`
	Maintainers           []v1alpha1.Maintainer               `json:"maintainers,omitempty"`
	Maturity              string                              `json:"maturity,omitempty"`
	MinKubeVersion        string                              `json:"minKubeVersion,omitempty"`
	NativeAPIs            []metav1.GroupVersionKind           `json:"nativeAPIs,omitempty"`
	Provider              *v1alpha1.AppLink                   `json:"provider,omitempty"`
}

// CatalogFile is the name RenderFBC gives a package's File-Based Catalog file.
func CatalogFile(pkg string) string { return pkg + "/catalog.json" }

// RenderFBC renders the catalog as a File-Based Catalog: one CatalogFile per package
// holding, as concatenated JSON documents, its olm.package (with the default channel), one
// olm.channel per channel (its entries with their replaces, skips and skipRange) and one
// olm.bundle per bundle, whose image is imageFor(b) and whose properties are olm.package
// (name and version), olm.gvk per owned CRD, olm.package.required and olm.gvk.required per
// dependency, and olm.csv.metadata (annotations, install modes, minKubeVersion, CRD
// descriptions and the CSV's descriptive fields, read with cat.Content), and whose
// relatedImages are the CSV's spec.relatedImages.
//
// A CSV's required CRDs are in olm.csv.metadata only, not also olm.gvk.required
// properties as opm would add: internal/catalog reads olm.gvk.required as a dependency,
// and the rendered catalog must load with the dependencies the directory has.
//
// The bundles carry no olm.bundle.object: their manifests are only in their images, as in
// the catalogs opm builds. Loading the result gives the same packages, channels, heads,
// edges, versions, owned and required CRDs, dependencies, install modes and
// minKubeVersion as cat. Packages and channels come in the catalog's order (by name),
// entries by descending version and bundles by ascending version, so the same catalog
// always renders to the same bytes.
func RenderFBC(cat *catalog.Catalog, imageFor func(*catalog.Bundle) string) (map[string][]byte, error) {
	return render(cat, imageFor, false)
}

// RenderFBCWithObjects is RenderFBC with every bundle's manifests in the catalog too, one
// olm.bundle.object property (the manifest as JSON) each, as `opm render` writes a bundle
// it read: a catalog whose bundles install without their images being pulled, which
// operator-registry serves whole (tests serve the sample catalog so).
func RenderFBCWithObjects(cat *catalog.Catalog, imageFor func(*catalog.Bundle) string) (map[string][]byte, error) {
	return render(cat, imageFor, true)
}

func render(cat *catalog.Catalog, imageFor func(*catalog.Bundle) string, objects bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, p := range cat.Packages() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(catalog.FBCPackage{Schema: catalog.SchemaPackage, Name: p.Name, DefaultChannel: p.DefaultChannel}); err != nil {
			return nil, err
		}
		for _, c := range p.Channels {
			ch := catalog.FBCChannel{Schema: catalog.SchemaChannel, Name: c.Name, Package: p.Name, Entries: []catalog.FBCEntry{}}
			for _, e := range c.Entries {
				ch.Entries = append(ch.Entries, catalog.FBCEntry{Name: e.Name, Replaces: e.Replaces, Skips: e.Skips, SkipRange: e.SkipRange.Raw})
			}
			if err := enc.Encode(ch); err != nil {
				return nil, err
			}
		}
		for _, b := range p.Bundles {
			blob, err := renderBundle(cat, b, imageFor(b))
			if err == nil && objects {
				err = addObjects(cat, b, blob)
			}
			if err != nil {
				return nil, err
			}
			if err := enc.Encode(blob); err != nil {
				return nil, err
			}
		}
		if d := catalog.DeprecationsOf(p); d != nil {
			if err := enc.Encode(d); err != nil {
				return nil, err
			}
		}
		out[CatalogFile(p.Name)] = buf.Bytes()
	}
	return out, nil
}

func renderBundle(cat *catalog.Catalog, b *catalog.Bundle, image string) (*catalog.FBCBundle, error) {
	if image == "" {
		return nil, fmt.Errorf("bundle %s: no image reference", b.Ref())
	}
	blob := &catalog.FBCBundle{Schema: catalog.SchemaBundle, Name: b.CSVName, Package: b.Package, Image: image}
	add := func(typ string, v any) {
		blob.Properties = append(blob.Properties, catalog.FBCProperty{Type: typ, Value: v})
	}
	add(catalog.PropPackage, packageProp{PackageName: b.Package, Version: b.Version.String()})
	for _, c := range b.OwnedCRDs {
		add(catalog.PropGVK, gvkProp{Group: c.Group, Kind: c.Kind, Version: c.Version})
	}
	for _, d := range b.Dependencies {
		blob.Properties = append(blob.Properties, d.FBCProperty())
	}
	for _, p := range b.Properties {
		add(p.Type, p.Value)
	}
	meta, related, err := csvMetadataOf(cat, b)
	if err != nil {
		return nil, err
	}
	add(catalog.PropCSVMetadata, meta)
	blob.RelatedImages = related
	return blob, nil
}

// addObjects adds each manifest of b (its CSV, CRDs and other objects) to its blob as an
// olm.bundle.object property.
func addObjects(cat *catalog.Catalog, b *catalog.Bundle, blob *catalog.FBCBundle) error {
	bc, err := cat.Content(b)
	if err != nil {
		return err
	}
	csv := bc.CSV.DeepCopy()
	csv.APIVersion, csv.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.ClusterServiceVersionKind
	objects := []any{csv}
	for _, o := range bc.CRDs {
		objects = append(objects, o)
	}
	for _, o := range bc.Objects {
		objects = append(objects, o)
	}
	for _, o := range objects {
		data, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", b.Ref(), err)
		}
		blob.Properties = append(blob.Properties, catalog.FBCProperty{Type: "olm.bundle.object", Value: map[string]string{"data": base64.StdEncoding.EncodeToString(data)}})
	}
	return nil
}

// csvMetadataOf reads the olm.csv.metadata of a bundle and its related images
// (spec.relatedImages, each image once, in order) from its CSV. A File-Based Catalog
// bundle that is only an image reference has no CSV to read: its metadata is rebuilt from
// what the index holds.
func csvMetadataOf(cat *catalog.Catalog, b *catalog.Bundle) (*csvMetadata, []catalog.RelatedImage, error) {
	bc, err := cat.Content(b)
	if errors.Is(err, catalog.ErrNoContent) {
		return indexMetadata(b), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	csv := bc.CSV
	s := csv.Spec
	m := &csvMetadata{
		Annotations:    csv.Annotations,
		Description:    s.Description,
		DisplayName:    s.DisplayName,
		InstallModes:   b.InstallModes,
		Keywords:       s.Keywords,
		Labels:         csv.Labels,
		Links:          s.Links,
		Maintainers:    s.Maintainers,
		Maturity:       s.Maturity,
		MinKubeVersion: b.MinKubeVersion,
		NativeAPIs:     s.NativeAPIs,
	}
	if len(s.APIServiceDefinitions.Owned) > 0 || len(s.APIServiceDefinitions.Required) > 0 {
		m.APIServiceDefinitions = &s.APIServiceDefinitions
	}
	if crds := s.CustomResourceDefinitions; len(crds.Owned) > 0 || len(crds.Required) > 0 {
		m.CRDDescriptions = &crds
	}
	if s.Provider.Name != "" || s.Provider.URL != "" {
		m.Provider = &s.Provider
	}
	var related []catalog.RelatedImage
	for _, ri := range s.RelatedImages {
		if ri.Image == "" || slices.ContainsFunc(related, func(x catalog.RelatedImage) bool { return x.Image == ri.Image }) {
			continue
		}
		related = append(related, catalog.RelatedImage{Name: ri.Name, Image: ri.Image})
	}
	return m, related, nil
}

// indexMetadata is the olm.csv.metadata the index of a bundle without content allows.
func indexMetadata(b *catalog.Bundle) *csvMetadata {
	m := &csvMetadata{InstallModes: b.InstallModes, MinKubeVersion: b.MinKubeVersion}
	if !b.SkipRange.IsZero() {
		m.Annotations = map[string]string{"olm.skipRange": b.SkipRange.Raw}
	}
	var crds v1alpha1.CustomResourceDefinitions
	for _, c := range b.OwnedCRDs {
		if c.Plural != "" {
			crds.Owned = append(crds.Owned, v1alpha1.CRDDescription{Name: c.Name(), Version: c.Version, Kind: c.Kind})
		}
	}
	for _, c := range b.RequiredCRDs {
		crds.Required = append(crds.Required, v1alpha1.CRDDescription{Name: c.Name(), Version: c.Version, Kind: c.Kind})
	}
	if len(crds.Owned) > 0 || len(crds.Required) > 0 {
		m.CRDDescriptions = &crds
	}
	return m
}
