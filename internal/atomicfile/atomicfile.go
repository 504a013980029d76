// Package atomicfile writes a file whole or not at all: into a temporary file in the
// same directory, synced, then renamed over the target. A reader (another replica on a
// shared disk, the manager after a crash) finds the previous file or the new one, never
// half of one, and a failed write leaves no debris.
//
// Whole directories made this way (digestdir, registry, mirror) rename a directory
// instead and keep their own code: what to do when the target exists differs for each.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write writes data to path with mode perm, creating the directory as needed.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc writes what write produces to path with mode perm. The temporary file is
// named after the target and hidden (".NAME-*"), so that two writers never share one and
// a directory listing can tell it from the real thing.
func WriteFunc(path string, perm os.FileMode, write func(io.Writer) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+base+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	// Synced before the rename: otherwise a crash can leave the new name on an empty file.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600 whatever the umask; the target's mode is the caller's.
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
