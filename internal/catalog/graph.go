package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The functions here build channels from bundles and answer upgrade questions. They are
// pure: they take bundles and return channels or verdicts, and are table-tested.

// entryOf is a channel entry carrying the edges the bundle's CSV declares.
func entryOf(b *Bundle) ChannelEntry {
	return ChannelEntry{Name: b.CSVName, Replaces: b.Replaces, Skips: b.Skips, SkipRange: b.SkipRange, Bundle: b}
}

// byVersionDesc orders entries newest first, then by name for a stable order.
func byVersionDesc(a, b ChannelEntry) int {
	if c := b.Bundle.Version.Compare(a.Bundle.Version); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// semverChannel builds a channel for bundles without channel metadata (the flat layout,
// and packages whose ci.yaml says updateGraph: semver-mode): bundles in version order,
// each replacing the one before it unless its CSV names what it replaces. The newest
// version is the head.
func semverChannel(name string, bundles []*Bundle) *Channel {
	entries := make([]ChannelEntry, 0, len(bundles))
	for _, b := range bundles {
		entries = append(entries, entryOf(b))
	}
	slices.SortFunc(entries, byVersionDesc)
	for i := range entries {
		if entries[i].Replaces == "" && i+1 < len(entries) {
			entries[i].Replaces = entries[i+1].Name
		}
	}
	ch := &Channel{Name: name, Entries: entries}
	if len(entries) > 0 {
		ch.Head = entries[0].Name
	}
	return ch
}

// headChannel builds a channel of the package-manifest layout from its currentCSV: the
// head, the chain of bundles it replaces, and the bundles the chain skips (a cluster may
// run one of those and must find its way forward). The walk stops at a CSV that is not
// in the package (catalogs prune old versions) and at a cycle.
func headChannel(name, head string, byName map[string]*Bundle) (*Channel, error) {
	hb := byName[head]
	if hb == nil {
		return nil, fmt.Errorf("currentCSV %q names no bundle of the package", head)
	}
	ch := &Channel{Name: name, Head: head}
	seen := map[string]bool{}
	add := func(b *Bundle) {
		if !seen[b.CSVName] {
			seen[b.CSVName] = true
			ch.Entries = append(ch.Entries, entryOf(b))
		}
	}
	walked := map[string]bool{}
	for b := hb; b != nil && !walked[b.CSVName]; b = byName[b.Replaces] {
		walked[b.CSVName] = true
		add(b)
		for _, s := range b.Skips {
			if sb := byName[s]; sb != nil {
				add(sb)
			}
		}
	}
	slices.SortFunc(ch.Entries, byVersionDesc)
	return ch, nil
}

// entriesChannel builds a channel whose members are known (the bundle layout's channel
// annotations, a File-Based Catalog's olm.channel) and finds its head: the entry no other
// entry replaces or skips, as opm defines it. When there is not exactly one such entry,
// the newest candidate is taken and the returned warning says so.
func entriesChannel(name string, entries []ChannelEntry) (*Channel, string) {
	slices.SortFunc(entries, byVersionDesc)
	ch := &Channel{Name: name, Entries: entries}
	if len(entries) == 0 {
		return ch, ""
	}
	heads := headCandidates(entries)
	switch len(heads) {
	case 1:
		ch.Head = heads[0]
		return ch, ""
	case 0:
		ch.Head = entries[0].Name
		return ch, fmt.Sprintf("channel %q has no head (every entry is replaced or skipped by another); using the newest, %s", name, ch.Head)
	}
	ch.Head = heads[0]
	return ch, fmt.Sprintf("channel %q has %d heads (%s); using the newest, %s", name, len(heads), strings.Join(heads, ", "), ch.Head)
}

// headCandidates returns the entries no other entry replaces or skips, newest first
// (entries must be sorted by byVersionDesc).
func headCandidates(entries []ChannelEntry) []string {
	referenced := map[string]bool{}
	for _, e := range entries {
		if e.Replaces != "" && e.Replaces != e.Name {
			referenced[e.Replaces] = true
		}
		for _, s := range e.Skips {
			if s != e.Name {
				referenced[s] = true
			}
		}
	}
	var heads []string
	for _, e := range entries {
		if !referenced[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	return heads
}

// isSuccessor reports whether entry e is an upgrade from the bundle named from at version
// fromVersion, per OLM: e replaces it, skips it, or its skipRange holds its version.
func isSuccessor(e ChannelEntry, from *Bundle) (EdgeKind, bool) {
	switch {
	case e.Name == from.CSVName:
		return "", false
	case e.Replaces != "" && e.Replaces == from.CSVName:
		return EdgeReplaces, true
	case from.CSVName != "" && slices.Contains(e.Skips, from.CSVName):
		return EdgeSkips, true
	case e.SkipRange.Contains(from.Version):
		return EdgeSkipRange, true
	}
	return "", false
}

// successors returns the bundles of ch that are upgrades from from, newest first.
func successors(ch *Channel, from *Bundle) []*Bundle {
	var out []*Bundle
	for _, e := range ch.Entries {
		if _, ok := isSuccessor(e, from); ok {
			out = append(out, e.Bundle)
		}
	}
	return out
}

// Edges lists the channel's upgrade edges. Replaces and skips edges are listed whether or
// not their source is in the channel (a cluster may run a CSV the catalog has pruned);
// skipRange edges can only be enumerated for sources that are entries.
func (c *Channel) Edges() []Edge {
	var edges []Edge
	for _, e := range c.Entries {
		if e.Replaces != "" {
			edges = append(edges, Edge{From: e.Replaces, To: e.Name, Kind: EdgeReplaces})
		}
		for _, s := range e.Skips {
			edges = append(edges, Edge{From: s, To: e.Name, Kind: EdgeSkips})
		}
		if e.SkipRange.IsZero() {
			continue
		}
		for _, f := range c.Entries {
			if f.Name != e.Name && f.Bundle != nil && e.SkipRange.Contains(f.Bundle.Version) {
				edges = append(edges, Edge{From: f.Name, To: e.Name, Kind: EdgeSkipRange})
			}
		}
	}
	slices.SortFunc(edges, func(a, b Edge) int {
		return cmp.Or(strings.Compare(a.To, b.To), strings.Compare(a.From, b.From), strings.Compare(string(a.Kind), string(b.Kind)))
	})
	return edges
}

// Entry returns the channel's entry for a CSV name.
func (c *Channel) Entry(csvName string) (ChannelEntry, bool) {
	for _, e := range c.Entries {
		if e.Name == csvName {
			return e, true
		}
	}
	return ChannelEntry{}, false
}
