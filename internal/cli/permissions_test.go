package cli

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/render"
)

// TestBundleGrants: the preview lists the rules of the CSV's permissions and
// clusterPermissions with the ServiceAccount they are bound to and where, as the
// installation would grant them.
func TestBundleGrants(t *testing.T) {
	cat, err := catalog.Load("../../samples/catalog", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := cat.BundleByCSV("cache-operator.v1.2.0")
	if b == nil {
		t.Fatal("no cache-operator.v1.2.0 in the samples")
	}
	grants, err := bundleGrants(cat, b, "ops")
	if err != nil {
		t.Fatal(err)
	}
	want := grant{Subject: "ServiceAccount ops/cache-operator", Scope: "cluster", APIGroups: []string{""}, Resources: []string{"namespaces"},
		Verbs: []string{"get", "list", "watch"}}
	found := false
	for _, g := range grants {
		g.Role = ""
		if reflect.DeepEqual(g, want) {
			found = true
		}
		if g.Subject != "ServiceAccount ops/cache-operator" {
			t.Errorf("rule granted to %q, want the operator's ServiceAccount: %+v", g.Subject, g)
		}
	}
	if !found {
		t.Errorf("the clusterPermissions rule on namespaces is not listed: %+v", grants)
	}
	// The AllNamespaces default makes the namespaced permissions cluster-wide too.
	var leases bool
	for _, g := range grants {
		leases = leases || (strings.Join(g.Resources, ",") == "leases" && g.Scope == "cluster")
	}
	if !leases {
		t.Errorf("the permissions rule on leases is not listed cluster-wide (AllNamespaces): %+v", grants)
	}
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	printGrants(tw, grants)
	_ = tw.Flush()
	if !strings.Contains(out.String(), "GRANTED TO") || !regexp.MustCompile(`ServiceAccount ops/cache-operator +cluster +""`).MatchString(out.String()) {
		t.Errorf("table:\n%s", out.String())
	}
	// The operator's own OperatorCondition, by name, in its namespace only.
	if !regexp.MustCompile(`ServiceAccount ops/cache-operator +namespace ops +operators.coreos.com.operator-manager.domain +operatorconditions \(cache-operator.v1.2.0\) +get,update,patch`).MatchString(out.String()) {
		t.Errorf("the OperatorCondition grant is not previewed:\n%s", out.String())
	}
}

// TestGrantsOfShippedRBAC: a ClusterRole the bundle ships as a manifest, bound by a
// ClusterRoleBinding it also ships, is listed with that binding's subject; one without a
// binding is listed unbound.
func TestGrantsOfShippedRBAC(t *testing.T) {
	role := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": name}, "rules": []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"*"}}}}}
	}
	binding := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "admin-binding"}, "roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}}}}
	grants, err := grantsOf(&render.Objects{Others: []*unstructured.Unstructured{role("admin"), role("viewer"), binding}})
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 2 || grants[0].Subject != "ServiceAccount ops/op" || grants[0].Role != "admin" || grants[0].Scope != "cluster" ||
		grants[1].Subject != "" || grants[1].Role != "viewer" {
		t.Fatalf("grants = %+v", grants)
	}
}
