// Package v1alpha1 holds ClusterServiceVersion: OLM's CSV under operator-manager's group, so
// that a real bundle's CSV is accepted with only its apiVersion changed.
//
// +kubebuilder:object:generate=true
// +groupName=operators.coreos.com.operator-manager.domain
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the kinds in this package.
	GroupVersion = schema.GroupVersion{Group: "operators.coreos.com.operator-manager.domain", Version: "v1alpha1"}

	// SchemeBuilder adds the kinds of this package to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
