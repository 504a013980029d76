package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// Options tune loading. The zero value is ready to use.
type Options struct {
	// MaxFileSize bounds every file read; a bundle with a larger file is rejected.
	// Zero means DefaultMaxFileSize.
	MaxFileSize int64
	// Workers bounds the goroutines reading bundles. Zero means GOMAXPROCS.
	Workers int
	// Images pulls the bundle images of File-Based Catalog bundles whose manifests are
	// only in their image. Nil means the catalog root's images/ OCI layout when it has
	// one (a mirrored catalog), else such bundles have no content (ErrNoContent).
	Images ociparts.Source
}

// same reports whether two Options load alike. Images are the same source only when
// they are one comparable value (a pointer, or a Layout of the same directory): a value
// holding slices cannot be compared, and is taken for a different source.
func (o Options) same(p Options) bool {
	if o.MaxFileSize != p.MaxFileSize || o.Workers != p.Workers {
		return false
	}
	if o.Images == nil || p.Images == nil {
		return o.Images == nil && p.Images == nil
	}
	ta, tb := reflect.TypeOf(o.Images), reflect.TypeOf(p.Images)
	return ta == tb && ta.Comparable() && o.Images == p.Images
}

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// Catalog is the index of one catalog directory (Load) or of a remote catalog's index
// (FromIndex): packages, channels, upgrade edges and bundle metadata. It holds no manifest
// content; Content reads it back on demand. A Catalog is immutable once built and safe
// for concurrent use.
type Catalog struct {
	// Root is the absolute path of the catalog directory; empty for FromIndex.
	Root string
	// Digest is "sha256:<hex>" over the index (see catalogDigest): equal digests mean
	// equal packages, channels, edges and bundle contents.
	Digest string
	// Rejections lists what could not be used and why; the rest is loaded.
	Rejections []Rejection
	// Warnings lists what was loaded with a caveat (an ambiguous channel head, a
	// dependency type the resolver does not evaluate).
	Warnings []Rejection

	opts        Options
	fingerprint string
	// files reads a bundle's files for a catalog built by FromIndex; nil for a directory.
	files func(*Bundle) ([]File, error)
	// images pulls the images of image-only bundles; nil when the catalog has no source.
	images    ociparts.Source
	packages  []*Package
	pkgByName map[string]*Package
	bundles   []*Bundle
	byCSV     map[string]*Bundle
	byDigest  map[string]*Bundle
	byGVK     map[GVK][]*Bundle
}

// Load reads and indexes the catalog in dir. It fails only when dir itself cannot be
// read; bad packages and bundles are listed in Rejections and the rest loads. Nothing
// outside dir is read: every file is opened through an os.Root, and symlinks are never
// followed.
func Load(dir string, opts Options) (*Catalog, error) {
	opts = opts.withDefaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("loading catalog %s: %w", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("loading catalog: %w", err)
	}
	defer root.Close()
	r := &fsReader{root: root, maxSize: opts.MaxFileSize}
	// The fingerprint is taken before reading, so a change made during the load shows
	// as a change at the next LoadIfChanged rather than being missed.
	fp, err := fingerprint(r)
	if err != nil {
		return nil, fmt.Errorf("loading catalog %s: %w", abs, err)
	}
	p, err := discover(r)
	if err != nil {
		return nil, fmt.Errorf("loading catalog %s: %w", abs, err)
	}
	bundleDirs := p.bundleDirs()
	bundleResults := make([]bundleResult, len(bundleDirs))
	fbcResults := make([]fbcFileResult, len(p.fbcFiles))
	parallel(len(bundleDirs)+len(p.fbcFiles), opts.Workers, func(i int) {
		if i < len(bundleDirs) {
			bundleResults[i] = loadBundleDir(r, bundleDirs[i].dir)
			return
		}
		i -= len(bundleDirs)
		fbcResults[i] = loadFBCFile(r, p.fbcFiles[i])
	})
	cat := assemble(p, bundleDirs, bundleResults, fbcResults)
	cat.Root, cat.opts, cat.fingerprint = abs, opts, fp
	cat.images = opts.Images
	if cat.images == nil && ociparts.IsLayout(filepath.Join(abs, ImagesDir)) {
		cat.images = ociparts.Layout{Dir: filepath.Join(abs, ImagesDir)}
	}
	return cat, nil
}

// bundleDirJob is a version directory to read and the package directory it belongs to.
type bundleDirJob struct {
	dir string
	pkg *pkgDir
}

func (p *plan) bundleDirs() []bundleDirJob {
	var jobs []bundleDirJob
	for _, pd := range p.pkgs {
		for _, v := range pd.versionDirs {
			jobs = append(jobs, bundleDirJob{dir: v, pkg: pd})
		}
	}
	return jobs
}

// parallel calls fn(0..n-1) on at most workers goroutines. Results go to index i of a
// slice the caller owns, so the outcome does not depend on scheduling.
func parallel(n, workers int, fn func(i int)) {
	workers = max(1, min(workers, n))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}
