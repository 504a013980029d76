package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	csvKind             = "ClusterServiceVersion"
	skipRangeAnnotation = "olm.skipRange"
)

// csvEnvelope decodes a ClusterServiceVersion in one pass while keeping spec.version as
// written: v1alpha1's OperatorVersion parses tolerantly ("v1.0" becomes 1.0.0), but a
// catalog must tell an author that their spec.version is not semver. The Version field
// here is shallower than the one promoted from the embedded spec, so encoding/json fills
// it instead.
type csvEnvelope struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            csvSpecEnvelope   `json:"spec"`
	// status is left out on purpose: it is the cluster's to write, and a stale status
	// in a bundle must not make the bundle unreadable.
}

type csvSpecEnvelope struct {
	v1alpha1.ClusterServiceVersionSpec
	Version json.RawMessage `json:"version"`
}

// errVersionAbsent marks a CSV without spec.version; the loader may then derive the
// version from the directory or CSV name.
var errVersionAbsent = errors.New("spec.version is absent")

// errNotCSV is returned by parseCSV for a document of another kind.
var errNotCSV = errors.New("not a ClusterServiceVersion")

// parseCSV decodes one YAML or JSON document holding a ClusterServiceVersion. The
// returned version error is errVersionAbsent when spec.version is missing, a precise
// error when it is present but not semver, and nil otherwise; the CSV is returned in the
// first two cases so the caller can decide.
func parseCSV(doc []byte) (csv *v1alpha1.ClusterServiceVersion, versionErr, err error) {
	var env csvEnvelope
	if err := noPanic("decoding ClusterServiceVersion", func() error { return yaml.Unmarshal(doc, &env) }); err != nil {
		return nil, nil, err
	}
	if env.Kind != csvKind {
		return nil, nil, fmt.Errorf("%w: kind is %q", errNotCSV, env.Kind)
	}
	if env.Metadata.Name == "" {
		return nil, nil, errors.New("metadata.name is empty")
	}
	csv = &v1alpha1.ClusterServiceVersion{TypeMeta: env.TypeMeta, ObjectMeta: env.Metadata, Spec: env.Spec.ClusterServiceVersionSpec}
	v, versionErr := strictVersion(env.Spec.Version)
	csv.Spec.Version.Version = v
	return csv, versionErr, nil
}

// strictVersion parses a raw JSON spec.version as strict semver.
func strictVersion(raw json.RawMessage) (semver.Version, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return semver.Version{}, errVersionAbsent
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return semver.Version{}, fmt.Errorf("spec.version %s: must be a string holding a semantic version", raw)
	}
	if s == "" {
		return semver.Version{}, errVersionAbsent
	}
	v, err := semver.Parse(s)
	if err != nil {
		return semver.Version{}, fmt.Errorf("spec.version %q is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD]): %w", s, err)
	}
	return v, nil
}

// lenientVersion parses names such as "v0.9.4", "1.0" or "0.9.2-clusterwide" for bundles
// whose CSV has no spec.version. It refuses strings without a leading digit after an
// optional "v", so a name like "latest" is not read as 0.0.0.
func lenientVersion(s string) (semver.Version, bool) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if t == "" || t[0] < '0' || t[0] > '9' {
		return semver.Version{}, false
	}
	v, err := semver.ParseTolerant(t)
	return v, err == nil
}

// versionFromCSVName finds a version in a CSV name such as "etcdoperator.v0.9.4" or
// "prometheusoperator.0.22.2": the text after the first dot followed by a digit or "v".
func versionFromCSVName(name string) (semver.Version, bool) {
	for i := 0; i < len(name)-1; i++ {
		if name[i] != '.' {
			continue
		}
		if v, ok := lenientVersion(name[i+1:]); ok {
			return v, true
		}
	}
	return semver.Version{}, false
}

// applyCSV copies the index fields of a CSV into b.
func applyCSV(b *Bundle, csv *v1alpha1.ClusterServiceVersion) error {
	b.CSVName = csv.Name
	b.Replaces = csv.Spec.Replaces
	b.Skips = csv.Spec.Skips
	b.MinKubeVersion = strings.TrimSpace(csv.Spec.MinKubeVersion)
	b.InstallModes = csv.Spec.InstallModes
	b.setAPIServices(csv.Spec.APIServiceDefinitions)
	for _, ri := range csv.Spec.RelatedImages {
		b.addRelatedImages([]RelatedImage{{Name: ri.Name, Image: ri.Image}})
	}
	if sr := csv.Annotations[skipRangeAnnotation]; strings.TrimSpace(sr) != "" {
		r, err := ParseVersionRange(sr)
		if err != nil {
			return fmt.Errorf("metadata.annotations[%s]: %w", skipRangeAnnotation, err)
		}
		b.SkipRange = r
	}
	if b.MinKubeVersion != "" {
		if _, err := semver.ParseTolerant(b.MinKubeVersion); err != nil {
			return fmt.Errorf("spec.minKubeVersion %q is not a version: %w", b.MinKubeVersion, err)
		}
	}
	var err error
	if b.OwnedCRDs, err = crdRefs("owned", csv.Spec.CustomResourceDefinitions.Owned); err != nil {
		return err
	}
	if b.RequiredCRDs, err = crdRefs("required", csv.Spec.CustomResourceDefinitions.Required); err != nil {
		return err
	}
	return nil
}

func crdRefs(field string, descs []v1alpha1.CRDDescription) ([]CRDRef, error) {
	if len(descs) == 0 {
		return nil, nil
	}
	refs := make([]CRDRef, 0, len(descs))
	for i, d := range descs {
		plural, group, ok := strings.Cut(d.Name, ".")
		if !ok || plural == "" || group == "" {
			return nil, fmt.Errorf("spec.customresourcedefinitions.%s[%d].name %q: want <plural>.<group>", field, i, d.Name)
		}
		if d.Kind == "" || d.Version == "" {
			return nil, fmt.Errorf("spec.customresourcedefinitions.%s[%d] (%s): kind and version are required", field, i, d.Name)
		}
		refs = append(refs, CRDRef{Group: group, Version: d.Version, Kind: d.Kind, Plural: plural})
	}
	return refs, nil
}
