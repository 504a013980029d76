package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/constraints"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// Layout names the on-disk format a package or bundle was read from.
type Layout string

const (
	// LayoutFlat is the original operator-manager format: <package>/<version>/ folders
	// holding a CSV and CRDs, no package file.
	LayoutFlat Layout = "flat"
	// LayoutPackageManifest is <package>/<package>.package.yaml plus version folders.
	LayoutPackageManifest Layout = "package-manifest"
	// LayoutBundle is <package>/<version>/{manifests,metadata}/ (registry+v1 bundles).
	LayoutBundle Layout = "bundle"
	// LayoutFBC is a File-Based Catalog (olm.package / olm.channel / olm.bundle blobs).
	LayoutFBC Layout = "fbc"
)

// FlatChannel is the single channel given to packages in the flat layout, which has no
// channel metadata of its own. "stable" rather than "default" because it is the name
// OperatorHub packages most often use for their default channel, so a Subscription written
// against either kind of catalog tends to keep working.
const FlatChannel = "stable"

// Dependency types understood by the loader (OLM's names).
const (
	DependencyPackage = "olm.package"
	DependencyGVK     = "olm.gvk"
)

// GVK identifies a Kubernetes API kind.
type GVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (g GVK) String() string {
	if g.Group == "" {
		return g.Version + "/" + g.Kind
	}
	return g.Group + "/" + g.Version + "/" + g.Kind
}

// Meets says whether an API g provides is the one wanted: the same group and kind, and
// the same version unless want names none.
func (g GVK) Meets(want GVK) bool {
	return g.Group == want.Group && g.Kind == want.Kind && (want.Version == "" || g.Version == want.Version)
}

// Text writes g as kubectl names a resource version (Kind.version.group), for messages.
func (g GVK) Text() string {
	var b strings.Builder
	b.WriteString(g.Kind)
	if g.Version != "" {
		b.WriteString(".")
		b.WriteString(g.Version)
	}
	if g.Group != "" {
		b.WriteString(".")
		b.WriteString(g.Group)
	}
	return b.String()
}

// CRDRef names a CRD a bundle owns or requires, as listed in its CSV
// (spec.customresourcedefinitions). Plural is empty when the source does not say
// (an olm.gvk property of a File-Based Catalog without the CRD itself).
type CRDRef struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Plural  string `json:"plural,omitempty"`
}

// GVK returns the group, version and kind of the reference.
func (c CRDRef) GVK() GVK { return GVK{Group: c.Group, Version: c.Version, Kind: c.Kind} }

// Name returns the CRD's object name, <plural>.<group>.
func (c CRDRef) Name() string { return c.Plural + "." + c.Group }

// VersionRange is a semver range kept with its source text, so it can be shown to people
// and serialised as written, and evaluated without re-parsing.
type VersionRange struct {
	Raw   string
	Range semver.Range
}

// ParseVersionRange parses a blang/semver range such as ">=0.9.0 <0.9.4".
func ParseVersionRange(s string) (VersionRange, error) {
	s = strings.TrimSpace(s)
	r, err := semver.ParseRange(s)
	if err != nil {
		return VersionRange{}, fmt.Errorf("invalid semver range %q: %w", s, err)
	}
	return VersionRange{Raw: s, Range: r}, nil
}

// Contains reports whether v is in the range; an empty range contains nothing.
func (r VersionRange) Contains(v semver.Version) bool {
	return r.Range != nil && r.Range(v)
}

// IsZero reports whether no range was given.
func (r VersionRange) IsZero() bool { return r.Raw == "" }

func (r VersionRange) String() string { return r.Raw }

// MarshalJSON writes the range as its source text.
func (r VersionRange) MarshalJSON() ([]byte, error) { return json.Marshal(r.Raw) }

// UnmarshalJSON reads a range written by MarshalJSON, parsing it again.
func (r *VersionRange) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if s == "" {
		*r = VersionRange{}
		return nil
	}
	parsed, err := ParseVersionRange(s)
	if err != nil {
		return err
	}
	*r = parsed
	return nil
}

// Dependency is one requirement of a bundle on something another bundle provides.
type Dependency struct {
	// Type is DependencyPackage, DependencyGVK, DependencyLabel or DependencyConstraint.
	Type string `json:"type"`
	// Package and Versions are set for olm.package.
	Package  string       `json:"package,omitempty"`
	Versions VersionRange `json:"versions,omitzero"`
	// GVK is set for olm.gvk.
	GVK GVK `json:"gvk,omitzero"`
	// Message is the failureMessage of an olm.constraint read as olm.package or olm.gvk
	// (see parseConstraint), for resolution messages.
	Message string `json:"message,omitempty"`
	// Label is set for olm.label.
	Label string `json:"label,omitempty"`
	// Constraint is set for olm.constraint: checked when loaded (see parseConstraint),
	// in OLM's own type so it is served and rendered as OLM writes it.
	Constraint *constraints.Constraint `json:"constraint,omitempty"`
}

// String writes the dependency as a person reads it in a message: the author's
// failureMessage when there is one, then the dependency itself.
func (d Dependency) String() string {
	s := d.statement()
	if m := d.message(); m != "" {
		return strconv.Quote(m) + " (" + s + ")"
	}
	return s
}

func (d Dependency) statement() string {
	switch d.Type {
	case DependencyPackage:
		return fmt.Sprintf("%s %s %s", d.Type, d.Package, d.Versions.Raw)
	case DependencyGVK:
		return fmt.Sprintf("%s %s", d.Type, d.GVK)
	case DependencyLabel:
		return fmt.Sprintf("%s %q", DependencyLabel, d.Label)
	case DependencyConstraint:
		return DependencyConstraint + " " + constraintText(d.Constraint)
	}
	return d.Type
}

func (d Dependency) message() string {
	if d.Constraint != nil {
		return strings.TrimSpace(d.Constraint.FailureMessage)
	}
	return d.Message
}

// Bundle is the metadata of one operator version: everything the index needs, none of the
// manifests' content (see Catalog.Content for that).
type Bundle struct {
	Package  string         `json:"package"`
	CSVName  string         `json:"csvName"`
	Version  semver.Version `json:"version"`
	Channels []string       `json:"channels,omitempty"`
	// Deprecation is the catalog's message when it deprecates this version.
	Deprecation string `json:"deprecation,omitempty"`
	// Replaces, Skips and SkipRange come from the CSV (spec.replaces, spec.skips and the
	// olm.skipRange annotation). The upgrade graph itself lives in Channel entries,
	// because a File-Based Catalog can give a bundle different edges per channel.
	Replaces       string                 `json:"replaces,omitempty"`
	Skips          []string               `json:"skips,omitempty"`
	SkipRange      VersionRange           `json:"skipRange,omitzero"`
	MinKubeVersion string                 `json:"minKubeVersion,omitempty"`
	InstallModes   []v1alpha1.InstallMode `json:"installModes,omitempty"`
	OwnedCRDs      []CRDRef               `json:"ownedCRDs,omitempty"`
	RequiredCRDs   []CRDRef               `json:"requiredCRDs,omitempty"`
	// OwnedAPIServices are the APIServices the operator serves ("<version>.<group>", from
	// spec.apiservicedefinitions.owned): cluster-scoped, one per cluster, so an
	// installation of the package owning them is the only one.
	OwnedAPIServices []string     `json:"ownedAPIServices,omitempty"`
	Dependencies     []Dependency `json:"dependencies,omitempty"`
	// Properties are the bundle's properties a constraint may read beyond those modelled
	// above (olm.label, a catalog's own types); see keptProperty.
	Properties []Property `json:"properties,omitempty"`
	// Image is the bundle image of a File-Based Catalog entry, if any.
	Image string `json:"image,omitempty"`
	// RelatedImages are the images the operator runs or deploys, as the catalog entry or
	// the CSV's spec.relatedImages list them: what a mirror for a disconnected cluster
	// must carry.
	RelatedImages []RelatedImage `json:"relatedImages,omitempty"`
	// Layout is the layout of the package the bundle belongs to.
	Layout Layout `json:"layout"`
	// RelPath is the bundle's directory relative to the catalog root, with forward
	// slashes; for a File-Based Catalog bundle it is the catalog file holding it.
	RelPath string `json:"relPath"`
	// Files are the bundle's files relative to RelPath, sorted. For a File-Based Catalog
	// bundle they are virtual: "olm.bundle.json" (the blob) and "objects/NNN.json"
	// (each olm.bundle.object).
	Files []string `json:"files"`
	// Digest is "sha256:<hex>" over Files and their bytes; see DigestFiles.
	Digest string `json:"digest"`
}

// RelatedImage is one image a bundle uses.
type RelatedImage struct {
	Name  string `json:"name,omitempty"`
	Image string `json:"image"`
}

// setAPIServices records the APIServices a CSV's spec.apiservicedefinitions.owned serves.
func (b *Bundle) setAPIServices(defs v1alpha1.APIServiceDefinitions) {
	b.OwnedAPIServices = nil
	for _, d := range defs.Owned {
		name := d.Version + "." + d.Group
		if d.Group != "" && d.Version != "" && !slices.Contains(b.OwnedAPIServices, name) {
			b.OwnedAPIServices = append(b.OwnedAPIServices, name)
		}
	}
}

// addRelatedImages adds images not listed yet.
func (b *Bundle) addRelatedImages(imgs []RelatedImage) {
	for _, ri := range imgs {
		if ri.Image == "" || slices.ContainsFunc(b.RelatedImages, func(x RelatedImage) bool { return x.Image == ri.Image }) {
			continue
		}
		b.RelatedImages = append(b.RelatedImages, ri)
	}
}

// Ref returns a short human name for the bundle, for messages.
func (b *Bundle) Ref() string { return b.Package + "/" + b.CSVName }

// Provides reports whether the bundle owns a CRD of the given group and kind, in any
// version when gvk.Version is empty.
func (b *Bundle) Provides(gvk GVK) bool {
	for _, c := range b.OwnedCRDs {
		if c.GVK().Meets(gvk) {
			return true
		}
	}
	return false
}

// Package is one operator package and its channels.
type Package struct {
	Name           string     `json:"name"`
	DefaultChannel string     `json:"defaultChannel"`
	Layout         Layout     `json:"layout"`
	RelPath        string     `json:"relPath"`
	Channels       []*Channel `json:"channels"`
	// Deprecation is the catalog's message when it deprecates the whole package (a
	// File-Based Catalog's olm.deprecations); empty when it does not.
	Deprecation string `json:"deprecation,omitempty"`
	// Bundles are all bundles of the package, by ascending version.
	Bundles []*Bundle `json:"-"`
}

// Channel returns the named channel, or nil.
func (p *Package) Channel(name string) *Channel {
	for _, c := range p.Channels {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Channel is an upgrade stream of a package.
type Channel struct {
	Name string `json:"name"`
	// Head is the CSV name of the newest bundle of the channel.
	Head string `json:"head"`
	// Deprecation is the catalog's message when it deprecates the channel.
	Deprecation string `json:"deprecation,omitempty"`
	// Entries are the channel's members, by descending version.
	Entries []ChannelEntry `json:"entries"`
}

// ChannelEntry is one bundle's membership in a channel, with the edges leading to it.
type ChannelEntry struct {
	Name      string       `json:"name"`
	Replaces  string       `json:"replaces,omitempty"`
	Skips     []string     `json:"skips,omitempty"`
	SkipRange VersionRange `json:"skipRange,omitzero"`
	Bundle    *Bundle      `json:"-"`
}

// EdgeKind says why an upgrade edge exists.
type EdgeKind string

const (
	EdgeReplaces  EdgeKind = "replaces"
	EdgeSkips     EdgeKind = "skips"
	EdgeSkipRange EdgeKind = "skipRange"
)

// Edge is an allowed upgrade From one CSV To another within a channel.
type Edge struct {
	From string   `json:"from"`
	To   string   `json:"to"`
	Kind EdgeKind `json:"kind"`
}

// Rejection names a file or directory the loader could not use and why. A rejected
// bundle is left out alone; the rest of the catalog loads.
type Rejection struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (r Rejection) String() string { return r.Path + ": " + r.Reason }
