package remote

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// MaxArchiveSize bounds a bundle archive read from the network or the cache. The largest
// community bundle is about 2 MB.
const MaxArchiveSize = 64 << 20

// writeArchive writes a bundle's files as an uncompressed tar, in the order given (the
// catalog's sorted order), with fixed metadata so equal bundles give equal bytes.
func writeArchive(w io.Writer, files []catalog.File) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Name, Mode: 0o644, Size: int64(len(f.Data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing %s to the archive: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return fmt.Errorf("writing %s to the archive: %w", f.Name, err)
		}
	}
	return tw.Close()
}

// readArchive reads a bundle archive from an untrusted source: only regular files with
// clean relative names, no duplicates, MaxArchiveSize in all.
func readArchive(data []byte) ([]catalog.File, error) {
	if len(data) > MaxArchiveSize {
		return nil, fmt.Errorf("archive is %d bytes, over the limit of %d", len(data), MaxArchiveSize)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var files []catalog.File
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("archive entry %q is not a regular file", hdr.Name)
		}
		if !cleanRelative(hdr.Name) {
			return nil, fmt.Errorf("archive entry %q is not a clean relative path", hdr.Name)
		}
		if seen[hdr.Name] {
			return nil, fmt.Errorf("archive entry %q appears twice", hdr.Name)
		}
		seen[hdr.Name] = true
		body, err := io.ReadAll(io.LimitReader(tr, MaxArchiveSize))
		if err != nil {
			return nil, fmt.Errorf("reading archive entry %q: %w", hdr.Name, err)
		}
		files = append(files, catalog.File{Name: hdr.Name, Data: body})
	}
}

func cleanRelative(name string) bool {
	return name != "" && !path.IsAbs(name) && path.Clean(name) == name && name != ".." &&
		!strings.HasPrefix(name, "../") && !strings.ContainsAny(name, "\\\x00")
}
