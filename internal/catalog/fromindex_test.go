package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

// wireIndex is what a catalog server sends: the catalog's digest, packages and bundles
// as JSON, which drops Package.Bundles and ChannelEntry.Bundle.
type wireIndex struct {
	Digest   string     `json:"digest"`
	Packages []*Package `json:"packages"`
	Bundles  []*Bundle  `json:"bundles"`
}

// overTheWire encodes a catalog's index and decodes it again, as a client receives it.
func overTheWire(t *testing.T, c *Catalog) *wireIndex {
	t.Helper()
	data, err := json.Marshal(wireIndex{Digest: c.Digest, Packages: c.Packages(), Bundles: c.Bundles()})
	if err != nil {
		t.Fatal(err)
	}
	idx := &wireIndex{}
	if err := json.Unmarshal(data, idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

// filesFrom reads bundles from a directory catalog by digest, as a remote client would.
func filesFrom(c *Catalog) func(*Bundle) ([]File, error) {
	return func(b *Bundle) ([]File, error) {
		src := c.BundleByDigest(b.Digest)
		if src == nil {
			return nil, ErrNotFound
		}
		return c.Files(src)
	}
}

func TestFromIndexLookups(t *testing.T) {
	dir := loadFixture(t, "testdata/layouts")
	idx := overTheWire(t, dir)
	c, err := FromIndex(idx.Digest, idx.Packages, idx.Bundles, filesFrom(dir))
	if err != nil {
		t.Fatal(err)
	}
	if c.Digest != dir.Digest || c.Root != "" || len(c.Packages()) != len(dir.Packages()) || len(c.Bundles()) != len(dir.Bundles()) {
		t.Fatalf("rebuilt %s, want %s", c, dir)
	}
	for i, b := range c.Bundles() {
		if b.CSVName != dir.Bundles()[i].CSVName {
			t.Errorf("bundles[%d] = %s, want %s", i, b.CSVName, dir.Bundles()[i].CSVName)
		}
		if c.BundleByCSV(b.CSVName) != b || c.BundleByDigest(b.Digest) != b || c.Bundle(b.Package, b.Version) != b {
			t.Errorf("%s: lookups do not return it", b.CSVName)
		}
	}
	for _, p := range c.Packages() {
		want := dir.Package(p.Name)
		if c.Package(p.Name) != p || len(p.Bundles) != len(want.Bundles) || p.DefaultChannel != want.DefaultChannel {
			t.Errorf("package %s: %d bundles, default %q", p.Name, len(p.Bundles), p.DefaultChannel)
		}
		for _, ch := range p.Channels {
			for _, e := range ch.Entries {
				if e.Bundle == nil || e.Bundle != c.BundleByCSV(e.Name) {
					t.Errorf("%s/%s: entry %s not linked", p.Name, ch.Name, e.Name)
				}
			}
			if !slices.Equal(ch.Edges(), want.Channel(ch.Name).Edges()) {
				t.Errorf("%s/%s: edges %v, want %v", p.Name, ch.Name, ch.Edges(), want.Channel(ch.Name).Edges())
			}
		}
	}
	if got := c.ProvidersOf(GVK{Group: "fbc.example.com", Kind: "Sprocket"}); len(got) != 3 {
		t.Errorf("providers: %v", got)
	}
	if b, err := c.Head("manifestpkg", ""); err != nil || b.CSVName != "manifestpkg.v1.1.0" {
		t.Errorf("head: %v %v", b, err)
	}
	if got, err := c.Successors("fbcpkg", "stable", semver.MustParse("0.7.0")); err != nil || len(got) != 1 || got[0].CSVName != "fbcpkg.v2.0.0" {
		t.Errorf("successors over a skipRange: %v %v", got, err)
	}
	if b, err := c.BundleByRef("etcd.v1"); err == nil {
		t.Errorf("BundleByRef of nothing: %v", b)
	}

	// Content goes through the file source; an FBC bundle without objects has none.
	for _, name := range []string{"flatpkg.v0.1.0", "manifestpkg.v1.1.0", "bundlepkg.v0.2.0", "fbcpkg.v2.0.0"} {
		bc, err := c.Content(c.BundleByCSV(name))
		if err != nil || bc.CSV.Name != name || bc.Bundle != c.BundleByCSV(name) {
			t.Errorf("%s: content %v", name, err)
		}
	}
	if _, err := c.Content(c.BundleByCSV("jsonpkg.v0.1.0")); !errors.Is(err, ErrNoContent) {
		t.Errorf("FBC bundle without objects: %v", err)
	}

	// The arguments are left as they came.
	for _, p := range idx.Packages {
		if p.Bundles != nil || p.Channels[0].Entries[0].Bundle != nil {
			t.Fatalf("package %s of the argument was linked", p.Name)
		}
	}
}

func TestFromIndexFilesCheckDigest(t *testing.T) {
	dir := loadFixture(t, "testdata/layouts")
	idx := overTheWire(t, dir)
	fail := errors.New("server down")
	tests := []struct {
		name  string
		files func(*Bundle) ([]File, error)
		want  string
		is    error
	}{
		{"source fails", func(*Bundle) ([]File, error) { return nil, fail }, "reading bundle flatpkg/flatpkg.v0.1.0: server down", fail},
		{"wrong bytes", func(*Bundle) ([]File, error) { return []File{{Name: "csv.yaml", Data: []byte("kind: x")}}, nil },
			"reading bundle flatpkg/flatpkg.v0.1.0: its files have digest", ErrDigestMismatch},
		{"another bundle", func(*Bundle) ([]File, error) { return dir.Files(dir.BundleByCSV("flatpkg.v0.2.0")) },
			"does not match its digest", ErrDigestMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromIndex(idx.Digest, idx.Packages, idx.Bundles, tt.files)
			if err != nil {
				t.Fatal(err)
			}
			b := c.BundleByCSV("flatpkg.v0.1.0")
			if _, err := c.Files(b); !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Files: %v, want %q", err, tt.want)
			}
			if _, err := c.Content(b); !errors.Is(err, tt.is) {
				t.Errorf("Content: %v", err)
			}
		})
	}
}

func TestFromIndexRefuses(t *testing.T) {
	dir := loadFixture(t, "testdata/layouts")
	pkgOf := func(idx *wireIndex, name string) *Package {
		for _, p := range idx.Packages {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no package %s", name)
		return nil
	}
	bundleOf := func(idx *wireIndex, csv string) *Bundle {
		for _, b := range idx.Bundles {
			if b.CSVName == csv {
				return b
			}
		}
		t.Fatalf("no bundle %s", csv)
		return nil
	}
	tests := []struct {
		name   string
		change func(idx *wireIndex)
		want   string
	}{
		{"invalid index digest", func(idx *wireIndex) { idx.Digest = "sha256:abc" }, `index digest "sha256:abc" is invalid`},
		{"digest not of the content", func(idx *wireIndex) { pkgOf(idx, "manifestpkg").DefaultChannel = "beta" },
			"index digest " + dir.Digest + " does not match the packages and bundles it came with"},
		{"invalid bundle digest", func(idx *wireIndex) { bundleOf(idx, "flatpkg.v0.2.0").Digest = "sha256:../../etc" },
			`bundle flatpkg/flatpkg.v0.2.0: invalid digest "sha256:../../etc"`},
		{"duplicate CSV name", func(idx *wireIndex) {
			b := *bundleOf(idx, "flatpkg.v0.2.0")
			b.Package = "bundlepkg"
			idx.Bundles = append(idx.Bundles, &b)
		}, `duplicate CSV name "flatpkg.v0.2.0": bundle flatpkg/flatpkg.v0.2.0 and bundle bundlepkg/flatpkg.v0.2.0`},
		{"entry names a missing bundle", func(idx *wireIndex) {
			idx.Bundles = slices.DeleteFunc(idx.Bundles, func(b *Bundle) bool { return b.CSVName == "manifestpkg.v1.0.0" })
		}, `package "manifestpkg": channel "beta": entries[2] "manifestpkg.v1.0.0" names no bundle of the package`},
		{"entry names another package's bundle", func(idx *wireIndex) {
			pkgOf(idx, "flatpkg").Channels[0].Entries[0].Name = "bundlepkg.v0.2.0"
		}, `package "flatpkg": channel "stable": entries[0] "bundlepkg.v0.2.0" names no bundle of the package`},
		{"head not an entry", func(idx *wireIndex) { pkgOf(idx, "flatpkg").Channels[0].Head = "flatpkg.v9" },
			`package "flatpkg": channel "stable": head "flatpkg.v9" is not an entry of the channel`},
		{"default channel missing", func(idx *wireIndex) { pkgOf(idx, "flatpkg").DefaultChannel = "fast" },
			`package "flatpkg": default channel "fast" is not a channel of the package`},
		{"duplicate channel", func(idx *wireIndex) {
			p := pkgOf(idx, "flatpkg")
			p.Channels = append(p.Channels, p.Channels[0])
		}, `package "flatpkg": channel "stable" is listed twice`},
		{"bundle of an unknown package", func(idx *wireIndex) { bundleOf(idx, "flatpkg.v0.2.0").Package = "ghost" },
			`bundle ghost/flatpkg.v0.2.0: package "ghost" is not in the index`},
		{"duplicate package", func(idx *wireIndex) { idx.Packages = append(idx.Packages, pkgOf(idx, "jsonpkg")) },
			`package "jsonpkg": listed twice in the index`},
		{"package without bundles", func(idx *wireIndex) {
			idx.Bundles = slices.DeleteFunc(idx.Bundles, func(b *Bundle) bool { return b.Package == "jsonpkg" })
		}, `package "jsonpkg": no bundle of the index belongs to it`},
		{"escaping package name", func(idx *wireIndex) { idx.Packages[0].Name = "../x" }, `index packages[0]: name "../x": path escape`},
		{"escaping CSV name", func(idx *wireIndex) { idx.Bundles[0].CSVName = "a/b" }, `index bundles[0] of package "bundlepkg": csvName "a/b": path escape`},
		{"empty channel name", func(idx *wireIndex) { pkgOf(idx, "flatpkg").Channels[0].Name = "" }, `package "flatpkg": channel: name is empty`},
		{"null package", func(idx *wireIndex) { idx.Packages = append(idx.Packages, nil) }, "index packages[5] is null"},
		{"null bundle", func(idx *wireIndex) { idx.Bundles[3] = nil }, "index bundles[3] is null"},
		{"null channel", func(idx *wireIndex) { pkgOf(idx, "flatpkg").Channels[0] = nil }, `package "flatpkg": channels[0] is null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := overTheWire(t, dir)
			tt.change(idx)
			c, err := FromIndex(idx.Digest, idx.Packages, idx.Bundles, filesFrom(dir))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if c != nil {
				t.Error("a catalog came with the error")
			}
		})
	}
	idx := overTheWire(t, dir)
	if _, err := FromIndex(idx.Digest, idx.Packages, idx.Bundles, nil); err == nil {
		t.Error("no file source accepted")
	}
	// An empty catalog is a catalog.
	if c, err := FromIndex(catalogDigest(nil), nil, nil, filesFrom(dir)); err != nil || len(c.Packages()) != 0 || c.Package("x") != nil {
		t.Errorf("empty index: %v", err)
	}
}
