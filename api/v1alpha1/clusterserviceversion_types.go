package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	olmv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CSVPhase is where the installation of one CSV stands, with OLM's names.
// +kubebuilder:validation:Enum=Pending;InstallReady;Installing;Succeeded;Failed;Replacing;Deleting
type CSVPhase string

const (
	CSVPending      CSVPhase = "Pending"
	CSVInstallReady CSVPhase = "InstallReady"
	CSVInstalling   CSVPhase = "Installing"
	CSVSucceeded    CSVPhase = "Succeeded"
	CSVFailed       CSVPhase = "Failed"
	CSVReplacing    CSVPhase = "Replacing"
	CSVDeleting     CSVPhase = "Deleting"
)

// CRDRepair records what the manager changed in a bundle's CRD so the API server would
// accept it (for example a v1beta1 CRD converted to v1 with `type: object` added).
type CRDRepair struct {
	// Name is the CRD's name; "(bundle objects)" for the bundle's other objects moved
	// from an API version Kubernetes no longer serves.
	Name string `json:"name"`
	// Changes lists each change in words.
	// +listType=atomic
	Changes []string `json:"changes"`
}

// InventoryEntry is one object applied for a CSV.
type InventoryEntry struct {
	// APIVersion of the object, as applied.
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Namespace is empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// Fingerprint is what the object looked like right after the apply: its generation
	// for kinds with a spec the API server versions (Deployments), its resourceVersion
	// otherwise. A different value later means someone changed it.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
}

// ClusterServiceVersionStatus is the manager's view of one installation.
type ClusterServiceVersionStatus struct {
	// ObservedGeneration is the generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is where the installation stands.
	// +optional
	Phase CSVPhase `json:"phase,omitempty"`
	// Reason is a CamelCase word for the phase.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says why, for a person.
	// +optional
	Message string `json:"message,omitempty"`
	// Package is the catalog package of this CSV.
	// +optional
	Package string `json:"package,omitempty"`
	// LastTransitionTime is when the phase last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// RequirementStatus is the status of each requirement (CRDs, service accounts), as OLM
	// reports it.
	// +listType=atomic
	// +optional
	RequirementStatus []olmv1alpha1.RequirementStatus `json:"requirementStatus,omitempty"`
	// CRDRepairs lists what was changed in the bundle's CRDs so they would be accepted.
	// +listType=atomic
	// +optional
	CRDRepairs []CRDRepair `json:"crdRepairs,omitempty"`
	// Revision is the Blueprint revision this status judges: the health gate starts again
	// whenever the Blueprint asks the CSV to carry out another revision.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// RenderHash is a digest of every object last applied for this CSV (its spec, the
	// Subscription's config, target namespaces and service account): a change re-renders
	// and rolls the Deployments through the health gate.
	// +optional
	RenderHash string `json:"renderHash,omitempty"`
	// GateStartTime is when the current health gate began.
	// +optional
	GateStartTime *metav1.Time `json:"gateStartTime,omitempty"`
	// Inventory lists every object applied for this CSV, so uninstall and pruning remove
	// exactly them (with the installing identity) and drift can be noticed.
	// +listType=atomic
	// +optional
	Inventory []InventoryEntry `json:"inventory,omitempty"`
	// Conditions: Installed and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CSVSpec is OLM's ClusterServiceVersionSpec, decoded leniently. The schema of the spec is
// open (see ClusterServiceVersion), so the API server stores what anyone writes; a spec
// that does not fit OLM's types (a version "banana", deployments given as a string) must
// not make the manager unable to read every CSV of the cluster. Such a spec decodes to an
// empty ClusterServiceVersionSpec with DecodeError set, which the CSV controller reports
// on that CSV alone, and writes back exactly as it was read.
// +kubebuilder:object:generate=false
type CSVSpec struct {
	olmv1alpha1.ClusterServiceVersionSpec `json:",inline"`
	// DecodeError says why the stored spec does not fit OLM's types; empty when it does.
	DecodeError string `json:"-"`
	// raw is the stored spec, kept only when it did not decode.
	raw []byte
}

// UnmarshalJSON decodes OLM's spec, keeping the error (and the raw bytes) instead of
// failing.
func (s *CSVSpec) UnmarshalJSON(data []byte) error {
	var spec olmv1alpha1.ClusterServiceVersionSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		*s = CSVSpec{DecodeError: decodeErrorAt(data, err), raw: append([]byte(nil), data...)}
		return nil
	}
	*s = CSVSpec{ClusterServiceVersionSpec: spec}
	return nil
}

// decodeErrorAt names the field of spec that did not decode: "spec.version: ..." or
// "spec.install.spec.deployments: ...". A type error carries its path; other errors (a
// version that is not semver) are found by decoding each top-level field on its own.
func decodeErrorAt(data []byte, err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("spec.%s: cannot decode a JSON %s as %s", typeErr.Field, typeErr.Value, typeErr.Type)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return err.Error()
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		var spec olmv1alpha1.ClusterServiceVersionSpec
		if json.Unmarshal(one, &spec) != nil {
			return fmt.Sprintf("spec.%s: %v", k, err)
		}
	}
	return err.Error()
}

// MarshalJSON writes the spec back: the raw bytes of one that did not decode.
func (s CSVSpec) MarshalJSON() ([]byte, error) {
	if s.raw != nil {
		return s.raw, nil
	}
	return json.Marshal(s.ClusterServiceVersionSpec)
}

// DeepCopyInto copies the spec, raw bytes included.
func (s *CSVSpec) DeepCopyInto(out *CSVSpec) {
	*out = *s
	s.ClusterServiceVersionSpec.DeepCopyInto(&out.ClusterServiceVersionSpec)
	if s.raw != nil {
		out.raw = append([]byte(nil), s.raw...)
	}
}

// ClusterServiceVersion is one version of an operator: OLM's CSV under this group.
//
// The spec is OLM's own Go type (operator-framework/api), so controllers read it typed,
// but its schema is left open on purpose. A schema generated from OLM's types is about
// 840 KB and its required fields (owned[].resources[].name and others) refuse real
// bundles that OLM itself installs; the API server's job here is to store the CSV as the
// bundle wrote it, and the manager validates what it uses when it installs it, with errors
// that name the field. A small CRD also keeps client-side `kubectl apply` working.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=csv;csvs,categories=operator-manager
// +kubebuilder:printcolumn:name="Display",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Replaces",type=string,JSONPath=`.spec.replaces`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.status.package`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterServiceVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is OLM's ClusterServiceVersionSpec, stored as the bundle wrote it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec CSVSpec `json:"spec,omitempty"`

	Status ClusterServiceVersionStatus `json:"status,omitempty"`
}

// ClusterServiceVersionList is a list of ClusterServiceVersions.
// +kubebuilder:object:root=true
type ClusterServiceVersionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterServiceVersion `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterServiceVersion{}, &ClusterServiceVersionList{})
}
