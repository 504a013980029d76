package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// writeCatalog writes a catalog directory under <work>/catalogs/<name> (which the manager
// may read) from file paths and contents, and returns its path.
func writeCatalog(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(work, "catalogs", name)
	for path, data := range files {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newNamespaceWithCatalog creates a namespace with a Directory CatalogSource named "test"
// reading dir.
func newNamespaceWithCatalog(t *testing.T, ns, dir string) {
	t.Helper()
	if err := k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cs := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: ns},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}
	if err := k8s.Create(ctx(), cs); err != nil {
		t.Fatal(err)
	}
}

// gadget writes one version of the test-only gadget operator (flat layout): a CSV owning
// the Gadget CRD of group <group>, and the CRD; edit changes the CSV text before it is
// written (to break it), extra adds files to the bundle.
func gadget(files map[string]string, group, version, replaces string, edit func(string) string, extra map[string]string) {
	csv := fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: gadget-operator.v%[1]s}
spec:
  displayName: Gadget Operator
  version: %[1]s
  replaces: %[3]s
  installModes: [{type: OwnNamespace, supported: true}, {type: AllNamespaces, supported: true}]
  customresourcedefinitions:
    owned:
    - {name: gadgets.%[2]s, version: v1, kind: Gadget}
  install:
    strategy: deployment
    spec:
      permissions:
      - serviceAccountName: gadget-operator
        rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}]
      deployments:
      - name: gadget-operator
        spec:
          replicas: 1
          selector: {matchLabels: {app: gadget-operator}}
          template:
            metadata: {labels: {app: gadget-operator}}
            spec:
              serviceAccountName: gadget-operator
              containers: [{name: manager, image: "registry.example/gadget-operator:%[1]s"}]
`, version, group, replaces)
	if replaces == "" {
		csv = strings.Replace(csv, "  replaces: \n", "", 1)
	}
	if edit != nil {
		csv = edit(csv)
	}
	files["gadget-operator/"+version+"/csv.yaml"] = csv
	files["gadget-operator/"+version+"/crd.yaml"] = fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.%[1]s}
spec:
  group: %[1]s
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group)
	for name, data := range extra {
		files["gadget-operator/"+version+"/"+name] = data
	}
}
