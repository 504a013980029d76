package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstallPlanPhase is where an InstallPlan stands.
// +kubebuilder:validation:Enum=RequiresApproval;Installing;Complete;Failed
type InstallPlanPhase string

const (
	// InstallPlanRequiresApproval: the change waits for spec.approved.
	InstallPlanRequiresApproval InstallPlanPhase = "RequiresApproval"
	// InstallPlanInstalling: approved; its Blueprint revision is under way.
	InstallPlanInstalling InstallPlanPhase = "Installing"
	// InstallPlanComplete: its revision succeeded.
	InstallPlanComplete InstallPlanPhase = "Complete"
	// InstallPlanFailed: its revision did not succeed (see status.message).
	InstallPlanFailed InstallPlanPhase = "Failed"
)

// InstallPlanSpec is OLM's InstallPlan spec: the CSVs a version change installs, and
// whether a person approved it.
type InstallPlanSpec struct {
	// ClusterServiceVersionNames are the CSVs the change installs: the Subscription's
	// target first, then (on a first install) the dependencies installed with it.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	ClusterServiceVersionNames []string `json:"clusterServiceVersionNames"`

	// Approval is Manual: operator-manager makes InstallPlans only for changes that wait
	// for a person.
	// +kubebuilder:validation:Enum=Automatic;Manual
	// +optional
	Approval string `json:"approval,omitempty"`

	// Approved lets the change go ahead; set it to true to approve, as in OLM
	// (`kubectl patch installplan NAME --type merge -p '{"spec":{"approved":true}}'`).
	// `operator-manager approve` sets it too.
	// +optional
	Approved bool `json:"approved"`

	// Generation is the Blueprint's spec.generation of the change (its count of version
	// changes asked for).
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// InstallPlanStatus says how the approved change went.
type InstallPlanStatus struct {
	// Phase is RequiresApproval, Installing, Complete or Failed.
	// +optional
	Phase InstallPlanPhase `json:"phase,omitempty"`

	// Message says what the plan waits for or how its change ended, for a person.
	// +optional
	Message string `json:"message,omitempty"`

	// Revision is the Blueprint revision that carries the approved change out.
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// Conditions: Installed (OLM's), True once the plan is Complete, False once it
	// Failed (InstallComponentFailed), so `kubectl wait --for=condition=Installed` works
	// as with OLM.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// InstallPlanInstalled is OLM's condition type of an InstallPlan whose change ended.
const InstallPlanInstalled = "Installed"

// InstallPlan is OLM's InstallPlan under this group: a version change of a Manual
// Subscription waiting for a person, approved by setting spec.approved. The Blueprint
// controller makes one for each change that waits, owned by the Blueprint; the
// Subscription's status.installPlanRef names it. It is kept as long as the Blueprint's
// history remembers its revision.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ip,categories=operator-manager
// +kubebuilder:printcolumn:name="CSV",type=string,JSONPath=`.spec.clusterServiceVersionNames[0]`
// +kubebuilder:printcolumn:name="Approval",type=string,JSONPath=`.spec.approval`
// +kubebuilder:printcolumn:name="Approved",type=boolean,JSONPath=`.spec.approved`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type InstallPlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InstallPlanSpec   `json:"spec,omitempty"`
	Status InstallPlanStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// InstallPlanList is a list of InstallPlans.
type InstallPlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InstallPlan `json:"items"`
}

func init() {
	SchemeBuilder.Register(&InstallPlan{}, &InstallPlanList{})
}
