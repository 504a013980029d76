// Package bundlecache keeps bundles on local disk by content digest, so that a version
// already installed once can be installed again, or rolled back to, with the catalog
// unreachable. Entries are verified against their digest on write and on read.
package bundlecache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/operator-manager/operator-manager/internal/atomicfile"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

// ErrNotCached is wrapped by Get for a digest the cache does not hold.
var ErrNotCached = errors.New("bundle not in the local cache")

// Cache is a directory of bundles, one file per digest.
type Cache struct{ Dir string }

type entry struct {
	Digest string         `json:"digest"`
	Files  []catalog.File `json:"files"`
}

func (c *Cache) path(digest string) (string, error) {
	if !catalog.ValidDigest(digest) {
		return "", fmt.Errorf("invalid bundle digest %q", digest)
	}
	return filepath.Join(c.Dir, strings.TrimPrefix(digest, "sha256:")+".json"), nil
}

// Put stores a bundle's files under digest, after checking they have that digest. It
// writes a temporary file and renames it, so a crash never leaves a torn entry.
func (c *Cache) Put(digest string, files []catalog.File) error {
	p, err := c.path(digest)
	if err != nil {
		return err
	}
	if err := catalog.VerifyFiles(files, digest); err != nil {
		return fmt.Errorf("caching bundle %s: %w", digest, err)
	}
	if _, err := os.Stat(p); err == nil {
		return nil // content-addressed: already there means already right
	}
	data, err := json.Marshal(entry{Digest: digest, Files: files})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(p, data, 0o644); err != nil {
		return fmt.Errorf("caching bundle %s in %s: %w", digest, c.Dir, err)
	}
	return nil
}

// Get returns the files of a cached bundle, checked against digest.
func (c *Cache) Get(digest string) ([]catalog.File, error) {
	p, err := c.path(digest)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotCached, digest)
	} else if err != nil {
		return nil, err
	}
	var e entry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("reading cached bundle %s: %w", p, err)
	}
	if err := catalog.VerifyFiles(e.Files, digest); err != nil {
		return nil, fmt.Errorf("cached bundle %s is corrupt: %w", p, err)
	}
	return e.Files, nil
}

// Delete removes a bundle from the cache (history retention prunes with it).
func (c *Cache) Delete(digest string) error {
	p, err := c.path(digest)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Entry is one cached bundle, as List reports it.
type Entry struct {
	Digest  string
	Path    string
	Size    int64
	ModTime time.Time
}

// List returns the cache's entries, oldest first; a missing directory is an empty cache.
// Files that are not entries (a torn temporary file of a Put) are left out.
func (c *Cache) List() ([]Entry, error) {
	return ListDir(c.Dir, ".json")
}

// ListDir lists the content-addressed files of dir named <64 hex digits><ext>, oldest
// first: the layout of this cache (".json") and of the HTTP catalog client (".tar").
func ListDir(dir, ext string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the bundle cache %s: %w", dir, err)
	}
	var out []Entry
	for _, de := range des {
		hex, ok := strings.CutSuffix(de.Name(), ext)
		if !ok || de.IsDir() || !catalog.ValidDigest("sha256:"+hex) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		out = append(out, Entry{Digest: "sha256:" + hex, Path: filepath.Join(dir, de.Name()), Size: info.Size(), ModTime: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ModTime.Before(out[j].ModTime) })
	return out, nil
}
