// Package access asks the API server, before anything is applied, whether an installing
// identity may make every write an installation needs, so a refusal names the verb,
// resource and namespace and leaves nothing half-installed. The list of writes is built
// purely from the objects (Requests); Checker asks the API server (SubjectAccessReview for a
// ServiceAccount, SelfSubjectAccessReview for the manager).
package access

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/identity"
)

// Request is one write (or read) an installation needs.
type Request struct {
	Verb      string `json:"verb"`
	Group     string `json:"group,omitempty"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// String says the request as a person reads it: `create clusterroles.rbac.authorization.k8s.io
// "x" (cluster-scoped)`, `patch deployments.apps "y" in namespace team-a`.
func (r Request) String() string {
	s := r.Action()
	if r.Name != "" {
		s += fmt.Sprintf(" %q", r.Name)
	}
	if r.Namespace == "" {
		return s + " (cluster-scoped)"
	}
	return s + " in namespace " + r.Namespace
}

// Action is the verb and the resource, as `create blueprints.operators.coreos.com...`.
func (r Request) Action() string {
	if r.Group == "" {
		return r.Verb + " " + r.Resource
	}
	return r.Verb + " " + r.Resource + "." + r.Group
}

// Object is what Requests needs of an object to apply.
type Object interface {
	GetNamespace() string
	GetName() string
	GetObjectKind() schema.ObjectKind
}

// Requests lists the writes that server-side applying objs needs: create (for a new
// object) and patch (the apply itself), on each object's resource and namespace. The
// RESTMapper names each kind's resource and scope; an unknown kind is an error naming it.
func Requests(mapper meta.RESTMapper, objs []Object) ([]Request, error) {
	seen := map[Request]bool{}
	var out []Request
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s %s: the cluster does not serve kind %s in %s: %w", gvk.Kind, o.GetName(), gvk.Kind, gvk.GroupVersion(), err)
		}
		ns := ""
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns = o.GetNamespace()
		}
		for _, verb := range []string{"create", "patch"} {
			r := Request{Verb: verb, Group: gvk.Group, Resource: m.Resource.Resource, Namespace: ns}
			if verb == "patch" {
				r.Name = o.GetName()
			}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// Checker asks the API server what an identity may do.
type Checker struct {
	// Clients hands out a client acting as each identity: the rules of an identity are
	// asked for by that identity itself (SelfSubjectRulesReview), which every
	// authenticated user may do.
	Clients *identity.Clients
}

// clusterScopeProbe is a namespace name no one can create (it is not a DNS label), so a
// rules review in it holds only the rules granted cluster-wide: the only rules that grant
// cluster-scoped resources.
const clusterScopeProbe = "operator-manager.cluster-scope"

// Missing returns the requests id may not make, in order. It asks for the identity's
// rules once per namespace involved (and once for cluster-scoped objects) and matches the
// requests against them, so an installation of any size costs two or three requests.
// Where the API server says the rules it lists are incomplete (an authorizer other than
// RBAC), each request is asked for on its own (SelfSubjectAccessReview).
func (c Checker) Missing(ctx context.Context, id identity.Identity, reqs []Request) ([]Request, error) {
	cl, err := c.Clients.For(id)
	if err != nil {
		return nil, err
	}
	rules := map[string]*authorizationv1.SubjectRulesReviewStatus{}
	var missing []Request
	for _, r := range reqs {
		ns := r.Namespace
		if ns == "" {
			ns = clusterScopeProbe
		}
		st, ok := rules[ns]
		if !ok {
			review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}
			if err := cl.Create(ctx, review); err != nil {
				return nil, fmt.Errorf("asking for the rules of %s in namespace %s: %w", id, ns, err)
			}
			st = &review.Status
			rules[ns] = st
		}
		allowed := Allows(st.ResourceRules, r)
		if !allowed && st.Incomplete {
			if allowed, err = selfReview(ctx, cl, r); err != nil {
				return nil, fmt.Errorf("asking whether %s may %s: %w", id, r, err)
			}
		}
		if !allowed {
			missing = append(missing, r)
		}
	}
	return missing, nil
}

// SelfMissing returns the requests the client's own identity (a person's kubeconfig) may
// not make, asking for each (SelfSubjectAccessReview): for a handful of requests, where
// Missing's rules reviews would cost as much.
func SelfMissing(ctx context.Context, cl client.Client, reqs []Request) ([]Request, error) {
	var missing []Request
	for _, r := range reqs {
		allowed, err := selfReview(ctx, cl, r)
		if err != nil {
			return nil, fmt.Errorf("asking whether you may %s: %w", r, err)
		}
		if !allowed {
			missing = append(missing, r)
		}
	}
	return missing, nil
}

// selfReview asks whether the client's own identity may make one request.
func selfReview(ctx context.Context, cl client.Client, r Request) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: r.Verb, Group: r.Group, Resource: r.Resource, Namespace: r.Namespace, Name: r.Name}}}
	if err := cl.Create(ctx, review); err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// Allows reports whether RBAC rules allow a request, as the RBAC authorizer matches them:
// verb, API group and resource each listed or "*", and, when a rule names resources,
// the request's name among them (a create, which has no name yet, never matches such a
// rule).
func Allows(rules []authorizationv1.ResourceRule, r Request) bool {
	for _, rule := range rules {
		if !has(rule.Verbs, r.Verb) || !has(rule.APIGroups, r.Group) || !has(rule.Resources, r.Resource) {
			continue
		}
		if len(rule.ResourceNames) == 0 || (r.Name != "" && slices.Contains(rule.ResourceNames, r.Name)) {
			return true
		}
	}
	return false
}

func has(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// Describe says what is missing in one line: the first few requests, and how many more.
func Describe(id identity.Identity, missing []Request) string {
	// One entry per resource and namespace, its verbs and names gathered, so that a bundle
	// with ten ClusterRoles reads as one missing right, not ten.
	type key struct{ group, resource, namespace string }
	type entry struct {
		key
		verbs, names []string
	}
	var entries []*entry
	index := map[key]*entry{}
	for _, r := range missing {
		k := key{r.Group, r.Resource, r.Namespace}
		e := index[k]
		if e == nil {
			e = &entry{key: k}
			index[k] = e
			entries = append(entries, e)
		}
		if !slices.Contains(e.verbs, r.Verb) {
			e.verbs = append(e.verbs, r.Verb)
		}
		if r.Name != "" && !slices.Contains(e.names, r.Name) {
			e.names = append(e.names, r.Name)
		}
	}
	const shown, namesShown = 3, 2
	var parts []string
	for i, e := range entries {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(entries)-shown))
			break
		}
		res := e.resource
		if e.group != "" {
			res += "." + e.group
		}
		s := strings.Join(e.verbs, ", ") + " " + res
		var names []string
		for j, n := range e.names {
			if j == namesShown {
				names = append(names, fmt.Sprintf("and %d more", len(e.names)-namesShown))
				break
			}
			names = append(names, fmt.Sprintf("%q", n))
		}
		if len(names) > 0 {
			s += " " + strings.Join(names, ", ")
		}
		if e.namespace == "" {
			s += " (cluster-scoped)"
		} else {
			s += " in namespace " + e.namespace
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s may not %s", id, strings.Join(parts, "; "))
}

// Sort orders requests by namespace, resource, verb and name, for stable messages.
func Sort(reqs []Request) {
	sort.SliceStable(reqs, func(i, j int) bool {
		a, b := reqs[i], reqs[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Group+a.Resource != b.Group+b.Resource {
			return a.Group+a.Resource < b.Group+b.Resource
		}
		if a.Verb != b.Verb {
			return a.Verb < b.Verb
		}
		return a.Name < b.Name
	})
}
