package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// fbcFileResult is what one File-Based Catalog file yields.
type fbcFileResult struct {
	file         string
	packages     []fbcBlob
	channels     []fbcBlob
	deprecations []fbcBlob
	bundles      []*Bundle
	rejections   []Rejection
}

// loadFBCFile reads one catalog file: its olm.package and olm.channel blobs are kept for
// assembly, each olm.bundle becomes a Bundle (or a rejection naming the blob).
func loadFBCFile(r *fsReader, file string) fbcFileResult {
	res := fbcFileResult{file: file}
	data, err := r.readFile(file)
	if err != nil {
		res.rejections = append(res.rejections, Rejection{Path: file, Reason: strings.TrimPrefix(err.Error(), file+": ")})
		return res
	}
	blobs, errs := parseFBC(data)
	for _, err := range errs {
		res.rejections = append(res.rejections, Rejection{Path: file, Reason: err.Error()})
	}
	for _, blob := range blobs {
		switch blob.Schema {
		case SchemaPackage:
			res.packages = append(res.packages, blob)
		case SchemaChannel:
			res.channels = append(res.channels, blob)
		case SchemaDeprecations:
			res.deprecations = append(res.deprecations, blob)
		case SchemaBundle:
			b, _, err := fbcBundleFiles(r, file, blob, false)
			if err != nil {
				res.rejections = append(res.rejections, Rejection{Path: file, Reason: fmt.Sprintf("olm.bundle %q (line %d): %v", blob.Name, blob.line, err)})
				continue
			}
			res.bundles = append(res.bundles, b)
		}
	}
	return res
}

// fbcBundleFiles builds the Bundle of an olm.bundle blob and its virtual files: the blob
// itself as olm.bundle.json and each olm.bundle.object as objects/NNN. The objects are
// decoded here like a directory bundle's manifests, so a bundle whose objects cannot be
// installed is rejected at load rather than at install. With keep, the files are
// returned too (for Content); otherwise only hashed.
func fbcBundleFiles(r *fsReader, file string, blob fbcBlob, keep bool) (*Bundle, []File, error) {
	fb, err := bundleFromFBC(file, blob)
	if err != nil {
		return nil, nil, err
	}
	b := fb.bundle
	files := []File{{Name: fbcBlobFile, Data: blob.raw}}
	for i, o := range fb.objects {
		data := o.Data
		if o.Ref != "" {
			if data, err = r.readFile(o.Ref); err != nil {
				return nil, nil, err
			}
		}
		files = append(files, File{Name: objectFileName(i, o), Data: data})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	d := newDigester()
	for _, f := range files {
		d.add(f.Name, f.Data)
		b.Files = append(b.Files, f.Name)
		if f.Name == fbcBlobFile {
			continue
		}
		if err := applyObjects(b, f); err != nil {
			return nil, nil, err
		}
	}
	b.Digest = d.sum()
	if !keep {
		files = nil
	}
	return b, files, nil
}

// applyObjects decodes one object file of an FBC bundle; a CSV among them supplies the
// edges and install metadata, keeping the version and package of the olm.package property.
func applyObjects(b *Bundle, f File) error {
	for _, doc := range splitDocuments(f.Data) {
		m, err := parseManifest(doc.data)
		if err != nil {
			return docError(f.Name, doc, err)
		}
		if m.csv == nil {
			continue
		}
		if m.csv.Name != b.CSVName {
			return fmt.Errorf("%s: CSV %q differs from the bundle name %q", f.Name, m.csv.Name, b.CSVName)
		}
		owned, version := b.OwnedCRDs, b.Version
		if err := applyCSV(b, m.csv); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		b.Version = version
		if len(b.OwnedCRDs) == 0 {
			b.OwnedCRDs = owned
		}
	}
	return nil
}
