package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/configmapcatalog"
	"github.com/operator-manager/operator-manager/internal/catalog/grpcregistry"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/grants"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"github.com/operator-manager/operator-manager/internal/recommend"
	"github.com/operator-manager/operator-manager/internal/registry"
)

// loadTimeout bounds loading one catalog (pulling a catalog image, say).
const loadTimeout = 5 * time.Minute

// catalogCache keeps loaded catalogs by CatalogSource and content, and the CSV metadata
// of bundles by digest, so page views do not reload them.
type catalogCache struct {
	dir string

	mu      sync.Mutex
	entries map[string]*catalogEntry // by catalogKey
	current map[string]string        // "ns/name" -> its catalogKey
	meta    map[string]*csvMeta      // bundle digest -> metadata
}

type catalogEntry struct {
	done chan struct{}
	cat  *catalog.Catalog
	err  error
}

func newCatalogCache(dir string) *catalogCache {
	if dir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(d, "operator-manager", "bundles")
		} else {
			dir = filepath.Join(os.TempDir(), "operator-manager", "bundles")
		}
	}
	return &catalogCache{dir: dir, entries: map[string]*catalogEntry{}, current: map[string]string{}, meta: map[string]*csvMeta{}}
}

// catalogKey names what a CatalogSource serves: where it reads (spec), and the content
// the manager last saw there (status.digest, or the image it resolved).
func catalogKey(cs *omv1.CatalogSource) string {
	return strings.Join([]string{cs.Namespace, cs.Name, string(cs.Spec.SourceType), cs.Spec.Directory, cs.Spec.URL, cs.Spec.Image,
		cs.Status.Digest, cs.Status.ResolvedImage}, "\x00")
}

// load returns the catalog of cs, loading it once per key; a failure is not kept.
func (cc *catalogCache) load(ctx context.Context, id *identity, cs *omv1.CatalogSource) (*catalog.Catalog, error) {
	key, name := catalogKey(cs), cs.Namespace+"/"+cs.Name
	cc.mu.Lock()
	e := cc.entries[key]
	if e == nil {
		e = &catalogEntry{done: make(chan struct{})}
		cc.entries[key] = e
		if old := cc.current[name]; old != "" && old != key {
			delete(cc.entries, old) // the source moved on: forget what it served
		}
		cc.current[name] = key
		go func() {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
			defer cancel()
			e.cat, e.err = cc.read(lctx, id, cs)
			if e.err != nil {
				cc.mu.Lock()
				if cc.entries[key] == e {
					delete(cc.entries, key)
				}
				cc.mu.Unlock()
			}
			close(e.done)
		}()
	}
	cc.mu.Unlock()
	select {
	case <-e.done:
		return e.cat, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read loads a catalog as the CLI reads one: a directory from its path, an HTTP catalog
// from its URL, a catalog image from its registry (bundles pulled from their images), a
// registry server from its address.
func (cc *catalogCache) read(ctx context.Context, id *identity, cs *omv1.CatalogSource) (*catalog.Catalog, error) {
	switch cs.Spec.Type() {
	case omv1.SourceDirectory:
		if _, err := os.ReadDir(cs.Spec.Directory); err != nil {
			return nil, &httpError{code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
				msg: fmt.Sprintf("the directory %s of CatalogSource %s/%s is not readable from where the console runs (%v): the manager reads it on its own disk; run the console there, or serve the catalog over HTTP",
					cs.Spec.Directory, cs.Namespace, cs.Name, err)}
		}
		return catalog.Load(cs.Spec.Directory, catalog.Options{})
	case omv1.SourceHTTP:
		c := &remote.Client{BaseURL: cs.Spec.URL, CacheDir: filepath.Join(cc.dir, catalogsource.RemoteCacheSubdir), HTTP: &http.Client{Timeout: time.Minute}}
		return c.Load(ctx)
	case omv1.SourceImage, omv1.SourceGRPC:
		o := registry.Options{UserAgent: "operator-manager-console", DefaultKeychain: id.namespace != ""}
		if r := cs.Spec.Registry; r != nil {
			o.Insecure, o.CABundle = r.Insecure, []byte(r.CABundle)
		}
		var configs [][]byte
		for _, name := range cs.Spec.PullSecrets() { // read as the person: they may, or the pull is anonymous
			if sec, err := id.kube.CoreV1().Secrets(cs.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
				data, err := catalogsource.PullSecretConfig(sec)
				if err != nil {
					return nil, invalid("CatalogSource %s/%s pull Secret %s: %v", cs.Namespace, cs.Name, name, err)
				}
				configs = append(configs, data)
			}
		}
		if len(configs) > 0 {
			data, err := catalogsource.MergeDockerConfigs(configs)
			if err != nil {
				return nil, invalid("CatalogSource %s/%s: %v", cs.Namespace, cs.Name, err)
			}
			o.DockerConfig = data
		}
		if cs.Spec.Type() == omv1.SourceGRPC {
			// A registry server: its catalog as the manager writes it, bundles listed
			// without manifests pulled from their images as the person.
			dir, err := grpcregistry.Fetch(ctx, cs.Spec.Address, filepath.Join(cc.dir, catalogsource.GRPCCatalogsSubdir, cs.Namespace, cs.Name), "", grpcregistry.Options{})
			if err != nil {
				return nil, err
			}
			return catalog.Load(dir, catalog.Options{Images: &registry.Bundles{Options: o,
				Cache: ociparts.Layout{Dir: filepath.Join(cc.dir, catalogsource.BundleImagesSubdir)}}})
		}
		ref := cs.Spec.Image
		if cs.Status.ResolvedImage != "" {
			ref = cs.Status.ResolvedImage
		}
		cat, _, err := catalogsource.LoadImage(ctx, ref, o, cc.dir)
		return cat, err
	case omv1.SourceConfigMap:
		// Read as the person: the catalog is what they may read of the namespace.
		cm, err := id.kube.CoreV1().ConfigMaps(cs.Namespace).Get(ctx, cs.Spec.ConfigMap, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s of CatalogSource %s: %w", cs.Namespace, cs.Spec.ConfigMap, cs.Name, err)
		}
		cat, _, err := configmapcatalog.Load(cm.Data, filepath.Join(cc.dir, catalogsource.ConfigMapCatalogsSubdir, cs.Namespace, cs.Name), "", nil)
		if err != nil {
			return nil, invalid("ConfigMap %s/%s of CatalogSource %s: %v", cs.Namespace, cs.Spec.ConfigMap, cs.Name, err)
		}
		return cat, nil
	}
	return nil, invalid("CatalogSource %s/%s has sourceType %q, which the console cannot read", cs.Namespace, cs.Name, cs.Spec.SourceType)
}

// csvMeta is what the page shows of a package, from the CSV of its channel head.
type csvMeta struct {
	DisplayName  string
	Description  string // long, markdown as text
	OneLine      string
	Icon         *iconBody
	Keywords     []string
	Provider     string
	InstallModes []string
}

type iconBody struct {
	MediaType  string `json:"mediatype"`
	Base64Data string `json:"base64data"`
}

// metaOf reads (once per bundle digest) the CSV metadata of b. An image-only bundle is
// not pulled for a listing (full: false): it shows its name only.
func (cc *catalogCache) metaOf(cat *catalog.Catalog, b *catalog.Bundle, full bool) *csvMeta {
	if b == nil {
		return &csvMeta{}
	}
	cc.mu.Lock()
	m := cc.meta[b.Digest]
	cc.mu.Unlock()
	if m != nil {
		return m
	}
	m = &csvMeta{InstallModes: installModes(b.InstallModes)}
	if b.ImageOnly() && !full {
		return m
	}
	content, err := cat.Content(b)
	if err != nil || content.CSV == nil {
		return m
	}
	spec := &content.CSV.Spec
	m.DisplayName, m.Description, m.Keywords, m.Provider = spec.DisplayName, spec.Description, spec.Keywords, spec.Provider.Name
	if len(spec.Icon) > 0 && spec.Icon[0].Data != "" {
		m.Icon = &iconBody{MediaType: spec.Icon[0].MediaType, Base64Data: spec.Icon[0].Data}
	}
	m.OneLine = content.CSV.Annotations["description"]
	if m.OneLine == "" {
		m.OneLine = strings.TrimSpace(m.Description)
		if i := strings.IndexByte(m.OneLine, '\n'); i >= 0 {
			m.OneLine = strings.TrimSpace(m.OneLine[:i])
		}
		m.OneLine = strings.TrimLeft(m.OneLine, "# ")
	}
	if len(m.InstallModes) == 0 {
		m.InstallModes = installModes(spec.InstallModes)
	}
	cc.mu.Lock()
	cc.meta[b.Digest] = m
	cc.mu.Unlock()
	return m
}

func installModes(modes []olm.InstallMode) []string {
	out := []string{}
	for _, m := range modes {
		if m.Supported {
			out = append(out, string(m.Type))
		}
	}
	return out
}

// catalogRow is one entry of GET /api/catalogs.
type catalogRow struct {
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	Type          string `json:"type"`
	Source        string `json:"source"`
	Ready         bool   `json:"ready"`
	Message       string `json:"message"`
	Packages      int32  `json:"packages"`
	Bundles       int32  `json:"bundles"`
	ResolvedImage string `json:"resolvedImage"`
}

func (s *Server) listCatalogs(w http.ResponseWriter, r *http.Request, id *identity) {
	var items []omv1.CatalogSource
	err := s.eachNamespace(r.Context(), r, id, "catalogsources", func(ns string) error {
		list := &omv1.CatalogSourceList{}
		if err := id.c.List(r.Context(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		items = append(items, list.Items...)
		return nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	rows := []catalogRow{}
	for _, cs := range items {
		row := catalogRow{Namespace: cs.Namespace, Name: cs.Name, Type: string(cs.Spec.SourceType), Packages: cs.Status.Packages,
			Bundles: cs.Status.Bundles, ResolvedImage: cs.Status.ResolvedImage}
		switch cs.Spec.Type() {
		case omv1.SourceDirectory:
			row.Source = cs.Spec.Directory
		case omv1.SourceHTTP:
			row.Source = cs.Spec.URL
		case omv1.SourceImage:
			row.Source = cs.Spec.Image
		case omv1.SourceGRPC:
			row.Source = cs.Spec.Address
		case omv1.SourceConfigMap:
			row.Source = "ConfigMap " + cs.Spec.ConfigMap
		}
		if c := meta.FindStatusCondition(cs.Status.Conditions, omv1.ConditionReady); c != nil {
			row.Ready, row.Message = c.Status == metav1.ConditionTrue, c.Message
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Namespace+"/"+rows[i].Name < rows[j].Namespace+"/"+rows[j].Name
	})
	writeJSON(w, http.StatusOK, rows)
}

// catalogOf reads the CatalogSource {ns}/{name} as the person and returns its catalog.
func (s *Server) catalogOf(r *http.Request, id *identity) (*omv1.CatalogSource, *catalog.Catalog, error) {
	cs := &omv1.CatalogSource{}
	if err := id.c.Get(r.Context(), client.ObjectKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}, cs); err != nil {
		return nil, nil, err
	}
	cat, err := s.catalogs.load(r.Context(), id, cs)
	return cs, cat, err
}

// packageOf is the catalog and its package {pkg}.
func (s *Server) packageOf(r *http.Request, id *identity) (*omv1.CatalogSource, *catalog.Catalog, *catalog.Package, error) {
	cs, cat, err := s.catalogOf(r, id)
	if err != nil {
		return nil, nil, nil, err
	}
	p := cat.Package(r.PathValue("pkg"))
	if p == nil {
		return nil, nil, nil, notFound("package %q is not in the catalog of CatalogSource %s/%s", r.PathValue("pkg"), cs.Namespace, cs.Name)
	}
	return cs, cat, p, nil
}

// head is the head of the package's default channel, else its newest bundle.
func head(cat *catalog.Catalog, p *catalog.Package) *catalog.Bundle {
	if b, err := cat.Head(p.Name, p.DefaultChannel); err == nil && b != nil {
		return b
	}
	if len(p.Bundles) > 0 {
		return p.Bundles[len(p.Bundles)-1]
	}
	return nil
}

// packageRow is one entry of GET .../packages.
type packageRow struct {
	Name           string    `json:"name"`
	DisplayName    string    `json:"displayName"`
	Description    string    `json:"description"`
	Icon           *iconBody `json:"icon"`
	Provider       string    `json:"provider"`
	DefaultChannel string    `json:"defaultChannel"`
	Channels       []string  `json:"channels"`
	Latest         string    `json:"latest"`
	InstallModes   []string  `json:"installModes"`
}

func (s *Server) listPackages(w http.ResponseWriter, r *http.Request, id *identity) {
	_, cat, err := s.catalogOf(r, id)
	if err != nil {
		writeError(w, err)
		return
	}
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	rows := []packageRow{}
	for _, p := range cat.Packages() {
		b := head(cat, p)
		m := s.catalogs.metaOf(cat, b, false)
		if q != "" && !matches(q, p.Name, m.DisplayName, m.OneLine, m.Description, strings.Join(m.Keywords, " ")) {
			continue
		}
		row := packageRow{Name: p.Name, DisplayName: m.DisplayName, Description: m.OneLine, Icon: m.Icon, Provider: m.Provider,
			DefaultChannel: p.DefaultChannel, Channels: []string{}, InstallModes: m.InstallModes}
		for _, c := range p.Channels {
			row.Channels = append(row.Channels, c.Name)
		}
		if b != nil {
			row.Latest = b.Version.String()
		}
		rows = append(rows, row)
	}
	writeJSON(w, http.StatusOK, rows)
}

func matches(q string, fields ...string) bool {
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), q) {
			return true
		}
	}
	return false
}

type packageDetailBody struct {
	Name           string        `json:"name"`
	DisplayName    string        `json:"displayName"`
	Description    string        `json:"description"`
	Icon           *iconBody     `json:"icon"`
	Provider       string        `json:"provider"`
	DefaultChannel string        `json:"defaultChannel"`
	Channels       []channelBody `json:"channels"`
	Versions       []versionBody `json:"versions"`
	// Deprecation (here, on a channel, on a version) is the catalog's message where it
	// deprecates it (olm.deprecations).
	Deprecation string `json:"deprecation,omitempty"`
}

type channelBody struct {
	Name        string      `json:"name"`
	Head        string      `json:"head"`
	Entries     []entryBody `json:"entries"`
	Deprecation string      `json:"deprecation,omitempty"`
}

type entryBody struct {
	CSV       string   `json:"csv"`
	Version   string   `json:"version"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

type versionBody struct {
	CSV            string                 `json:"csv"`
	Version        string                 `json:"version"`
	Channels       []string               `json:"channels"`
	MinKubeVersion string                 `json:"minKubeVersion"`
	InstallModes   []string               `json:"installModes"`
	Dependencies   []string               `json:"dependencies"`
	OwnedCRDs      []string               `json:"ownedCRDs"`
	RequiredCRDs   []string               `json:"requiredCRDs"`
	Image          string                 `json:"image"`
	RelatedImages  []catalog.RelatedImage `json:"relatedImages"`
	Deprecation    string                 `json:"deprecation,omitempty"`
}

func crdNames(refs []catalog.CRDRef) []string {
	out := []string{}
	for _, c := range refs {
		if c.Plural != "" {
			out = append(out, c.Name())
		} else {
			out = append(out, c.Kind+"."+c.Group)
		}
	}
	return out
}

func (s *Server) packageDetail(w http.ResponseWriter, r *http.Request, id *identity) {
	_, cat, p, err := s.packageOf(r, id)
	if err != nil {
		writeError(w, err)
		return
	}
	m := s.catalogs.metaOf(cat, head(cat, p), true)
	doc := packageDetailBody{Name: p.Name, DisplayName: m.DisplayName, Description: m.Description, Icon: m.Icon, Provider: m.Provider,
		DefaultChannel: p.DefaultChannel, Channels: []channelBody{}, Versions: []versionBody{}, Deprecation: p.Deprecation}
	for _, c := range p.Channels {
		cb := channelBody{Name: c.Name, Head: c.Head, Entries: []entryBody{}, Deprecation: c.Deprecation}
		for _, e := range c.Entries {
			eb := entryBody{CSV: e.Name, Replaces: e.Replaces, Skips: append([]string{}, e.Skips...), SkipRange: e.SkipRange.Raw}
			if e.Bundle != nil {
				eb.Version = e.Bundle.Version.String()
			}
			cb.Entries = append(cb.Entries, eb)
		}
		doc.Channels = append(doc.Channels, cb)
	}
	for i := len(p.Bundles) - 1; i >= 0; i-- {
		b := p.Bundles[i]
		v := versionBody{CSV: b.CSVName, Version: b.Version.String(), Channels: append([]string{}, b.Channels...), MinKubeVersion: b.MinKubeVersion,
			InstallModes: installModes(b.InstallModes), Dependencies: []string{}, OwnedCRDs: crdNames(b.OwnedCRDs), RequiredCRDs: crdNames(b.RequiredCRDs),
			Image: b.Image, RelatedImages: append([]catalog.RelatedImage{}, b.RelatedImages...), Deprecation: b.Deprecation}
		for _, d := range b.Dependencies {
			v.Dependencies = append(v.Dependencies, d.String())
		}
		doc.Versions = append(doc.Versions, v)
	}
	writeJSON(w, http.StatusOK, doc)
}

type recommendBody struct {
	Recommended *csvVersion      `json:"recommended"`
	PassedOver  []passedOverBody `json:"passedOver"`
	Notes       []string         `json:"notes"`
}

type csvVersion struct {
	CSV     string `json:"csv"`
	Version string `json:"version"`
}

type passedOverBody struct {
	CSV     string `json:"csv"`
	Version string `json:"version"`
	Reason  string `json:"reason"`
}

func (s *Server) recommend(w http.ResponseWriter, r *http.Request, id *identity) {
	cs, cat, p, err := s.packageOf(r, id)
	if err != nil {
		writeError(w, err)
		return
	}
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = id.namespace
	}
	if ns == "" {
		writeError(w, badRequest("namespace: give the namespace to install in"))
		return
	}
	kube, err := recommend.KubeVersion(id.cfg)
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := recommend.Evaluate(r.Context(), recommend.Request{Client: id.c, Dynamic: id.dyn, Catalog: cat, CatalogName: cs.Namespace + "/" + cs.Name,
		Package: p.Name, Channel: r.URL.Query().Get("channel"), Namespace: ns, KubeVersion: kube})
	if err != nil {
		writeError(w, err)
		return
	}
	doc := recommendBody{PassedOver: []passedOverBody{}, Notes: []string{}}
	if b := res.Bundle; b != nil {
		doc.Recommended = &csvVersion{CSV: b.CSVName, Version: b.Version.String()}
	}
	for _, po := range res.PassedOver {
		doc.PassedOver = append(doc.PassedOver, passedOverBody{CSV: po.CSVName, Version: po.Version.String(), Reason: po.Reason})
	}
	for _, n := range res.Notes {
		doc.Notes = append(doc.Notes, strings.TrimSuffix(n, "\n"))
	}
	if res.Bundle == nil && res.Installed != nil {
		doc.Notes = append(doc.Notes, fmt.Sprintf("stay on %s: no upgrade fits", res.Installed.CSVName))
	}
	writeJSON(w, http.StatusOK, doc)
}

// grantBody is one rule of GET .../permissions: every field present.
type grantBody struct {
	Subject         string   `json:"subject"`
	Scope           string   `json:"scope"`
	Role            string   `json:"role"`
	APIGroups       []string `json:"apiGroups"`
	Resources       []string `json:"resources"`
	ResourceNames   []string `json:"resourceNames"`
	NonResourceURLs []string `json:"nonResourceURLs"`
	Verbs           []string `json:"verbs"`
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) permissions(w http.ResponseWriter, r *http.Request, id *identity) {
	_, cat, p, err := s.packageOf(r, id)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	b := head(cat, p)
	if csv := q.Get("csv"); csv != "" {
		if b = cat.BundleByCSV(csv); b == nil || b.Package != p.Name {
			writeError(w, notFound("%s is not a version of package %s in this catalog", csv, p.Name))
			return
		}
	}
	if b == nil {
		writeError(w, notFound("package %s has no version", p.Name))
		return
	}
	ns := q.Get("namespace")
	if ns == "" {
		ns = id.namespace
	}
	if ns == "" {
		writeError(w, badRequest("namespace: give the namespace to install in"))
		return
	}
	var targets []string
	for _, t := range strings.Split(q.Get("targetNamespaces"), ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	gs, err := grants.Of(cat, b, ns, targets)
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			err = invalid("%v", err)
		}
		writeError(w, err)
		return
	}
	out := []grantBody{}
	for _, g := range gs {
		out = append(out, grantBody{Subject: g.Subject, Scope: g.Scope, Role: g.Role, APIGroups: orEmpty(g.APIGroups), Resources: orEmpty(g.Resources),
			ResourceNames: orEmpty(g.ResourceNames), NonResourceURLs: orEmpty(g.NonResourceURLs), Verbs: orEmpty(g.Verbs)})
	}
	writeJSON(w, http.StatusOK, out)
}
