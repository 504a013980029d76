// Package grpcregistry reads a catalog from an OLM registry server: operator-registry's
// gRPC API, as `opm serve`, OLM's registry pods and a CatalogSource's spec.address serve
// it. It writes what the server lists as a File-Based Catalog directory, which
// catalog.Load then reads like any other, so the server's answers meet the same checks
// as a catalog on disk and are never held in memory whole.
//
// The server is asked four things: ListPackages, GetPackage of each (its channels and
// default channel), ListBundles (every bundle, once per channel it is in) and, for a
// bundle listed without its manifests (a registry leaves them out of the list where the
// bundle has an image, which OLM would unpack), GetBundle. Those are what every
// operator-registry since OLM 0.11 serves, from an FBC cache or the old SQLite index
// alike.
package grpcregistry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/digestdir"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Options bound a fetch.
type Options struct {
	// Timeout bounds the whole fetch (default 2 minutes).
	Timeout time.Duration
	// MaxMessageBytes bounds one answer, such as one bundle with its CRDs (default 64 MiB;
	// gRPC's own default of 4 MiB is less than some community bundles).
	MaxMessageBytes int
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 64 << 20
	}
	return o
}

// Fetch reads the catalog the registry server at address (host:port, plain gRPC as OLM's
// registry pods serve it) holds, and writes it under root as a File-Based Catalog in a
// directory named by its content's digest, which it returns: an unchanged catalog is the
// same directory, written once. Directories of root other than the one returned and
// keep are removed, so root holds at most the current and the previous catalog.
func Fetch(ctx context.Context, address, root, keep string, o Options) (string, error) {
	o = o.withDefaults()
	if address == "" {
		return "", errors.New("spec.address is empty")
	}
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.MaxMessageBytes)))
	if err != nil {
		return "", fmt.Errorf("registry server %s: %w", address, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	return digestdir.Write(root, keep, func(dir string) error {
		if err := write(ctx, api.NewRegistryClient(conn), dir); err != nil {
			return fmt.Errorf("registry server %s: %w", address, err)
		}
		return nil
	})
}

// write lists the packages and bundles into dir: per package, package.json (the
// olm.package and olm.channel blobs) and bundles.json (its olm.bundle blobs, appended as
// they arrive).
func write(ctx context.Context, c api.RegistryClient, dir string) error {
	names, err := listPackages(ctx, c)
	if err != nil {
		return err
	}
	channels := map[string]map[string][]catalog.FBCEntry{} // package -> channel -> entries
	pkgs := map[string]*api.Package{}
	for _, name := range names {
		p, err := c.GetPackage(ctx, &api.GetPackageRequest{Name: name})
		if err != nil {
			return fmt.Errorf("GetPackage %s: %w", name, err)
		}
		pkgs[name], channels[name] = p, map[string][]catalog.FBCEntry{}
		for _, ch := range p.GetChannels() {
			channels[name][ch.GetName()] = nil
		}
	}
	stream, err := c.ListBundles(ctx, &api.ListBundlesRequest{})
	if err != nil {
		return fmt.Errorf("ListBundles: %w", err)
	}
	written := map[string]bool{}
	deprecated := map[string][]catalog.FBCDeprecationEntry{} // package -> its bundles' deprecations
	for {
		b, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("ListBundles: %w", err)
		}
		pkg, name := b.GetPackageName(), b.GetCsvName()
		if _, ok := pkgs[pkg]; !ok {
			return fmt.Errorf("ListBundles: bundle %q names package %q, which ListPackages did not list", name, pkg)
		}
		if name == "" {
			return fmt.Errorf("ListBundles: a bundle of package %q has no csvName", pkg)
		}
		if ch := b.GetChannelName(); ch != "" {
			channels[pkg][ch] = append(channels[pkg][ch], catalog.FBCEntry{Name: name, Replaces: b.GetReplaces(), Skips: b.GetSkips(), SkipRange: b.GetSkipRange()})
		}
		if written[pkg+"/"+name] {
			continue // the same bundle in another channel
		}
		written[pkg+"/"+name] = true
		if d := b.GetDeprecation().GetMessage(); d != "" {
			deprecated[pkg] = append(deprecated[pkg], catalog.FBCDeprecationEntry{Reference: catalog.FBCReference{Schema: catalog.SchemaBundle, Name: name}, Message: d})
		}
		if len(b.GetObject()) == 0 && b.GetCsvJson() == "" && b.GetChannelName() != "" {
			// A registry leaves the manifests of a bundle with an image out of the list
			// (OLM unpacks the image); GetBundle carries them.
			full, err := c.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: b.GetChannelName(), CsvName: name})
			if err != nil {
				return fmt.Errorf("GetBundle %s/%s: %w", pkg, name, err)
			}
			b.Object, b.CsvJson = full.GetObject(), full.GetCsvJson()
		}
		data, err := json.Marshal(bundleBlob(imageOnly(b)))
		if err != nil {
			return err
		}
		if err := digestdir.AppendFile(filepath.Join(dir, pkg, "bundles.json"), append(data, '\n')); err != nil {
			return err
		}
	}
	for _, name := range names {
		var out []byte
		p := pkgs[name]
		data, err := json.Marshal(catalog.FBCPackage{Schema: catalog.SchemaPackage, Name: name, DefaultChannel: p.GetDefaultChannelName()})
		if err != nil {
			return err
		}
		out = append(out, append(data, '\n')...)
		for _, ch := range slices.Sorted(maps.Keys(channels[name])) {
			entries := append([]catalog.FBCEntry{}, channels[name][ch]...)
			sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
			data, err := json.Marshal(catalog.FBCChannel{Schema: catalog.SchemaChannel, Name: ch, Package: name, Entries: entries})
			if err != nil {
				return err
			}
			out = append(out, append(data, '\n')...)
		}
		if d := deprecations(p, deprecated[name]); d != nil {
			data, err := json.Marshal(d)
			if err != nil {
				return err
			}
			out = append(out, append(data, '\n')...)
		}
		if err := digestdir.AppendFile(filepath.Join(dir, name, "package.json"), out); err != nil {
			return err
		}
	}
	return nil
}

// listPackages returns the package names, each checked to be usable as a directory name.
func listPackages(ctx context.Context, c api.RegistryClient) ([]string, error) {
	stream, err := c.ListPackages(ctx, &api.ListPackageRequest{})
	if err != nil {
		return nil, fmt.Errorf("ListPackages: %w", err)
	}
	var names []string
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ListPackages: %w", err)
		}
		name := p.GetName()
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return nil, fmt.Errorf("ListPackages: package name %q is not a name", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return slices.Compact(names), nil
}

// bundleBlob is the olm.bundle blob of one listed bundle: its properties (an olm.package
// one added where the server sent none, the dependencies of an old SQLite index as the
// required properties FBC names them), and its manifests as olm.bundle.object properties.
// A bundle served without manifests keeps its image and olm.csv.metadata: the catalog
// pulls it from the image when it is read.
func bundleBlob(b *api.Bundle) catalog.FBCBundle {
	out := catalog.FBCBundle{Schema: catalog.SchemaBundle, Name: b.GetCsvName(), Package: b.GetPackageName(), Image: b.GetBundlePath()}
	objects := b.GetObject()
	if len(objects) == 0 && b.GetCsvJson() != "" {
		objects = []string{b.GetCsvJson()}
	}
	has := map[string]bool{}
	for _, p := range b.GetProperties() {
		switch {
		case p.GetType() == catalog.PropBundleObject:
			continue // the manifests come whole below
		case p.GetType() == catalog.PropCSVMetadata && len(objects) > 0:
			continue // the CSV among them says it all
		}
		if !json.Valid([]byte(p.GetValue())) {
			// Kept as a string so the catalog's own check names it with its bundle.
			v, _ := json.Marshal(p.GetValue())
			out.Properties = append(out.Properties, catalog.FBCProperty{Type: p.GetType(), Value: json.RawMessage(v)})
			continue
		}
		has[p.GetType()] = true
		out.Properties = append(out.Properties, catalog.FBCProperty{Type: p.GetType(), Value: json.RawMessage(p.GetValue())})
	}
	if !has[catalog.PropPackage] {
		v, _ := json.Marshal(map[string]string{"packageName": b.GetPackageName(), "version": b.GetVersion()})
		out.Properties = append(out.Properties, catalog.FBCProperty{Type: catalog.PropPackage, Value: json.RawMessage(v)})
	}
	if !has[catalog.PropPackageRequired] && !has[catalog.PropGVKRequired] && !has[catalog.PropLabelRequired] && !has[catalog.DependencyConstraint] {
		for _, d := range b.GetDependencies() {
			if p, ok := required(d); ok {
				out.Properties = append(out.Properties, p)
			}
		}
	}
	for _, o := range objects {
		v, _ := json.Marshal(map[string]string{"data": base64.StdEncoding.EncodeToString([]byte(o))})
		out.Properties = append(out.Properties, catalog.FBCProperty{Type: catalog.PropBundleObject, Value: json.RawMessage(v)})
	}
	return out
}

// imageOnly returns b with no manifests when they are not the bundle's own: a registry
// serving an opm-rendered catalog (olm.csv.metadata, no olm.bundle.object) makes up a
// CSV from that metadata, with no Deployments to install and no CRDs, where OLM would unpack
// the bundle image. Such a CSV installs nothing, so it is kept only as the bundle's
// olm.csv.metadata (what the index needs: install modes, minKubeVersion, owned and
// required CRDs, annotations), and the manifests are pulled from the image when read.
func imageOnly(b *api.Bundle) *api.Bundle {
	if b.GetBundlePath() == "" {
		return b
	}
	csv := b.GetCsvJson()
	for _, o := range b.GetObject() {
		var head struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal([]byte(o), &head) == nil && head.Kind == "ClusterServiceVersion" {
			csv = o
		}
	}
	var c struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
		} `json:"metadata"`
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if csv == "" || json.Unmarshal([]byte(csv), &c) != nil {
		return b
	}
	var install struct {
		Spec struct {
			Deployments []json.RawMessage `json:"deployments"`
		} `json:"spec"`
	}
	if raw, ok := c.Spec["install"]; ok && json.Unmarshal(raw, &install) == nil && len(install.Spec.Deployments) > 0 {
		return b // a real CSV: the manifests are the bundle's
	}
	out := &api.Bundle{CsvName: b.GetCsvName(), PackageName: b.GetPackageName(), ChannelName: b.GetChannelName(),
		BundlePath: b.GetBundlePath(), Version: b.GetVersion(), SkipRange: b.GetSkipRange(), Replaces: b.GetReplaces(),
		Skips: b.GetSkips(), Dependencies: b.GetDependencies()}
	meta := map[string]json.RawMessage{}
	for k, v := range c.Spec {
		switch k {
		case "icon", "relatedImages", "install":
			continue
		case "apiservicedefinitions":
			k = "apiServiceDefinitions" // opm's name, which the catalog reads
		}
		meta[k] = v
	}
	if len(c.Metadata.Annotations) > 0 {
		meta["annotations"], _ = json.Marshal(c.Metadata.Annotations)
	}
	if len(c.Metadata.Labels) > 0 {
		meta["labels"], _ = json.Marshal(c.Metadata.Labels)
	}
	hasMeta := false
	for _, p := range b.GetProperties() {
		hasMeta = hasMeta || p.GetType() == "olm.csv.metadata"
		out.Properties = append(out.Properties, p)
	}
	if !hasMeta {
		data, _ := json.Marshal(meta)
		out.Properties = append(out.Properties, &api.Property{Type: "olm.csv.metadata", Value: string(data)})
	}
	return out
}

// required turns an old index's dependency (olm.package with a version range, olm.gvk,
// olm.label, olm.constraint) into the property FBC names it with.
func required(d *api.Dependency) (catalog.FBCProperty, bool) {
	switch d.GetType() {
	case "olm.package":
		var v struct {
			PackageName string `json:"packageName"`
			Version     string `json:"version"`
		}
		if json.Unmarshal([]byte(d.GetValue()), &v) != nil {
			return catalog.FBCProperty{}, false
		}
		data, _ := json.Marshal(map[string]string{"packageName": v.PackageName, "versionRange": v.Version})
		return catalog.FBCProperty{Type: catalog.PropPackageRequired, Value: json.RawMessage(data)}, true
	case "olm.gvk", catalog.DependencyLabel, catalog.DependencyConstraint:
		if !json.Valid([]byte(d.GetValue())) {
			return catalog.FBCProperty{}, false
		}
		typ := map[string]string{"olm.gvk": catalog.PropGVKRequired, catalog.DependencyLabel: catalog.PropLabelRequired}[d.GetType()]
		if typ == "" {
			typ = catalog.DependencyConstraint
		}
		return catalog.FBCProperty{Type: typ, Value: json.RawMessage(d.GetValue())}, true
	}
	return catalog.FBCProperty{}, false
}

// deprecations is the olm.deprecations blob of what the server says is deprecated of
// package p (GetPackage: the package and its channels) and of its bundles (ListBundles),
// or nil when nothing is.
func deprecations(p *api.Package, bundles []catalog.FBCDeprecationEntry) *catalog.FBCDeprecations {
	d := &catalog.FBCDeprecations{Schema: catalog.SchemaDeprecations, Package: p.GetName()}
	if m := p.GetDeprecation().GetMessage(); m != "" {
		d.Entries = append(d.Entries, catalog.FBCDeprecationEntry{Reference: catalog.FBCReference{Schema: catalog.SchemaPackage}, Message: m})
	}
	for _, ch := range p.GetChannels() {
		if m := ch.GetDeprecation().GetMessage(); m != "" {
			d.Entries = append(d.Entries, catalog.FBCDeprecationEntry{Reference: catalog.FBCReference{Schema: catalog.SchemaChannel, Name: ch.GetName()}, Message: m})
		}
	}
	d.Entries = append(d.Entries, bundles...)
	if len(d.Entries) == 0 {
		return nil
	}
	return d
}
