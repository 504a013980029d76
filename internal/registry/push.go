package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Push writes img to the registry under ref (a tag, or a digest that must be img's) and
// returns img's digest. Blobs the repository has already are not sent again.
func Push(ctx context.Context, img v1.Image, ref string, o Options) (string, error) {
	r, err := name.ParseReference(ref, o.NameOptions()...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	if pinned, ok := r.(name.Digest); ok && pinned.DigestStr() != d.String() {
		return "", fmt.Errorf("pushing %s: the image has digest %s, not the one the reference names", ref, d)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout(DefaultImageTimeout))
	defer cancel()
	opts, err := o.RemoteOptions(ctx)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img, opts...); err != nil {
		return "", explain("pushing", ref, err)
	}
	return d.String(), nil
}

// catalogTime is the time of everything in a catalog image built here, so that the same
// files always give the same digest.
var catalogTime = time.Unix(0, 0).UTC()

// CatalogImageFrom builds a catalog image of a File-Based Catalog: files (slash paths
// relative to the catalog root) under DefaultConfigsDir in a single layer, the
// ConfigsLabel naming it, linux/amd64, and fixed timestamps and ownership, so the same
// files always give the same digest. A path that is absolute or leaves the root is
// refused.
func CatalogImageFrom(files map[string][]byte) (v1.Image, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("a catalog image needs at least one file")
	}
	root := strings.TrimPrefix(DefaultConfigsDir, "/")
	names := make([]string, 0, len(files))
	dirs := map[string]bool{root: true}
	for rel := range files {
		if rel == "" || rel != path.Clean(rel) || !filepath.IsLocal(filepath.FromSlash(rel)) || strings.Contains(rel, "\\") {
			return nil, fmt.Errorf("catalog file %q: the path must be relative, clean and inside the catalog", rel)
		}
		names = append(names, rel)
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			dirs[path.Join(root, d)] = true
		}
	}
	for _, rel := range names {
		if dirs[path.Join(root, rel)] {
			return nil, fmt.Errorf("catalog file %q: a directory of that name holds other files", rel)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(h *tar.Header) *tar.Header {
		h.ModTime, h.Uid, h.Gid, h.Format = catalogTime, 0, 0, tar.FormatPAX
		return h
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := tw.WriteHeader(hdr(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755})); err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	for _, rel := range names {
		data := files[rel]
		if err := tw.WriteHeader(hdr(&tar.Header{Typeflag: tar.TypeReg, Name: path.Join(root, rel), Mode: 0o644, Size: int64(len(data))})); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	layerBytes := gz.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: catalogTime}, CreatedBy: "operator-manager catalog mirror", Comment: "File-Based Catalog under " + DefaultConfigsDir},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = amd64.OS, amd64.Architecture
	cf.Created = v1.Time{Time: catalogTime}
	cf.Config.Labels = map[string]string{ConfigsLabel: DefaultConfigsDir}
	return mutate.ConfigFile(img, cf)
}
