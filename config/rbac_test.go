package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

func objectKey(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", u.GroupVersionKind(), u.GetNamespace(), u.GetName())
}

// namesManager reports whether a binding's subjects include the manager's ServiceAccount.
func namesManager(u *unstructured.Unstructured) bool {
	subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
	for _, s := range subjects {
		m, _ := s.(map[string]any)
		if m["kind"] == "ServiceAccount" && m["name"] == config.ManagerServiceAccount && m["namespace"] == config.ManagerNamespace {
			return true
		}
	}
	return false
}

// TestRBACIsTheManagersIdentity: RBAC() holds the manager's ServiceAccount, the ClusterRoles
// of the manager, and bindings of those roles to that ServiceAccount.
func TestRBACIsTheManagersIdentity(t *testing.T) {
	objs, err := config.RBAC()
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	for _, u := range objs {
		byKind[u.GetKind()] = append(byKind[u.GetKind()], u)
	}
	var sa bool
	for _, u := range byKind["ServiceAccount"] {
		sa = sa || (u.GetName() == config.ManagerServiceAccount && u.GetNamespace() == config.ManagerNamespace)
	}
	if !sa {
		t.Errorf("RBAC() has no ServiceAccount %s/%s", config.ManagerNamespace, config.ManagerServiceAccount)
	}
	clusterRoles := map[string]bool{}
	for _, u := range byKind["ClusterRole"] {
		clusterRoles[u.GetName()] = true
	}
	if len(clusterRoles) == 0 {
		t.Errorf("RBAC() has no ClusterRole")
	}
	bound := 0
	for _, u := range byKind["ClusterRoleBinding"] {
		if !namesManager(u) {
			continue
		}
		bound++
		ref, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		if kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind"); kind == "ClusterRole" && !clusterRoles[ref] {
			t.Errorf("ClusterRoleBinding %s binds ClusterRole %s, which config/rbac does not define", u.GetName(), ref)
		}
	}
	if bound == 0 {
		t.Errorf("no ClusterRoleBinding of RBAC() names the ServiceAccount %s/%s", config.ManagerNamespace, config.ManagerServiceAccount)
	}
	if len(byKind["ClusterRole"]) < 2 || !clusterRoles["operator-manager"] {
		t.Errorf("ClusterRoles = %v, want operator-manager and the others of config/rbac", clusterRoles)
	}
}

// TestRBACIsWhatKustomizeBuilds: what RBAC() returns (and the harness and `dev up` apply) is
// exactly what `kubectl apply -k config/rbac` would apply, object for object.
func TestRBACIsWhatKustomizeBuilds(t *testing.T) {
	objs, err := config.RBAC()
	if err != nil {
		t.Fatal(err)
	}
	bins, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bins, testenv.BinKubectl), "kustomize", "rbac")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize config/rbac: %v\n%s", err, stderr.String())
	}
	built := map[string]*unstructured.Unstructured{}
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding kubectl kustomize output: %v", err)
		}
		if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatalf("decoding kubectl kustomize output: %v", err)
		}
		built[objectKey(u)] = u
	}
	got := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if _, dup := got[objectKey(u)]; dup {
			t.Errorf("RBAC() returns %s twice", objectKey(u))
		}
		got[objectKey(u)] = u
	}
	if len(got) != len(built) {
		t.Errorf("RBAC() returns %d objects, kubectl kustomize builds %d", len(got), len(built))
	}
	for k, want := range built {
		g, ok := got[k]
		if !ok {
			t.Errorf("kubectl kustomize builds %s, RBAC() lacks it", k)
			continue
		}
		if !reflect.DeepEqual(g.Object, want.Object) {
			t.Errorf("%s differs:\nRBAC():    %v\nkustomize: %v", k, g.Object, want.Object)
		}
	}
	for k := range got {
		if _, ok := built[k]; !ok {
			t.Errorf("RBAC() returns %s, which kubectl kustomize does not build", k)
		}
	}
}
