package catalog

// The File-Based Catalog blobs as this project writes them: imagecatalog's renderer (a
// catalog image's configs, `opm render`'s shape) and grpcregistry (a registry server's
// answers written to disk) share them, so a field opm adds or renames is changed once.
// The loader decodes into its own fbcBlob, which keeps what it needs of all three.

import "github.com/operator-framework/api/pkg/constraints"

// FBCPackage is an olm.package blob.
type FBCPackage struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel,omitempty"`
}

// FBCChannel is an olm.channel blob.
type FBCChannel struct {
	Schema  string     `json:"schema"`
	Name    string     `json:"name"`
	Package string     `json:"package"`
	Entries []FBCEntry `json:"entries"`
}

// FBCEntry is one entry of an olm.channel blob.
type FBCEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// FBCBundle is an olm.bundle blob. Image is left out when empty: a bundle whose
// manifests are all in its olm.bundle.object properties needs none, and its digest (over
// the blob) must not change with how an empty image was written.
type FBCBundle struct {
	Schema        string         `json:"schema"`
	Name          string         `json:"name"`
	Package       string         `json:"package"`
	Image         string         `json:"image,omitempty"`
	Properties    []FBCProperty  `json:"properties"`
	RelatedImages []RelatedImage `json:"relatedImages,omitempty"`
}

// FBCProperty is one property of an olm.bundle blob; Value is anything that marshals to
// the property's JSON (a json.RawMessage as it came).
type FBCProperty struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// PropBundleObject is the property holding one of a bundle's manifests, base64-encoded.
const PropBundleObject = propBundleObject

// FBCDeprecations is an olm.deprecations blob.
type FBCDeprecations struct {
	Schema  string                `json:"schema"`
	Package string                `json:"package"`
	Entries []FBCDeprecationEntry `json:"entries"`
}

// FBCDeprecationEntry deprecates the package, a channel or a bundle, with a message.
type FBCDeprecationEntry struct {
	Reference FBCReference `json:"reference"`
	Message   string       `json:"message"`
}

// FBCReference names what a deprecation entry deprecates.
type FBCReference struct {
	Schema string `json:"schema"`
	Name   string `json:"name,omitempty"`
}

// DeprecationsOf is the olm.deprecations blob that says what of p its catalog deprecates,
// or nil when nothing is: rendering a catalog again (a catalog image, a mirror) keeps them.
func DeprecationsOf(p *Package) *FBCDeprecations {
	d := &FBCDeprecations{Schema: SchemaDeprecations, Package: p.Name}
	if p.Deprecation != "" {
		d.Entries = append(d.Entries, FBCDeprecationEntry{Reference: FBCReference{Schema: SchemaPackage}, Message: p.Deprecation})
	}
	for _, c := range p.Channels {
		if c.Deprecation != "" {
			d.Entries = append(d.Entries, FBCDeprecationEntry{Reference: FBCReference{Schema: SchemaChannel, Name: c.Name}, Message: c.Deprecation})
		}
	}
	for _, b := range p.Bundles {
		if b.Deprecation != "" {
			d.Entries = append(d.Entries, FBCDeprecationEntry{Reference: FBCReference{Schema: SchemaBundle, Name: b.CSVName}, Message: b.Deprecation})
		}
	}
	if len(d.Entries) == 0 {
		return nil
	}
	return d
}

// FBCProperty is the property a File-Based Catalog states d with, which the loader reads
// back as d: olm.package.required and olm.gvk.required, or an olm.constraint where the
// author's failureMessage must be kept, olm.label.required, and olm.constraint.
func (d Dependency) FBCProperty() FBCProperty {
	switch d.Type {
	case DependencyPackage:
		if d.Message != "" {
			return FBCProperty{Type: DependencyConstraint, Value: constraints.Constraint{FailureMessage: d.Message,
				Package: &constraints.PackageConstraint{PackageName: d.Package, VersionRange: d.Versions.Raw}}}
		}
		return FBCProperty{Type: PropPackageRequired, Value: map[string]string{"packageName": d.Package, "versionRange": d.Versions.Raw}}
	case DependencyGVK:
		if d.Message != "" {
			return FBCProperty{Type: DependencyConstraint, Value: constraints.Constraint{FailureMessage: d.Message,
				GVK: &constraints.GVKConstraint{Group: d.GVK.Group, Version: d.GVK.Version, Kind: d.GVK.Kind}}}
		}
		return FBCProperty{Type: PropGVKRequired, Value: d.GVK}
	case DependencyLabel:
		return FBCProperty{Type: PropLabelRequired, Value: map[string]string{"label": d.Label}}
	}
	return FBCProperty{Type: DependencyConstraint, Value: d.Constraint}
}
