package catalogsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"github.com/operator-manager/operator-manager/internal/registry"
)

// Under Reconciler.CacheDir, Image sources keep the File-Based Catalogs unpacked from
// their catalog images, one directory per image digest, and every bundle image pulled, in
// one OCI image layout. Both are content-addressed, so all sources share them.
const (
	ImageCatalogsSubdir = "catalog-images"
	BundleImagesSubdir  = "bundle-images"
)

// imageSource is what the controller remembers of an Image source between polls.
type imageSource struct {
	// key says what the catalog was built from: the image digest and the registry
	// settings (spec and pull secret), so a changed secret rebuilds the bundle puller.
	key string
	dir string
	cat *catalog.Catalog
}

// imageSources holds the imageSource of each CatalogSource.
type imageSources struct {
	mu      sync.Mutex
	sources map[types.NamespacedName]*imageSource
}

func (s *imageSources) get(key types.NamespacedName) *imageSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sources[key]
}

func (s *imageSources) set(key types.NamespacedName, src *imageSource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sources == nil {
		s.sources = map[types.NamespacedName]*imageSource{}
	}
	s.sources[key] = src
}

func (s *imageSources) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sources, key)
}

// inUse lists the unpacked catalog directories the sources hold.
func (s *imageSources) inUse() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	dirs := map[string]bool{}
	for _, src := range s.sources {
		dirs[filepath.Clean(src.dir)] = true
	}
	return dirs
}

func (r *Reconciler) cacheRoot() string {
	if r.CacheDir == "" {
		return filepath.Join(os.TempDir(), "operator-manager")
	}
	return r.CacheDir
}

// registryOptions builds how to reach the source's registry: the spec's settings and the
// pull secret, read from the API server (the manager caches no Secrets).
func (r *Reconciler) registryOptions(ctx context.Context, cs *omv1.CatalogSource) (registry.Options, string, error) {
	o := registry.Options{UserAgent: "operator-manager"}
	settings := ""
	if reg := cs.Spec.Registry; reg != nil {
		o.Insecure, o.CABundle = reg.Insecure, []byte(reg.CABundle)
		settings = fmt.Sprintf("insecure=%t ca=%d", reg.Insecure, len(reg.CABundle))
	}
	names := cs.Spec.PullSecrets()
	if len(names) == 0 {
		return o, settings, nil
	}
	var configs [][]byte
	for i, name := range names {
		field := "spec.pullSecret"
		if i > 0 || cs.Spec.PullSecret == "" {
			field = "spec.secrets"
		}
		sec := &corev1.Secret{}
		key := types.NamespacedName{Namespace: cs.Namespace, Name: name}
		if err := r.reader().Get(ctx, key, sec); err != nil {
			if apierrors.IsNotFound(err) {
				return o, "", fmt.Errorf("%s: Secret %s not found", field, key)
			}
			return o, "", fmt.Errorf("%s: reading Secret %s: %w", field, key, err)
		}
		data, err := PullSecretConfig(sec)
		if err != nil {
			return o, "", fmt.Errorf("%s: %w", field, err)
		}
		configs = append(configs, data)
		settings += " secret=" + sec.Name + "@" + sec.ResourceVersion
	}
	data, err := MergeDockerConfigs(configs)
	if err != nil {
		return o, "", err
	}
	o.DockerConfig = data
	return o, settings, nil
}

// MergeDockerConfigs joins the credentials of several pull Secrets (each a .dockerconfigjson
// or a legacy .dockercfg) into one .dockerconfigjson; for a registry named twice the first
// Secret's credentials count, as the kubelet takes the first that matches.
func MergeDockerConfigs(configs [][]byte) ([]byte, error) {
	if len(configs) == 1 {
		return configs[0], nil
	}
	auths := map[string]json.RawMessage{}
	for i, data := range configs {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("pull Secret %d of %d is not a docker config: %w", i+1, len(configs), err)
		}
		entries := doc
		if raw, ok := doc["auths"]; ok { // .dockerconfigjson; a .dockercfg is the map itself
			entries = nil
			if err := json.Unmarshal(raw, &entries); err != nil {
				return nil, fmt.Errorf("pull Secret %d of %d: auths: %w", i+1, len(configs), err)
			}
		}
		for registry, auth := range entries {
			if _, ok := auths[registry]; !ok {
				auths[registry] = auth
			}
		}
	}
	return json.Marshal(map[string]any{"auths": auths})
}

// PullSecretConfig is the docker config a pull Secret holds: its .dockerconfigjson (a
// kubernetes.io/dockerconfigjson Secret) or, as the kubelet also accepts, the legacy
// .dockercfg (kubernetes.io/dockercfg). The manager and the console read a Secret the
// same way, so a catalog the console can browse is one the manager can pull.
func PullSecretConfig(sec *corev1.Secret) ([]byte, error) {
	for _, k := range []string{corev1.DockerConfigJsonKey, corev1.DockerConfigKey} {
		if data, ok := sec.Data[k]; ok {
			return data, nil
		}
	}
	return nil, fmt.Errorf("Secret %s/%s has neither a %s key (type %s) nor a %s key (type %s)", sec.Namespace, sec.Name,
		corev1.DockerConfigJsonKey, corev1.SecretTypeDockerConfigJson, corev1.DockerConfigKey, corev1.SecretTypeDockercfg)
}

// loadImage polls an Image source: one HEAD request for the digest the reference names
// now. An unchanged digest, with the same registry settings, returns prev and costs
// nothing else; a new one is pulled (once per digest: unpacked catalogs are kept by
// digest) and loaded, its bundles pulled from their images when first needed.
func (r *Reconciler) loadImage(ctx context.Context, key types.NamespacedName, cs *omv1.CatalogSource, prev *catalog.Catalog) (*catalog.Catalog, string, bool, error) {
	ref := strings.TrimSpace(cs.Spec.Image)
	if ref == "" {
		return nil, "", false, errors.New("spec.image is required when spec.sourceType is Image")
	}
	opts, settings, err := r.registryOptions(ctx, cs)
	if err != nil {
		return nil, "", false, err
	}
	digest, err := registry.Resolve(ctx, ref, opts)
	if err != nil {
		return nil, "", false, fmt.Errorf("catalog image %s: %w", ref, err)
	}
	resolved, err := pinned(ref, digest, opts)
	if err != nil {
		return nil, "", false, err
	}
	stateKey := resolved + " " + settings
	if src := r.images.get(key); src != nil && src.key == stateKey && prev != nil && src.cat == prev {
		return prev, resolved, false, nil
	}
	cat, ci, err := LoadImage(ctx, resolved, opts, r.cacheRoot())
	if err != nil {
		return nil, "", false, fmt.Errorf("catalog image %s: %w", ref, err)
	}
	r.images.set(key, &imageSource{key: stateKey, dir: ci.Dir, cat: cat})
	r.pruneCatalogImages(ci.Dir, prev)
	return cat, resolved, true, nil
}

// LoadImage pulls the catalog image ref (unpacked once per digest under
// cacheRoot/ImageCatalogsSubdir) and loads its catalog, whose bundles are pulled from their
// images when read and kept in the layout cacheRoot/BundleImagesSubdir. The manager, the
// CLI and the console read catalog images this one way.
func LoadImage(ctx context.Context, ref string, o registry.Options, cacheRoot string) (*catalog.Catalog, *registry.CatalogImage, error) {
	ci, err := registry.PullCatalog(ctx, ref, o, filepath.Join(cacheRoot, ImageCatalogsSubdir))
	if err != nil {
		return nil, nil, err
	}
	bundles := &registry.Bundles{Options: o, Cache: ociparts.Layout{Dir: filepath.Join(cacheRoot, BundleImagesSubdir)}}
	cat, err := catalog.Load(ci.Dir, catalog.Options{Images: bundles})
	if err != nil {
		return nil, nil, err
	}
	return cat, ci, nil
}

// pinned returns the reference by digest: repository@digest.
func pinned(ref, digest string, o registry.Options) (string, error) {
	r, err := name.ParseReference(ref, o.NameOptions()...)
	if err != nil {
		return "", fmt.Errorf("spec.image %q: %w", ref, err)
	}
	return r.Context().Name() + "@" + digest, nil
}

// pruneAfter is how long an unpacked catalog no source uses is kept.
const pruneAfter = 10 * time.Minute

// pruneCatalogImages removes unpacked catalogs no source uses, keeping the one just
// loaded and the one it replaces (a reader may still hold it for a moment).
func (r *Reconciler) pruneCatalogImages(current string, prev *catalog.Catalog) {
	keep := r.images.inUse()
	keep[filepath.Clean(current)] = true
	if prev != nil && prev.Root != "" {
		keep[filepath.Clean(prev.Root)] = true
	}
	root := filepath.Join(r.cacheRoot(), ImageCatalogsSubdir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || keep[dir] {
			continue
		}
		// Only what has lain unused a while: another source may be loading a catalog
		// it has just unpacked and not yet recorded.
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > pruneAfter {
			_ = os.RemoveAll(dir)
		}
	}
}
