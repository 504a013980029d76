package catalog

import (
	"errors"
	"fmt"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	yamlv2 "go.yaml.in/yaml/v2"
)

const crdKind = "CustomResourceDefinition"

// manifestHeader is what the loader needs from a manifest that is not the CSV. Decoding
// straight from YAML into this small struct skips the YAML -> JSON -> object round trip
// of sigs.k8s.io/yaml, which for a CRD with a large schema is most of the cost; the full
// object is decoded only when someone asks for the bundle's content.
type manifestHeader struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec crdSpecHeader `yaml:"spec"`
}

// crdSpecHeader holds the CRD fields of spec. Other kinds have other specs, so a decode
// error is kept aside and reported only when the object turns out to be a CRD.
type crdSpecHeader struct {
	Group   string `yaml:"group"`
	Version string `yaml:"version"`
	Names   struct {
		Kind   string `yaml:"kind"`
		Plural string `yaml:"plural"`
	} `yaml:"names"`
	Versions []struct {
		Name string `yaml:"name"`
	} `yaml:"versions"`
	err error
}

func (s *crdSpecHeader) UnmarshalYAML(unmarshal func(any) error) error {
	type plain crdSpecHeader
	var p plain
	if err := unmarshal(&p); err != nil {
		*s = crdSpecHeader{err: err}
		return nil
	}
	*s = crdSpecHeader(p)
	return nil
}

// crdInfo is the identity of a CRD manifest.
type crdInfo struct {
	Name, Group, Kind, Plural string
	Versions                  []string
}

// parsedManifest is one decoded document of a bundle.
type parsedManifest struct {
	csv        *v1alpha1.ClusterServiceVersion
	versionErr error
	crd        *crdInfo
	kind       string
}

// parseManifest decodes one document of a bundle's manifest file, choosing the decoder by
// a textual sniff of its kind and checking the decoded kind afterwards.
func parseManifest(doc []byte) (parsedManifest, error) {
	if sniffKind(doc) == csvKind {
		m, err := parseCSVManifest(doc)
		if !errors.Is(err, errNotCSV) {
			return m, err
		}
		// The sniff was misled (a "kind:" line inside a multi-line scalar).
	}
	var h manifestHeader
	if err := noPanic("decoding manifest", func() error { return yamlv2.Unmarshal(doc, &h) }); err != nil {
		return parsedManifest{}, err
	}
	switch {
	case h.Kind == csvKind:
		return parseCSVManifest(doc)
	case h.Kind == "":
		return parsedManifest{}, errors.New("not a Kubernetes object: kind is missing")
	case h.APIVersion == "":
		return parsedManifest{}, fmt.Errorf("not a Kubernetes object: apiVersion is missing (kind %s, name %q)", h.Kind, h.Metadata.Name)
	case h.Kind == crdKind:
		info, err := crdFromHeader(&h)
		return parsedManifest{crd: info, kind: h.Kind}, err
	}
	return parsedManifest{kind: h.Kind}, nil
}

func parseCSVManifest(doc []byte) (parsedManifest, error) {
	csv, verr, err := parseCSV(doc)
	if err != nil {
		return parsedManifest{}, err
	}
	return parsedManifest{csv: csv, versionErr: verr, kind: csvKind}, nil
}

func crdFromHeader(h *manifestHeader) (*crdInfo, error) {
	if h.Spec.err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %q: spec: %w", h.Metadata.Name, h.Spec.err)
	}
	s := h.Spec
	if s.Group == "" || s.Names.Kind == "" || s.Names.Plural == "" {
		return nil, fmt.Errorf("CustomResourceDefinition %q: spec.group, spec.names.kind and spec.names.plural are required", h.Metadata.Name)
	}
	info := &crdInfo{Name: h.Metadata.Name, Group: s.Group, Kind: s.Names.Kind, Plural: s.Names.Plural}
	if s.Version != "" {
		info.Versions = append(info.Versions, s.Version)
	}
	for _, v := range s.Versions {
		if v.Name != "" && v.Name != s.Version {
			info.Versions = append(info.Versions, v.Name)
		}
	}
	return info, nil
}
