// Package render turns one ClusterServiceVersion into the Kubernetes objects that run it:
// service accounts, RBAC for every rule of permissions and clusterPermissions, the
// Deployments of its install strategy with a Subscription's overrides, and the bundle's
// other manifests. It is pure: the CSV controller applies what it returns.
package render

import (
	"crypto/sha256"
	"encoding/hex"
)

// Labels on every object operator-manager creates for an installation. Cluster-scoped
// objects cannot have a namespaced owner, so these labels are how uninstall finds them.
const (
	LabelOwnerName      = "operator-manager.domain/owner-name"
	LabelOwnerNamespace = "operator-manager.domain/owner-namespace"
	LabelPackage        = "operator-manager.domain/package"
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedBy           = "operator-manager"
	// AnnotationOwner carries the full owner "namespace/csv" for people, since label
	// values are limited to 63 characters.
	AnnotationOwner = "operator-manager.domain/owner"
)

// OLM's annotations on operator Deployments and pods, which operators read to find the
// namespaces to watch.
const (
	AnnotationTargetNamespaces  = "olm.targetNamespaces"
	AnnotationOperatorNamespace = "olm.operatorNamespace"
)

// LabelValue fits a name into a label value (63 characters): longer names are cut and
// suffixed with a hash so they stay unique.
func LabelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:52] + "-" + hex.EncodeToString(sum[:])[:10]
}

// OwnerLabels are the labels that tie an object to one CSV.
func OwnerLabels(namespace, csvName, pkg string) map[string]string {
	l := map[string]string{
		LabelOwnerName:      LabelValue(csvName),
		LabelOwnerNamespace: LabelValue(namespace),
		LabelManagedBy:      ManagedBy,
	}
	if pkg != "" {
		l[LabelPackage] = LabelValue(pkg)
	}
	return l
}
