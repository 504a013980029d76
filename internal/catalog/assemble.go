package catalog

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// pkgBuild gathers one package's parts before its channels are built.
type pkgBuild struct {
	pkg         *Package
	dir         *pkgDir // nil for a File-Based Catalog package
	bundles     []*Bundle
	annotations map[*Bundle]*bundleAnnotations
	fbcPackage  *fbcBlob
	fbcFile     string
	fbcChannels []fbcBlob
	// deprecations is the package's olm.deprecations blob, with the file it is in.
	deprecations     *fbcBlob
	deprecationsFile string
}

type assembler struct {
	cat   *Catalog
	pkgs  map[string]*pkgBuild
	order []string
}

func (a *assembler) reject(at, reason string) {
	a.cat.Rejections = append(a.cat.Rejections, Rejection{Path: at, Reason: reason})
}

func (a *assembler) warn(at, reason string) {
	a.cat.Warnings = append(a.cat.Warnings, Rejection{Path: at, Reason: reason})
}

// assemble turns what the workers read into the index: packages, channels, lookups and
// the catalog digest. It runs on one goroutine and visits inputs in path order, so the
// result, rejections included, does not depend on scheduling.
func assemble(p *plan, jobs []bundleDirJob, results []bundleResult, fbc []fbcFileResult) *Catalog {
	a := &assembler{cat: &Catalog{Rejections: p.rejections, Warnings: p.warnings}, pkgs: map[string]*pkgBuild{}}
	byDir := map[*pkgDir][]bundleResult{}
	for i, j := range jobs {
		byDir[j.pkg] = append(byDir[j.pkg], results[i])
	}
	for _, pd := range p.pkgs {
		a.addDirPackage(pd, byDir[pd])
	}
	a.addFBC(fbc)
	a.rejectDuplicateCSVs()
	for _, name := range a.order {
		a.buildChannels(a.pkgs[name])
		a.applyDeprecations(a.pkgs[name])
	}
	a.index()
	return a.cat
}

// claim registers a package name, refusing a second definition of it.
func (a *assembler) claim(name, at string, layout Layout) *pkgBuild {
	if prev, ok := a.pkgs[name]; ok {
		a.reject(at, fmt.Sprintf("package %q is already defined by %s", name, prev.pkg.RelPath))
		return nil
	}
	// The name is a label's value on every object an installation of it makes: one the API
	// server would refuse there is refused here, where the catalog's author sees it.
	if errs := validation.IsValidLabelValue(name); name == "" || len(errs) > 0 {
		why := "it is empty"
		if len(errs) > 0 {
			why = strings.Join(errs, "; ")
		}
		a.reject(at, fmt.Sprintf("package name %q cannot label what an installation makes: %s", name, why))
		return nil
	}
	pb := &pkgBuild{pkg: &Package{Name: name, Layout: layout, RelPath: at}, annotations: map[*Bundle]*bundleAnnotations{}}
	a.pkgs[name] = pb
	a.order = append(a.order, name)
	return pb
}

func (a *assembler) addDirPackage(pd *pkgDir, results []bundleResult) {
	var ok []bundleResult
	for _, r := range results {
		a.cat.Warnings = append(a.cat.Warnings, r.warnings...)
		if r.rejection != nil {
			a.cat.Rejections = append(a.cat.Rejections, *r.rejection)
			continue
		}
		ok = append(ok, r)
	}
	name := path.Base(pd.dir)
	switch pd.layout {
	case LayoutPackageManifest:
		name = pd.manifest.PackageName
	case LayoutBundle:
		name = a.bundlePackageName(pd, ok)
	}
	pb := a.claim(name, pd.dir, pd.layout)
	if pb == nil {
		return
	}
	pb.dir = pd
	for _, r := range ok {
		if r.annotations != nil && r.annotations.Package != name {
			a.reject(r.bundle.RelPath, fmt.Sprintf("metadata/annotations.yaml names package %q, but the other bundles of %s are package %q", r.annotations.Package, pd.dir, name))
			continue
		}
		if pd.layout == LayoutBundle && r.annotations == nil {
			reason := "metadata/annotations.yaml is missing: without a package file, a bundle names its package and channels there"
			if r.bundle.Layout != LayoutBundle {
				reason = fmt.Sprintf("no manifests/ directory, while the other version directories of %s are bundles", pd.dir)
			}
			a.reject(r.bundle.RelPath, reason)
			continue
		}
		r.bundle.Package, r.bundle.Layout = name, pd.layout
		pb.bundles = append(pb.bundles, r.bundle)
		pb.annotations[r.bundle] = r.annotations
	}
}

// bundlePackageName takes the package name of the bundle layout from the newest bundle's
// annotations (OLM also trusts the latest bundle), falling back to the directory name.
func (a *assembler) bundlePackageName(pd *pkgDir, results []bundleResult) string {
	var newest *bundleResult
	for i, r := range results {
		if r.annotations != nil && (newest == nil || r.bundle.Version.GT(newest.bundle.Version)) {
			newest = &results[i]
		}
	}
	if newest == nil {
		return path.Base(pd.dir)
	}
	return newest.annotations.Package
}

// addFBC adds the packages of all File-Based Catalog files first, then their channels
// and bundles, so a package may spread over several files in any order.
func (a *assembler) addFBC(results []fbcFileResult) {
	for _, f := range results {
		a.cat.Rejections = append(a.cat.Rejections, f.rejections...)
		for _, blob := range f.packages {
			if pb := a.claim(blob.Name, f.file, LayoutFBC); pb != nil {
				pb.fbcPackage, pb.fbcFile = &blob, f.file
			}
		}
	}
	for _, f := range results {
		for _, blob := range f.channels {
			if pb := a.fbcPackage(blob.Package, f.file, "olm.channel", blob.Name); pb != nil {
				pb.fbcChannels = append(pb.fbcChannels, blob)
			}
		}
		for _, b := range f.bundles {
			if pb := a.fbcPackage(b.Package, f.file, "olm.bundle", b.CSVName); pb != nil {
				pb.bundles = append(pb.bundles, b)
			}
		}
		for _, blob := range f.deprecations {
			pb := a.fbcPackage(blob.Package, f.file, SchemaDeprecations, blob.Package)
			switch {
			case pb == nil:
			case pb.deprecations != nil:
				a.reject(f.file, fmt.Sprintf("%s of package %q (line %d): a second one; %s has the first (a package has at most one)",
					SchemaDeprecations, blob.Package, blob.line, pb.deprecationsFile))
			default:
				pb.deprecations, pb.deprecationsFile = &blob, f.file
			}
		}
	}
}

// fbcPackage finds the File-Based Catalog package a blob belongs to.
func (a *assembler) fbcPackage(name, file, schema, blobName string) *pkgBuild {
	pb := a.pkgs[name]
	switch {
	case pb == nil:
		a.reject(file, fmt.Sprintf("%s %q: package %q has no olm.package blob", schema, blobName, name))
	case pb.pkg.Layout != LayoutFBC:
		a.reject(file, fmt.Sprintf("%s %q: package %q is already defined by %s", schema, blobName, name, pb.pkg.RelPath))
	default:
		return pb
	}
	return nil
}

// rejectDuplicateCSVs rejects every bundle whose CSV name another bundle also uses:
// lookups by CSV name and replaces edges would otherwise depend on load order.
func (a *assembler) rejectDuplicateCSVs() {
	holders := map[string][]*Bundle{}
	for _, name := range a.order {
		for _, b := range a.pkgs[name].bundles {
			holders[b.CSVName] = append(holders[b.CSVName], b)
		}
	}
	bad := map[*Bundle]bool{}
	for _, name := range slices.Sorted(maps.Keys(holders)) {
		hs := holders[name]
		if len(hs) < 2 {
			continue
		}
		paths := make([]string, len(hs))
		for i, b := range hs {
			paths[i] = b.RelPath
		}
		for _, b := range hs {
			bad[b] = true
			a.reject(b.RelPath, fmt.Sprintf("duplicate CSV name %q: declared by %s", name, strings.Join(paths, " and ")))
		}
	}
	if len(bad) == 0 {
		return
	}
	for _, pb := range a.pkgs {
		pb.bundles = slices.DeleteFunc(pb.bundles, func(b *Bundle) bool { return bad[b] })
	}
}

// index fills the lookups and the digest once all packages are built.
func (a *assembler) index() {
	var pkgs []*Package
	for _, name := range slices.Sorted(maps.Keys(a.pkgs)) {
		p := a.pkgs[name].pkg
		if len(p.Bundles) == 0 {
			// Every bundle was rejected (the rejections say why); an empty package
			// would only make a resolver fail later with a vaguer message.
			continue
		}
		pkgs = append(pkgs, p)
	}
	c := a.cat
	c.setPackages(pkgs)
	c.Digest = catalogDigest(c.packages)
	sortRejections(c.Rejections)
	sortRejections(c.Warnings)
}

func sortRejections(rs []Rejection) {
	slices.SortStableFunc(rs, func(a, b Rejection) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Reason, b.Reason))
	})
}

// applyDeprecations marks what a package's olm.deprecations blob deprecates. An entry
// naming a channel or bundle the package lacks is a warning: the rest of the package is
// sound, and the entry may be for a version already pruned from the catalog.
func (a *assembler) applyDeprecations(pb *pkgBuild) {
	if pb.deprecations == nil {
		return
	}
	p := pb.pkg
	for i, e := range pb.deprecations.deprecations {
		switch e.Reference.Schema {
		case SchemaPackage:
			p.Deprecation = e.Message
		case SchemaChannel:
			if c := p.Channel(e.Reference.Name); c != nil {
				c.Deprecation = e.Message
				continue
			}
			a.warn(pb.deprecationsFile, fmt.Sprintf("%s of package %q: entries[%d] deprecates channel %q, which the package does not have",
				SchemaDeprecations, p.Name, i, e.Reference.Name))
		case SchemaBundle:
			found := false
			for _, b := range pb.bundles {
				if b.CSVName == e.Reference.Name {
					b.Deprecation, found = e.Message, true
				}
			}
			if !found {
				a.warn(pb.deprecationsFile, fmt.Sprintf("%s of package %q: entries[%d] deprecates bundle %q, which the package does not have",
					SchemaDeprecations, p.Name, i, e.Reference.Name))
			}
		}
	}
}
