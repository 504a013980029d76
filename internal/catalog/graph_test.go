package catalog

import (
	"slices"
	"testing"

	"github.com/blang/semver/v4"
)

// bundle makes a test bundle; edges are "replaces", then skips.
func bundle(name, version, replaces string, skips ...string) *Bundle {
	return &Bundle{CSVName: name, Version: semver.MustParse(version), Replaces: replaces, Skips: skips}
}

func withRange(b *Bundle, r string) *Bundle {
	vr, err := ParseVersionRange(r)
	if err != nil {
		panic(err)
	}
	b.SkipRange = vr
	return b
}

func entryNames(ch *Channel) []string {
	var names []string
	for _, e := range ch.Entries {
		names = append(names, e.Name+"<"+e.Replaces)
	}
	return names
}

func TestSemverChannel(t *testing.T) {
	tests := []struct {
		name    string
		bundles []*Bundle
		head    string
		entries []string
	}{
		{"empty", nil, "", nil},
		{"one", []*Bundle{bundle("a.1", "1.0.0", "")}, "a.1", []string{"a.1<"}},
		{
			"ordered by semver, not input or string order",
			[]*Bundle{bundle("a.10", "0.10.0", ""), bundle("a.2", "0.2.0", ""), bundle("a.9", "0.9.0", "")},
			"a.10", []string{"a.10<a.9", "a.9<a.2", "a.2<"},
		},
		{
			"a CSV's own replaces wins",
			[]*Bundle{bundle("a.1", "1.0.0", ""), bundle("a.2", "2.0.0", ""), bundle("a.3", "3.0.0", "a.1")},
			"a.3", []string{"a.3<a.1", "a.2<a.1", "a.1<"},
		},
		{
			"prerelease sorts before its release",
			[]*Bundle{bundle("a.1", "1.0.0", ""), bundle("a.1rc", "1.0.0-rc.1", "")},
			"a.1", []string{"a.1<a.1rc", "a.1rc<"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := semverChannel("stable", tt.bundles)
			if ch.Head != tt.head || !slices.Equal(entryNames(ch), tt.entries) {
				t.Errorf("got head %q entries %v, want %q %v", ch.Head, entryNames(ch), tt.head, tt.entries)
			}
		})
	}
}

func TestHeadChannel(t *testing.T) {
	byName := func(bs ...*Bundle) map[string]*Bundle {
		m := map[string]*Bundle{}
		for _, b := range bs {
			m[b.CSVName] = b
		}
		return m
	}
	tests := []struct {
		name    string
		head    string
		bundles map[string]*Bundle
		entries []string
		err     string
	}{
		{
			name:    "chain walked from the head",
			head:    "a.3",
			bundles: byName(bundle("a.1", "1.0.0", ""), bundle("a.2", "2.0.0", "a.1"), bundle("a.3", "3.0.0", "a.2"), bundle("other", "9.0.0", "")),
			entries: []string{"a.3<a.2", "a.2<a.1", "a.1<"},
		},
		{
			name:    "chain stops at a pruned CSV",
			head:    "a.3",
			bundles: byName(bundle("a.2", "2.0.0", "a.1"), bundle("a.3", "3.0.0", "a.2")),
			entries: []string{"a.3<a.2", "a.2<a.1"},
		},
		{
			name:    "skipped bundles are members; a skipped bundle on the chain is still walked",
			head:    "a.3",
			bundles: byName(bundle("a.0", "0.1.0", ""), bundle("a.1", "1.0.0", "a.0"), bundle("a.2", "2.0.0", ""), bundle("a.3", "3.0.0", "a.1", "a.1", "a.2")),
			entries: []string{"a.3<a.1", "a.2<", "a.1<a.0", "a.0<"},
		},
		{
			name:    "a cycle ends the walk",
			head:    "a.2",
			bundles: byName(bundle("a.1", "1.0.0", "a.2"), bundle("a.2", "2.0.0", "a.1")),
			entries: []string{"a.2<a.1", "a.1<a.2"},
		},
		{
			name:    "missing head",
			head:    "a.9",
			bundles: byName(bundle("a.1", "1.0.0", "")),
			err:     `currentCSV "a.9" names no bundle of the package`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := headChannel("stable", tt.head, tt.bundles)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ch.Head != tt.head || !slices.Equal(entryNames(ch), tt.entries) {
				t.Errorf("got head %q entries %v, want %v", ch.Head, entryNames(ch), tt.entries)
			}
		})
	}
}

func TestEntriesChannelHead(t *testing.T) {
	tests := []struct {
		name    string
		bundles []*Bundle
		head    string
		warning string
	}{
		{"one head", []*Bundle{bundle("a.1", "1.0.0", ""), bundle("a.2", "2.0.0", "a.1")}, "a.2", ""},
		{"head by skips", []*Bundle{bundle("a.1", "1.0.0", ""), bundle("a.2", "2.0.0", "", "a.1")}, "a.2", ""},
		{
			"two heads: newest taken, warned",
			[]*Bundle{bundle("a.1", "1.0.0", ""), bundle("a.2", "2.0.0", "")},
			"a.2", `channel "c" has 2 heads (a.2, a.1); using the newest, a.2`,
		},
		{
			"no head in a cycle",
			[]*Bundle{bundle("a.1", "1.0.0", "a.2"), bundle("a.2", "2.0.0", "a.1")},
			"a.2", `channel "c" has no head (every entry is replaced or skipped by another); using the newest, a.2`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var entries []ChannelEntry
			for _, b := range tt.bundles {
				entries = append(entries, entryOf(b))
			}
			ch, warning := entriesChannel("c", entries)
			if ch.Head != tt.head || warning != tt.warning {
				t.Errorf("got %q, %q; want %q, %q", ch.Head, warning, tt.head, tt.warning)
			}
		})
	}
}

func TestIsSuccessor(t *testing.T) {
	from := bundle("a.v1.0.0", "1.0.0", "")
	tests := []struct {
		name  string
		entry *Bundle
		kind  EdgeKind
		ok    bool
	}{
		{"replaces", bundle("a.v1.1.0", "1.1.0", "a.v1.0.0"), EdgeReplaces, true},
		{"skips", bundle("a.v1.2.0", "1.2.0", "a.v0.9.0", "a.v1.0.0"), EdgeSkips, true},
		{"skipRange holds the version", withRange(bundle("a.v2.0.0", "2.0.0", ""), ">=0.5.0 <1.1.0"), EdgeSkipRange, true},
		{"skipRange excludes the version", withRange(bundle("a.v2.0.0", "2.0.0", ""), ">=1.0.1"), "", false},
		{"unrelated", bundle("a.v3.0.0", "3.0.0", "a.v2.0.0"), "", false},
		{"itself", withRange(bundle("a.v1.0.0", "1.0.0", ""), ">=0.0.0"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, ok := isSuccessor(entryOf(tt.entry), from)
			if kind != tt.kind || ok != tt.ok {
				t.Errorf("got %q %v, want %q %v", kind, ok, tt.kind, tt.ok)
			}
		})
	}
	t.Run("unknown source matches by skipRange only", func(t *testing.T) {
		pruned := &Bundle{Version: semver.MustParse("1.0.0")}
		if _, ok := isSuccessor(entryOf(bundle("x", "2.0.0", "")), pruned); ok {
			t.Error("an empty replaces must not match an unnamed source")
		}
		if _, ok := isSuccessor(entryOf(withRange(bundle("x", "2.0.0", ""), "<2.0.0")), pruned); !ok {
			t.Error("skipRange should match")
		}
	})
}

func TestEdges(t *testing.T) {
	ch := &Channel{Entries: []ChannelEntry{
		entryOf(withRange(bundle("a.3", "3.0.0", "a.2", "a.1"), ">=1.0.0 <3.0.0")),
		entryOf(bundle("a.2", "2.0.0", "a.1")),
		entryOf(bundle("a.1", "1.0.0", "a.0")),
	}}
	want := []Edge{
		{From: "a.0", To: "a.1", Kind: EdgeReplaces},
		{From: "a.1", To: "a.2", Kind: EdgeReplaces},
		{From: "a.1", To: "a.3", Kind: EdgeSkipRange},
		{From: "a.1", To: "a.3", Kind: EdgeSkips},
		{From: "a.2", To: "a.3", Kind: EdgeReplaces},
		{From: "a.2", To: "a.3", Kind: EdgeSkipRange},
	}
	if got := ch.Edges(); !slices.Equal(got, want) {
		t.Errorf("edges:\n got %v\nwant %v", got, want)
	}
}
