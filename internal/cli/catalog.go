package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/configmapcatalog"
	"github.com/operator-manager/operator-manager/internal/catalog/grpcregistry"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/ociparts"
	"github.com/operator-manager/operator-manager/internal/registry"
	"github.com/operator-manager/operator-manager/internal/spelling"
)

func newCatalogCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Read, check and serve catalogs of OperatorHub-format bundles",
		Long: `catalog reads a catalog directory in any layout operator-manager understands: the
original flat <package>/<version>/ folders, package manifests (<package>.package.yaml),
bundles (manifests/ and metadata/), and File-Based Catalogs.

"catalog serve DIR" serves a directory over HTTP for HTTP CatalogSources; list, search,
show and validate read such a served catalog with --url URL in place of DIR; a catalog
image with --image REF, a registry server with --address HOST:PORT, an OLM ConfigMap
catalog with --configmap FILE, and a CatalogSource of the cluster, as the manager reads
it, with --catalog NAME.`,
	}
	cmd.AddCommand(newCatalogListCmd(g), newCatalogSearchCmd(g), newCatalogShowCmd(g), newCatalogValidateCmd(g), newCatalogServeCmd(), newCatalogPushCmd(), newCatalogMirrorCmd())
	return cmd
}

func loadCatalog(dir string) (*catalog.Catalog, error) {
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		return nil, err
	}
	return cat, nil
}

// remoteTimeout bounds each request the inspecting verbs make to a catalog server.
const remoteTimeout = time.Minute

// catalogSource is where an inspecting verb reads its catalog: the DIR argument, the
// catalog served at --url, the catalog image --image, the registry server --address, the
// ConfigMap manifest --configmap, or the cluster's CatalogSource --catalog; each flag
// takes DIR's place.
type catalogSource struct {
	url, image, address, configMap string
	// cluster is --catalog: a CatalogSource of the cluster (NAME or NAMESPACE/NAME), read
	// through g's client as the manager reads it (fromCluster). Bound only where g is set.
	cluster  string
	g        *globals
	registry registryFlags
	cmd      *cobra.Command // for its stdin
	// inCluster: DIR may be left out, for the catalog the cluster names (fromCluster).
	inCluster bool
	// cm is a ConfigMap catalog read from the cluster, in place of --configmap's file.
	cm *corev1.ConfigMap
	// dir is a Directory CatalogSource's directory found on this machine, in place of DIR.
	dir string
	// resolved: --catalog has been read (resolve).
	resolved bool
	// key is the cluster's CatalogSource read (fromCluster), "namespace/name".
	key string
}

// fromCluster points s at the catalog of CatalogSource key, as the manager reads it: its
// URL, its image or its registry server's address, or its ConfigMap read through the API.
// A directory is on the manager's disk: it is read when this machine has it (the manager
// of `make run` runs here), else the error says to give it as DIR. A note on stderr says
// which directory was read, since a manager in a Pod may see other files at that path.
func (s *catalogSource) fromCluster(ctx context.Context, c client.Client, key client.ObjectKey) error {
	cs := &omv1.CatalogSource{}
	if err := c.Get(ctx, key, cs); err != nil {
		return fmt.Errorf("reading CatalogSource %s, the installation's catalog (or give the catalog as DIR, --url, --image, --address or --configmap): %w", key, err)
	}
	s.key = key.String()
	spec := &cs.Spec
	switch spec.Type() {
	case omv1.SourceHTTP:
		s.url = spec.URL
	case omv1.SourceImage:
		s.image = spec.Image
	case omv1.SourceGRPC:
		s.address = spec.Address
	case omv1.SourceConfigMap:
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: spec.ConfigMap}, cm); err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s, the catalog of CatalogSource %s: %w", key.Namespace, spec.ConfigMap, key, err)
		}
		s.cm, s.configMap = cm, "configmap/"+key.Namespace+"/"+spec.ConfigMap
	default:
		if st, err := os.Stat(spec.Directory); err != nil || !st.IsDir() || spec.Directory == "" {
			return fmt.Errorf("CatalogSource %s reads the directory %s on the manager's disk, which is not on this machine: give the catalog as DIR (or --url, --image, --address, --configmap)", key, spec.Directory)
		}
		s.dir = spec.Directory
		if s.cmd != nil {
			fmt.Fprintf(s.cmd.ErrOrStderr(), "reading %s, the directory of CatalogSource %s, on this machine\n", spec.Directory, key)
		}
	}
	return nil
}

// hasSource says whether a flag names the catalog (in place of DIR).
func (s *catalogSource) hasSource() bool {
	return s.url != "" || s.image != "" || s.address != "" || s.configMap != "" || s.cluster != ""
}

// fromClusterRef points s at the CatalogSource --catalog names (see findClusterCatalog).
func (s *catalogSource) fromClusterRef(ctx context.Context) error {
	c, ns, err := s.g.clientAndNamespace()
	if err != nil {
		return err
	}
	key, err := findClusterCatalog(ctx, c, ns, s.cluster)
	if err != nil {
		return err
	}
	return s.fromCluster(ctx, c, key)
}

// findClusterCatalog is the CatalogSource a --catalog names, for the namespace ns:
// NAMESPACE/NAME as written; a bare NAME is looked for in ns, then in the manager's
// namespace, where the default catalog and the catalogs every namespace may use live
// (as a Subscription names them by sourceNamespace). A catalog found nowhere is an error
// that says where it was looked for. One the caller may not read is taken as written:
// the manager, not this caller, reads it.
func findClusterCatalog(ctx context.Context, c client.Client, ns, ref string) (types.NamespacedName, error) {
	key := omv1.CatalogKey(ref, ns)
	err := c.Get(ctx, key, &omv1.CatalogSource{})
	if apierrors.IsNotFound(err) && !strings.Contains(ref, "/") && ns != config.ManagerNamespace {
		global := omv1.CatalogKey(ref, config.ManagerNamespace)
		switch err := c.Get(ctx, global, &omv1.CatalogSource{}); {
		case err == nil:
			return global, nil
		case apierrors.IsNotFound(err):
			return key, fmt.Errorf("--catalog %s: no CatalogSource %s in namespace %s or in the manager's namespace %s (kubectl get catalogsources -A lists them)", ref, ref, ns, config.ManagerNamespace)
		}
		return key, nil
	}
	if apierrors.IsNotFound(err) {
		return key, fmt.Errorf("--catalog %s: no CatalogSource %s (kubectl get catalogsources -A lists them)", ref, key)
	}
	return key, nil
}

// resolve reads the cluster's CatalogSource when --catalog names one, once.
func (s *catalogSource) resolve(ctx context.Context) error {
	if s.cluster == "" || s.resolved {
		return nil
	}
	s.resolved = true
	return s.fromClusterRef(ctx)
}

// dirArg is the catalog directory and the arguments after it: a Directory CatalogSource
// found on this machine, else DIR, the first argument.
func (s *catalogSource) dirArg(args []string) (string, []string) {
	if s.dir != "" {
		return s.dir, args
	}
	return args[0], args[1:]
}

// bind adds --url and --image and makes the verb take n arguments with DIR, n-1 with
// either flag.
func (s *catalogSource) bind(cmd *cobra.Command, n int) {
	s.cmd = cmd
	cmd.Flags().StringVar(&s.url, "url", "", "read the catalog served at this `URL` (by 'operator-manager catalog serve') instead of DIR")
	cmd.Flags().StringVar(&s.image, "image", "", "read the catalog image REF (a File-Based Catalog image, by tag or digest) instead of DIR; bundles are pulled from their images")
	cmd.Flags().StringVar(&s.address, "address", "", "read the catalog of the registry server at `HOST:PORT` (OLM's registry gRPC API, as 'opm serve' serves it) instead of DIR")
	cmd.Flags().StringVar(&s.configMap, "configmap", "", "read OLM's ConfigMap catalog in `FILE` (a ConfigMap manifest, as 'kubectl get configmap NAME -o yaml' prints it; - for stdin) instead of DIR")
	s.registry.bind(cmd)
	exclusive := []string{"url", "image", "address", "configmap"}
	if s.g != nil {
		cmd.Flags().StringVar(&s.cluster, "catalog", "", "read the cluster's CatalogSource `NAME` (or NAMESPACE/NAME; a bare NAME in the namespace, else the manager's) as the manager reads it, instead of DIR")
		exclusive = append(exclusive, "catalog")
	}
	cmd.MarkFlagsMutuallyExclusive(exclusive...)
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if s.hasSource() {
			if len(args) != n-1 {
				return fmt.Errorf("accepts %d arg(s) with --url, --image, --address, --configmap or --catalog, which take the place of DIR, received %d", n-1, len(args))
			}
			return nil
		}
		if s.inCluster {
			return cobra.RangeArgs(n-1, n)(cmd, args)
		}
		return cobra.ExactArgs(n)(cmd, args)
	}
}

// registryFlags are how the CLI reaches a registry: the person's own credentials
// (~/.docker/config.json, as docker and crane read them), and --insecure / --ca-file.
type registryFlags struct {
	insecure bool
	caFile   string
}

func (f *registryFlags) bind(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.insecure, "insecure", false, "allow plain HTTP and unverified TLS to the registry (loopback registries need no flag)")
	cmd.Flags().StringVar(&f.caFile, "ca-file", "", "PEM file of certificates to trust for the registry's TLS")
}

func (f *registryFlags) options() (registry.Options, error) {
	o := registry.Options{Insecure: f.insecure, DefaultKeychain: true, UserAgent: "operator-manager"}
	if f.caFile != "" {
		data, err := os.ReadFile(f.caFile)
		if err != nil {
			return o, fmt.Errorf("--ca-file: %w", err)
		}
		o.CABundle = data
	}
	return o, nil
}

// loadImage pulls a catalog image into the local cache and loads it, its bundles pulled
// from their images when read.
func (s *catalogSource) loadImage(ctx context.Context) (*catalog.Catalog, error) {
	o, err := s.registry.options()
	if err != nil {
		return nil, err
	}
	cat, _, err := catalogsource.LoadImage(ctx, s.image, o, defaultCacheDir())
	return cat, err
}

// client returns a client of the --url server keeping bundles in cacheDir.
func (s *catalogSource) client(cacheDir string) *remote.Client {
	return &remote.Client{BaseURL: s.url, CacheDir: cacheDir, HTTP: &http.Client{Timeout: remoteTimeout}}
}

// loadAddress asks the registry server --address for its catalog, written into the
// local cache as the manager writes it; bundles it lists without manifests are pulled
// from their images when read, with the person's registry credentials.
func (s *catalogSource) loadAddress(ctx context.Context) (*catalog.Catalog, error) {
	o, err := s.registry.options()
	if err != nil {
		return nil, err
	}
	dir, err := grpcregistry.Fetch(ctx, s.address, filepath.Join(defaultCacheDir(), catalogsource.GRPCCatalogsSubdir, "cli", url.PathEscape(s.address)), "",
		grpcregistry.Options{Timeout: remoteTimeout})
	if err != nil {
		return nil, err
	}
	return catalog.Load(dir, catalog.Options{Images: &registry.Bundles{Options: o,
		Cache: ociparts.Layout{Dir: filepath.Join(defaultCacheDir(), catalogsource.BundleImagesSubdir)}}})
}

// loadConfigMap reads an OLM ConfigMap catalog, from the manifest in --configmap or as
// fromCluster read it, written into the local cache as the manager writes it.
func (s *catalogSource) loadConfigMap() (*catalog.Catalog, error) {
	cm, name, what := s.cm, s.configMap, s.configMap
	if cm == nil {
		var err error
		if cm, err = s.readConfigMapFile(); err != nil {
			return nil, err
		}
		if abs, err := filepath.Abs(name); err == nil && name != "-" {
			name = abs
		}
		what = "--configmap " + s.configMap
	}
	cat, _, err := configmapcatalog.Load(cm.Data, filepath.Join(defaultCacheDir(), catalogsource.ConfigMapCatalogsSubdir, "cli", url.PathEscape(name)), "", nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return cat, nil
}

// readConfigMapFile reads the ConfigMap manifest in --configmap (- for stdin).
func (s *catalogSource) readConfigMapFile() (*corev1.ConfigMap, error) {
	in := s.cmd.InOrStdin()
	if s.configMap != "-" {
		f, err := os.Open(s.configMap)
		if err != nil {
			return nil, fmt.Errorf("--configmap: %w", err)
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, catalog.DefaultMaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("--configmap: %w", err)
	}
	if len(data) > catalog.DefaultMaxFileSize {
		return nil, fmt.Errorf("--configmap %s: larger than %d bytes", s.configMap, catalog.DefaultMaxFileSize)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		return nil, fmt.Errorf("--configmap %s: %w", s.configMap, err)
	}
	if cm.Kind != "ConfigMap" {
		return nil, fmt.Errorf("--configmap %s: kind is %q, want ConfigMap", s.configMap, cm.Kind)
	}
	return &cm, nil
}

// load returns the catalog, the name to show for it (a cluster's CatalogSource by its
// key, as the manager names it), and the arguments after DIR.
func (s *catalogSource) load(ctx context.Context, args []string) (*catalog.Catalog, string, []string, error) {
	if err := s.resolve(ctx); err != nil {
		return nil, "", nil, err
	}
	cat, name, rest, err := s.loadFrom(ctx, args)
	if s.key != "" {
		name = s.key
	}
	return cat, name, rest, err
}

func (s *catalogSource) loadFrom(ctx context.Context, args []string) (*catalog.Catalog, string, []string, error) {
	if s.configMap != "" {
		cat, err := s.loadConfigMap()
		return cat, s.configMap, args, err
	}
	if s.address != "" {
		cat, err := s.loadAddress(ctx)
		return cat, s.address, args, err
	}
	if s.image != "" {
		cat, err := s.loadImage(ctx)
		return cat, s.image, args, err
	}
	if s.url == "" {
		dir, rest := s.dirArg(args)
		cat, err := loadCatalog(dir)
		return cat, dir, rest, err
	}
	// Only the index is read: no bundle is fetched, so no cache is needed.
	cat, err := s.client("").Load(ctx)
	return cat, s.url, args, err
}

// loadWithBundles returns the catalog for a verb that reads bundles too: those of a
// served catalog are fetched into the local cache, as the manager keeps them.
func (s *catalogSource) loadWithBundles(ctx context.Context, args []string) (*catalog.Catalog, error) {
	if err := s.resolve(ctx); err != nil {
		return nil, err
	}
	if s.configMap != "" {
		return s.loadConfigMap()
	}
	if s.address != "" {
		return s.loadAddress(ctx)
	}
	if s.image != "" {
		return s.loadImage(ctx)
	}
	if s.url == "" {
		dir, _ := s.dirArg(args)
		return loadCatalog(dir)
	}
	return s.client(filepath.Join(defaultCacheDir(), catalogsource.RemoteCacheSubdir)).Load(ctx)
}

func latest(p *catalog.Package) *catalog.Bundle {
	if len(p.Bundles) == 0 {
		return nil
	}
	return p.Bundles[len(p.Bundles)-1]
}

func channelNames(p *catalog.Package) string {
	var names []string
	for _, c := range p.Channels {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

// packageRow is one package in `catalog list`.
type packageRow struct {
	Name           string   `json:"name"`
	DefaultChannel string   `json:"defaultChannel"`
	Channels       []string `json:"channels"`
	Latest         string   `json:"latest"`
	Bundles        int      `json:"bundles"`
	Layout         string   `json:"layout"`
}

func newCatalogListCmd(g *globals) *cobra.Command {
	out := &output{}
	src := &catalogSource{g: g}
	cmd := &cobra.Command{
		Use:   "list DIR | list --url URL | list --image REF | list --address HOST:PORT | list --configmap FILE",
		Short: "List the packages of a catalog",
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, _, _, err := src.load(cmd.Context(), args)
			if err != nil {
				return err
			}
			var rows []packageRow
			for _, p := range cat.Packages() {
				row := packageRow{Name: p.Name, DefaultChannel: p.DefaultChannel, Bundles: len(p.Bundles), Layout: string(p.Layout)}
				for _, c := range p.Channels {
					row.Channels = append(row.Channels, c.Name)
				}
				if b := latest(p); b != nil {
					row.Latest = b.Version.String()
				}
				rows = append(rows, row)
			}
			return out.print(cmd.OutOrStdout(), rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "PACKAGE\tDEFAULT CHANNEL\tCHANNELS\tLATEST\tBUNDLES\tLAYOUT")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.Name, r.DefaultChannel, strings.Join(r.Channels, ","), r.Latest, r.Bundles, r.Layout)
				}
			})
		},
	}
	out.bind(cmd)
	src.bind(cmd, 1)
	return cmd
}

// searchHit is one bundle that matches `catalog search`.
type searchHit struct {
	Package string `json:"package"`
	Version string `json:"version"`
	CSV     string `json:"csv"`
	Match   string `json:"match"`
}

func newCatalogSearchCmd(g *globals) *cobra.Command {
	out := &output{}
	src := &catalogSource{g: g}
	var all bool
	cmd := &cobra.Command{
		Use:   "search DIR TERM | search --url URL TERM | search --image REF TERM | search --address HOST:PORT TERM | search --configmap FILE TERM",
		Short: "Find packages by name, CSV name, or the kinds and groups of the CRDs they provide",
		Long: `search matches TERM (case-insensitive, a substring) against package names, CSV names
and the group and kind of each owned CRD. It shows the newest matching version of each
package; --all shows every matching version.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, _, rest, err := src.load(cmd.Context(), args)
			if err != nil {
				return err
			}
			hits := search(cat, strings.ToLower(rest[0]), all)
			return out.print(cmd.OutOrStdout(), hits, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "PACKAGE\tVERSION\tCSV\tMATCH")
				for _, h := range hits {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Package, h.Version, h.CSV, h.Match)
				}
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "show every matching version, not only the newest of each package")
	out.bind(cmd)
	src.bind(cmd, 2)
	return cmd
}

// search is the matching of `catalog search`: newest version first within a package.
func search(cat *catalog.Catalog, term string, all bool) []searchHit {
	var hits []searchHit
	for _, p := range cat.Packages() {
		for i := len(p.Bundles) - 1; i >= 0; i-- {
			b := p.Bundles[i]
			match := ""
			switch {
			case strings.Contains(strings.ToLower(p.Name), term):
				match = "package " + p.Name
			case strings.Contains(strings.ToLower(b.CSVName), term):
				match = "csv " + b.CSVName
			default:
				for _, c := range b.OwnedCRDs {
					if strings.Contains(strings.ToLower(c.Kind), term) || strings.Contains(strings.ToLower(c.Group), term) {
						match = "provides " + c.GVK().String()
						break
					}
				}
			}
			if match == "" {
				continue
			}
			hits = append(hits, searchHit{Package: p.Name, Version: b.Version.String(), CSV: b.CSVName, Match: match})
			if !all {
				break
			}
		}
	}
	return hits
}

// packageDetail is `catalog show`'s document.
type packageDetail struct {
	*catalog.Package
	Edges   map[string][]catalog.Edge `json:"edges"`
	Bundles []*catalog.Bundle         `json:"bundles"`
}

func newCatalogShowCmd(g *globals) *cobra.Command {
	out := &output{}
	src := &catalogSource{g: g}
	cmd := &cobra.Command{
		Use:   "show DIR PACKAGE | show --url URL PACKAGE | show --image REF PACKAGE | show --address HOST:PORT PACKAGE | show --configmap FILE PACKAGE",
		Short: "Show a package: channels, heads, upgrade edges and versions",
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, name, rest, err := src.load(cmd.Context(), args)
			if err != nil {
				return err
			}
			p := cat.Package(rest[0])
			if p == nil {
				var names []string
				for _, p := range cat.Packages() {
					names = append(names, p.Name)
				}
				return fmt.Errorf("package %q is not in catalog %s%s; it has: %s", rest[0], name, spelling.Suggest(rest[0], names), strings.Join(names, ", "))
			}
			detail := packageDetail{Package: p, Edges: map[string][]catalog.Edge{}, Bundles: p.Bundles}
			for _, c := range p.Channels {
				detail.Edges[c.Name] = c.Edges()
			}
			return out.print(cmd.OutOrStdout(), detail, func(tw *tabwriter.Writer) { showTable(tw, p) })
		},
	}
	out.bind(cmd)
	src.bind(cmd, 2)
	return cmd
}

func showTable(w io.Writer, p *catalog.Package) {
	fmt.Fprintf(w, "Package:\t%s\nLayout:\t%s\nDefault channel:\t%s\n", p.Name, p.Layout, p.DefaultChannel)
	if p.Deprecation != "" {
		fmt.Fprintf(w, "Deprecated:\t%s\n", p.Deprecation)
	}
	for _, c := range p.Channels {
		if c.Deprecation != "" {
			fmt.Fprintf(w, "Deprecated channel %s:\t%s\n", c.Name, c.Deprecation)
		}
	}
	for _, b := range p.Bundles {
		if b.Deprecation != "" {
			fmt.Fprintf(w, "Deprecated %s:\t%s\n", b.CSVName, b.Deprecation)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CHANNEL\tCSV\tVERSION\tHEAD\tUPGRADES FROM")
	for _, c := range p.Channels {
		from := map[string][]string{}
		for _, e := range c.Edges() {
			from[e.To] = append(from[e.To], e.From+" ("+string(e.Kind)+")")
		}
		for _, e := range c.Entries {
			head := ""
			if e.Name == c.Head {
				head = "*"
			}
			version := ""
			if e.Bundle != nil {
				version = e.Bundle.Version.String()
			}
			sort.Strings(from[e.Name])
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Name, e.Name, version, head, strings.Join(from[e.Name], ", "))
		}
	}
	requiresTable(w, p)
	imagesTable(w, p)
}

// requiresTable lists what each version needs of other operators: its dependencies
// (olm.package, olm.gvk, olm.label, olm.constraint, with the author's words) and the CRDs
// its CSV requires and does not own, newest first; nothing when no version needs any.
func requiresTable(w io.Writer, p *catalog.Package) {
	rows := map[*catalog.Bundle][]string{}
	for _, b := range p.Bundles {
		for _, d := range b.Dependencies {
			rows[b] = append(rows[b], d.String())
		}
		for _, c := range b.RequiredCRDs {
			if !b.Provides(c.GVK()) {
				rows[b] = append(rows[b], "required CRD "+c.GVK().Text())
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nCSV\tREQUIRES")
	for i := len(p.Bundles) - 1; i >= 0; i-- {
		b := p.Bundles[i]
		for j, r := range rows[b] {
			csv := b.CSVName
			if j > 0 {
				csv = ""
			}
			fmt.Fprintf(w, "%s\t%s\n", csv, r)
		}
	}
}

// imagesTable lists each bundle's image and the images it uses (spec.relatedImages, or
// the catalog entry's relatedImages): what a mirror for a disconnected cluster carries.
func imagesTable(w io.Writer, p *catalog.Package) {
	if !slices.ContainsFunc(p.Bundles, func(b *catalog.Bundle) bool { return b.Image != "" || len(b.RelatedImages) > 0 }) {
		return
	}
	fmt.Fprintln(w, "\nCSV\tBUNDLE IMAGE\tRELATED IMAGE\tNAME")
	for i := len(p.Bundles) - 1; i >= 0; i-- {
		b := p.Bundles[i]
		bundleImage := b.Image
		if bundleImage == "" {
			bundleImage = "-"
		}
		if len(b.RelatedImages) == 0 {
			fmt.Fprintf(w, "%s\t%s\t-\t\n", b.CSVName, bundleImage)
		}
		for j, ri := range b.RelatedImages {
			csv := b.CSVName
			if j > 0 {
				csv, bundleImage = "", ""
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", csv, bundleImage, ri.Image, ri.Name)
		}
	}
}

// validation is `catalog validate -o json`'s document, for catalog pipelines.
type validation struct {
	Bundles  int                 `json:"bundles"`
	Loaded   int                 `json:"loaded"`
	Rejected []catalog.Rejection `json:"rejected"`
}

// errRejected makes `catalog validate` exit non-zero after it printed the rejections.
var errRejected = silentError{errors.New("the catalog has rejected bundles")}

func newCatalogValidateCmd(g *globals) *cobra.Command {
	out := &output{}
	src := &catalogSource{g: g}
	cmd := &cobra.Command{
		Use:   "validate DIR | validate --url URL | validate --image REF | validate --address HOST:PORT | validate --configmap FILE",
		Short: "Load every bundle of a catalog, print each rejected one with its reason, and fail if any is",
		Long: `validate loads every bundle of a catalog directory, prints each rejected one with its
reason, and fails if any is. With --url it checks a served catalog: what the server
rejected when it loaded its directory, and every served bundle, downloaded, checked
against its digest and parsed. With --image it checks a catalog image: every bundle image
is pulled, checked from its digest down to each layer, and parsed. With --address it
checks what a registry server serves: every bundle, as its manifests are listed, parsed.
With --configmap it checks an OLM ConfigMap catalog: each entry of its three lists that
cannot be used is named by its key and index.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := src.resolve(cmd.Context()); err != nil {
				return err
			}
			var v validation
			if src.url != "" {
				var err error
				if v, err = validateRemote(cmd.Context(), src); err != nil {
					return err
				}
			} else if src.image != "" {
				cat, err := src.loadImage(cmd.Context())
				if err != nil {
					return err
				}
				v = validateContents(cat, cat.Rejections)
			} else if src.address != "" {
				cat, err := src.loadAddress(cmd.Context())
				if err != nil {
					return err
				}
				v = validateContents(cat, cat.Rejections)
			} else if src.configMap != "" {
				cat, err := src.loadConfigMap()
				if err != nil {
					return err
				}
				v = validateContents(cat, cat.Rejections)
			} else {
				dir, _ := src.dirArg(args)
				cat, err := loadCatalog(dir)
				if err != nil {
					return err
				}
				v = validation{Loaded: len(cat.Bundles()), Rejected: cat.Rejections}
			}
			if v.Rejected == nil {
				v.Rejected = []catalog.Rejection{}
			}
			v.Bundles = v.Loaded + len(v.Rejected)
			if err := out.print(cmd.OutOrStdout(), v, func(tw *tabwriter.Writer) {
				for _, r := range v.Rejected {
					fmt.Fprintf(tw, "REJECTED\t%s\t%s\n", r.Path, r.Reason)
				}
				fmt.Fprintf(tw, "%d bundles, %d loaded, %d rejected\n", v.Bundles, v.Loaded, len(v.Rejected))
			}); err != nil {
				return err
			}
			if len(v.Rejected) > 0 {
				return errRejected
			}
			return nil
		},
	}
	out.bind(cmd)
	src.bind(cmd, 1)
	return cmd
}

// validateRemote checks a served catalog: the server's own rejections, then every bundle
// it serves, fetched into a temporary cache, checked against its digest and parsed. A
// bundle whose manifests are only in an image (ErrNoContent) is not an error, as with a
// directory.
func validateRemote(ctx context.Context, src *catalogSource) (validation, error) {
	tmp, err := os.MkdirTemp("", "operator-manager-validate-")
	if err != nil {
		return validation{}, err
	}
	defer os.RemoveAll(tmp)
	client := src.client(tmp)
	idx, err := client.Index(ctx, nil)
	if err != nil {
		return validation{}, err
	}
	cat, err := client.Catalog(idx)
	if err != nil {
		return validation{}, err
	}
	return validateContents(cat, idx.Rejections), nil
}

// validateContents reads every bundle's manifests (fetching or pulling them), checked
// against its digest and parsed.
func validateContents(cat *catalog.Catalog, rejected []catalog.Rejection) validation {
	v := validation{Rejected: slices.Clone(rejected)}
	for _, b := range cat.Bundles() {
		if _, err := cat.Content(b); err != nil && !errors.Is(err, catalog.ErrNoContent) {
			v.Rejected = append(v.Rejected, catalog.Rejection{Path: b.RelPath, Reason: err.Error()})
			continue
		}
		v.Loaded++
	}
	return v
}
