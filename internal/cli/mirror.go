package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"github.com/operator-manager/operator-manager/internal/registry"
	"github.com/operator-manager/operator-manager/internal/spelling"
)

// mirrorRecordFile is where `catalog mirror REF DIR` records what DIR was mirrored from,
// so that `catalog mirror DIR --to REGISTRY` pushes the catalog under the same repository
// path and tag. The loader skips hidden files.
const mirrorRecordFile = ".operator-manager-mirror.json"

// mirrorRecord is the content of mirrorRecordFile.
type mirrorRecord struct {
	Source   string   `json:"source"`
	Digest   string   `json:"digest"`
	Packages []string `json:"packages,omitempty"`
}

// mirrorFlags are the flags of `catalog mirror`.
type mirrorFlags struct {
	packages []string
	to       string
	registry registryFlags
}

// mirroredBundle is one bundle of a mirrored catalog.
type mirroredBundle struct {
	Package string `json:"package"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Image is the bundle image as the source catalog names it; empty when the catalog
	// entry holds the manifests itself.
	Image string `json:"image,omitempty"`
	// Target is where the image went: the new reference with --to, else the image
	// layout of the directory.
	Target string `json:"target,omitempty"`
}

// mirrorReport is what `catalog mirror -o json|yaml` prints.
type mirrorReport struct {
	Source string `json:"source"`
	// Digest is the digest of the source catalog image (empty from a directory).
	Digest string `json:"digest,omitempty"`
	// Dir is the directory written (REF DIR).
	Dir string `json:"dir,omitempty"`
	// Catalog is the catalog image pushed (--to), by tag, and CatalogDigest its digest.
	Catalog       string           `json:"catalog,omitempty"`
	CatalogDigest string           `json:"catalogDigest,omitempty"`
	Packages      []string         `json:"packages"`
	Bundles       []mirroredBundle `json:"bundles"`
}

func newCatalogMirrorCmd() *cobra.Command {
	out := &output{}
	f := &mirrorFlags{}
	cmd := &cobra.Command{
		Use:   "mirror REF DIR | mirror (REF|DIR) --to REGISTRY",
		Short: "Copy a catalog image and its bundle images to a directory, or to another registry",
		Long: `mirror copies a File-Based Catalog published as an image (REF, a tag or a digest) with
every bundle image it references.

"mirror REF DIR" writes a directory "catalog list|serve|..." read, for disconnected
clusters: the catalog's files at the same paths as in the image's configs directory, and
the bundle images, each checked against its digest, as an OCI image layout in DIR/images.
DIR must not exist or be empty.

"mirror REF --to REGISTRY" copies the bundle images to REGISTRY, keeping each repository
path and digest (quay.io/org/bundle@sha256:X becomes REGISTRY/org/bundle@sha256:X),
rewrites the catalog's image references to the copies and pushes a catalog image of it to
REGISTRY/<the catalog's repository path>:<REF's tag, or latest>. "mirror DIR --to
REGISTRY" does the same from a directory mirrored before, with the bundle images of
DIR/images. The same catalog always gives the same catalog image digest.

--package NAME keeps only that package, --package NAME@VERSION only that version of it
(repeat the flag for more); the catalog is then written one file per package,
<package>/catalog.json.

Credentials are those of "docker login" (~/.docker/config.json). Progress goes to stderr,
one line per image; the summary to stdout.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.to != "" {
				if len(args) != 1 {
					return fmt.Errorf("with --to, mirror takes one argument, the catalog image REF or a mirrored DIR; received %d", len(args))
				}
				return nil
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := parsePackageSelection(f.packages)
			if err != nil {
				return err
			}
			opts, err := f.registry.options()
			if err != nil {
				return err
			}
			m := &mirrorer{opts: opts, sel: sel, progress: cmd.ErrOrStderr()}
			report := &mirrorReport{Source: args[0], Packages: []string{}, Bundles: []mirroredBundle{}}
			if f.to == "" {
				err = m.toDir(cmd.Context(), args[0], args[1], report)
			} else {
				err = m.toRegistry(cmd.Context(), args[0], f.to, report)
			}
			if out.structured() {
				return out.result(cmd, err, func() any { return report })
			}
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), report, func(tw *tabwriter.Writer) { mirrorTable(tw, report) })
		},
	}
	cmd.Flags().StringArrayVar(&f.packages, "package", nil, "keep only this package, or only this version of it (NAME or NAME@VERSION; repeatable)")
	cmd.Flags().StringVar(&f.to, "to", "", "push the bundle images and a rewritten catalog image to this registry (HOST[:PORT][/PATH]) instead of writing DIR")
	f.registry.bind(cmd)
	out.bind(cmd)
	return cmd
}

func mirrorTable(tw *tabwriter.Writer, r *mirrorReport) {
	fmt.Fprintln(tw, "PACKAGE\tVERSION\tBUNDLE\tIMAGE\tMIRRORED TO")
	for _, b := range r.Bundles {
		image, target := b.Image, b.Target
		if image == "" {
			image, target = "-", "(in the catalog)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Package, b.Version, b.Name, image, target)
	}
	images := map[string]bool{}
	for _, b := range r.Bundles {
		if b.Image != "" {
			images[b.Image] = true
		}
	}
	if r.Catalog != "" {
		fmt.Fprintf(tw, "\nCatalog %s (%s, %s): %s@%s\n", r.Source, countNoun(len(r.Packages), "package"), countNoun(len(images), "bundle image"), r.Catalog, r.CatalogDigest)
		return
	}
	fmt.Fprintf(tw, "\nCatalog %s (%s, %s): %s\n", r.Source, countNoun(len(r.Packages), "package"), countNoun(len(images), "bundle image"), r.Dir)
}

// packageSelection is what --package keeps: package name to versions (nil: all).
type packageSelection map[string]map[string]bool

func parsePackageSelection(flags []string) (packageSelection, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	sel := packageSelection{}
	whole := map[string]bool{}
	for _, f := range flags {
		pkg, version, hasVersion := strings.Cut(f, "@")
		if pkg == "" || hasVersion && version == "" {
			return nil, usageError("--package %q: want NAME or NAME@VERSION", f)
		}
		if !hasVersion {
			whole[pkg] = true
		}
	}
	for _, f := range flags {
		pkg, version, hasVersion := strings.Cut(f, "@")
		switch {
		case whole[pkg]:
			sel[pkg] = nil // NAME and NAME@VERSION together keep the whole package
		case hasVersion:
			if sel[pkg] == nil {
				sel[pkg] = map[string]bool{}
			}
			sel[pkg][normalVersion(version)] = true
		}
	}
	return sel, nil
}

// normalVersion spells a version the way it compares: "v1.0" and "1.0.0" are one.
func normalVersion(v string) string {
	if sv, err := semver.ParseTolerant(v); err == nil {
		return sv.String()
	}
	return v
}

// mirrorer does one `catalog mirror`.
type mirrorer struct {
	opts     registry.Options
	sel      packageSelection
	progress io.Writer
}

// catalogSourceFiles is a catalog to mirror: its files and where its bundle images are.
type catalogSourceFiles struct {
	// repo and tag name the catalog image to push: its repository path and tag.
	repo, tag string
	digest    string
	files     map[string][]byte
	// layout holds the bundle images of a mirrored directory; nil for an image.
	layout *ociparts.Layout
}

// fromImage pulls the catalog image ref into a temporary directory and reads its files.
func (m *mirrorer) fromImage(ctx context.Context, ref string) (*catalogSourceFiles, error) {
	r, err := name.ParseReference(ref, m.opts.NameOptions()...)
	if err != nil {
		return nil, fmt.Errorf("catalog image reference %q: %w", ref, err)
	}
	tmp, err := os.MkdirTemp("", "operator-manager-mirror-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ci, err := registry.PullCatalog(ctx, ref, m.opts, tmp)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(m.progress, "pulled catalog %s (%s)\n", ref, ci.Digest)
	files, err := readCatalogFiles(ci.Dir, false)
	if err != nil {
		return nil, fmt.Errorf("catalog image %s: %w", ref, err)
	}
	src := &catalogSourceFiles{repo: r.Context().RepositoryStr(), tag: "latest", digest: ci.Digest, files: files}
	if t, ok := r.(name.Tag); ok {
		src.tag = t.TagStr()
	}
	return src, nil
}

// fromDir reads a directory written by `catalog mirror REF DIR`.
func fromDir(dir string) (*catalogSourceFiles, error) {
	files, err := readCatalogFiles(dir, true)
	if err != nil {
		return nil, fmt.Errorf("reading the catalog directory %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	src := &catalogSourceFiles{repo: filepath.Base(abs), tag: "latest", files: files, layout: &ociparts.Layout{Dir: filepath.Join(dir, catalog.ImagesDir)}}
	if data, err := os.ReadFile(filepath.Join(dir, mirrorRecordFile)); err == nil {
		var rec mirrorRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, mirrorRecordFile), err)
		}
		if r, err := name.ParseReference(rec.Source, name.WeakValidation); err == nil {
			src.repo, src.digest = r.Context().RepositoryStr(), rec.Digest
			if t, ok := r.(name.Tag); ok {
				src.tag = t.TagStr()
			}
		}
	}
	return src, nil
}

// readCatalogFiles reads the regular files below dir by slash path, leaving out hidden
// entries and, with mirrored, the image layout of a mirrored catalog. Symlinks are
// refused: a catalog directory holds files.
func readCatalogFiles(dir string, mirrored bool) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case mirrored && d.IsDir() && rel == catalog.ImagesDir && ociparts.IsLayout(p):
			return filepath.SkipDir
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link; a catalog directory holds files", rel)
		case !d.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(p)
		files[rel] = data
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("no file: not a catalog")
	}
	return files, nil
}

// toDir mirrors the catalog image ref into dir: its files, and its bundle images in
// dir/images. The directory is written beside dir and renamed into place once complete.
func (m *mirrorer) toDir(ctx context.Context, ref, dir string, report *mirrorReport) error {
	if st, err := os.Stat(ref); err == nil && st.IsDir() {
		return usageError("%s is a directory: mirror REF DIR copies a catalog image (REF) to DIR; to copy a mirrored directory to a registry use mirror DIR --to REGISTRY", ref)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty: mirror into a new or empty directory", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	src, err := m.fromImage(ctx, ref)
	if err != nil {
		return err
	}
	report.Digest = src.digest
	tree, err := m.plan(src.files, ref, report)
	if err != nil {
		return err
	}
	files, err := tree.files()
	if err != nil {
		return err
	}
	for rel := range files {
		if rel == catalog.ImagesDir || strings.HasPrefix(rel, catalog.ImagesDir+"/") {
			return fmt.Errorf("catalog %s has a top-level %q directory, where a mirrored catalog keeps its bundle images", ref, catalog.ImagesDir)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	bundles := registry.Bundles{Options: m.opts, Cache: ociparts.Layout{Dir: filepath.Join(tmp, catalog.ImagesDir)}}
	pulled := map[string]bool{}
	for i, b := range report.Bundles {
		if b.Image == "" {
			continue
		}
		report.Bundles[i].Target = filepath.Join(dir, catalog.ImagesDir)
		if pulled[b.Image] {
			continue
		}
		parts, err := bundles.Pull(b.Image)
		if err != nil {
			return fmt.Errorf("bundle %s of package %s: %w", b.Name, b.Package, err)
		}
		pulled[b.Image] = true
		fmt.Fprintf(m.progress, "pulled %s (%s, %s)\n", b.Image, countNoun(len(parts.Layers), "layer"), sizeIEC(parts.Size()))
	}
	for rel, data := range files {
		target := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
	rec, _ := json.MarshalIndent(mirrorRecord{Source: ref, Digest: src.digest, Packages: selectionFlags(m.sel)}, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, mirrorRecordFile), append(rec, '\n'), 0o644); err != nil {
		return err
	}
	_ = os.Remove(dir) // an empty directory, checked above
	if err := os.Rename(tmp, abs); err != nil {
		return err
	}
	report.Dir = dir
	return nil
}

// selectionFlags spells a selection back as --package values, sorted.
func selectionFlags(sel packageSelection) []string {
	var out []string
	for pkg, versions := range sel {
		if versions == nil {
			out = append(out, pkg)
		}
		for v := range versions {
			out = append(out, pkg+"@"+v)
		}
	}
	slices.Sort(out)
	return out
}

// toRegistry mirrors the catalog image or mirrored directory src to the registry to.
func (m *mirrorer) toRegistry(ctx context.Context, source, to string, report *mirrorReport) error {
	to = strings.TrimSuffix(to, "/")
	if strings.Contains(to, "://") {
		return usageError("--to %q: give the registry as HOST[:PORT][/PATH], without a scheme", to)
	}
	if _, err := name.NewRepository(to+"/x", m.opts.NameOptions()...); err != nil {
		return usageError("--to %q is not a registry (HOST[:PORT][/PATH]): %v", to, err)
	}
	var src *catalogSourceFiles
	var err error
	if st, serr := os.Stat(source); serr == nil && st.IsDir() {
		src, err = fromDir(source)
	} else {
		src, err = m.fromImage(ctx, source)
	}
	if err != nil {
		return err
	}
	report.Digest = src.digest
	tree, err := m.plan(src.files, source, report)
	if err != nil {
		return err
	}
	moved := map[string]string{}
	for i, b := range report.Bundles {
		if b.Image == "" {
			continue
		}
		if target, ok := moved[b.Image]; ok {
			report.Bundles[i].Target = target
			continue
		}
		target, err := m.copyImage(ctx, src, b.Image, to)
		if err != nil {
			return fmt.Errorf("bundle %s of package %s: %w", b.Name, b.Package, err)
		}
		moved[b.Image], report.Bundles[i].Target = target, target
		fmt.Fprintf(m.progress, "copied %s -> %s\n", b.Image, target)
	}
	tree.rewriteImages(moved)
	files, err := tree.files()
	if err != nil {
		return err
	}
	img, err := registry.CatalogImageFrom(files)
	if err != nil {
		return err
	}
	ref := to + "/" + src.repo + ":" + src.tag
	digest, err := registry.Push(ctx, img, ref, m.opts)
	if err != nil {
		return fmt.Errorf("catalog image: %w", err)
	}
	fmt.Fprintf(m.progress, "pushed catalog %s@%s\n", ref, digest)
	report.Catalog, report.CatalogDigest = ref, digest
	return nil
}

// copyImage copies a bundle image, by digest, to the same repository path under to and
// returns its new reference.
func (m *mirrorer) copyImage(ctx context.Context, src *catalogSourceFiles, image, to string) (string, error) {
	digest, err := ociparts.DigestOf(image)
	if err != nil {
		return "", err
	}
	r, err := name.ParseReference(image, m.opts.NameOptions()...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", image, err)
	}
	target := to + "/" + r.Context().RepositoryStr() + "@" + digest
	var img v1.Image
	if src.layout != nil {
		// The copy in the directory is checked from the digest down before it is sent.
		if _, err := src.layout.Pull(image); err != nil {
			if errors.Is(err, ociparts.ErrNotInLayout) {
				return "", fmt.Errorf("%s is not in %s: mirror the catalog into a directory again", image, src.layout.Dir)
			}
			return "", err
		}
		if img, err = src.layout.Image(digest); err != nil {
			return "", fmt.Errorf("%s from %s: %w", image, src.layout.Dir, err)
		}
	} else if img, err = registry.PullImage(ctx, image, m.opts); err != nil {
		return "", err
	}
	if _, err := registry.Push(ctx, img, target, m.opts); err != nil {
		return "", err
	}
	return target, nil
}

// plan parses the catalog's files, applies --package and fills the report's packages and
// bundles; the tree returned is what to write.
func (m *mirrorer) plan(files map[string][]byte, source string, report *mirrorReport) (*fbcTree, error) {
	tree, warnings := parseFBCTree(files)
	for _, w := range warnings {
		fmt.Fprintf(m.progress, "warning: %s\n", w)
	}
	if m.sel != nil {
		var err error
		if tree, err = tree.filter(m.sel, source); err != nil {
			return nil, err
		}
	}
	report.Packages = tree.packages()
	report.Bundles = tree.bundles()
	return tree, nil
}

func countNoun(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func sizeIEC(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// File-Based Catalog documents are handled generically here: each is a map of raw JSON
// values, so that every field, of any schema, is written back as it was read; only the
// fields mirroring changes (image, relatedImages, channel entries, defaultChannel, an
// olm.bundle.object ref) are decoded and re-encoded.

// fbcTree is a catalog's files: File-Based Catalog files parsed into documents, the
// others kept as bytes.
type fbcTree struct {
	fbc   []*fbcFile
	other map[string][]byte
}

// fbcFile is one File-Based Catalog file.
type fbcFile struct {
	path string
	// raw is the file as read, written back as it is while no document changed.
	raw  []byte
	docs []*fbcDoc
}

// fbcDoc is one document, with the file it was read from.
type fbcDoc struct {
	fields  map[string]json.RawMessage
	raw     []byte // the document as JSON, as read
	file    string
	changed bool
}

func (d *fbcDoc) str(key string) string {
	var s string
	if v, ok := d.fields[key]; ok {
		_ = json.Unmarshal(v, &s)
	}
	return s
}

func (d *fbcDoc) set(key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	d.fields[key] = data
	d.changed = true
	return nil
}

// pkg is the package a document belongs to.
func (d *fbcDoc) pkg() string {
	if d.str("schema") == "olm.package" {
		return d.str("name")
	}
	return d.str("package")
}

// version is an olm.bundle's version, from its olm.package property.
func (d *fbcDoc) version() string {
	var props []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	_ = json.Unmarshal(d.fields["properties"], &props)
	for _, p := range props {
		if p.Type != "olm.package" {
			continue
		}
		var v struct {
			Version string `json:"version"`
		}
		_ = json.Unmarshal(p.Value, &v)
		return v.Version
	}
	return ""
}

// json returns the document as JSON: as read when unchanged.
func (d *fbcDoc) json() ([]byte, error) {
	if !d.changed {
		return d.raw, nil
	}
	return json.Marshal(d.fields)
}

// parseFBCTree sorts a catalog's files into File-Based Catalog files (a YAML or JSON file
// whose documents parse, one at least with a schema) and others. A YAML or JSON file that
// does not parse is kept as it is, with a warning: the loader says what is wrong with it.
func parseFBCTree(files map[string][]byte) (*fbcTree, []string) {
	t := &fbcTree{other: map[string][]byte{}}
	var warnings []string
	for _, p := range slices.Sorted(maps.Keys(files)) {
		data := files[p]
		ext := strings.ToLower(path.Ext(p))
		if ext != ".json" && ext != ".yaml" && ext != ".yml" {
			t.other[p] = data
			continue
		}
		docs, err := parseFBCDocs(p, data, ext == ".json")
		if err != nil {
			if holdsOLMSchema(data) {
				warnings = append(warnings, fmt.Sprintf("%s: %v; the file is copied as it is", p, err))
			}
			t.other[p] = data
			continue
		}
		if !slices.ContainsFunc(docs, func(d *fbcDoc) bool { return d.str("schema") != "" }) {
			t.other[p] = data
			continue
		}
		t.fbc = append(t.fbc, &fbcFile{path: p, raw: data, docs: docs})
	}
	return t, warnings
}

// holdsOLMSchema tells a broken catalog file from other YAML, to warn about the first only.
func holdsOLMSchema(data []byte) bool {
	return bytes.Contains(data, []byte("olm.package")) || bytes.Contains(data, []byte("olm.bundle"))
}

// parseFBCDocs splits a file into its documents: a stream of JSON values, or YAML
// documents separated by "---".
func parseFBCDocs(file string, data []byte, isJSON bool) ([]*fbcDoc, error) {
	var raws [][]byte
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				break
			} else if err != nil {
				return nil, err
			}
			raws = append(raws, raw)
		}
	} else {
		r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			} else if err != nil {
				return nil, err
			}
			raw, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, err
			}
			if string(bytes.TrimSpace(raw)) == "null" {
				continue // an empty document
			}
			raws = append(raws, raw)
		}
	}
	docs := make([]*fbcDoc, 0, len(raws))
	for i, raw := range raws {
		d := &fbcDoc{raw: raw, file: file}
		if err := json.Unmarshal(raw, &d.fields); err != nil {
			return nil, fmt.Errorf("document %d is not an object: %w", i+1, err)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// docs returns every document in file order.
func (t *fbcTree) docs() []*fbcDoc {
	var out []*fbcDoc
	for _, f := range t.fbc {
		out = append(out, f.docs...)
	}
	return out
}

// packages lists the catalog's packages by name.
func (t *fbcTree) packages() []string {
	set := map[string]bool{}
	for _, d := range t.docs() {
		if s := d.str("schema"); (s == "olm.package" || s == "olm.bundle") && d.pkg() != "" {
			set[d.pkg()] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// bundles lists the catalog's bundles, by package then in file order.
func (t *fbcTree) bundles() []mirroredBundle {
	var out []mirroredBundle
	for _, d := range t.docs() {
		if d.str("schema") == "olm.bundle" {
			out = append(out, mirroredBundle{Package: d.pkg(), Name: d.str("name"), Version: d.version(), Image: d.str("image")})
		}
	}
	slices.SortStableFunc(out, func(a, b mirroredBundle) int { return strings.Compare(a.Package, b.Package) })
	return out
}

// filter keeps the packages and versions of sel: their olm.package, the olm.bundle blobs
// of the kept versions, their olm.channel blobs with only the kept entries (a channel left
// empty goes), and their documents of other schemas. Each package is written to
// <package>/catalog.json; the files olm.bundle.object refs of kept bundles name are kept.
func (t *fbcTree) filter(sel packageSelection, source string) (*fbcTree, error) {
	all := t.docs()
	// Every package and version asked for must exist: a typo must not mirror nothing.
	versions := map[string][]string{}
	for _, d := range all {
		switch d.str("schema") {
		case "olm.package":
			if _, ok := versions[d.pkg()]; !ok {
				versions[d.pkg()] = nil
			}
		case "olm.bundle":
			versions[d.pkg()] = append(versions[d.pkg()], d.version())
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(sel)) {
		have, ok := versions[pkg]
		if !ok {
			all := slices.Sorted(maps.Keys(versions))
			return nil, fmt.Errorf("package %q is not in catalog %s%s; it has: %s", pkg, source, spelling.Suggest(pkg, all), strings.Join(all, ", "))
		}
		if !filepath.IsLocal(pkg) || strings.ContainsAny(pkg, `/\`) {
			return nil, fmt.Errorf("package %q: not a name a directory can have", pkg)
		}
		for v := range sel[pkg] {
			if !slices.ContainsFunc(have, func(h string) bool { return normalVersion(h) == v }) {
				return nil, fmt.Errorf("package %q has no version %s in catalog %s; it has: %s", pkg, v, source, strings.Join(have, ", "))
			}
		}
	}
	keptBundle := map[string]bool{} // package/name
	for _, d := range all {
		if d.str("schema") != "olm.bundle" {
			continue
		}
		if vs, ok := sel[d.pkg()]; ok && (vs == nil || vs[normalVersion(d.version())]) {
			keptBundle[d.pkg()+"/"+d.str("name")] = true
		}
	}
	out := &fbcTree{other: map[string][]byte{}}
	files := map[string]*fbcFile{}
	keptChannels := map[string][]string{}
	var kept []*fbcDoc
	for _, d := range all {
		pkg := d.pkg()
		if _, ok := sel[pkg]; !ok {
			continue
		}
		switch d.str("schema") {
		case "olm.bundle":
			if !keptBundle[pkg+"/"+d.str("name")] {
				continue
			}
			if err := t.keepRefs(d, pkg, out); err != nil {
				return nil, err
			}
		case "olm.channel":
			ok, err := filterEntries(d, func(entry string) bool { return keptBundle[pkg+"/"+entry] })
			if err != nil {
				return nil, fmt.Errorf("%s: olm.channel %q: %w", d.file, d.str("name"), err)
			}
			if !ok {
				continue
			}
			keptChannels[pkg] = append(keptChannels[pkg], d.str("name"))
		}
		kept = append(kept, d)
	}
	for _, d := range kept {
		pkg := d.pkg()
		if d.str("schema") == "olm.package" {
			if def := d.str("defaultChannel"); def != "" && len(keptChannels[pkg]) > 0 && !slices.Contains(keptChannels[pkg], def) {
				// The default channel lost every kept version: the package's default is
				// then the first kept channel, as the loader would choose.
				if err := d.set("defaultChannel", slices.Min(keptChannels[pkg])); err != nil {
					return nil, err
				}
			}
		}
		f := files[pkg]
		if f == nil {
			f = &fbcFile{path: pkg + "/catalog.json"}
			files[pkg] = f
			out.fbc = append(out.fbc, f)
		}
		f.docs = append(f.docs, d)
	}
	slices.SortFunc(out.fbc, func(a, b *fbcFile) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// filterEntries keeps the entries of an olm.channel that keep accepts, and reports
// whether any is left.
func filterEntries(d *fbcDoc, keep func(string) bool) (bool, error) {
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(d.fields["entries"], &entries); err != nil {
		return false, fmt.Errorf("entries: %w", err)
	}
	kept := slices.DeleteFunc(slices.Clone(entries), func(e map[string]json.RawMessage) bool {
		var n string
		_ = json.Unmarshal(e["name"], &n)
		return !keep(n)
	})
	if len(kept) == 0 {
		return false, nil
	}
	if len(kept) != len(entries) {
		return true, d.set("entries", kept)
	}
	return true, nil
}

// keepRefs carries the files an olm.bundle's olm.bundle.object refs name into out, and
// rewrites each ref relative to the bundle's new file, <pkg>/catalog.json.
func (t *fbcTree) keepRefs(d *fbcDoc, pkg string, out *fbcTree) error {
	var props []map[string]json.RawMessage
	if err := json.Unmarshal(d.fields["properties"], &props); err != nil {
		return nil // no properties to carry; the loader says what is wrong
	}
	changed := false
	for _, p := range props {
		var typ string
		_ = json.Unmarshal(p["type"], &typ)
		if typ != "olm.bundle.object" {
			continue
		}
		var value map[string]json.RawMessage
		if json.Unmarshal(p["value"], &value) != nil {
			continue
		}
		var ref string
		if json.Unmarshal(value["ref"], &ref) != nil || ref == "" {
			continue
		}
		target := path.Join(path.Dir(d.file), ref)
		if data, ok := t.other[target]; ok {
			out.other[target] = data
		}
		rel, err := filepath.Rel(filepath.FromSlash(pkg), filepath.FromSlash(target))
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); rel != ref {
			value["ref"], _ = json.Marshal(rel)
			p["value"], _ = json.Marshal(value)
			changed = true
		}
	}
	if changed {
		return d.set("properties", props)
	}
	return nil
}

// rewriteImages replaces every image reference of moved (old to new) in the olm.bundle
// image fields and relatedImages of the catalog.
func (t *fbcTree) rewriteImages(moved map[string]string) {
	for _, d := range t.docs() {
		if to, ok := moved[d.str("image")]; ok {
			_ = d.set("image", to)
		}
		var related []map[string]json.RawMessage
		if json.Unmarshal(d.fields["relatedImages"], &related) != nil {
			continue
		}
		changed := false
		for _, r := range related {
			var image string
			if json.Unmarshal(r["image"], &image) == nil {
				if to, ok := moved[image]; ok {
					r["image"], _ = json.Marshal(to)
					changed = true
				}
			}
		}
		if changed {
			_ = d.set("relatedImages", related)
		}
	}
}

// files returns the tree's files: each File-Based Catalog file as read while none of its
// documents changed, else written again in its format (JSON documents one after the
// other, or YAML documents separated by "---").
func (t *fbcTree) files() (map[string][]byte, error) {
	out := maps.Clone(t.other)
	for _, f := range t.fbc {
		if f.raw != nil && !slices.ContainsFunc(f.docs, func(d *fbcDoc) bool { return d.changed }) {
			out[f.path] = f.raw
			continue
		}
		var buf bytes.Buffer
		isJSON := strings.ToLower(path.Ext(f.path)) == ".json"
		for i, d := range f.docs {
			raw, err := d.json()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.path, err)
			}
			if isJSON {
				if err := json.Indent(&buf, raw, "", "    "); err != nil {
					return nil, fmt.Errorf("%s: %w", f.path, err)
				}
				buf.WriteByte('\n')
				continue
			}
			y, err := yaml.JSONToYAML(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.path, err)
			}
			if i > 0 {
				buf.WriteString("---\n")
			}
			buf.Write(y)
		}
		out[f.path] = buf.Bytes()
	}
	return out, nil
}
