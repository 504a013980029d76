package v1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperatorConditionUpgradeable is the condition type an operator sets to False to say
// "do not upgrade me now" (OLM's operator-lib writes it under that name).
const OperatorConditionUpgradeable = "Upgradeable"

// EnvOperatorConditionName is set in every container of an installed operator: the name
// of its OperatorCondition, where OLM's operator-lib looks for it.
const EnvOperatorConditionName = "OPERATOR_CONDITION_NAME"

// OperatorConditionSpec holds what an installed operator says about itself, and what an
// administrator overrides. It follows OLM's OperatorCondition (v2): the operator writes
// spec.conditions, a person writes spec.overrides.
type OperatorConditionSpec struct {
	// Conditions the operator reports about itself. Upgradeable=False holds an upgrade
	// (never a rollback) until it turns True or is removed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Overrides by an administrator: a condition here wins over the operator's own
	// condition of the same type (Upgradeable=True lets an upgrade through anyway).
	// +listType=map
	// +listMapKey=type
	// +optional
	Overrides []metav1.Condition `json:"overrides,omitempty"`
}

// OperatorConditionStatus is reserved; the spec is the source of truth, as in OLM v2.
type OperatorConditionStatus struct {
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// OperatorCondition is the channel from an installed operator back to operator-manager.
// One is created for every ClusterServiceVersion, with the CSV's name and namespace and
// owned by it; the operator's service accounts may read and update it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=opcond,categories=operator-manager
// +kubebuilder:printcolumn:name="Upgradeable",type=string,JSONPath=`.spec.conditions[?(@.type=="Upgradeable")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.conditions[?(@.type=="Upgradeable")].reason`
// +kubebuilder:printcolumn:name="Override",type=string,JSONPath=`.spec.overrides[?(@.type=="Upgradeable")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OperatorCondition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OperatorConditionSpec   `json:"spec,omitempty"`
	Status OperatorConditionStatus `json:"status,omitempty"`
}

// Effective is the condition of type typ that counts: an administrator's override, else
// the operator's own; nil when neither says anything.
func (o *OperatorCondition) Effective(typ string) *metav1.Condition {
	if c := meta.FindStatusCondition(o.Spec.Overrides, typ); c != nil {
		return c
	}
	return meta.FindStatusCondition(o.Spec.Conditions, typ)
}

// OperatorConditionList is a list of OperatorConditions.
// +kubebuilder:object:root=true
type OperatorConditionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OperatorCondition `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OperatorCondition{}, &OperatorConditionList{})
}
