package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ConfigsLabel is the catalog image label naming the directory of its filesystem that
// holds its File-Based Catalog (operator-registry's name).
const ConfigsLabel = "operators.operatorframework.io.index.configs.v1"

// DefaultConfigsDir is where a catalog image keeps its File-Based Catalog when it has no
// ConfigsLabel, as opm's images do.
const DefaultConfigsDir = "/configs"

// CatalogImage is a catalog image unpacked on disk.
type CatalogImage struct {
	// Ref is the reference as asked (a tag or a digest).
	Ref string
	// Digest is the digest Ref pointed at ("sha256:<hex>"): of the image, or of the
	// index the image was chosen from.
	Digest string
	// Dir holds the files of the image's configs directory, at the same relative paths.
	// It is named by Digest and never changes once written.
	Dir string
}

// PullCatalog unpacks the File-Based Catalog of the catalog image ref into
// cacheDir/<hex of its digest>/ and returns where. A tag is resolved to the digest it
// points at now; when the directory of that digest exists it is reused as it is, without
// a pull (a digest reference then costs no request at all). Otherwise the image (of an
// index: its linux/amd64 image, or its only one) is pulled by digest, checked from the
// digest down to every layer, and the files under the directory its ConfigsLabel names
// (DefaultConfigsDir without one) are written to a temporary directory renamed into
// place, so a crash never leaves a half-written directory behind. The layers are
// streamed, never held in memory: each is read to its end, its compressed bytes checked
// against the manifest's digest and its uncompressed bytes against the config's diff_id,
// so a layer of any size (an OS, the opm binary) costs only what its catalog files weigh
// on disk. Content that does not match its digest gives an error wrapping
// ociparts.ErrDigestMismatch, and nothing is renamed into place.
func PullCatalog(ctx context.Context, ref string, o Options, cacheDir string) (*CatalogImage, error) {
	if cacheDir == "" {
		return nil, fmt.Errorf("catalog image %s: no directory to unpack it in", ref)
	}
	r, err := name.ParseReference(ref, o.NameOptions()...)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout(DefaultImageTimeout))
	defer cancel()
	digest := ""
	if d, ok := r.(name.Digest); ok {
		digest = d.DigestStr()
	}
	var pl *remote.Puller // made once a request is needed
	puller := func() (*remote.Puller, error) {
		var err error
		if pl == nil {
			pl, err = o.puller(ctx)
		}
		return pl, err
	}
	if digest == "" {
		p, err := puller()
		if err != nil {
			return nil, err
		}
		if digest, err = resolve(ctx, p, r); err != nil {
			return nil, err
		}
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	ci := &CatalogImage{Ref: ref, Digest: digest, Dir: filepath.Join(cacheDir, h.Hex)}
	if st, err := os.Stat(ci.Dir); err == nil && st.IsDir() {
		return ci, nil
	}
	p, err := puller()
	if err != nil {
		return nil, err
	}
	var dir string
	var files int
	err = stageDir(cacheDir, h.Hex, func(tmp string) error {
		var err error
		if dir, files, err = unpackCatalog(ctx, p, r.Context().Digest(digest), tmp, true); err != nil {
			return err
		}
		if files == 0 {
			return errNoFiles
		}
		return nil
	})
	switch {
	case errors.Is(err, errNoFiles):
		return nil, fmt.Errorf("catalog image %s (%s) holds no file under %s: not a File-Based Catalog image? (its label %s names the directory)", ref, digest, dir, ConfigsLabel)
	case err != nil:
		return nil, fmt.Errorf("catalog image %s: %w", ref, err)
	}
	return ci, nil
}

// errNoFiles is returned to stageDir when a catalog image holds no file to keep.
var errNoFiles = errors.New("no file to keep")

// tmpPrefix starts the name of a directory being written in a cache directory; such a
// directory older than staleTmp is left over from a crash and removed.
const (
	tmpPrefix = ".tmp-"
	staleTmp  = time.Hour
)

// stageDir writes parent/name through a temporary directory that fill writes and that
// is renamed into place once fill succeeds; when fill fails, it is removed and the error
// returned. When another writer renamed its own first, that one is kept: both hold the
// same content, by digest.
func stageDir(parent, name string, fill func(tmp string) error) error {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	removeStaleTmp(parent)
	tmp, err := os.MkdirTemp(parent, tmpPrefix+name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := fill(tmp); err != nil {
		return err
	}
	final := filepath.Join(parent, name)
	if err := os.Rename(tmp, final); err != nil {
		if st, serr := os.Stat(final); serr == nil && st.IsDir() {
			return nil
		}
		return err
	}
	return nil
}

// writeDir writes files (slash paths) into parent/name through stageDir.
func writeDir(parent, name string, files map[string][]byte) error {
	return stageDir(parent, name, func(tmp string) error {
		for rel, data := range files {
			if !filepath.IsLocal(filepath.FromSlash(rel)) || rel != path.Clean(rel) {
				return fmt.Errorf("refusing the file %q: its path leaves the catalog directory", rel)
			}
			target := filepath.Join(tmp, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(target, data, 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}

// removeStaleTmp removes the temporary directories of writers that crashed.
func removeStaleTmp(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTmp {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}
