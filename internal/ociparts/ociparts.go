// Package ociparts holds an OCI image as the raw, content-addressed parts it is made of
// (manifest, config, uncompressed layers), checks them against the image's digest, and
// reads the files they hold.
//
// A bundle pulled from an image is kept as these parts rather than as the files they
// unpack to, so that a copy read back from the local cache, the cluster or an archive is
// checked by the same chain a registry pull is: the manifest's sha256 is the digest the
// catalog names, the manifest names the config's digest, and the config lists each
// layer's uncompressed digest (diff_id). Nothing in between is trusted.
package ociparts

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ErrDigestMismatch is wrapped when an image's parts do not match the digest they are
// pulled by, or one another. Waiting does not heal it: the source serves other content
// than it names.
var ErrDigestMismatch = errors.New("content does not match its digest")

// MaxLayerSize bounds one uncompressed layer: bundle images are kilobytes to a few
// megabytes, and a registry must not be able to make the manager read without end.
const MaxLayerSize = 64 << 20

// MaxFileSize bounds one file unpacked from a layer.
const MaxFileSize = 16 << 20

// Parts are the raw parts of one single-manifest image.
type Parts struct {
	// Manifest is the image manifest as served; its sha256 is the image digest.
	Manifest []byte
	// Config is the image config blob.
	Config []byte
	// Layers are the layers uncompressed, in manifest order.
	Layers [][]byte
}

// Source gives an image's parts by a reference pinned by digest (name@sha256:...).
type Source interface {
	Pull(ref string) (*Parts, error)
}

// DigestOf returns the digest a reference pins ("sha256:<hex>"), or an error naming the
// reference when it is a tag: a pull by tag could return other content each time.
func DigestOf(ref string) (string, error) {
	d, err := name.NewDigest(ref)
	if err != nil {
		if _, tagErr := name.NewTag(ref); tagErr == nil {
			return "", fmt.Errorf("image %q is referenced by tag; it must be referenced by digest (name@sha256:...) so that what was checked is what runs", ref)
		}
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	return d.DigestStr(), nil
}

// FromImage reads an image's parts. The caller checks them with Verify.
func FromImage(img v1.Image) (*Parts, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers: %w", err)
	}
	p := &Parts{Manifest: manifest, Config: config}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, fmt.Errorf("reading layer %d: %w", i, err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, MaxLayerSize+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("reading layer %d: %w", i, err)
		}
		if len(data) > MaxLayerSize {
			return nil, fmt.Errorf("layer %d is larger than %d MiB uncompressed", i, MaxLayerSize>>20)
		}
		p.Layers = append(p.Layers, data)
	}
	return p, nil
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Verify checks the chain from digest to every layer: the manifest hashes to digest, the
// config to the digest the manifest names, and each layer to its diff_id in the config.
func (p *Parts) Verify(digest string) error {
	if got := sha(p.Manifest); got != digest {
		return fmt.Errorf("%w: the manifest has digest %s, not %s", ErrDigestMismatch, got, digest)
	}
	m, err := v1.ParseManifest(bytes.NewReader(p.Manifest))
	if err != nil {
		return fmt.Errorf("image %s: the manifest is not an image manifest: %w", digest, err)
	}
	if len(m.Layers) == 0 && m.Config.Digest.Hex == "" {
		return fmt.Errorf("image %s: the manifest names no config and no layers (an image index? a bundle image is a single manifest)", digest)
	}
	if got := sha(p.Config); got != m.Config.Digest.String() {
		return fmt.Errorf("%w: image %s: the config has digest %s, the manifest names %s", ErrDigestMismatch, digest, got, m.Config.Digest)
	}
	cf, err := v1.ParseConfigFile(bytes.NewReader(p.Config))
	if err != nil {
		return fmt.Errorf("image %s: the config: %w", digest, err)
	}
	if len(cf.RootFS.DiffIDs) != len(p.Layers) || len(m.Layers) != len(p.Layers) {
		return fmt.Errorf("%w: image %s: %d layers held, the manifest lists %d and the config %d",
			ErrDigestMismatch, digest, len(p.Layers), len(m.Layers), len(cf.RootFS.DiffIDs))
	}
	for i, l := range p.Layers {
		if got := sha(l); got != cf.RootFS.DiffIDs[i].String() {
			return fmt.Errorf("%w: image %s: layer %d has digest %s uncompressed, the config names %s",
				ErrDigestMismatch, digest, i, got, cf.RootFS.DiffIDs[i])
		}
	}
	return nil
}

// Labels returns the image config's labels.
func (p *Parts) Labels() (map[string]string, error) {
	cf, err := v1.ParseConfigFile(bytes.NewReader(p.Config))
	if err != nil {
		return nil, err
	}
	return cf.Config.Labels, nil
}

// Files unpacks the layers in order into the image's filesystem and returns its regular
// files under dir ("" for all), by slash path relative to dir. Whiteouts delete what a
// lower layer put, and so does any entry at the same path (a file over a directory, a
// directory over a file, a link over either); links and devices are not kept, never
// followed, and paths leaving the root are cleaned into it.
func (p *Parts) Files(dir string) (map[string][]byte, error) {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	fs := map[string][]byte{}
	for i, layer := range p.Layers {
		tr := tar.NewReader(bytes.NewReader(layer))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("layer %d: %w", i, err)
			}
			name := strings.Trim(path.Clean("/"+h.Name), "/")
			base, parent := path.Base(name), path.Dir(name)
			switch {
			case base == ".wh..wh..opq":
				removeUnder(fs, parent)
				continue
			case strings.HasPrefix(base, ".wh."):
				if target, ok := WhiteoutTarget(base); ok {
					target = path.Join(parent, target)
					delete(fs, target)
					removeUnder(fs, target)
				}
				continue
			}
			if name == "" {
				continue // the root itself: nothing replaces it
			}
			// As in an overlay filesystem, an entry replaces what a lower layer had at its
			// path: a file or a link replaces a directory with all it holds, and a path's
			// parents are directories, replacing files of those names. Links, devices and
			// the like are not kept, but what they replace is gone all the same.
			dropFileParents(fs, name)
			switch h.Typeflag {
			case tar.TypeDir:
				delete(fs, name)
				continue
			case tar.TypeReg:
				removeUnder(fs, name)
			default:
				delete(fs, name)
				removeUnder(fs, name)
				continue
			}
			if h.Size > MaxFileSize {
				return nil, fmt.Errorf("layer %d: %s is larger than %d MiB", i, name, MaxFileSize>>20)
			}
			data, err := io.ReadAll(io.LimitReader(tr, MaxFileSize+1))
			if err != nil {
				return nil, fmt.Errorf("layer %d: %s: %w", i, name, err)
			}
			fs[name] = data
		}
	}
	out := map[string][]byte{}
	for name, data := range fs {
		switch {
		case dir == "":
			out[name] = data
		case strings.HasPrefix(name, dir+"/"):
			out[strings.TrimPrefix(name, dir+"/")] = data
		}
	}
	return out, nil
}

// WhiteoutTarget is the name a whiteout entry (base, ".wh.NAME") deletes beside it, and
// whether it names one: NAME must be a file name. ".wh." alone, ".wh.." and ".wh..." name
// nothing (the directory itself, or its parent, which a whiteout of it would reach
// outside its own directory), and are ignored.
func WhiteoutTarget(base string) (string, bool) {
	name, ok := strings.CutPrefix(base, ".wh.")
	if !ok || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", false
	}
	return name, true
}

// dropFileParents deletes the files at the parents of name: they are directories now.
func dropFileParents(fs map[string][]byte, name string) {
	for p := path.Dir(name); p != "." && p != "/" && p != ""; p = path.Dir(p) {
		delete(fs, p)
	}
}

func removeUnder(fs map[string][]byte, dir string) {
	prefix := dir + "/"
	if dir == "." || dir == "" {
		prefix = ""
	}
	for name := range fs {
		if strings.HasPrefix(name, prefix) {
			delete(fs, name)
		}
	}
}

// Size is the bytes the parts hold.
func (p *Parts) Size() int {
	n := len(p.Manifest) + len(p.Config)
	for _, l := range p.Layers {
		n += len(l)
	}
	return n
}
