package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// File is one file of a bundle: its path relative to the bundle directory and its bytes.
type File struct {
	Name string
	Data []byte
}

// DigestFiles returns the content digest of a bundle, "sha256:<hex>". The files are taken
// in order of name; for each, the hash reads the name, a NUL, the length in decimal, a NUL
// and the bytes. The lengths make the encoding unambiguous, and names relative to the
// bundle directory make the digest independent of where the catalog is mounted, so it can
// key a cache shared by catalogs.
func DigestFiles(files []File) string {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	d := newDigester()
	for _, f := range sorted {
		d.add(f.Name, f.Data)
	}
	return d.sum()
}

// digester computes DigestFiles incrementally; files must be added in name order.
type digester struct{ h hash.Hash }

func newDigester() *digester { return &digester{h: sha256.New()} }

func (d *digester) add(name string, data []byte) {
	d.h.Write([]byte(name))
	d.h.Write([]byte{0})
	d.h.Write(strconv.AppendInt(nil, int64(len(data)), 10))
	d.h.Write([]byte{0})
	d.h.Write(data)
}

func (d *digester) sum() string { return "sha256:" + hex.EncodeToString(d.h.Sum(nil)) }

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether s is a digest as this package writes them. Callers that
// build paths or URLs from a digest check it first.
func ValidDigest(s string) bool { return digestRE.MatchString(s) }

// catalogDigest hashes what a consumer of the index can observe: every package with its
// default channel, channels, entries and edges, and every bundle's name, version, place
// and content digest. A change in a package file that moves a channel head changes it even
// though no bundle changed.
func catalogDigest(pkgs []*Package) string {
	h := sha256.New()
	line := func(fields ...string) {
		h.Write([]byte(strings.Join(fields, "\x00")))
		h.Write([]byte{'\n'})
	}
	for _, p := range pkgs {
		line("package", p.Name, p.DefaultChannel, string(p.Layout))
		// Deprecations are hashed only where there are some, so the digest of a catalog
		// without any is what it always was.
		if p.Deprecation != "" {
			line("package deprecated", p.Deprecation)
		}
		for _, c := range p.Channels {
			line("channel", c.Name, c.Head)
			if c.Deprecation != "" {
				line("channel deprecated", c.Deprecation)
			}
			for _, e := range c.Entries {
				line("entry", e.Name, e.Replaces, strings.Join(e.Skips, ","), e.SkipRange.Raw)
			}
		}
		for _, b := range p.Bundles {
			line("bundle", b.CSVName, b.Version.String(), b.RelPath, b.Digest)
			if b.Deprecation != "" {
				line("bundle deprecated", b.Deprecation)
			}
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ShortDigest is a digest as people read it: its algorithm and the first 12 hex digits
// ("sha256:11f1aa95ef4c"), as in tables and messages.
func ShortDigest(d string) string {
	if algo, hex, ok := strings.Cut(d, ":"); ok && len(hex) > 12 {
		return algo + ":" + hex[:12]
	}
	return d
}
