package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperatorGroupSpec is OLM's OperatorGroup spec, so an OLM user's YAML works with only its
// apiVersion changed. It gives the Subscriptions of its namespace what they do not say
// themselves: the namespaces their operators watch and the ServiceAccount that installs
// them. A Subscription's own spec.targetNamespaces and spec.serviceAccountName win.
type OperatorGroupSpec struct {
	// TargetNamespaces are the namespaces the operators of this namespace watch; empty
	// (and no selector) means as each operator's install modes allow (all namespaces for
	// AllNamespaces, this namespace for OwnNamespace).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	TargetNamespaces []string `json:"targetNamespaces,omitempty"`

	// Selector selects the target namespaces by label, as in OLM: the operators watch
	// the namespaces it selects (not those being deleted), and are rendered again (their
	// RBAC in each, their olm.targetNamespaces) when a namespace is labelled into or out of
	// it. Read only when targetNamespaces is empty (OLM ignores it otherwise); an empty
	// selector ({}) selects all namespaces, as no selector does. While it selects none,
	// the Subscriptions of this namespace wait (NoTargetNamespaces) and what runs stays
	// as it is.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// ServiceAccountName is a ServiceAccount of this namespace that installs the
	// operators of its Subscriptions (see Subscription spec.serviceAccountName).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// UpgradeStrategy is OLM's; only Default is accepted. operator-manager's own answer to
	// a failed upgrade is its health gate and rollback (spec.rollback of a Subscription).
	// +optional
	UpgradeStrategy *OperatorGroupUpgradeStrategy `json:"upgradeStrategy,omitempty"`

	// StaticProvidedAPIs is OLM's; it has no effect here (operator-manager keeps no
	// provided-APIs annotation on OperatorGroups).
	// +optional
	StaticProvidedAPIs bool `json:"staticProvidedAPIs,omitempty"`
}

// OperatorGroupUpgradeStrategy is OLM's upgrade strategy setting.
type OperatorGroupUpgradeStrategy struct {
	// Name is Default.
	// +kubebuilder:validation:Enum=Default
	// +optional
	Name string `json:"name,omitempty"`
}

// OperatorGroup is OLM's OperatorGroup under this group: the target namespaces and the
// installing ServiceAccount of the Subscriptions of its namespace. At most one per
// namespace; with more, those Subscriptions wait (TooManyOperatorGroups). It has no status:
// each Subscription says what it uses.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=og,categories=operator-manager
// +kubebuilder:printcolumn:name="Targets",type=string,JSONPath=`.spec.targetNamespaces`
// +kubebuilder:printcolumn:name="Service Account",type=string,JSONPath=`.spec.serviceAccountName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OperatorGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OperatorGroupSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// OperatorGroupList is a list of OperatorGroups.
type OperatorGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OperatorGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OperatorGroup{}, &OperatorGroupList{})
}
