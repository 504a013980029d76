package catalog

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
)

// pkgDir is a package directory as found on disk, before its bundles are read.
type pkgDir struct {
	dir      string
	layout   Layout // LayoutPackageManifest, LayoutBundle or LayoutFlat; FBC dirs are not pkgDirs
	pkgFile  string
	manifest *packageManifest
	// semverMode is set by updateGraph: semver-mode in the package's ci.yaml (the
	// community-operators convention): the graph follows version order.
	semverMode  bool
	versionDirs []string
}

// plan is the result of walking the catalog's directories: what to read, and what was
// already refused.
type plan struct {
	pkgs       []*pkgDir
	fbcFiles   []string
	rejections []Rejection
	warnings   []Rejection
}

func (p *plan) reject(at, reason string) {
	p.rejections = append(p.rejections, Rejection{Path: at, Reason: reason})
}

// discover lists the root and each package directory and decides each one's layout:
// a *.package.yaml makes the package-manifest layout; else a catalog file (catalog.*,
// index.*, or any YAML/JSON holding olm.* schema blobs) makes it File-Based; else version
// directories with a manifests/ folder make the bundle layout, and without, the flat one.
// Hidden entries (.git) are skipped; symlinks are reported, never followed.
func discover(r *fsReader) (*plan, error) {
	entries, err := r.readDir(".")
	if err != nil {
		return nil, err
	}
	p := &plan{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
		case e.Type()&fs.ModeSymlink != 0:
			p.reject(name, r.symlinkReason(name))
		case e.IsDir() && name == ImagesDir && r.isFile(path.Join(name, "oci-layout")):
			// A mirrored catalog's bundle images (an OCI layout), read on demand.
		case e.IsDir():
			p.discoverPackage(r, name)
		case e.Type().IsRegular() && isManifestFile(name) && isFBCFile(r, name):
			p.fbcFiles = append(p.fbcFiles, name)
		}
	}
	return p, nil
}

func (p *plan) discoverPackage(r *fsReader, dir string) {
	entries, err := r.readDir(dir)
	if err != nil {
		p.reject(dir, err.Error())
		return
	}
	pd := &pkgDir{dir: dir}
	var pkgFiles, fbcFiles []string
	for _, e := range entries {
		name, rel := e.Name(), path.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(name, "."):
		case e.Type()&fs.ModeSymlink != 0:
			p.reject(rel, r.symlinkReason(rel))
		case e.IsDir():
			pd.versionDirs = append(pd.versionDirs, rel)
		case !e.Type().IsRegular() || !isManifestFile(name):
		case strings.HasSuffix(name, ".package.yaml") || strings.HasSuffix(name, ".package.yml"):
			pkgFiles = append(pkgFiles, rel)
		case name == "ci.yaml" || name == "ci.yml":
			pd.semverMode = p.readSemverMode(r, rel)
		case isFBCFile(r, rel):
			fbcFiles = append(fbcFiles, rel)
		}
	}
	switch {
	case len(pkgFiles) > 1:
		p.reject(dir, fmt.Sprintf("several package files (%s); want one", strings.Join(pkgFiles, ", ")))
		return
	case len(pkgFiles) == 1:
		pd.layout, pd.pkgFile = LayoutPackageManifest, pkgFiles[0]
		data, err := r.readFile(pd.pkgFile)
		if err == nil {
			pd.manifest, err = parsePackageManifest(data)
		}
		if err != nil {
			p.reject(pd.pkgFile, strings.TrimPrefix(err.Error(), pd.pkgFile+": "))
			return
		}
	case len(fbcFiles) > 0:
		// Subdirectories of an FBC package hold files its olm.bundle.object refs name.
		p.fbcFiles = append(p.fbcFiles, fbcFiles...)
		return
	case len(pd.versionDirs) == 0:
		p.reject(dir, "no package file, catalog file or version directory: not a package")
		return
	default:
		pd.layout = LayoutFlat
		for _, v := range pd.versionDirs {
			if fi, err := r.root.Lstat(path.Join(v, "manifests")); err == nil && fi.IsDir() {
				pd.layout = LayoutBundle
				break
			}
		}
	}
	p.pkgs = append(p.pkgs, pd)
}

// readSemverMode reads updateGraph from a community-operators ci.yaml. A ci.yaml the
// loader cannot read only costs the semver mode, with a warning.
func (p *plan) readSemverMode(r *fsReader, file string) bool {
	data, err := r.readFile(file)
	var ci struct {
		UpdateGraph string `yaml:"updateGraph"`
	}
	if err == nil {
		err = noPanic("decoding ci.yaml", func() error { return yamlv2.Unmarshal(data, &ci) })
	}
	if err != nil {
		p.warnings = append(p.warnings, Rejection{Path: file, Reason: "ignored: " + strings.TrimPrefix(err.Error(), file+": ")})
		return false
	}
	return strings.TrimSpace(ci.UpdateGraph) == "semver-mode"
}

// isFBCFile tells a File-Based Catalog file from other YAML (ci.yaml, docs) by name or by
// a quick look for an olm.* schema key.
func isFBCFile(r *fsReader, name string) bool {
	base := strings.TrimSuffix(path.Base(name), path.Ext(name))
	if base == "catalog" || base == "index" {
		return true
	}
	data, err := r.readFile(name)
	if err != nil {
		return false
	}
	return looksLikeFBC(data)
}

func looksLikeFBC(data []byte) bool {
	for _, marker := range []string{"\nschema: olm.", `"schema":"olm.`, `"schema": "olm.`} {
		if bytes.Contains(data, []byte(marker)) || bytes.HasPrefix(data, []byte(marker[1:])) {
			return true
		}
	}
	return false
}
