// Package digestdir writes a catalog the manager made from another source (a registry
// server's answers, a ConfigMap's keys) into a directory named by the digest of its
// content, so that catalog.Load reads it like any catalog on disk, an unchanged catalog
// is the same directory (written once, found again by its fingerprint), and a reader of
// the previous one never sees it change under it.
package digestdir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write makes a temporary directory under root, has fill write the catalog into it, and
// renames it to root/<digest of its files>, which it returns. Directories of root other
// than that one and keep are removed, so root holds at most the current and the
// previous catalog (and nothing a crash left half written).
func Write(root, keep string, fill func(dir string) error) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".write-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // gone once renamed
	if err := fill(tmp); err != nil {
		return "", err
	}
	sum, err := digest(tmp)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, sum)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(tmp, dir); err != nil {
			return "", err
		}
	}
	prune(root, dir, keep)
	return dir, nil
}

// AppendFile appends data to the file name, making its directory first.
func AppendFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// digest hashes every file of dir (names and contents, in name order).
func digest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// prune removes the directories of root other than dir and keep.
func prune(root, dir, keep string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		if p != dir && p != keep && e.IsDir() {
			_ = os.RemoveAll(p)
		}
	}
}
