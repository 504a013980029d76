// Package grants lists what installing a bundle grants: every rule of the Roles and
// ClusterRoles it would create, to whom and where. `operator-manager recommend` and the
// console preview it before anything is created.
package grants

import (
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/render"
)

// Grant is one rule a bundle's installation grants: to whom, where, what. The preview of
// `recommend` lists them so an administrator sees the RBAC before anything is created.
type Grant struct {
	// Subject is the ServiceAccount the rule is bound to ("" for a role the bundle ships
	// without a binding of its own).
	Subject string `json:"subject,omitempty"`
	// Scope is "cluster" or "namespace <ns>".
	Scope string `json:"scope"`
	// Role is the Role or ClusterRole holding the rule.
	Role            string   `json:"role"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
	Verbs           []string `json:"verbs"`
}

// Of renders the bundle as it would be installed in namespace for the target namespaces
// (nil: its default install mode there) and lists every rule of its Roles and
// ClusterRoles with the subjects bound to them: the CSV's permissions and
// clusterPermissions, and RBAC objects the bundle ships as manifests.
func Of(cat *catalog.Catalog, b *catalog.Bundle, namespace string, requested []string) ([]Grant, error) {
	content, err := cat.Content(b)
	if err != nil {
		return nil, err
	}
	targets, err := render.TargetNamespaces(content.CSV.Spec.InstallModes, namespace, requested)
	if err != nil {
		return nil, fmt.Errorf("%s in namespace %s: %w", b.CSVName, namespace, err)
	}
	objs, err := render.Render(render.Input{Namespace: namespace, CSVName: content.CSV.Name, Package: b.Package,
		Spec: &content.CSV.Spec, TargetNamespaces: targets, Others: content.Objects, WebhookCerts: render.PlaceholderCerts(&content.CSV.Spec)})
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", b.CSVName, err)
	}
	return OfObjects(objs)
}

// OfObjects lists the rules of the rendered objects, each with the subjects of the
// bindings to its role (pure).
func OfObjects(objs *render.Objects) ([]Grant, error) {
	roles, clusterRoles := map[string][]rbacv1.PolicyRule{}, map[string][]rbacv1.PolicyRule{}
	var roleKeys []string // "ns/name" of namespaced roles, "/name" of cluster roles, in order
	bound := map[string][]string{}
	addRole := func(ns, name string, rules []rbacv1.PolicyRule) {
		key := ns + "/" + name
		if ns == "" {
			clusterRoles[name] = rules
		} else {
			roles[key] = rules
		}
		roleKeys = append(roleKeys, key)
	}
	bind := func(ns string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		key := "/" + ref.Name
		if ref.Kind == "Role" {
			key = ns + "/" + ref.Name
		}
		for _, s := range subjects {
			name := s.Kind + " " + s.Name
			if s.Namespace != "" {
				name = s.Kind + " " + s.Namespace + "/" + s.Name
			}
			bound[key] = append(bound[key], name)
		}
	}
	for _, r := range objs.Roles {
		addRole(r.Namespace, r.Name, r.Rules)
	}
	for _, r := range objs.ClusterRoles {
		addRole("", r.Name, r.Rules)
	}
	for _, b := range objs.RoleBindings {
		bind(b.Namespace, b.RoleRef, b.Subjects)
	}
	for _, b := range objs.ClusterRoleBindings {
		bind("", b.RoleRef, b.Subjects)
	}
	// RBAC the bundle ships as manifests.
	for _, o := range objs.Others {
		var err error
		switch o.GetKind() {
		case "Role", "ClusterRole":
			var role rbacv1.ClusterRole // Role and ClusterRole share the fields read here
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err == nil {
				addRole(o.GetNamespace(), o.GetName(), role.Rules)
			}
		case "RoleBinding", "ClusterRoleBinding":
			var binding rbacv1.RoleBinding
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &binding); err == nil {
				bind(o.GetNamespace(), binding.RoleRef, binding.Subjects)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s of the bundle: %w", o.GetKind(), o.GetName(), err)
		}
	}
	var out []Grant
	for _, key := range roleKeys {
		ns, name, _ := strings.Cut(key, "/")
		rules, scope := roles[key], "namespace "+ns
		if ns == "" {
			rules, scope = clusterRoles[name], "cluster"
		}
		subjects := append([]string(nil), bound[key]...)
		sort.Strings(subjects)
		if len(subjects) == 0 {
			subjects = []string{""}
		}
		for _, subject := range subjects {
			for _, r := range rules {
				out = append(out, Grant{Subject: subject, Scope: scope, Role: name, APIGroups: r.APIGroups, Resources: r.Resources,
					ResourceNames: r.ResourceNames, NonResourceURLs: r.NonResourceURLs, Verbs: r.Verbs})
			}
		}
	}
	return out, nil
}
