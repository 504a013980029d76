package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// bundleResult is what reading one bundle directory yields: a bundle, or the reason it
// was rejected, plus warnings that do not reject it.
type bundleResult struct {
	bundle      *Bundle
	annotations *bundleAnnotations // bundle layout only
	rejection   *Rejection
	warnings    []Rejection
}

func reject(p string, err error) bundleResult {
	return bundleResult{rejection: &Rejection{Path: p, Reason: err.Error()}}
}

// bundleFiles lists the files of a bundle directory relative to it: manifests/ and
// metadata/ for the bundle layout, the top-level manifest files otherwise. Anything else
// there (Dockerfiles, tests/, README) is not part of the bundle and not in its digest.
func bundleFiles(r *fsReader, dir string) (names []string, layout Layout, err error) {
	entries, err := r.readDir(dir)
	if err != nil {
		return nil, "", err
	}
	layout = LayoutFlat
	for _, e := range entries {
		switch {
		case e.Name() != "manifests" && e.Name() != "metadata":
		case e.Type()&fs.ModeSymlink != 0:
			return nil, "", errors.New(e.Name() + ": " + r.symlinkReason(path.Join(dir, e.Name())))
		case e.Name() == "manifests" && e.IsDir():
			layout = LayoutBundle
		}
	}
	if layout == LayoutFlat {
		names, err = manifestEntries(r, dir, "", entries)
		return names, layout, err
	}
	for _, e := range entries {
		sub := e.Name()
		if (sub != "manifests" && sub != "metadata") || !e.IsDir() {
			continue
		}
		subEntries, err := r.readDir(path.Join(dir, sub))
		if err != nil {
			return nil, "", err
		}
		n, err := manifestEntries(r, dir, sub+"/", subEntries)
		if err != nil {
			return nil, "", err
		}
		names = append(names, n...)
	}
	return names, layout, nil
}

// manifestEntries picks the files with manifest extensions of one listing. A symlink
// among them rejects the bundle: leaving out one of its files would change what the
// bundle installs.
func manifestEntries(r *fsReader, dir, prefix string, entries []fs.DirEntry) ([]string, error) {
	var names []string
	for _, e := range entries {
		if !isManifestFile(e.Name()) {
			continue
		}
		rel := prefix + e.Name()
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			return nil, errors.New(rel + ": " + r.symlinkReason(path.Join(dir, rel)))
		case e.Type().IsRegular():
			names = append(names, rel)
		}
	}
	return names, nil
}

// loadBundleDir reads, hashes and decodes one bundle directory. Each file is read once and
// each document decoded once; only the metadata is kept.
func loadBundleDir(r *fsReader, dir string) bundleResult {
	names, layout, err := bundleFiles(r, dir)
	if err != nil {
		return reject(dir, err)
	}
	slices.Sort(names)
	b := &Bundle{Layout: layout, RelPath: dir, Files: names}
	res := bundleResult{bundle: b}
	d := newDigester()
	var csvFile string
	var csvVersionErr error
	var manifests int
	for _, name := range names {
		data, err := r.readFile(path.Join(dir, name))
		if err != nil {
			return reject(dir, relErr(dir, err))
		}
		d.add(name, data)
		switch {
		case name == "metadata/annotations.yaml" || name == "metadata/annotations.yml":
			if res.annotations, err = parseAnnotations(data); err != nil {
				return reject(dir, fmt.Errorf("%s: %w", name, err))
			}
			continue
		case name == "metadata/dependencies.yaml" || name == "metadata/dependencies.yml":
			deps, ignored, err := parseDependencies(data)
			if err != nil {
				return reject(dir, fmt.Errorf("%s: %w", name, err))
			}
			b.Dependencies = deps
			for _, i := range ignored {
				res.warnings = append(res.warnings, Rejection{Path: path.Join(dir, name), Reason: i + " is not evaluated by the resolver"})
			}
			continue
		case name == "metadata/properties.yaml" || name == "metadata/properties.yml":
			if b.Properties, err = parseProperties(data); err != nil {
				return reject(dir, fmt.Errorf("%s: %w", name, err))
			}
			continue
		case strings.HasPrefix(name, "metadata/"):
			continue
		}
		manifests++
		for _, doc := range splitDocuments(data) {
			m, err := parseManifest(doc.data)
			if err != nil {
				return reject(dir, docError(name, doc, err))
			}
			if m.csv == nil {
				continue
			}
			if csvFile != "" {
				return reject(dir, fmt.Errorf("two ClusterServiceVersions in one bundle: %s and %s", csvFile, name))
			}
			csvFile, csvVersionErr = name, m.versionErr
			if err := applyCSV(b, m.csv); err != nil {
				return reject(dir, fmt.Errorf("%s: %w", name, err))
			}
			b.Version = m.csv.Spec.Version.Version
		}
	}
	if csvFile == "" {
		if layout == LayoutFlat {
			if _, err := r.readDir(path.Join(dir, "metadata")); err == nil {
				// A bundle-layout directory whose manifests/ is missing or misnamed.
				return reject(dir, fmt.Errorf("metadata/ is there but manifests/ is not: the bundle layout keeps the CSV and the other manifests in manifests/ (the directory metadata/annotations.yaml names)"))
			}
		}
		return reject(dir, fmt.Errorf("no ClusterServiceVersion among the %d manifest files", manifests))
	}
	if err := settleVersion(b, dir, csvVersionErr); err != nil {
		return reject(dir, fmt.Errorf("%s: %w", csvFile, err))
	}
	b.Digest = d.sum()
	return res
}

// settleVersion applies the rule for spec.version: strict semver when present; when
// absent, a lenient reading of the directory name, then of the CSV name.
func settleVersion(b *Bundle, dir string, versionErr error) error {
	if versionErr == nil {
		return nil
	}
	if !errors.Is(versionErr, errVersionAbsent) {
		return versionErr
	}
	if v, ok := lenientVersion(path.Base(dir)); ok {
		b.Version = v
		return nil
	}
	if v, ok := versionFromCSVName(b.CSVName); ok {
		b.Version = v
		return nil
	}
	return fmt.Errorf("spec.version is absent and neither the directory name %q nor the CSV name %q holds a version", path.Base(dir), b.CSVName)
}

// relErr strips the bundle directory from an error naming a file below it, so the
// rejection, which already names the directory, names the file relative to it.
func relErr(dir string, err error) error {
	msg := strings.ReplaceAll(err.Error(), dir+"/", "")
	return errors.New(msg)
}
