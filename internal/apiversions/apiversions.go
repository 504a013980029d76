// Package apiversions moves bundle objects written for API versions Kubernetes no longer
// serves to the version that replaced them, where the move loses nothing: the two versions
// have the same fields with the same meaning, so the object the API server stores is the
// one the bundle's authors meant. Where the meaning would change, the object is refused
// with its kind, name and version named, and the caller applies nothing.
//
// Old bundles in OperatorHub catalogs ship RBAC in rbac.authorization.k8s.io/v1beta1
// (removed in Kubernetes 1.22), PodDisruptionBudgets in policy/v1beta1 (1.25) and the like.
package apiversions

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// move is one removed version of a kind and what replaced it. check, when set, refuses
// objects whose meaning the move would change.
type move struct {
	to    string
	check func(u *unstructured.Unstructured) error
}

// moves lists the removed versions this package converts, by group, version and kind.
var moves = map[schema.GroupVersionKind]move{}

func add(group, from, to string, kinds []string, check func(*unstructured.Unstructured) error) {
	for _, k := range kinds {
		moves[schema.GroupVersionKind{Group: group, Version: from, Kind: k}] = move{to: to, check: check}
	}
}

func init() {
	rbac := []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
	// v1beta1 RBAC has v1's fields exactly (removed in 1.22).
	add("rbac.authorization.k8s.io", "v1beta1", "v1", rbac, nil)
	add("scheduling.k8s.io", "v1beta1", "v1", []string{"PriorityClass"}, nil)
	add("scheduling.k8s.io", "v1alpha1", "v1", []string{"PriorityClass"}, nil)
	add("batch", "v1beta1", "v1", []string{"CronJob"}, nil)
	add("autoscaling", "v2beta2", "v2", []string{"HorizontalPodAutoscaler"}, nil)
	add("policy", "v1beta1", "v1", []string{"PodDisruptionBudget"}, pdbSelector)
	add("storage.k8s.io", "v1beta1", "v1", []string{"CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"}, nil)
	add("coordination.k8s.io", "v1beta1", "v1", []string{"Lease"}, nil)
	add("discovery.k8s.io", "v1beta1", "v1", []string{"EndpointSlice"}, endpointSliceTopology)
	add("node.k8s.io", "v1beta1", "v1", []string{"RuntimeClass"}, nil)
	add("certificates.k8s.io", "v1beta1", "v1", []string{"CertificateSigningRequest"}, refuse("v1 requires spec.signerName and other usages"))
	add("networking.k8s.io", "v1beta1", "v1", []string{"Ingress", "IngressClass"}, refuse("v1 renames the backend fields (serviceName, servicePort) and requires pathType"))
	add("extensions", "v1beta1", "networking.k8s.io/v1", []string{"Ingress"}, refuse("v1 renames the backend fields (serviceName, servicePort) and requires pathType"))
	add("admissionregistration.k8s.io", "v1beta1", "v1", []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"},
		refuse("v1 changes the defaults of failurePolicy, matchPolicy and timeoutSeconds and requires sideEffects and admissionReviewVersions; declare webhooks in the CSV's spec.webhookdefinitions"))
}

// refuse is a check that refuses every object of the kind, saying why.
func refuse(why string) func(*unstructured.Unstructured) error {
	return func(*unstructured.Unstructured) error { return fmt.Errorf("%s", why) }
}

// pdbSelector refuses a policy/v1beta1 PodDisruptionBudget whose selector is empty ({}):
// in v1beta1 it selects no pods, in v1 every pod of the namespace.
func pdbSelector(u *unstructured.Unstructured) error {
	sel, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "selector")
	if m, ok := sel.(map[string]any); found && ok && len(m) == 0 {
		return fmt.Errorf("its empty spec.selector selects no pods in v1beta1 but every pod of the namespace in v1")
	}
	return nil
}

// endpointSliceTopology refuses a discovery.k8s.io/v1beta1 EndpointSlice whose endpoints
// carry topology, which v1 replaced by nodeName and zone.
func endpointSliceTopology(u *unstructured.Unstructured) error {
	eps, _, _ := unstructured.NestedSlice(u.Object, "endpoints")
	for i, e := range eps {
		if m, ok := e.(map[string]any); ok && m["topology"] != nil {
			return fmt.Errorf("endpoints[%d].topology has no v1 field of the same meaning", i)
		}
	}
	return nil
}

// Removed reports whether gvk is a version this package knows to be removed.
func Removed(gvk schema.GroupVersionKind) bool {
	_, ok := moves[gvk]
	return ok
}

// Upgrade returns a copy of u in the version that replaced its removed one, and a line
// saying what was done; u itself when its version is not a removed one this package knows
// (change is then empty). An object the move would change in meaning is an error naming
// its kind, name, version and why.
func Upgrade(u *unstructured.Unstructured) (out *unstructured.Unstructured, change string, err error) {
	gvk := u.GroupVersionKind()
	m, ok := moves[gvk]
	if !ok {
		return u, "", nil
	}
	if m.check != nil {
		if err := m.check(u); err != nil {
			return nil, "", fmt.Errorf("%s %q is written for %s, which this cluster no longer serves, and cannot be moved to %s: %w",
				gvk.Kind, u.GetName(), gvk.GroupVersion(), target(gvk, m.to), err)
		}
	}
	out = u.DeepCopy()
	out.SetAPIVersion(target(gvk, m.to))
	return out, fmt.Sprintf("%s %q: moved from %s, which Kubernetes no longer serves, to %s (same fields, same meaning)",
		gvk.Kind, u.GetName(), gvk.GroupVersion(), out.GetAPIVersion()), nil
}

// target is the apiVersion a move leads to: a version in the same group, or a whole
// group/version when the kind moved groups.
func target(gvk schema.GroupVersionKind, to string) string {
	if gv, err := schema.ParseGroupVersion(to); err == nil && gv.Group != "" {
		return to
	}
	return schema.GroupVersion{Group: gvk.Group, Version: to}.String()
}
