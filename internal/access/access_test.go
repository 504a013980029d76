package access

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-manager/operator-manager/internal/identity"
)

func obj(apiVersion, kind, ns, name string) Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, meta.RESTScopeNamespace)
	return m
}

func TestRequests(t *testing.T) {
	cases := []struct {
		name    string
		objs    []Object
		want    []string
		wantErr string
	}{
		{"namespaced object: create in the namespace, patch by name",
			[]Object{obj("apps/v1", "Deployment", "team-a", "op")},
			[]string{`create deployments.apps in namespace team-a`, `patch deployments.apps "op" in namespace team-a`}, ""},
		{"cluster-scoped object drops a stray namespace",
			[]Object{obj("rbac.authorization.k8s.io/v1", "ClusterRole", "team-a", "r")},
			[]string{`create clusterroles.rbac.authorization.k8s.io (cluster-scoped)`, `patch clusterroles.rbac.authorization.k8s.io "r" (cluster-scoped)`}, ""},
		{"core group and duplicates once",
			[]Object{obj("v1", "ServiceAccount", "ns", "a"), obj("v1", "ServiceAccount", "ns", "b")},
			[]string{`create serviceaccounts in namespace ns`, `patch serviceaccounts "a" in namespace ns`, `patch serviceaccounts "b" in namespace ns`}, ""},
		{"unknown kind is named",
			[]Object{obj("example.com/v1", "Widget", "ns", "w")}, nil, "does not serve kind Widget in example.com/v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Requests(mapper(), tc.objs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, r := range got {
				s = append(s, r.String())
			}
			if strings.Join(s, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(s, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	id := identity.Identity{Namespace: "team-a", Name: "installer"}
	reqs := []Request{{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "patch", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "a"},
		{Verb: "patch", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "b"},
		{Verb: "patch", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "c"},
		{Verb: "patch", Resource: "services", Namespace: "team-a", Name: "x"},
		{Verb: "create", Resource: "configmaps", Namespace: "team-a"}}
	got := Describe(id, reqs)
	want := `ServiceAccount team-a/installer may not create customresourcedefinitions.apiextensions.k8s.io (cluster-scoped); create, patch clusterroles.rbac.authorization.k8s.io "a", "b", and 1 more (cluster-scoped); patch services "x" in namespace team-a; and 1 more`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := identity.Effective("ns", "", "").String(); got != "the manager's own ServiceAccount" {
		t.Fatalf("manager identity = %q", got)
	}
	if got := identity.Effective("ns", "", "deployer").Username(); got != "system:serviceaccount:ns:deployer" {
		t.Fatalf("default identity = %q", got)
	}
}

func TestAllows(t *testing.T) {
	rule := func(verbs, groups, resources, names []string) authorizationv1.ResourceRule {
		return authorizationv1.ResourceRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	s := func(v ...string) []string { return v }
	deploy := Request{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "ns"}
	cases := []struct {
		name  string
		rules []authorizationv1.ResourceRule
		req   Request
		want  bool
	}{
		{"exact", []authorizationv1.ResourceRule{rule(s("create"), s("apps"), s("deployments"), nil)}, deploy, true},
		{"wildcards", []authorizationv1.ResourceRule{rule(s("*"), s("*"), s("*"), nil)}, deploy, true},
		{"other verb", []authorizationv1.ResourceRule{rule(s("get", "list"), s("apps"), s("deployments"), nil)}, deploy, false},
		{"other group", []authorizationv1.ResourceRule{rule(s("create"), s(""), s("deployments"), nil)}, deploy, false},
		{"core group", []authorizationv1.ResourceRule{rule(s("patch"), s(""), s("services"), nil)},
			Request{Verb: "patch", Resource: "services", Namespace: "ns", Name: "x"}, true},
		{"named rule, create has no name", []authorizationv1.ResourceRule{rule(s("create"), s("apps"), s("deployments"), s("op"))}, deploy, false},
		{"named rule, patch of that name", []authorizationv1.ResourceRule{rule(s("patch"), s("apps"), s("deployments"), s("op"))},
			Request{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "ns", Name: "op"}, true},
		{"named rule, patch of another", []authorizationv1.ResourceRule{rule(s("patch"), s("apps"), s("deployments"), s("op"))},
			Request{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "ns", Name: "other"}, false},
		{"a subresource rule does not grant the resource", []authorizationv1.ResourceRule{rule(s("create"), s("apps"), s("deployments/scale"), nil)}, deploy, false},
		{"second rule matches", []authorizationv1.ResourceRule{rule(s("get"), s("apps"), s("deployments"), nil), rule(s("create"), s("apps"), s("deployments"), nil)}, deploy, true},
		{"no rules", nil, deploy, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Allows(tc.rules, tc.req); got != tc.want {
				t.Fatalf("Allows = %v, want %v", got, tc.want)
			}
		})
	}
}
