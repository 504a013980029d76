package resolve

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// option is a candidate for a requirement: a catalog bundle (b; with in set, an upgrade
// of that installed operator) or an installed operator kept as it is (b nil). why is
// its refusal, a verb phrase following the label ("db.v1.4.0 (catalog main) needs
// Kubernetes 1.30.0 or newer, ..."). Options are plain values and the choice is made
// only when one is tried: most requirements are met by their first candidate.
type option struct {
	b       *catalog.Bundle
	in      *Installed
	catalog string
	def     bool // in its package's default channel, for ordering
	why     string
}

func (o *option) choice(r *requirement) *choice {
	if o.b == nil {
		return &choice{pkg: o.in.Package, installed: o.in, version: o.in.Version, csv: o.in.CSVName, catalog: o.in.Catalog, req: r}
	}
	return &choice{pkg: o.b.Package, bundle: o.b, installed: o.in, version: o.b.Version, csv: o.b.CSVName, catalog: o.catalog, req: r}
}

func (o *option) label() string {
	if o.b == nil {
		return o.in.label()
	}
	return o.b.CSVName + " (catalog " + o.catalog + ")"
}

// candidates lists r's candidates in order of preference. Bundles that are out of
// range or not an upgrade are not candidates; they are summed up on f, one clause per
// package and catalog, so a message names them without a line per version.
func (s *search) candidates(r *requirement, f *failure) []option {
	if r.kind == reqPackage {
		if in := s.installed[r.pkg]; in != nil {
			f.opts = s.installedOptions(r, in, f)
			return f.opts
		}
		f.opts = s.packageOptions(r, f)
	} else {
		f.opts = s.providerOptions(r, f)
	}
	if len(f.opts) == 0 && len(f.groups) == 0 {
		switch r.kind {
		case reqPackage:
			f.none = "no catalog has package " + r.pkg
		case reqMatch:
			f.none = "no bundle in the catalogs meets it"
			if f.evalErr != nil {
				f.none += fmt.Sprintf(" (its rule could not be evaluated on %d of them; the first: %v)", f.evalErrs, f.evalErr)
			}
		default:
			f.none = "no bundle in the catalogs owns " + r.gvk.Text()
		}
	}
	return f.opts
}

// packageOptions: the package's bundles in range from each catalog in preference order,
// the default channel's before other channels', newest first.
func (s *search) packageOptions(r *requirement, f *failure) []option {
	var opts []option
	seen := s.digestSet()
	for _, cat := range s.prefer(r.by.catalog) {
		p := cat.Catalog.Package(r.pkg)
		if p == nil {
			continue
		}
		var out []semver.Version
		start := len(opts)
		// Newest first, so the options are nearly in order before sorting.
		for k := len(p.Bundles) - 1; k >= 0; k-- {
			b := p.Bundles[k]
			if len(b.Channels) == 0 || seen[b.Digest] {
				continue // in no channel: pruned from the upgrade graph; or already listed
			}
			if seen != nil {
				seen[b.Digest] = true
			}
			if !r.rng.Contains(b.Version) {
				out = append(out, b.Version)
				continue
			}
			opts = append(opts, bundleOption(b, p, cat.Name))
		}
		sortOptions(opts[start:])
		slices.Reverse(out)
		f.group(r.pkg, cat.Name, out, "out of range")
	}
	return opts
}

// installedOptions: keep the installed version, else upgrade it within its own catalog
// along its channels' upgrade edges.
func (s *search) installedOptions(r *requirement, in *Installed, f *failure) []option {
	opts := []option{{in: in}} // keeping it comes first
	if r.rng.Contains(in.Version) {
		if in.fixed() != "" {
			return opts // its Subscription fixes it: nothing else to offer
		}
	} else {
		opts[0].why = "is out of range"
		if why := in.fixed(); why != "" {
			opts[0].why += ", and " + why
			return opts
		}
	}
	cat, p := s.installedPackage(in)
	if p == nil {
		if !r.rng.Contains(in.Version) {
			opts[0].why += fmt.Sprintf(", and its catalog %s (package %s) is not among those searched", in.Catalog, in.Package)
		}
		return opts
	}
	reach := s.reachable(in, cat)
	var out, stuck []semver.Version
	start := len(opts)
	for _, b := range p.Bundles {
		switch {
		case !b.Version.GT(in.Version) || len(b.Channels) == 0:
		case !r.rng.Contains(b.Version):
			out = append(out, b.Version)
		case !reach[b.CSVName]:
			stuck = append(stuck, b.Version)
		default:
			o := bundleOption(b, p, cat.Name)
			o.in = in
			opts = append(opts, o)
		}
	}
	sortOptions(opts[start:])
	if len(opts) == 1 && opts[0].why != "" {
		opts[0].why += ", and no upgrade of it is in range"
	}
	f.group(in.Package, cat.Name, out, "out of range")
	f.group(in.Package, cat.Name, stuck, "not reachable by upgrade edges from "+in.ref())
	return opts
}

// providerOptions: installed operators meeting r (owning its GVK, or meeting its label or
// constraint), then bundles meeting it from each catalog in preference order (default
// channel first, newest first, then by package). A bundle of a package already chosen at
// another version is refused, as is one that would replace an installed operator by
// anything but an upgrade.
func (s *search) providerOptions(r *requirement, f *failure) []option {
	var opts []option
	for _, in := range s.installedList {
		if s.chosen[in.Package] == nil && s.installedMeets(r, in, f) {
			opts = append(opts, option{in: in})
		}
	}
	seen := s.digestSet()
	for _, cat := range s.prefer(r.by.catalog) {
		type refused struct {
			pkg, why string
			vs       []semver.Version
			c        *choice
		}
		var refusals []*refused
		refuse := func(b *catalog.Bundle, why string, c *choice) {
			for _, x := range refusals {
				if x.pkg == b.Package && x.why == why {
					x.vs = append(x.vs, b.Version)
					return
				}
			}
			refusals = append(refusals, &refused{pkg: b.Package, why: why, vs: []semver.Version{b.Version}, c: c})
		}
		start := len(opts)
		providers := s.providers(r, cat, f) // by package, then ascending version
		opts = slices.Grow(opts, len(providers))
		for k := len(providers) - 1; k >= 0; k-- {
			b := providers[k]
			if len(b.Channels) == 0 || seen[b.Digest] {
				continue
			}
			if seen != nil {
				seen[b.Digest] = true
			}
			if c := s.chosen[b.Package]; c != nil {
				refuse(b, fmt.Sprintf("refused: %s %s is already chosen (%s)", c.pkg, c.version, c.describe()), c)
				continue
			}
			o := bundleOption(b, cat.Catalog.Package(b.Package), cat.Name)
			if in := s.installed[b.Package]; in != nil {
				switch {
				case in.ServedFrom != "":
					refuse(b, "refused: "+in.ref()+" is kept: "+in.fixed(), nil)
					continue
				case in.Pinned:
					refuse(b, "refused: "+in.ref()+" is pinned by its Subscription", nil)
					continue
				case cat.Name != in.Catalog:
					refuse(b, "not from catalog "+in.Catalog+" of "+in.ref(), nil)
					continue
				case !b.Version.GT(in.Version) || !s.reachable(in, cat)[b.CSVName]:
					refuse(b, "not an upgrade of "+in.ref(), nil)
					continue
				}
				o.in = in
			}
			opts = append(opts, o)
		}
		sortOptions(opts[start:])
		slices.Reverse(refusals) // back to package order, ascending versions
		for _, x := range refusals {
			slices.Reverse(x.vs)
			f.group(x.pkg, cat.Name, x.vs, x.why)
			f.blame(x.c)
		}
	}
	return opts
}

// providers lists cat's bundles that could meet r, by package, then ascending version:
// the GVK's owners from the index, or, for a label or constraint, every bundle in a
// channel meeting it, among those its Hint bounds it to (the index's, when it has one;
// else the whole catalog, a CEL rule's case). A rule that fails on a bundle (a field it
// lacks) counts as not met; the first such error is kept on f for the message when no
// bundle meets it.
func (s *search) providers(r *requirement, cat CatalogRef, f *failure) []*catalog.Bundle {
	if r.kind != reqMatch {
		return cat.Catalog.ProvidersOf(r.gvk)
	}
	var out []*catalog.Bundle
	for _, b := range hinted(r.dep, cat.Catalog) {
		if len(b.Channels) == 0 {
			continue // never a candidate: not worth a rule's evaluation
		}
		ok, err := r.dep.Matches(catalog.SubjectOf(b))
		f.evaluated(err)
		if ok {
			out = append(out, b)
		}
	}
	return out
}

// hinted is the bundles of cat that may meet d: those of the packages and owners of the
// GVKs d.Hint names, by package then ascending version, or every bundle when it names
// none.
func hinted(d catalog.Dependency, cat *catalog.Catalog) []*catalog.Bundle {
	pkgs, gvks, ok := d.Hint()
	if !ok {
		return cat.Bundles()
	}
	seen := map[*catalog.Bundle]bool{}
	var out []*catalog.Bundle
	add := func(b *catalog.Bundle) {
		if !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	for _, p := range pkgs {
		if pkg := cat.Package(p); pkg != nil {
			for _, b := range pkg.Bundles {
				add(b)
			}
		}
	}
	for _, g := range gvks {
		for _, b := range cat.ProvidersOf(g) {
			add(b)
		}
	}
	slices.SortFunc(out, func(a, b *catalog.Bundle) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), a.Version.Compare(b.Version))
	})
	return out
}

// installedMeets says whether an installed operator meets r (a GVK it owns, or r's label
// or constraint).
func (s *search) installedMeets(r *requirement, in *Installed, f *failure) bool {
	if r.kind != reqMatch {
		return (&choice{installed: in}).provides(r.gvk)
	}
	ok, err := r.dep.Matches(s.installedSubject(in))
	f.evaluated(err)
	return ok
}

func bundleOption(b *catalog.Bundle, p *catalog.Package, catName string) option {
	return option{b: b, catalog: catName, def: p != nil && slices.Contains(b.Channels, p.DefaultChannel)}
}

// sortOptions orders bundles of one catalog: those of their package's default channel
// first, then the others; newest first within each; then by package and CSV name (for
// GVK providers, which span packages).
func sortOptions(opts []option) {
	// CSV names are unique in a catalog, so the order is total and need not be stable.
	slices.SortFunc(opts, func(a, b option) int {
		if a.def != b.def {
			if a.def {
				return -1
			}
			return 1
		}
		return cmp.Or(b.b.Version.Compare(a.b.Version), strings.Compare(a.b.Package, b.b.Package), strings.Compare(a.b.CSVName, b.b.CSVName))
	})
}

// digestSet returns a set to skip a bundle a preferred catalog already offered, or nil
// (reads as empty) when there is one catalog and so nothing to skip.
func (s *search) digestSet() map[string]bool {
	if len(s.cats) == 1 {
		return nil
	}
	return map[string]bool{}
}

// prefer returns the catalogs to search for a dependent from catalog name: that catalog
// first, then the others in priority order.
func (s *search) prefer(name string) []CatalogRef {
	if name == s.cats[0].Name {
		return s.cats
	}
	i := slices.IndexFunc(s.cats, func(c CatalogRef) bool { return c.Name == name })
	if i < 0 {
		return s.cats
	}
	out := make([]CatalogRef, 0, len(s.cats))
	out = append(out, s.cats[i])
	out = append(out, s.cats[:i]...)
	return append(out, s.cats[i+1:]...)
}

// installedPackage finds an installed operator's package in its own catalog.
func (s *search) installedPackage(in *Installed) (CatalogRef, *catalog.Package) {
	for _, c := range s.cats {
		if c.Name == in.Catalog {
			return c, c.Catalog.Package(in.Package)
		}
	}
	return CatalogRef{}, nil
}

// reachable returns the CSV names reachable from an installed operator by upgrade edges
// in any channel of its package in cat, cached per package.
func (s *search) reachable(in *Installed, cat CatalogRef) map[string]bool {
	if m := s.reach[in.Package]; m != nil {
		return m
	}
	m := map[string]bool{}
	if p := cat.Catalog.Package(in.Package); p != nil {
		for _, ch := range p.Channels {
			for csv := range upgrades(cat.Catalog, in.Package, ch.Name, in.CSVName, in.Version) {
				m[csv] = true
			}
		}
	}
	s.reach[in.Package] = m
	return m
}

// upgrades walks a channel's upgrade edges (replaces, skips, skipRange) from a CSV,
// transitively, and returns each reachable bundle's CSV name mapped to the CSV it is
// first reached from (breadth first, newest first, so the path back is a shortest one).
func upgrades(cat *catalog.Catalog, pkg, channel, csv string, version semver.Version) map[string]string {
	from := map[string]string{}
	type node struct {
		csv string
		v   semver.Version
	}
	queue := []node{{csv, version}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		next, err := cat.SuccessorsOf(pkg, channel, n.csv, n.v)
		if err != nil {
			return from
		}
		for _, b := range next {
			if _, ok := from[b.CSVName]; ok || b.CSVName == csv {
				continue
			}
			from[b.CSVName] = n.csv
			queue = append(queue, node{b.CSVName, b.Version})
		}
	}
	return from
}

// describe says why a choice is in place, for messages.
func (c *choice) describe() string {
	switch {
	case c.root:
		return "the operator being installed"
	case c.bundle == nil && c.installed.ServedFrom != "":
		return "installed, running for this namespace from Subscription " + c.installed.ServedFrom
	case c.bundle == nil && c.installed.Pinned:
		return "installed and pinned by its Subscription"
	case c.bundle == nil:
		return fmt.Sprintf("installed, kept for %s: %s", c.req.by.csv, c.req.constraint())
	}
	return c.req.reason()
}
