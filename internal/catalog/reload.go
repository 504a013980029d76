package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// fingerprint hashes the tree's shape without reading any file: for every entry below the
// root (hidden ones and what symlinks point to excluded, as in loading), its slash path,
// type, size and modification time in nanoseconds.
func fingerprint(r *fsReader) (string, error) {
	h := sha256.New()
	var line []byte
	err := fs.WalkDir(r.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line = append(line[:0], p...)
		line = append(line, 0)
		line = strconv.AppendUint(line, uint64(info.Mode().Type()), 10)
		line = append(line, 0)
		line = strconv.AppendInt(line, info.Size(), 10)
		line = append(line, 0)
		line = strconv.AppendInt(line, info.ModTime().UnixNano(), 10)
		line = append(line, '\n')
		h.Write(line)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("fingerprinting: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// LoadIfChanged returns previous, unchanged, when dir is the directory previous was loaded
// from, with the same options, and its fingerprint is the same: the same set of paths
// (files, directories and symlinks, hidden entries excluded), each with the same type,
// size and modification time. It then costs one directory walk and no file reads.
// Otherwise it loads dir afresh. changed reports which happened.
//
// The fingerprint cannot see a file rewritten with the same size within the
// filesystem's timestamp granularity, or whose mtime was restored; a caller that must be
// certain calls Load and compares Digest.
func LoadIfChanged(dir string, previous *Catalog, opts Options) (cat *Catalog, changed bool, err error) {
	opts = opts.withDefaults()
	if previous == nil || !previous.opts.same(opts) {
		cat, err = Load(dir, opts)
		return cat, true, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, false, fmt.Errorf("loading catalog %s: %w", dir, err)
	}
	if abs == previous.Root {
		root, err := os.OpenRoot(abs)
		if err != nil {
			return nil, false, fmt.Errorf("loading catalog: %w", err)
		}
		fp, err := fingerprint(&fsReader{root: root, maxSize: opts.MaxFileSize})
		root.Close()
		if err != nil {
			return nil, false, fmt.Errorf("loading catalog %s: %w", abs, err)
		}
		if fp == previous.fingerprint {
			return previous, false, nil
		}
	}
	cat, err = Load(dir, opts)
	return cat, true, err
}

// Fingerprint returns the fast fingerprint LoadIfChanged compares, for logs and tests.
func (c *Catalog) Fingerprint() string { return c.fingerprint }

// String summarises the catalog for logs.
func (c *Catalog) String() string {
	source := c.Root
	if source == "" {
		source = "index"
	}
	return source + ": " + strconv.Itoa(len(c.packages)) + " packages, " + strconv.Itoa(len(c.bundles)) +
		" bundles, " + strconv.Itoa(len(c.Rejections)) + " rejected, digest " + c.Digest
}
