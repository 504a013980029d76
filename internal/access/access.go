// Package access asks the API server, before anything is applied, whether an installing
// identity may make every write an installation needs, so a refusal names the verb,
// resource and namespace and leaves nothing half-installed. The list of writes is built
// purely from the objects (Requests); Checker asks the API server (SubjectAccessReview for a
// ServiceAccount, SelfSubjectAccessReview for the manager).
package access

import (
	"context"
	"fmt"
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
	res := r.Resource
	if r.Group != "" {
		res += "." + r.Group
	}
	s := r.Verb + " " + res
	if r.Name != "" {
		s += fmt.Sprintf(" %q", r.Name)
	}
	if r.Namespace == "" {
		return s + " (cluster-scoped)"
	}
	return s + " in namespace " + r.Namespace
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
	// Client creates the reviews as the manager (it needs create on subjectaccessreviews
	// and selfsubjectaccessreviews).
	Client client.Client
}

// Missing returns the requests id may not make, in order.
func (c Checker) Missing(ctx context.Context, id identity.Identity, reqs []Request) ([]Request, error) {
	var missing []Request
	for _, r := range reqs {
		ok, err := c.Allowed(ctx, id, r)
		if err != nil {
			return nil, err
		}
		if !ok {
			missing = append(missing, r)
		}
	}
	return missing, nil
}

// Allowed asks whether id may make one request.
func (c Checker) Allowed(ctx context.Context, id identity.Identity, r Request) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{Verb: r.Verb, Group: r.Group, Resource: r.Resource, Namespace: r.Namespace, Name: r.Name}
	if id.IsManager() {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
		if err := c.Client.Create(ctx, review); err != nil {
			return false, fmt.Errorf("asking whether the manager may %s: %w", r, err)
		}
		return review.Status.Allowed, nil
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: attrs, User: id.Username(), Groups: id.Groups()}}
	if err := c.Client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking whether %s may %s: %w", id, r, err)
	}
	return review.Status.Allowed, nil
}

// Describe says what is missing in one line: the first few requests, and how many more.
func Describe(id identity.Identity, missing []Request) string {
	const shown = 3
	var parts []string
	for i, r := range missing {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(missing)-shown))
			break
		}
		parts = append(parts, r.String())
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
