package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// The small metadata files (package manifests, annotations, dependencies) are decoded with
// go.yaml.in/yaml/v2 directly rather than through JSON: an unquoted channel name such as
// 1.0 then stays "1.0" instead of becoming the number 1.

// packageManifest is <package>.package.yaml.
type packageManifest struct {
	PackageName    string `yaml:"packageName"`
	DefaultChannel string `yaml:"defaultChannel"`
	Channels       []struct {
		Name       string `yaml:"name"`
		CurrentCSV string `yaml:"currentCSV"`
	} `yaml:"channels"`
}

// parsePackageManifest decodes and checks a package manifest. Whether each currentCSV
// exists is checked later, per channel, against the bundles found.
func parsePackageManifest(data []byte) (*packageManifest, error) {
	var pm packageManifest
	if err := noPanic("decoding package manifest", func() error { return yamlv2.Unmarshal(data, &pm) }); err != nil {
		return nil, err
	}
	if err := checkName("packageName", pm.PackageName); err != nil {
		return nil, err
	}
	if len(pm.Channels) == 0 {
		return nil, errors.New("channels: at least one channel is required")
	}
	seen := map[string]bool{}
	for i, c := range pm.Channels {
		if err := checkName(fmt.Sprintf("channels[%d].name", i), c.Name); err != nil {
			return nil, err
		}
		if err := checkName(fmt.Sprintf("channels[%d].currentCSV", i), c.CurrentCSV); err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("channels[%d].name %q: duplicate channel", i, c.Name)
		}
		seen[c.Name] = true
	}
	switch {
	case pm.DefaultChannel == "" && len(pm.Channels) == 1:
		pm.DefaultChannel = pm.Channels[0].Name
	case pm.DefaultChannel == "":
		return nil, errors.New("defaultChannel is required when there are several channels")
	case !seen[pm.DefaultChannel]:
		return nil, fmt.Errorf("defaultChannel %q is not one of the channels", pm.DefaultChannel)
	}
	return &pm, nil
}

// Bundle annotation keys (metadata/annotations.yaml).
const (
	annotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	annotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	annotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"
)

// bundleAnnotations is what the loader uses of metadata/annotations.yaml.
type bundleAnnotations struct {
	Package        string
	Channels       []string
	DefaultChannel string
}

func parseAnnotations(data []byte) (*bundleAnnotations, error) {
	var f struct {
		Annotations map[string]string `yaml:"annotations"`
	}
	if err := noPanic("decoding annotations", func() error { return yamlv2.Unmarshal(data, &f) }); err != nil {
		return nil, err
	}
	a := &bundleAnnotations{
		Package:        strings.TrimSpace(f.Annotations[annotationPackage]),
		DefaultChannel: strings.TrimSpace(f.Annotations[annotationDefaultChannel]),
	}
	if err := checkName("annotations."+annotationPackage, a.Package); err != nil {
		return nil, err
	}
	for _, c := range strings.Split(f.Annotations[annotationChannels], ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		if err := checkName("annotations."+annotationChannels, c); err != nil {
			return nil, err
		}
		a.Channels = append(a.Channels, c)
	}
	if len(a.Channels) == 0 {
		return nil, fmt.Errorf("annotations.%s: at least one channel is required", annotationChannels)
	}
	if a.DefaultChannel != "" {
		if err := checkName("annotations."+annotationDefaultChannel, a.DefaultChannel); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// parseDependencies decodes metadata/dependencies.yaml: olm.package, olm.gvk, olm.label
// and olm.constraint, as OLM reads them. Dependency types the loader cannot evaluate are
// returned as ignored so the caller can warn: dropping them silently would let the
// resolver pick a bundle whose author said it needs something more.
func parseDependencies(data []byte) (deps []Dependency, ignored []string, err error) {
	var f struct {
		Dependencies []struct {
			Type  string `yaml:"type"`
			Value struct {
				PackageName string `yaml:"packageName"`
				Version     string `yaml:"version"`
				Group       string `yaml:"group"`
				Kind        string `yaml:"kind"`
			} `yaml:"value"`
		} `yaml:"dependencies"`
	}
	if err := noPanic("decoding dependencies", func() error { return yamlv2.Unmarshal(data, &f) }); err != nil {
		return nil, nil, err
	}
	var raw []json.RawMessage
	for i, d := range f.Dependencies {
		v := d.Value
		switch d.Type {
		case DependencyPackage:
			dep, err := packageDependency(v.PackageName, v.Version)
			if err != nil {
				return nil, nil, fmt.Errorf("dependencies[%d] (%s): %w", i, d.Type, err)
			}
			deps = append(deps, dep)
		case DependencyGVK:
			dep, err := gvkDependency(v.Group, v.Version, v.Kind)
			if err != nil {
				return nil, nil, fmt.Errorf("dependencies[%d] (%s): %w", i, d.Type, err)
			}
			deps = append(deps, dep)
		case DependencyLabel, DependencyConstraint:
			if raw == nil {
				if raw, err = rawValues(data); err != nil {
					return nil, nil, err
				}
			}
			parse := labelDependency
			if d.Type == DependencyConstraint {
				parse = parseConstraint
			}
			dep, err := parse(raw[i])
			if err != nil {
				return nil, nil, fmt.Errorf("dependencies[%d] (%s): %w", i, d.Type, err)
			}
			deps = append(deps, dep)
		case "":
			return nil, nil, fmt.Errorf("dependencies[%d].type is empty", i)
		default:
			ignored = append(ignored, fmt.Sprintf("dependencies[%d] of type %q", i, d.Type))
		}
	}
	return deps, ignored, nil
}

// rawValues returns each dependency's value as JSON, for the types read as OLM's JSON
// types (olm.constraint and olm.label); the file decoded without error already.
func rawValues(data []byte) ([]json.RawMessage, error) {
	var f struct {
		Dependencies []struct {
			Value json.RawMessage `json:"value"`
		} `json:"dependencies"`
	}
	if err := noPanic("decoding dependencies", func() error { return yaml.Unmarshal(data, &f) }); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(f.Dependencies))
	for i, d := range f.Dependencies {
		out[i] = d.Value
	}
	return out, nil
}

// parseProperties decodes metadata/properties.yaml: the properties a bundle declares
// beyond its CSV (olm.label, a catalog's own types), kept for constraints to read. The
// types the index models otherwise are left out (see keptProperty).
func parseProperties(data []byte) ([]Property, error) {
	var f struct {
		Properties []Property `json:"properties"`
	}
	if err := noPanic("decoding properties", func() error { return yaml.Unmarshal(data, &f) }); err != nil {
		return nil, err
	}
	var out []Property
	for i, p := range f.Properties {
		if p.Type == "" {
			return nil, fmt.Errorf("properties[%d].type is empty", i)
		}
		if !keptProperty(p.Type) {
			continue
		}
		if p.Type == PropLabel {
			if _, err := labelDependency(p.Value); err != nil {
				return nil, fmt.Errorf("properties[%d] (%s): %w", i, p.Type, err)
			}
		}
		out = append(out, Property{Type: p.Type, Value: compactJSON(p.Value)})
	}
	return out, nil
}

func packageDependency(pkg, versions string) (Dependency, error) {
	if err := checkName("packageName", pkg); err != nil {
		return Dependency{}, err
	}
	if strings.TrimSpace(versions) == "" {
		return Dependency{}, errors.New("version: a semver range is required")
	}
	r, err := ParseVersionRange(versions)
	if err != nil {
		return Dependency{}, fmt.Errorf("version: %w", err)
	}
	return Dependency{Type: DependencyPackage, Package: pkg, Versions: r}, nil
}

func gvkDependency(group, version, kind string) (Dependency, error) {
	group, version, kind = strings.TrimSpace(group), strings.TrimSpace(version), strings.TrimSpace(kind)
	if version == "" || kind == "" {
		return Dependency{}, errors.New("version and kind are required")
	}
	return Dependency{Type: DependencyGVK, GVK: GVK{Group: group, Version: version, Kind: kind}}, nil
}

// checkName rejects empty names and names that could be used to leave a directory when a
// caller builds a path from them (caches, archives): names here are identifiers, never
// paths.
func checkName(field, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%s is empty", field)
	case s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00"):
		return fmt.Errorf("%s %q: path escape: a name must not contain '/', '\\' or be '..'", field, s)
	}
	return nil
}
