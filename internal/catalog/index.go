package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
)

// ErrNotFound is wrapped by lookups that find no package, channel or bundle.
var ErrNotFound = errors.New("not found")

// setPackages fills the lookups from packages sorted by name, each holding its bundles
// by ascending version: the one place both Load and FromIndex build them.
func (c *Catalog) setPackages(pkgs []*Package) {
	c.packages = pkgs
	c.pkgByName = make(map[string]*Package, len(pkgs))
	c.byCSV = map[string]*Bundle{}
	c.byDigest = map[string]*Bundle{}
	c.byGVK = map[GVK][]*Bundle{}
	c.bundles = nil
	for _, p := range pkgs {
		c.pkgByName[p.Name] = p
		for _, b := range p.Bundles {
			c.bundles = append(c.bundles, b)
			c.byCSV[b.CSVName] = b
			if _, dup := c.byDigest[b.Digest]; !dup {
				c.byDigest[b.Digest] = b
			}
			for _, crd := range b.OwnedCRDs {
				g := crd.GVK()
				c.byGVK[g] = append(c.byGVK[g], b)
				if any := (GVK{Group: g.Group, Kind: g.Kind}); !slices.Contains(c.byGVK[any], b) {
					c.byGVK[any] = append(c.byGVK[any], b)
				}
			}
		}
	}
}

// Packages returns all packages sorted by name. The slice is shared; do not modify it.
func (c *Catalog) Packages() []*Package { return c.packages }

// Package returns the named package, or nil.
func (c *Catalog) Package(name string) *Package { return c.pkgByName[name] }

// Bundles returns all bundles, by package name and then ascending version.
func (c *Catalog) Bundles() []*Bundle { return c.bundles }

// BundleByCSV returns the bundle whose CSV has the given metadata.name, or nil.
func (c *Catalog) BundleByCSV(name string) *Bundle { return c.byCSV[name] }

// BundleByDigest returns a bundle with the given content digest, or nil.
func (c *Catalog) BundleByDigest(digest string) *Bundle { return c.byDigest[digest] }

// Bundle returns the bundle of a package with the given version, or nil. Versions are
// compared as semver (build metadata ignored); if several bundles share the version (a
// warning at load), the first by CSV name is returned.
func (c *Catalog) Bundle(pkg string, v semver.Version) *Bundle {
	p := c.pkgByName[pkg]
	if p == nil {
		return nil
	}
	i, found := slices.BinarySearchFunc(p.Bundles, v, func(b *Bundle, v semver.Version) int { return b.Version.Compare(v) })
	if !found {
		return nil
	}
	return p.Bundles[i]
}

// BundleByRef finds a bundle by the names a Subscription's startingCSV may use: the CSV's
// own name ("etcdoperator.v0.9.4"), or "<package>.<version>" and "<package>.v<version>"
// ("prometheus.0.22.2", "etcd.v0.9.4") with a strict semver version.
func (c *Catalog) BundleByRef(ref string) (*Bundle, error) {
	if b := c.byCSV[ref]; b != nil {
		return b, nil
	}
	for i := 0; i < len(ref); i++ {
		if ref[i] != '.' || c.pkgByName[ref[:i]] == nil {
			continue
		}
		v, err := semver.Parse(strings.TrimPrefix(ref[i+1:], "v"))
		if err != nil {
			continue
		}
		if b := c.Bundle(ref[:i], v); b != nil {
			return b, nil
		}
		return nil, fmt.Errorf("bundle %q: package %q has no version %s: %w", ref, ref[:i], v, ErrNotFound)
	}
	return nil, fmt.Errorf("bundle %q: no CSV of that name and no <package>.<version> match: %w", ref, ErrNotFound)
}

// ProvidersOf returns the bundles owning a CRD of the given group and kind, in the given
// version or, when gvk.Version is empty, in any version; ordered by package and version.
func (c *Catalog) ProvidersOf(gvk GVK) []*Bundle { return c.byGVK[gvk] }

// channel finds a package's channel; an empty name means the default channel.
func (c *Catalog) channel(pkg, channel string) (*Package, *Channel, error) {
	p := c.pkgByName[pkg]
	if p == nil {
		return nil, nil, fmt.Errorf("package %q: %w", pkg, ErrNotFound)
	}
	if channel == "" {
		channel = p.DefaultChannel
	}
	ch := p.Channel(channel)
	if ch == nil {
		return p, nil, fmt.Errorf("channel %q of package %q: %w (channels: %s)", channel, pkg, ErrNotFound, channelNames(p))
	}
	return p, ch, nil
}

func channelNames(p *Package) string {
	names := make([]string, len(p.Channels))
	for i, ch := range p.Channels {
		names[i] = ch.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Head returns the newest bundle of a channel ("" means the package's default channel).
func (c *Catalog) Head(pkg, channel string) (*Bundle, error) {
	_, ch, err := c.channel(pkg, channel)
	if err != nil {
		return nil, err
	}
	e, _ := ch.Entry(ch.Head)
	return e.Bundle, nil
}

// Successors returns the bundles of a channel one upgrade away from the package's bundle
// at version from, newest first, per OLM: a bundle B follows A when B replaces A, skips A,
// or A's version is in B's skipRange. When the catalog has no bundle at that version (a
// cluster may run one the catalog has pruned), only skipRange edges can match.
func (c *Catalog) Successors(pkg, channel string, from semver.Version) ([]*Bundle, error) {
	_, ch, err := c.channel(pkg, channel)
	if err != nil {
		return nil, err
	}
	a := c.Bundle(pkg, from)
	if a == nil {
		a = &Bundle{Package: pkg, Version: from}
	}
	return successors(ch, a), nil
}

// SuccessorsOf is Successors for a bundle known by CSV name, which also works when a
// package has several bundles of one version, or none at all in the catalog any more.
func (c *Catalog) SuccessorsOf(pkg, channel, csvName string, version semver.Version) ([]*Bundle, error) {
	_, ch, err := c.channel(pkg, channel)
	if err != nil {
		return nil, err
	}
	return successors(ch, &Bundle{Package: pkg, CSVName: csvName, Version: version}), nil
}
