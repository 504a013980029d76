// Package v1 holds the operator-manager API kinds Subscription, Blueprint and CatalogSource.
//
// The group is the original openEuler operator-manager's, so its users' YAML keeps working,
// and it is distinct from OLM's operators.coreos.com so both can live in one cluster.
//
// +kubebuilder:object:generate=true
// +groupName=operators.coreos.com.operator-manager.domain
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is the API group of every operator-manager kind.
const Group = "operators.coreos.com.operator-manager.domain"

var (
	// GroupVersion is the group and version of the kinds in this package.
	GroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}

	// SchemeBuilder adds the kinds of this package to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
