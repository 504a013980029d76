package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"
)

// File-Based Catalog schemas and property types (operator-registry's names), shared by
// the loader and imagecatalog's renderer.
const (
	SchemaPackage = "olm.package"
	SchemaChannel = "olm.channel"
	SchemaBundle  = "olm.bundle"
	// SchemaDeprecations holds a package's deprecations: of the package, of channels,
	// of bundles, each with a message (OLM 0.27 and opm's format).
	SchemaDeprecations = "olm.deprecations"

	PropPackage         = "olm.package"
	PropGVK             = "olm.gvk"
	PropPackageRequired = "olm.package.required"
	PropGVKRequired     = "olm.gvk.required"
	propBundleObject    = "olm.bundle.object"
	PropCSVMetadata     = "olm.csv.metadata"

	// fbcBlobFile is the virtual file holding an olm.bundle blob in a bundle's Files.
	fbcBlobFile = "olm.bundle.json"
)

// fbcBlob is one document of a File-Based Catalog. Only the fields of the three olm
// schemas the loader uses are decoded; other schemas are allowed and ignored, as in opm.
type fbcBlob struct {
	Schema         string         `json:"schema"`
	Name           string         `json:"name"`
	Package        string         `json:"package"`
	DefaultChannel string         `json:"defaultChannel"`
	Image          string         `json:"image"`
	Entries        []fbcEntry     `json:"entries"`
	Properties     []fbcProperty  `json:"properties"`
	RelatedImages  []RelatedImage `json:"relatedImages"`

	// deprecations are an olm.deprecations blob's entries.
	deprecations []fbcDeprecation

	// raw is the blob as canonical JSON (sorted keys), the same whether the file was
	// YAML or JSON, so a bundle's digest does not depend on the catalog's encoding.
	raw  []byte
	line int
}

type fbcEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

type fbcProperty struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// parseFBC decodes a File-Based Catalog stream (YAML documents or concatenated JSON). A
// broken document is returned as an error naming its line and the rest still decode, so
// one bad blob in a shared catalog file does not take every package with it.
func parseFBC(data []byte) (blobs []fbcBlob, errs []error) {
	for _, doc := range splitDocuments(data) {
		b, err := parseFBCBlob(doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("document at line %d: %w", doc.line, err))
			continue
		}
		if b.Schema != "" && !strings.HasPrefix(b.Schema, "olm.") {
			continue // a custom schema: allowed by the FBC format, not ours
		}
		blobs = append(blobs, b)
	}
	return blobs, errs
}

func parseFBCBlob(doc document) (fbcBlob, error) {
	var b fbcBlob
	raw, err := yamlToJSON(doc.data)
	if err != nil {
		return b, docLineErr(doc, err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, err
	}
	b.raw, b.line = raw, doc.line
	switch b.Schema {
	case "":
		return b, errors.New("schema is missing")
	case SchemaPackage:
		return b, checkName("name", b.Name)
	case SchemaChannel, SchemaBundle:
		if err := checkName("package", b.Package); err != nil {
			return b, err
		}
		return b, checkName("name", b.Name)
	case SchemaDeprecations:
		if err := checkName("package", b.Package); err != nil {
			return b, err
		}
		var d struct {
			Entries []fbcDeprecation `json:"entries"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return b, fmt.Errorf("entries: %w", err)
		}
		for i, e := range d.Entries {
			if err := e.check(); err != nil {
				return b, fmt.Errorf("entries[%d]: %w", i, err)
			}
		}
		b.deprecations = d.Entries
	}
	return b, nil
}

// fbcDeprecation is one entry of an olm.deprecations blob: what it deprecates (the
// package, a channel or a bundle, by name) and why.
type fbcDeprecation struct {
	Reference struct {
		Schema string `json:"schema"`
		Name   string `json:"name"`
	} `json:"reference"`
	Message string `json:"message"`
}

func (e fbcDeprecation) check() error {
	switch e.Reference.Schema {
	case SchemaPackage:
		if e.Reference.Name != "" {
			return fmt.Errorf("reference.name %q: a package reference names nothing (the blob's package is meant)", e.Reference.Name)
		}
	case SchemaChannel, SchemaBundle:
		if err := checkName("reference.name", e.Reference.Name); err != nil {
			return err
		}
	default:
		return fmt.Errorf("reference.schema %q: want %s, %s or %s", e.Reference.Schema, SchemaPackage, SchemaChannel, SchemaBundle)
	}
	if strings.TrimSpace(e.Message) == "" {
		return errors.New("message is empty: a deprecation says why, or what to use instead")
	}
	return nil
}

func yamlToJSON(doc []byte) (raw []byte, err error) {
	err = noPanic("converting YAML to JSON", func() error {
		raw, err = yaml.YAMLToJSON(doc)
		return err
	})
	return raw, err
}

// docLineErr rewrites a decoder's document-relative line numbers to the file's.
func docLineErr(doc document, err error) error {
	var fe *fileError
	if errors.As(docError("", doc, err), &fe) {
		return errors.New(fe.msg)
	}
	return err
}

// fbcObject is an olm.bundle.object: inline data, or a file referenced relative to the
// catalog file.
type fbcObject struct {
	Data []byte `json:"data"`
	Ref  string `json:"ref"`
}

// csvMetadata is the part of operator-registry's olm.csv.metadata property the index uses.
type csvMetadata struct {
	Annotations    map[string]string      `json:"annotations"`
	MinKubeVersion string                 `json:"minKubeVersion"`
	InstallModes   []v1alpha1.InstallMode `json:"installModes"`
	// crdDescriptions and apiServiceDefinitions are opm's names; the CSV's own
	// customresourcedefinitions is read too, as catalogs written by hand use it.
	CRDDescriptions           v1alpha1.CustomResourceDefinitions `json:"crdDescriptions"`
	CustomResourceDefinitions v1alpha1.CustomResourceDefinitions `json:"customresourcedefinitions"`
	APIServiceDefinitions     v1alpha1.APIServiceDefinitions     `json:"apiServiceDefinitions"`
}

// crds returns the CRD descriptions, by opm's name or the CSV's.
func (m *csvMetadata) crds() v1alpha1.CustomResourceDefinitions {
	if len(m.CRDDescriptions.Owned)+len(m.CRDDescriptions.Required) > 0 {
		return m.CRDDescriptions
	}
	return m.CustomResourceDefinitions
}

// fbcBundle is an olm.bundle turned into a Bundle, with the objects still to be read.
type fbcBundle struct {
	bundle  *Bundle
	objects []fbcObject
	csvMeta *csvMetadata
}

// bundleFromFBC reads the properties of an olm.bundle blob found in file (a slash path
// relative to the catalog root).
func bundleFromFBC(file string, blob fbcBlob) (*fbcBundle, error) {
	b := &Bundle{Package: blob.Package, CSVName: blob.Name, Image: blob.Image, Layout: LayoutFBC, RelPath: file}
	fb := &fbcBundle{bundle: b}
	b.addRelatedImages(blob.RelatedImages)
	var haveVersion bool
	for i, p := range blob.Properties {
		field := fmt.Sprintf("properties[%d] (%s)", i, p.Type)
		if err := fb.applyProperty(file, p, &haveVersion); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	if !haveVersion {
		return nil, fmt.Errorf("no %s property: the bundle's version is unknown", PropPackage)
	}
	if fb.csvMeta != nil {
		applyCSVMetadata(b, fb.csvMeta)
	}
	return fb, nil
}

func (fb *fbcBundle) applyProperty(file string, p fbcProperty, haveVersion *bool) error {
	b := fb.bundle
	switch p.Type {
	case PropPackage:
		var v struct {
			PackageName string `json:"packageName"`
			Version     string `json:"version"`
		}
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return err
		}
		if v.PackageName != b.Package {
			return fmt.Errorf("packageName %q differs from the bundle's package %q", v.PackageName, b.Package)
		}
		ver, err := semver.Parse(v.Version)
		if err != nil {
			return fmt.Errorf("version %q is not a semantic version: %w", v.Version, err)
		}
		b.Version, *haveVersion = ver, true
	case PropGVK, PropGVKRequired:
		var v GVK
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return err
		}
		dep, err := gvkDependency(v.Group, v.Version, v.Kind)
		if err != nil {
			return err
		}
		if p.Type == PropGVK {
			b.OwnedCRDs = append(b.OwnedCRDs, CRDRef{Group: dep.GVK.Group, Version: dep.GVK.Version, Kind: dep.GVK.Kind})
		} else {
			b.Dependencies = append(b.Dependencies, dep)
		}
	case PropPackageRequired:
		var v struct {
			PackageName  string `json:"packageName"`
			VersionRange string `json:"versionRange"`
		}
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return err
		}
		dep, err := packageDependency(v.PackageName, v.VersionRange)
		if err != nil {
			return err
		}
		b.Dependencies = append(b.Dependencies, dep)
	case propBundleObject:
		var o fbcObject
		if err := json.Unmarshal(p.Value, &o); err != nil {
			return err
		}
		if o.Ref != "" {
			ref := path.Join(path.Dir(file), o.Ref)
			if path.IsAbs(o.Ref) || escapes(ref) {
				return fmt.Errorf("ref %q: path escape: a referenced file must be inside the catalog root", o.Ref)
			}
			o.Ref = ref
		} else if len(o.Data) == 0 {
			return errors.New("neither data nor ref is set")
		}
		fb.objects = append(fb.objects, o)
	case PropCSVMetadata:
		var m csvMetadata
		if err := json.Unmarshal(p.Value, &m); err != nil {
			return err
		}
		fb.csvMeta = &m
	case DependencyConstraint:
		dep, err := parseConstraint(p.Value)
		if err != nil {
			return err
		}
		b.Dependencies = append(b.Dependencies, dep)
	case PropLabelRequired:
		dep, err := labelDependency(p.Value)
		if err != nil {
			return err
		}
		b.Dependencies = append(b.Dependencies, dep)
	default:
		if keptProperty(p.Type) {
			if p.Type == PropLabel {
				if _, err := labelDependency(p.Value); err != nil {
					return err
				}
			}
			b.Properties = append(b.Properties, Property{Type: p.Type, Value: compactJSON(p.Value)})
		}
	}
	return nil
}

// compactJSON returns v without insignificant space (as it came when it cannot be
// compacted, which the decoder that produced it rules out).
func compactJSON(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// applyCSVMetadata fills what the olm.csv.metadata property says and the properties did
// not. A CSV among the bundle's objects, applied later, wins over both.
func applyCSVMetadata(b *Bundle, m *csvMetadata) {
	b.MinKubeVersion = strings.TrimSpace(m.MinKubeVersion)
	b.InstallModes = m.InstallModes
	b.setAPIServices(m.APIServiceDefinitions)
	if sr := m.Annotations[skipRangeAnnotation]; sr != "" {
		if r, err := ParseVersionRange(sr); err == nil {
			b.SkipRange = r
		}
	}
	if refs, err := crdRefs("required", m.crds().Required); err == nil {
		b.RequiredCRDs = refs
	}
	// olm.gvk carries no plural; fill it from the owned CRD descriptions.
	if refs, err := crdRefs("owned", m.crds().Owned); err == nil {
		for i := range b.OwnedCRDs {
			for _, r := range refs {
				if r.GVK() == b.OwnedCRDs[i].GVK() {
					b.OwnedCRDs[i].Plural = r.Plural
				}
			}
		}
	}
}

// objectFileName is the name of the i-th olm.bundle.object among a bundle's Files.
func objectFileName(i int, o fbcObject) string {
	ext := ".yaml"
	if o.Ref != "" && isManifestFile(o.Ref) {
		ext = path.Ext(o.Ref)
	}
	return fmt.Sprintf("objects/%03d%s", i, ext)
}
