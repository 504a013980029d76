// Package migration is the archive `operator-manager export` writes and `import` reads:
// a cluster's installations (their Subscriptions as written, the version each runs, the
// revisions it retains) with the bundles of those revisions, so that another cluster can
// run the same operators at the same versions from the archive alone, without a catalog.
//
// The archive is a gzip-compressed tar: export.json (the installations) and one
// bundles/<sha256 hex>.json per bundle ({"digest", "files": [{"name", "data"}]}). Reading
// checks everything before anything is used: the format version, every bundle against
// its digest, every digest an installation names present, no other file, sizes bounded.
package migration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

// APIVersion names the archive's format; Read refuses any other.
const APIVersion = "operator-manager.domain/export/v1"

// Limits of what Read accepts, so a hostile archive cannot exhaust memory.
const (
	MaxTotalSize  = 512 << 20 // uncompressed, all entries together
	MaxEntrySize  = 64 << 20
	MaxEntries    = 10000
	indexName     = "export.json"
	bundlesPrefix = "bundles/"
)

// Archive is what export writes.
type Archive struct {
	APIVersion string    `json:"apiVersion"`
	ExportedAt time.Time `json:"exportedAt"`
	// Source is the API server the installations were exported from.
	Source        string         `json:"source,omitempty"`
	Installations []Installation `json:"installations"`
	// Bundles are the files of every bundle an installation names, by digest.
	Bundles map[string][]catalog.File `json:"-"`
}

// Installation is one Subscription and what it runs.
type Installation struct {
	Namespace   string                `json:"namespace"`
	Name        string                `json:"name"`
	Labels      map[string]string     `json:"labels,omitempty"`
	Annotations map[string]string     `json:"annotations,omitempty"`
	Spec        omv1.SubscriptionSpec `json:"spec"`
	// Package, CSV, Version and BundleDigest are what runs: import pins the installation
	// to exactly this bundle.
	Package      string `json:"package"`
	CSV          string `json:"csv"`
	Version      string `json:"version"`
	BundleDigest string `json:"bundleDigest"`
	// Catalog is the Blueprint's catalog (namespace/name), kept for later version changes.
	Catalog string `json:"catalog,omitempty"`
	// Dependencies are the Blueprint's resolved dependencies.
	Dependencies []omv1.ResolvedDependency `json:"dependencies,omitempty"`
	// DependsOn names the Subscriptions of the namespace this one needs (its
	// dependencies' installations): import installs those first.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Revisions are the retained revisions that succeeded, oldest first; their bundles
	// are in the archive too.
	Revisions []Revision `json:"revisions,omitempty"`
}

// Revision is a retained revision of an installation. Import starts the installation's
// history on the new cluster with these, so `history` and `rollback --to-revision` reach
// them there; the fields after BundleDigest are for that history's reader (an archive
// written before they were added has none).
type Revision struct {
	Revision     int64        `json:"revision"`
	CSV          string       `json:"csv"`
	Version      string       `json:"version"`
	BundleDigest string       `json:"bundleDigest"`
	Trigger      omv1.Trigger `json:"trigger,omitempty"`
	FromVersion  string       `json:"fromVersion,omitempty"`
	StartTime    *time.Time   `json:"startTime,omitempty"`
	EndTime      *time.Time   `json:"endTime,omitempty"`
	Message      string       `json:"message,omitempty"`
}

// Key is namespace/name.
func (i *Installation) Key() string { return i.Namespace + "/" + i.Name }

type bundleFile struct {
	Digest string     `json:"digest"`
	Files  []fileJSON `json:"files"`
}

type fileJSON struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// Write writes the archive. Every bundle an installation names must be in a.Bundles.
func Write(w io.Writer, a *Archive) error {
	if err := a.check(); err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: a.ExportedAt, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	a.APIVersion = APIVersion
	index, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := put(indexName, index); err != nil {
		return err
	}
	digests := make([]string, 0, len(a.Bundles))
	for d := range a.Bundles {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		b := bundleFile{Digest: d}
		for _, f := range a.Bundles[d] {
			b.Files = append(b.Files, fileJSON{Name: f.Name, Data: f.Data})
		}
		data, err := json.Marshal(b)
		if err != nil {
			return err
		}
		if err := put(bundleEntry(d), data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func bundleEntry(digest string) string {
	return bundlesPrefix + strings.TrimPrefix(digest, "sha256:") + ".json"
}

// Read reads and checks an archive; name is how errors call it (the file's path).
func Read(r io.Reader, name string) (*Archive, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: not a gzip-compressed export archive: %w", name, err)
	}
	tr := tar.NewReader(gz)
	a := &Archive{Bundles: map[string][]catalog.File{}}
	var index []byte
	total, entries := int64(0), 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading the archive: %w", name, err)
		}
		if entries++; entries > MaxEntries {
			return nil, fmt.Errorf("%s: more than %d entries", name, MaxEntries)
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s: entry %q is not a regular file", name, h.Name)
		}
		if h.Size < 0 || h.Size > MaxEntrySize {
			return nil, fmt.Errorf("%s: entry %q is %d bytes, more than %d", name, h.Name, h.Size, MaxEntrySize)
		}
		if total += h.Size; total > MaxTotalSize {
			return nil, fmt.Errorf("%s: more than %d bytes in all", name, MaxTotalSize)
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size+1))
		if err != nil {
			return nil, fmt.Errorf("%s: reading entry %q: %w", name, h.Name, err)
		}
		if int64(len(data)) != h.Size {
			return nil, fmt.Errorf("%s: entry %q is shorter or longer than its header says", name, h.Name)
		}
		switch {
		case h.Name == indexName:
			if index != nil {
				return nil, fmt.Errorf("%s: two %s entries", name, indexName)
			}
			index = data
		case strings.HasPrefix(h.Name, bundlesPrefix) && path.Dir(h.Name) == "bundles":
			d, files, err := readBundle(h.Name, data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if _, dup := a.Bundles[d]; dup {
				return nil, fmt.Errorf("%s: bundle %s twice", name, d)
			}
			a.Bundles[d] = files
		default:
			return nil, fmt.Errorf("%s: unexpected entry %q (an export archive holds %s and %s<digest>.json)", name, h.Name, indexName, bundlesPrefix)
		}
	}
	if index == nil {
		return nil, fmt.Errorf("%s: no %s: not an operator-manager export archive", name, indexName)
	}
	bundles := a.Bundles
	if err := json.Unmarshal(index, a); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, indexName, err)
	}
	a.Bundles = bundles
	if a.APIVersion != APIVersion {
		return nil, fmt.Errorf("%s: %s: apiVersion %q, this operator-manager reads %q", name, indexName, a.APIVersion, APIVersion)
	}
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, indexName, err)
	}
	return a, nil
}

// readBundle checks one bundle entry: its name, its JSON, and its files against the
// digest both name and content claim. It returns the digest and the files.
func readBundle(entry string, data []byte) (string, []catalog.File, error) {
	hex := strings.TrimSuffix(path.Base(entry), ".json")
	digest := "sha256:" + hex
	if !strings.HasSuffix(entry, ".json") || !catalog.ValidDigest(digest) {
		return "", nil, fmt.Errorf("entry %q: a bundle entry is named bundles/<64 hex digits>.json", entry)
	}
	var b bundleFile
	if err := json.Unmarshal(data, &b); err != nil {
		return "", nil, fmt.Errorf("entry %q: %w", entry, err)
	}
	if b.Digest != digest {
		return "", nil, fmt.Errorf("entry %q: says digest %q", entry, b.Digest)
	}
	files := make([]catalog.File, 0, len(b.Files))
	for _, f := range b.Files {
		files = append(files, catalog.File{Name: f.Name, Data: f.Data})
	}
	if err := catalog.VerifyFiles(files, digest); err != nil {
		return "", nil, fmt.Errorf("entry %q: %w: the archive is damaged or was altered", entry, err)
	}
	return digest, files, nil
}

// check verifies that the installations are well formed, each named once, and that
// every bundle they name is present.
func (a *Archive) check() error {
	seen := map[string]bool{}
	for i := range a.Installations {
		in := &a.Installations[i]
		where := fmt.Sprintf("installations[%d] (%s)", i, in.Key())
		switch {
		case in.Namespace == "" || in.Name == "":
			return fmt.Errorf("installations[%d]: namespace and name are required", i)
		case seen[in.Key()]:
			return fmt.Errorf("%s: named twice", where)
		case in.Package == "" || in.CSV == "":
			return fmt.Errorf("%s: package and csv are required", where)
		case !catalog.ValidDigest(in.BundleDigest):
			return fmt.Errorf("%s: bundleDigest %q is not a sha256 digest", where, in.BundleDigest)
		}
		seen[in.Key()] = true
		if _, ok := a.Bundles[in.BundleDigest]; !ok {
			return fmt.Errorf("%s: the bundle %s of %s is not in the archive", where, in.BundleDigest, in.CSV)
		}
		for j, r := range in.Revisions {
			if _, ok := a.Bundles[r.BundleDigest]; !ok {
				return fmt.Errorf("%s: revisions[%d]: the bundle %s of %s is not in the archive", where, j, r.BundleDigest, r.CSV)
			}
		}
	}
	for i := range a.Installations {
		in := &a.Installations[i]
		for _, d := range in.DependsOn {
			if !seen[in.Namespace+"/"+d] {
				return fmt.Errorf("installations[%d] (%s): dependsOn %q, which the archive does not hold", i, in.Key(), d)
			}
		}
	}
	return nil
}

// Ordered returns the installations in the order import makes them: each after those
// it depends on, else by namespace and name. A cycle is an error naming it.
func (a *Archive) Ordered() ([]*Installation, error) {
	byKey := map[string]*Installation{}
	var keys []string
	for i := range a.Installations {
		in := &a.Installations[i]
		byKey[in.Key()] = in
		keys = append(keys, in.Key())
	}
	sort.Strings(keys)
	var out []*Installation
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(k string, path []string) error
	visit = func(k string, path []string) error {
		switch state[k] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("installations depend on each other in a cycle: %s", strings.Join(append(path, k), " -> "))
		}
		state[k] = 1
		in := byKey[k]
		var deps []string
		for _, d := range in.DependsOn {
			deps = append(deps, in.Namespace+"/"+d)
		}
		for _, d := range in.Dependencies {
			// Met by an installation of another namespace (one watching this one too):
			// first as well, when the archive holds it.
			if _, ok := byKey[d.ServedFrom]; ok && d.ServedFrom != k {
				deps = append(deps, d.ServedFrom)
			}
		}
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d, append(path, k)); err != nil {
				return err
			}
		}
		state[k] = 2
		out = append(out, in)
		return nil
	}
	for _, k := range keys {
		if err := visit(k, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Marshal is Write into memory.
func Marshal(a *Archive) ([]byte, error) {
	var buf bytes.Buffer
	err := Write(&buf, a)
	return buf.Bytes(), err
}
