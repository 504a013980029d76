package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FromIndex builds a catalog from the index of another one, as a catalog server sends it
// (Catalog.Digest, Packages and Bundles, encoded as JSON): the links JSON does not carry
// (Package.Bundles, ChannelEntry.Bundle) are rebuilt, then every lookup. The index comes
// from the network, so it is checked and refused whole, with an error naming the package
// or bundle at fault, when a name is empty or escapes, a package or CSV name appears
// twice, a digest is invalid, a bundle names a package the index lacks, a channel entry
// or head names no bundle of its package, or the digest does not match the content.
//
// files returns a bundle's files; Files and Content go through it and check the files
// against the bundle's digest. The arguments are not modified. The result has no Root,
// Rejections or Warnings: those belong to the catalog the index was made from.
func FromIndex(digest string, packages []*Package, bundles []*Bundle, files func(*Bundle) ([]File, error)) (*Catalog, error) {
	if files == nil {
		return nil, errors.New("building a catalog from an index: no source for bundle files")
	}
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("index digest %q is invalid: want sha256:<64 lower-case hex digits>", digest)
	}
	pkgs, err := indexPackages(packages)
	if err != nil {
		return nil, err
	}
	byCSV, err := indexBundles(bundles, pkgs)
	if err != nil {
		return nil, err
	}
	sorted := make([]*Package, 0, len(pkgs))
	for _, name := range slices.Sorted(maps.Keys(pkgs)) {
		p := pkgs[name]
		if err := linkPackage(p, byCSV); err != nil {
			return nil, err
		}
		sorted = append(sorted, p)
	}
	cat := &Catalog{Digest: digest, files: files}
	cat.setPackages(sorted)
	if got := catalogDigest(cat.packages); got != digest {
		return nil, fmt.Errorf("index digest %s does not match the packages and bundles it came with (they hash to %s)", digest, got)
	}
	return cat, nil
}

// indexPackages copies the packages, channels and entries, so linking them leaves the
// caller's values alone.
func indexPackages(packages []*Package) (map[string]*Package, error) {
	pkgs := make(map[string]*Package, len(packages))
	for i, p := range packages {
		if p == nil {
			return nil, fmt.Errorf("index packages[%d] is null", i)
		}
		if err := checkName("name", p.Name); err != nil {
			return nil, fmt.Errorf("index packages[%d]: %w", i, err)
		}
		if pkgs[p.Name] != nil {
			return nil, fmt.Errorf("package %q: listed twice in the index", p.Name)
		}
		cp := *p
		cp.Bundles = nil
		cp.Channels = make([]*Channel, len(p.Channels))
		for j, c := range p.Channels {
			if c == nil {
				return nil, fmt.Errorf("package %q: channels[%d] is null", p.Name, j)
			}
			cc := *c
			cc.Entries = slices.Clone(c.Entries)
			cp.Channels[j] = &cc
		}
		pkgs[p.Name] = &cp
	}
	return pkgs, nil
}

// indexBundles copies the bundles into their packages and indexes them by CSV name.
func indexBundles(bundles []*Bundle, pkgs map[string]*Package) (map[string]*Bundle, error) {
	byCSV := make(map[string]*Bundle, len(bundles))
	for i, b := range bundles {
		if b == nil {
			return nil, fmt.Errorf("index bundles[%d] is null", i)
		}
		if err := checkName("csvName", b.CSVName); err != nil {
			return nil, fmt.Errorf("index bundles[%d] of package %q: %w", i, b.Package, err)
		}
		if !ValidDigest(b.Digest) {
			return nil, fmt.Errorf("bundle %s: invalid digest %q: want sha256:<64 lower-case hex digits>", b.Ref(), b.Digest)
		}
		p := pkgs[b.Package]
		if p == nil {
			return nil, fmt.Errorf("bundle %s: package %q is not in the index", b.Ref(), b.Package)
		}
		if prev := byCSV[b.CSVName]; prev != nil {
			return nil, fmt.Errorf("duplicate CSV name %q: bundle %s and bundle %s", b.CSVName, prev.Ref(), b.Ref())
		}
		cb := *b
		byCSV[b.CSVName] = &cb
		p.Bundles = append(p.Bundles, &cb)
	}
	return byCSV, nil
}

// linkPackage orders a package's bundles as Load does and points each channel entry at
// its bundle.
func linkPackage(p *Package, byCSV map[string]*Bundle) error {
	if len(p.Bundles) == 0 {
		return fmt.Errorf("package %q: no bundle of the index belongs to it", p.Name)
	}
	slices.SortFunc(p.Bundles, func(x, y *Bundle) int {
		return cmp.Or(x.Version.Compare(y.Version), strings.Compare(x.CSVName, y.CSVName))
	})
	seen := map[string]bool{}
	for _, c := range p.Channels {
		if err := checkName("name", c.Name); err != nil {
			return fmt.Errorf("package %q: channel: %w", p.Name, err)
		}
		if seen[c.Name] {
			return fmt.Errorf("package %q: channel %q is listed twice", p.Name, c.Name)
		}
		seen[c.Name] = true
		for i, e := range c.Entries {
			b := byCSV[e.Name]
			if b == nil || b.Package != p.Name {
				return fmt.Errorf("package %q: channel %q: entries[%d] %q names no bundle of the package", p.Name, c.Name, i, e.Name)
			}
			c.Entries[i].Bundle = b
		}
		if _, ok := c.Entry(c.Head); !ok {
			return fmt.Errorf("package %q: channel %q: head %q is not an entry of the channel", p.Name, c.Name, c.Head)
		}
	}
	if p.DefaultChannel != "" && p.Channel(p.DefaultChannel) == nil {
		return fmt.Errorf("package %q: default channel %q is not a channel of the package", p.Name, p.DefaultChannel)
	}
	return nil
}
