package registry

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/klauspost/compress/zstd"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// Bounds of a catalog image streamed to disk. Its layers are never held in memory, so
// their size is bounded only against a registry making the manager read without end.
const (
	// maxCatalogBytes bounds the bytes written for the files of the configs directory,
	// every layer together.
	maxCatalogBytes = 1 << 30
	// maxLayerUncompressed bounds one layer uncompressed: an OS or a binary is hundreds
	// of megabytes.
	maxLayerUncompressed = 4 << 30
	// maxZstdWindow bounds the window a zstd layer may need to be decompressed, the
	// memory the decompressor holds (zstd's own level 19 uses 8 MiB).
	maxZstdWindow = 16 << 20
)

// unpackCatalog pulls the image d pins (with index, of an index: its linux/amd64 image,
// or its only one; without, an index is refused) and writes the regular files under the
// directory its ConfigsLabel names (DefaultConfigsDir without one) into tmp, at their
// paths relative to that directory. The manifest and the config are read whole and
// checked as pullImage does; the layers are streamed, one after another, each read to its
// end: its compressed bytes are checked against the manifest's digest and its
// uncompressed bytes against the config's diff_id, and a mismatch wraps
// ociparts.ErrDigestMismatch. It returns the configs directory and how many files tmp
// holds at the end. On error tmp holds anything; the caller discards it. Errors name d.
func unpackCatalog(ctx context.Context, p *remote.Puller, d name.Digest, tmp string, index bool) (string, int, error) {
	desc, err := p.Get(ctx, d)
	if err != nil {
		return "", 0, explain("pulling", d.String(), err)
	}
	if err := checkBlob(desc.Manifest, d.DigestStr(), maxManifestSize, "the manifest"); err != nil {
		return "", 0, explain("pulling", d.String(), err)
	}
	if desc.MediaType.IsIndex() {
		if !index {
			return "", 0, fmt.Errorf("pulling %s: it is an image index within an image index, not an image", d)
		}
		im, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return "", 0, fmt.Errorf("pulling %s: the index: %w", d, err)
		}
		child, err := pickImage(im)
		if err != nil {
			return "", 0, fmt.Errorf("pulling %s: %w", d, err)
		}
		dir, n, err := unpackCatalog(ctx, p, d.Context().Digest(child.String()), tmp, false)
		if err != nil {
			return "", 0, fmt.Errorf("pulling %s: %w", d, err)
		}
		return dir, n, nil
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return "", 0, fmt.Errorf("pulling %s: the manifest (%s) is not an image manifest: %w", d, desc.MediaType, err)
	}
	if len(m.Layers) == 0 && m.Config.Digest.Hex == "" {
		return "", 0, fmt.Errorf("pulling %s: the manifest (%s) names no config and no layers: not an image manifest", d, desc.MediaType)
	}
	config, err := fetchBlob(ctx, p, d, m.Config, maxConfigSize, "the config")
	if err != nil {
		return "", 0, err
	}
	cf, err := v1.ParseConfigFile(bytes.NewReader(config))
	if err != nil {
		return "", 0, fmt.Errorf("pulling %s: the config: %w", d, err)
	}
	if len(cf.RootFS.DiffIDs) != len(m.Layers) {
		return "", 0, fmt.Errorf("pulling %s: %w: the manifest lists %d layers, the config %d diff_ids",
			d, ociparts.ErrDigestMismatch, len(m.Layers), len(cf.RootFS.DiffIDs))
	}
	for i, l := range m.Layers {
		if len(l.URLs) > 0 {
			return "", 0, fmt.Errorf("pulling %s: layer %d is a foreign layer, served from elsewhere; not supported", d, i)
		}
	}
	dir := cf.Config.Labels[ConfigsLabel]
	if dir == "" {
		dir = DefaultConfigsDir
	}
	x := &extractor{tmp: tmp, dir: strings.Trim(path.Clean("/"+dir), "/")}
	for i, l := range m.Layers {
		if err := x.layer(ctx, p, d, i, l, cf.RootFS.DiffIDs[i]); err != nil {
			return "", 0, err
		}
	}
	n, err := x.finish()
	if err != nil {
		return "", 0, fmt.Errorf("pulling %s: %w", d, err)
	}
	return dir, n, nil
}

// extractor writes the files of an image's configs directory, layer after layer, into a
// temporary directory holding only directories and regular files (never a link, so
// nothing written there is followed elsewhere).
type extractor struct {
	tmp   string
	dir   string // the configs directory: a clean slash path, no leading slash; "" for the root
	total int64  // bytes written, every layer together
}

// layer streams layer i of the image d, described by l, into x.tmp, checks it against
// l.Digest and diffID, and returns an error naming d and the layer.
func (x *extractor) layer(ctx context.Context, p *remote.Puller, d name.Digest, i int, l v1.Descriptor, diffID v1.Hash) error {
	what := fmt.Sprintf("layer %d (%s)", i, l.Digest)
	rl, err := p.Layer(ctx, d.Context().Digest(l.Digest.String()))
	if err != nil {
		return explain("pulling", d.String(), fmt.Errorf("%s: %w", what, err))
	}
	rc, err := rl.Compressed()
	if err != nil {
		return explain("pulling", d.String(), fmt.Errorf("%s: %w", what, err))
	}
	defer rc.Close()
	// One byte past the size the manifest gives tells a longer blob, without reading on.
	compressed := newHashReader(io.LimitReader(rc, max(l.Size, 0)+1))
	uncompressed, extractErr := x.extract(compressed)
	// Whatever happened, the blob is read to its end and checked first: content that is
	// not what the digest names explains a failure to decompress or unpack it, and the
	// layer is refused for it.
	_, drainErr := io.Copy(io.Discard, compressed)
	// go-containerregistry checks the digest too, and fails the last read when it differs.
	complete := drainErr == nil || isDigestError(drainErr)
	if complete && (compressed.n != l.Size || compressed.digest() != l.Digest.String()) {
		return fmt.Errorf("pulling %s: %w: %s is %d bytes with digest %s, the manifest names %d bytes with digest %s",
			d, ociparts.ErrDigestMismatch, what, compressed.n, compressed.digest(), l.Size, l.Digest)
	}
	if extractErr != nil {
		if compressed.err != nil {
			// Reading the blob failed (the network, a timeout), not the content in it.
			return explain("pulling", d.String(), fmt.Errorf("%s: %w", what, extractErr))
		}
		return fmt.Errorf("pulling %s: %s: %w", d, what, extractErr)
	}
	if drainErr != nil {
		return explain("pulling", d.String(), fmt.Errorf("%s: %w", what, drainErr))
	}
	if got := uncompressed.digest(); got != diffID.String() {
		return fmt.Errorf("pulling %s: %w: %s has digest %s uncompressed, the config names %s",
			d, ociparts.ErrDigestMismatch, what, got, diffID)
	}
	return nil
}

// extract decompresses the blob read from compressed (gzip, zstd, or a plain tar, told
// by its first bytes as go-containerregistry does), writes what its tar holds under the
// configs directory, and reads the uncompressed stream to its end, returned hashed.
func (x *extractor) extract(compressed io.Reader) (*hashReader, error) {
	br := bufio.NewReader(compressed)
	magic, err := br.Peek(4)
	if err != nil && err != io.EOF {
		return nil, err
	}
	var dec io.Reader = br
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		dec = zr
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		dec = zr
	}
	uncompressed := newHashReader(io.LimitReader(dec, maxLayerUncompressed+1))
	err = x.untar(tar.NewReader(uncompressed))
	if err == nil {
		// A tar reader stops at the end-of-archive blocks; the padding after them is part
		// of the diff_id, and the end of the stream checks gzip's checksum.
		_, err = io.Copy(io.Discard, uncompressed)
	}
	if uncompressed.n > maxLayerUncompressed {
		return nil, fmt.Errorf("it is more than the %d GiB allowed uncompressed", maxLayerUncompressed>>30)
	}
	if err != nil {
		return nil, err
	}
	return uncompressed, nil
}

// untar applies one layer's tar to x.tmp: regular files under the configs directory are
// written, whiteouts under it applied, and everything else skipped. A path is cleaned
// into the image's root as ociparts.Parts.Files does, and whiteouts apply in tar order as
// they do there.
func (x *extractor) untar(tr *tar.Reader) error {
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		base, parent := path.Base(name), path.Dir(name)
		if parent == "." {
			parent = ""
		}
		switch {
		case base == ".wh..wh..opq":
			if err := x.clear(parent); err != nil {
				return err
			}
			continue
		case strings.HasPrefix(base, ".wh."):
			if target, ok := ociparts.WhiteoutTarget(base); ok {
				if err := x.remove(path.Join(parent, target)); err != nil {
					return err
				}
			}
			continue
		}
		if name == "" {
			continue // the root itself: nothing replaces it
		}
		// As in an overlay filesystem (and ociparts.Parts.Files), an entry replaces what a
		// lower layer had at its path: a file or a link replaces a directory with all it
		// holds, a directory replaces a file. Links and devices are not kept, never followed.
		rel, ok := x.rel(name)
		switch {
		case h.Typeflag == tar.TypeDir:
			if ok && rel != "" {
				if err := x.dirAt(rel); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
		case !ok && !x.holdsDir(name):
			// Outside the configs directory: not written.
		case rel == "":
			// A file or a link where the configs directory (or a directory holding it) was.
			if err := clearDir(x.tmp); err != nil {
				return err
			}
		case h.Typeflag == tar.TypeReg:
			if err := x.write(rel, h.Size, tr); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		default:
			if err := x.dirAt(path.Dir(rel)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := missingOK(os.RemoveAll(filepath.Join(x.tmp, filepath.FromSlash(rel)))); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
}

// dirAt makes rel (a slash path relative to the configs directory; "." for it) and its
// parents directories, removing files of a lower layer in the way.
func (x *extractor) dirAt(rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) || rel != path.Clean(rel) {
		return fmt.Errorf("refusing the path %q: it leaves the catalog directory", rel)
	}
	p := x.tmp
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		switch {
		case err == nil && st.IsDir():
			continue
		case err == nil:
			if err := os.Remove(p); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// write writes the file rel (a slash path relative to the configs directory) of size
// bytes read from r.
func (x *extractor) write(rel string, size int64, r io.Reader) error {
	if !filepath.IsLocal(filepath.FromSlash(rel)) || rel != path.Clean(rel) {
		return fmt.Errorf("refusing the file %q: its path leaves the catalog directory", rel)
	}
	if size > ociparts.MaxFileSize {
		return fmt.Errorf("the file is %d bytes, more than the %d MiB allowed for one file", size, ociparts.MaxFileSize>>20)
	}
	if x.total+size > maxCatalogBytes {
		return fmt.Errorf("the files of the catalog directory %s are more than the %d MiB allowed", "/"+x.dir, maxCatalogBytes>>20)
	}
	target := filepath.Join(x.tmp, filepath.FromSlash(rel))
	if err := x.dirAt(path.Dir(rel)); err != nil {
		return err
	}
	if st, err := os.Lstat(target); err == nil && st.IsDir() {
		// A regular file of an upper layer replaces a directory of a lower one.
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, ociparts.MaxFileSize+1))
	x.total += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > ociparts.MaxFileSize {
		err = fmt.Errorf("the file is more than the %d MiB allowed for one file", ociparts.MaxFileSize>>20)
	}
	return err
}

// rel returns name (a clean slash path in the image, no leading slash) relative to the
// configs directory, and whether it is that directory ("") or under it.
func (x *extractor) rel(name string) (string, bool) {
	switch {
	case x.dir == "":
		return name, true
	case name == x.dir:
		return "", true
	case strings.HasPrefix(name, x.dir+"/"):
		return strings.TrimPrefix(name, x.dir+"/"), true
	}
	return "", false
}

// holdsDir reports whether the configs directory is under name (the root being "").
func (x *extractor) holdsDir(name string) bool {
	return name == "" || strings.HasPrefix(x.dir+"/", name+"/")
}

// remove applies the whiteout of name: it and everything under it are deleted.
func (x *extractor) remove(name string) error {
	rel, ok := x.rel(name)
	switch {
	case ok && rel != "":
		if !filepath.IsLocal(filepath.FromSlash(rel)) {
			// Never reached (WhiteoutTarget names a file); kept so no path outside x.tmp
			// is ever removed.
			return fmt.Errorf("refusing the whiteout of %q: it leaves the catalog directory", name)
		}
		return missingOK(os.RemoveAll(filepath.Join(x.tmp, filepath.FromSlash(rel))))
	case ok, x.holdsDir(name):
		return clearDir(x.tmp)
	}
	return nil
}

// clear applies the opaque whiteout of the directory name: everything under it is
// deleted.
func (x *extractor) clear(name string) error {
	if rel, ok := x.rel(name); ok {
		return clearDir(filepath.Join(x.tmp, filepath.FromSlash(rel)))
	}
	if x.holdsDir(name) {
		return clearDir(x.tmp)
	}
	return nil
}

// clearDir deletes what dir holds, if it is a directory.
func clearDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return missingOK(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// missingOK is err, or nil when it says a path does not exist (or goes through a file):
// a whiteout of what is not there removes nothing.
func missingOK(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	return err
}

// finish removes the directories whiteouts left empty and returns how many files x.tmp
// holds.
func (x *extractor) finish() (int, error) {
	files := 0
	var dirs []string
	err := filepath.WalkDir(x.tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if p != x.tmp {
				dirs = append(dirs, p)
			}
		case d.Type().IsRegular():
			files++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// Deepest first; a directory still holding something stays.
	for _, dir := range slices.Backward(dirs) {
		_ = os.Remove(dir)
	}
	return files, nil
}

// hashReader hashes (sha256) and counts what is read through it, and keeps the first
// error other than io.EOF of the reader it reads.
type hashReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error
}

func newHashReader(r io.Reader) *hashReader { return &hashReader{r: r, h: sha256.New()} }

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if err != nil && err != io.EOF && h.err == nil {
		h.err = err
	}
	return n, err
}

// digest is the digest ("sha256:<hex>") of what was read so far.
func (h *hashReader) digest() string { return "sha256:" + hex.EncodeToString(h.h.Sum(nil)) }
