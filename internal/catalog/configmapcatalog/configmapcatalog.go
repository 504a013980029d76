// Package configmapcatalog reads OLM's ConfigMap catalogs: a CatalogSource of sourceType
// configmap (or its older name, internal) names a ConfigMap whose three keys hold YAML
// lists, as operator-registry's ConfigMap loader reads them:
//
//   - customResourceDefinitions: CRDs (apiextensions v1 or v1beta1);
//   - clusterServiceVersions: CSVs; each bundle is one CSV and the CRDs it owns;
//   - packages: package manifests (packageName, channels with currentCSV,
//     defaultChannel).
//
// Write turns them into a package-manifest catalog on disk (one directory per package,
// holding its package file and one folder per CSV with that CSV and its owned CRDs),
// which catalog.Load then reads like any other, so the ConfigMap meets the same checks,
// rejections and digests as a catalog directory. A CSV belongs to the packages whose
// channels reach it from their currentCSV by replaces and skips, as OLM builds a
// package's channels from the same lists.
//
// Nothing is lost silently: an entry that cannot be used (a CSV no channel reaches, an
// owned CRD the list lacks, a name that cannot be a directory) is a Rejection naming the
// key and the entry, and Load renames the loader's own rejections from the files
// written to the entries they came from.
package configmapcatalog

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/digestdir"
)

// The keys of an OLM ConfigMap catalog.
const (
	KeyCRDs     = "customResourceDefinitions"
	KeyCSVs     = "clusterServiceVersions"
	KeyPackages = "packages"
)

// Result is a ConfigMap catalog written on disk.
type Result struct {
	// Dir is the catalog directory, named by the digest of what was written.
	Dir string
	// Problems are the entries left out, each naming its key and entry.
	Problems []catalog.Rejection
	// origins maps each file and directory written (relative to Dir) to the entry it
	// came from.
	origins map[string]string
}

// Write converts the data of a ConfigMap catalog into a package-manifest catalog under
// root (see digestdir.Write for root and keep). A missing key or a list that is not a
// YAML list fails the whole ConfigMap, naming the key, as OLM's loader fails it; a bad
// entry is left out as a Problem.
func Write(data map[string]string, root, keep string) (Result, error) {
	in, err := parse(data)
	if err != nil {
		return Result{}, err
	}
	res := Result{origins: map[string]string{}}
	res.Dir, err = digestdir.Write(root, keep, func(dir string) error { return in.write(dir, &res) })
	// A CSV two packages reach is written twice, and its problem found twice.
	sort.SliceStable(res.Problems, func(i, j int) bool { return res.Problems[i].String() < res.Problems[j].String() })
	res.Problems = slices.Compact(res.Problems)
	return res, err
}

// Load writes data under root (Write) and loads the catalog written, its rejections named
// after the ConfigMap's entries (annotate). With prev, the catalog loaded last from root,
// an unchanged ConfigMap returns prev (changed false) and loads nothing; the manager, the
// CLI and the console all read ConfigMap catalogs this one way.
func Load(data map[string]string, root, keep string, prev *catalog.Catalog) (cat *catalog.Catalog, changed bool, err error) {
	res, err := Write(data, root, keep)
	if err != nil {
		return nil, false, err
	}
	if prev != nil && prev.Root != res.Dir {
		prev = nil
	}
	cat, changed, err = catalog.LoadIfChanged(res.Dir, prev, catalog.Options{})
	if err != nil {
		return nil, false, err
	}
	if changed {
		annotate(cat, res)
	}
	return cat, changed, nil
}

// annotate renames the rejections and warnings cat's loader gave for the files Write
// wrote after the ConfigMap entries they came from, and adds Write's own problems. It is
// for a catalog freshly loaded from res.Dir: call it once per load.
func annotate(cat *catalog.Catalog, res Result) {
	rename := func(rs []catalog.Rejection) {
		for i := range rs {
			rs[i].Path = res.origin(rs[i].Path)
		}
	}
	rename(cat.Rejections)
	rename(cat.Warnings)
	cat.Rejections = append(cat.Rejections, res.Problems...)
	sort.SliceStable(cat.Rejections, func(i, j int) bool { return cat.Rejections[i].Path < cat.Rejections[j].Path })
}

// origin names the entry a written path (or the file below it) came from; the path
// itself when none did.
func (r Result) origin(p string) string {
	for q := path.Clean(p); q != "." && q != "/" && q != ""; q = path.Dir(q) {
		if o, ok := r.origins[q]; ok {
			return o
		}
	}
	return p
}

// input is the parsed ConfigMap: each list's entries, raw, with what Write needs of them.
type input struct {
	crds     []crdEntry
	csvs     []csvEntry
	packages []packageEntry
	problems []catalog.Rejection
}

type crdEntry struct {
	at   string // "customResourceDefinitions[2] (name)"
	raw  json.RawMessage
	name string
	// keys are "plural.group/version/Kind" for each version the CRD has, as an owned
	// CRD names it.
	keys []string
}

type csvEntry struct {
	at    string
	raw   json.RawMessage
	name  string
	edges []string // replaces and skips
	owned []ownedCRD
}

type ownedCRD struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type packageEntry struct {
	at       string
	raw      json.RawMessage
	name     string
	channels []struct {
		Name       string `json:"name"`
		CurrentCSV string `json:"currentCSV"`
	}
}

// list decodes one key's YAML list into its raw entries.
func list(data map[string]string, key string) ([]json.RawMessage, error) {
	text, ok := data[key]
	if !ok {
		return nil, fmt.Errorf("key %s: missing (an OLM ConfigMap catalog has %s, %s and %s)", key, KeyCRDs, KeyCSVs, KeyPackages)
	}
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", key, err)
	}
	var out []json.RawMessage
	if string(j) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(j, &out); err != nil {
		return nil, fmt.Errorf("key %s: not a YAML list: %w", key, err)
	}
	return out, nil
}

func parse(data map[string]string) (*input, error) {
	lists := map[string][]json.RawMessage{}
	for _, key := range []string{KeyCRDs, KeyCSVs, KeyPackages} {
		l, err := list(data, key)
		if err != nil {
			return nil, err
		}
		lists[key] = l
	}
	in := &input{}
	for i, raw := range lists[KeyCRDs] {
		in.addCRD(i, raw)
	}
	for i, raw := range lists[KeyCSVs] {
		in.addCSV(i, raw)
	}
	for i, raw := range lists[KeyPackages] {
		in.addPackage(i, raw)
	}
	return in, nil
}

func (in *input) reject(at, reason string) {
	in.problems = append(in.problems, catalog.Rejection{Path: at, Reason: reason})
}

// at names entry i of key, with its name when it has one.
func at(key string, i int, name string) string {
	if name == "" {
		return fmt.Sprintf("%s[%d]", key, i)
	}
	return fmt.Sprintf("%s[%d] (%s)", key, i, name)
}

// pathName checks that a name can be a directory: a DNS subdomain, as the names of
// CSVs and CRDs must be in a cluster, which package names follow too.
func pathName(field, name string) error {
	if name == "" {
		return fmt.Errorf("%s is empty", field)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%s %q: %s", field, name, strings.Join(errs, "; "))
	}
	return nil
}

func (in *input) addCRD(i int, raw json.RawMessage) {
	var h struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Group    string `json:"group"`
			Version  string `json:"version"`
			Versions []struct {
				Name string `json:"name"`
			} `json:"versions"`
			Names struct {
				Kind   string `json:"kind"`
				Plural string `json:"plural"`
			} `json:"names"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		in.reject(at(KeyCRDs, i, ""), "not a CustomResourceDefinition: "+err.Error())
		return
	}
	e := crdEntry{at: at(KeyCRDs, i, h.Metadata.Name), raw: raw, name: h.Metadata.Name}
	if err := pathName("metadata.name", e.name); err != nil {
		in.reject(e.at, err.Error())
		return
	}
	versions := []string{}
	for _, v := range h.Spec.Versions {
		versions = append(versions, v.Name)
	}
	if len(versions) == 0 && h.Spec.Version != "" { // v1beta1's single version
		versions = append(versions, h.Spec.Version)
	}
	if h.Spec.Group == "" || h.Spec.Names.Plural == "" || h.Spec.Names.Kind == "" || len(versions) == 0 {
		in.reject(e.at, "spec.group, spec.names.plural, spec.names.kind and a version are required")
		return
	}
	for _, v := range versions {
		key := h.Spec.Names.Plural + "." + h.Spec.Group + "/" + v + "/" + h.Spec.Names.Kind
		for _, c := range in.crds {
			if slices.Contains(c.keys, key) {
				in.reject(e.at, fmt.Sprintf("the same CRD version as %s (%s %s): a ConfigMap catalog lists each CRD once", c.at, h.Spec.Names.Plural+"."+h.Spec.Group, v))
				return
			}
		}
		e.keys = append(e.keys, key)
	}
	in.crds = append(in.crds, e)
}

func (in *input) addCSV(i int, raw json.RawMessage) {
	var h struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Replaces                  string   `json:"replaces"`
			Skips                     []string `json:"skips"`
			CustomResourceDefinitions struct {
				Owned []ownedCRD `json:"owned"`
			} `json:"customresourcedefinitions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		in.reject(at(KeyCSVs, i, ""), "not a ClusterServiceVersion: "+err.Error())
		return
	}
	e := csvEntry{at: at(KeyCSVs, i, h.Metadata.Name), raw: raw, name: h.Metadata.Name, owned: h.Spec.CustomResourceDefinitions.Owned}
	if h.Kind != "ClusterServiceVersion" {
		in.reject(e.at, fmt.Sprintf("kind is %q, want ClusterServiceVersion", h.Kind))
		return
	}
	if err := pathName("metadata.name", e.name); err != nil {
		in.reject(e.at, err.Error())
		return
	}
	for _, c := range in.csvs {
		if c.name == e.name {
			in.reject(e.at, "the same CSV name as "+c.at)
			return
		}
	}
	if h.Spec.Replaces != "" {
		e.edges = append(e.edges, h.Spec.Replaces)
	}
	e.edges = append(e.edges, h.Spec.Skips...)
	in.csvs = append(in.csvs, e)
}

func (in *input) addPackage(i int, raw json.RawMessage) {
	e := packageEntry{raw: raw}
	var h struct {
		PackageName string          `json:"packageName"`
		Channels    json.RawMessage `json:"channels"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		in.reject(at(KeyPackages, i, ""), "not a package manifest: "+err.Error())
		return
	}
	e.name, e.at = h.PackageName, at(KeyPackages, i, h.PackageName)
	if err := pathName("packageName", e.name); err != nil {
		in.reject(e.at, err.Error())
		return
	}
	// Channels that cannot be read are left for the loader to name, in the package file.
	_ = json.Unmarshal(h.Channels, &e.channels)
	for _, p := range in.packages {
		if p.name == e.name {
			in.reject(e.at, "the same packageName as "+p.at)
			return
		}
	}
	in.packages = append(in.packages, e)
}

// write lays the catalog out in dir and records where each file came from.
func (in *input) write(dir string, res *Result) error {
	res.Problems = append(res.Problems, in.problems...)
	byName := map[string]*csvEntry{}
	for i := range in.csvs {
		byName[in.csvs[i].name] = &in.csvs[i]
	}
	crdByKey := map[string]*crdEntry{}
	for i := range in.crds {
		for _, k := range in.crds[i].keys {
			crdByKey[k] = &in.crds[i]
		}
	}
	reached := map[string]bool{}
	for _, p := range in.packages {
		pkgFile := path.Join(p.name, p.name+".package.yaml")
		res.origins[p.name] = p.at
		res.origins[pkgFile] = p.at
		if err := writeFile(dir, pkgFile, p.raw); err != nil {
			return err
		}
		for _, name := range p.members(byName) {
			reached[name] = true
			c := byName[name]
			bundle := path.Join(p.name, c.name)
			res.origins[bundle] = c.at
			if err := in.writeBundle(dir, bundle, c, crdByKey, res); err != nil {
				return err
			}
		}
	}
	for _, c := range in.csvs {
		if !reached[c.name] {
			res.Problems = append(res.Problems, catalog.Rejection{Path: c.at,
				Reason: "in no package: no channel's currentCSV in " + KeyPackages + " leads to it by replaces or skips"})
		}
	}
	return nil
}

// members are the CSVs of the package's channels: each currentCSV and what it replaces
// and skips, transitively, among the CSVs listed.
func (p packageEntry) members(byName map[string]*csvEntry) []string {
	seen := map[string]bool{}
	var queue []string
	for _, ch := range p.channels {
		queue = append(queue, ch.CurrentCSV)
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		c, ok := byName[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		queue = append(queue, c.edges...)
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// writeBundle writes one bundle folder: the CSV and the CRDs it owns. A CSV owning a CRD
// the list lacks is left out: installed, it would serve an API it cannot create.
func (in *input) writeBundle(dir, bundle string, c *csvEntry, crdByKey map[string]*crdEntry, res *Result) error {
	var crds []*crdEntry
	for i, o := range c.owned {
		crd, ok := crdByKey[o.Name+"/"+o.Version+"/"+o.Kind]
		if !ok {
			res.Problems = append(res.Problems, catalog.Rejection{Path: c.at,
				Reason: fmt.Sprintf("spec.customresourcedefinitions.owned[%d] (%s %s %s) is not in %s", i, o.Name, o.Version, o.Kind, KeyCRDs)})
			return nil
		}
		if !slices.Contains(crds, crd) {
			crds = append(crds, crd)
		}
	}
	csvFile := path.Join(bundle, c.name+".clusterserviceversion.json")
	res.origins[csvFile] = c.at
	if err := writeFile(dir, csvFile, c.raw); err != nil {
		return err
	}
	for _, crd := range crds {
		f := path.Join(bundle, crd.name+".crd.json")
		res.origins[f] = crd.at
		if err := writeFile(dir, f, crd.raw); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(dir, rel string, data []byte) error {
	name := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}

// Data builds the data of a ConfigMap catalog from manifests (YAML or JSON documents,
// one object each): the keys' YAML lists, as OLM's ConfigMap catalogs are written.
func Data(crds, csvs, packages [][]byte) (map[string]string, error) {
	out := map[string]string{}
	for key, docs := range map[string][][]byte{KeyCRDs: crds, KeyCSVs: csvs, KeyPackages: packages} {
		var items []json.RawMessage
		for i, d := range docs {
			j, err := yaml.YAMLToJSON(d)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", key, i, err)
			}
			items = append(items, j)
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		text, err := yaml.Marshal(items)
		if err != nil {
			return nil, err
		}
		out[key] = string(text)
	}
	return out, nil
}
