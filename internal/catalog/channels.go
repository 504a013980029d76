package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// buildChannels builds a package's channels by its layout, picks its default channel and
// records in each bundle the channels it belongs to.
func (a *assembler) buildChannels(pb *pkgBuild) {
	p := pb.pkg
	slices.SortFunc(pb.bundles, func(x, y *Bundle) int {
		if c := x.Version.Compare(y.Version); c != 0 {
			return c
		}
		return strings.Compare(x.CSVName, y.CSVName)
	})
	p.Bundles = pb.bundles
	byName := make(map[string]*Bundle, len(pb.bundles))
	for _, b := range pb.bundles {
		byName[b.CSVName] = b
	}
	var preferred string
	switch p.Layout {
	case LayoutFlat:
		if len(pb.bundles) > 0 {
			ch := semverChannel(FlatChannel, pb.bundles)
			// With a single channel the derived edge is the bundle's own.
			for _, e := range ch.Entries {
				e.Bundle.Replaces = e.Replaces
			}
			p.Channels = []*Channel{ch}
		}
		preferred = FlatChannel
	case LayoutPackageManifest:
		preferred = a.manifestChannels(pb, byName)
	case LayoutBundle:
		preferred = a.annotationChannels(pb)
	case LayoutFBC:
		preferred = a.fbcChannels(pb, byName)
	}
	slices.SortFunc(p.Channels, func(x, y *Channel) int { return strings.Compare(x.Name, y.Name) })
	a.setDefaultChannel(p, preferred)
	for _, b := range pb.bundles {
		b.Channels = nil
	}
	for _, c := range p.Channels {
		for _, e := range c.Entries {
			e.Bundle.Channels = append(e.Bundle.Channels, c.Name)
		}
	}
	a.warnSharedVersions(p)
}

// setDefaultChannel keeps the preferred default when it exists; otherwise it takes the
// only channel, or "stable", or the first by name, and says so.
func (a *assembler) setDefaultChannel(p *Package, preferred string) {
	if preferred != "" && p.Channel(preferred) != nil {
		p.DefaultChannel = preferred
		return
	}
	if len(p.Channels) == 0 {
		if len(p.Bundles) > 0 {
			a.warn(p.RelPath, fmt.Sprintf("package %q has no usable channel; its bundles can only be found by name", p.Name))
		}
		return
	}
	p.DefaultChannel = p.Channels[0].Name
	if c := p.Channel(FlatChannel); c != nil {
		p.DefaultChannel = c.Name
	}
	if preferred != "" || len(p.Channels) > 1 {
		a.warn(p.RelPath, fmt.Sprintf("default channel %q is not usable; using %q", preferred, p.DefaultChannel))
	}
}

// manifestChannels builds the channels a package file declares. A channel whose
// currentCSV does not exist is rejected alone.
func (a *assembler) manifestChannels(pb *pkgBuild, byName map[string]*Bundle) string {
	m := pb.dir.manifest
	for i, c := range m.Channels {
		ch, err := headChannel(c.Name, c.CurrentCSV, byName)
		if err != nil {
			a.reject(pb.dir.pkgFile, fmt.Sprintf("channels[%d] %q: %v", i, c.Name, err))
			continue
		}
		pb.pkg.Channels = append(pb.pkg.Channels, ch)
	}
	return m.DefaultChannel
}

// annotationChannels builds the channels of the bundle layout from each bundle's
// channels annotation; the default channel is the newest bundle's default annotation.
func (a *assembler) annotationChannels(pb *pkgBuild) string {
	members := map[string][]*Bundle{}
	var preferred string
	for _, b := range pb.bundles { // ascending version: the newest bundle's default wins
		ann := pb.annotations[b]
		for _, c := range ann.Channels {
			members[c] = append(members[c], b)
		}
		if ann.DefaultChannel != "" {
			preferred = ann.DefaultChannel
		}
	}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if pb.dir.semverMode {
			pb.pkg.Channels = append(pb.pkg.Channels, semverChannel(name, members[name]))
			continue
		}
		entries := make([]ChannelEntry, 0, len(members[name]))
		for _, b := range members[name] {
			entries = append(entries, entryOf(b))
		}
		ch, warning := entriesChannel(name, entries)
		if warning != "" {
			a.warn(pb.pkg.RelPath, warning)
		}
		pb.pkg.Channels = append(pb.pkg.Channels, ch)
	}
	return preferred
}

// fbcChannels builds the channels of a File-Based Catalog package from its olm.channel
// blobs. An entry naming no bundle of the package is rejected alone.
func (a *assembler) fbcChannels(pb *pkgBuild, byName map[string]*Bundle) string {
	seen := map[string]bool{}
	for _, blob := range pb.fbcChannels {
		where := fmt.Sprintf("olm.channel %q (line %d)", blob.Name, blob.line)
		if seen[blob.Name] {
			a.reject(pb.fbcFile, where+": duplicate channel")
			continue
		}
		seen[blob.Name] = true
		var entries []ChannelEntry
		for i, e := range blob.Entries {
			entry, err := fbcChannelEntry(e, byName)
			if err != nil {
				a.reject(pb.fbcFile, fmt.Sprintf("%s: entries[%d] %q: %v", where, i, e.Name, err))
				continue
			}
			entries = append(entries, entry)
		}
		ch, warning := entriesChannel(blob.Name, entries)
		if warning != "" {
			a.warn(pb.fbcFile, warning)
		}
		if len(ch.Entries) > 0 {
			pb.pkg.Channels = append(pb.pkg.Channels, ch)
		}
	}
	fillFBCEdges(pb.pkg.Channels)
	return pb.fbcPackage.DefaultChannel
}

func fbcChannelEntry(e fbcEntry, byName map[string]*Bundle) (ChannelEntry, error) {
	b := byName[e.Name]
	if b == nil {
		return ChannelEntry{}, fmt.Errorf("names no loaded olm.bundle of the package")
	}
	entry := ChannelEntry{Name: e.Name, Replaces: e.Replaces, Skips: e.Skips, Bundle: b}
	if strings.TrimSpace(e.SkipRange) != "" {
		r, err := ParseVersionRange(e.SkipRange)
		if err != nil {
			return ChannelEntry{}, fmt.Errorf("skipRange: %w", err)
		}
		entry.SkipRange = r
	}
	return entry, nil
}

// warnSharedVersions warns about bundles of one package with the same version: a lookup
// by version then returns the first by CSV name.
func (a *assembler) warnSharedVersions(p *Package) {
	for i := 1; i < len(p.Bundles); i++ {
		prev, b := p.Bundles[i-1], p.Bundles[i]
		if prev.Version.Equals(b.Version) {
			a.warn(b.RelPath, fmt.Sprintf("version %s is also the version of %s; lookups by version return %s", b.Version, prev.CSVName, prev.CSVName))
		}
	}
}

// fillFBCEdges gives a File-Based Catalog bundle without a CSV object the edges of its
// first channel entry (channels in blob order), so Bundle.Replaces and friends mean the
// same for every layout. The graph itself always uses the channel's own entries.
func fillFBCEdges(channels []*Channel) {
	filled := map[*Bundle]bool{}
	for _, c := range channels {
		for _, e := range c.Entries {
			b := e.Bundle
			if filled[b] || b.Replaces != "" || len(b.Skips) > 0 || !b.SkipRange.IsZero() {
				filled[b] = true
				continue
			}
			filled[b] = true
			b.Replaces, b.Skips, b.SkipRange = e.Replaces, e.Skips, e.SkipRange
		}
	}
}
