package catalog

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// DefaultMaxFileSize bounds every file the loader reads. The largest file of the community
// catalog is a 0.9 MB CSV; 8 MiB leaves room while keeping a hostile or broken catalog
// from exhausting memory.
const DefaultMaxFileSize = 8 << 20

// fsReader reads files below a catalog root. Every open goes through an os.Root, so no
// path, symlink or "../" can reach outside the root; on top of that, symlinks are never
// followed at all, so what is loaded is exactly the tree a person sees with ls.
type fsReader struct {
	root    *os.Root
	maxSize int64
}

// readDir lists a directory sorted by name, without following symlinks.
func (r *fsReader) readDir(dir string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(r.root.FS(), dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	return entries, nil
}

// readFile reads a regular file given by its slash path relative to the root. The caller
// has seen it in a directory listing as a regular file; the file is checked again after
// opening, so a file swapped for something else in between is refused too.
func (r *fsReader) readFile(name string) ([]byte, error) {
	fi, err := r.root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %s", name, r.symlinkReason(name))
	}
	f, err := r.root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", name, fi.Mode().Type())
	}
	if fi.Size() > r.maxSize {
		return nil, fmt.Errorf("%s: %s", name, sizeReason(fi.Size(), r.maxSize))
	}
	// Read up to one byte past the limit so a file that grew after Stat is caught too.
	// The buffer is sized from Stat so a normal read does not reallocate.
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, r.maxSize+1)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(buf.Len()) > r.maxSize {
		return nil, fmt.Errorf("%s: %s", name, sizeReason(int64(buf.Len()), r.maxSize))
	}
	data := buf.Bytes()
	return data, nil
}

func sizeReason(size, limit int64) string {
	return fmt.Sprintf("file is %d bytes, over the size limit of %d bytes (%s)", size, limit, humanSize(limit))
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// symlinkReason says where a symlink points without following it.
func (r *fsReader) symlinkReason(name string) string {
	target, err := r.root.Readlink(name)
	if err != nil {
		return "symlink not followed (symlinks are never followed)"
	}
	where := "inside"
	if t := target; path.IsAbs(t) || escapes(path.Join(path.Dir(name), t)) {
		where = "outside"
	}
	return fmt.Sprintf("symlink to %q (%s the catalog root) not followed: symlinks are never followed", target, where)
}

// escapes reports whether a cleaned slash path relative to the root leaves it.
func escapes(p string) bool {
	p = path.Clean(p)
	return p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p)
}

// isManifestFile reports whether a file name has an extension the loader reads.
func isManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// isFile reports whether name is a regular file (not a symlink).
func (r *fsReader) isFile(name string) bool {
	st, err := r.root.Lstat(name)
	return err == nil && st.Mode().IsRegular()
}
