package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestUninstallDeleteCRDsOptIn: spec.uninstall.deleteCRDs removes the operator's CRDs on
// uninstall, but never while another installation still provides them.
func TestUninstallDeleteCRDsOptIn(t *testing.T) {
	// A package of its own (gadgets), so no other test's installation provides its CRD.
	src := writeWidgetCatalog(t)
	dir := filepath.Join(work, "catalogs", "gadgets")
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		rel = strings.ReplaceAll(rel, "widget", "gadget")
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// OwnNamespace too: the two installations below run side by side, each watching its
		// own namespace (two watching all namespaces would be refused).
		data = []byte(strings.NewReplacer("widget", "gadget", "Widget", "Gadget",
			"installModes: [{type: AllNamespaces, supported: true}]",
			"installModes: [{type: OwnNamespace, supported: true}, {type: AllNamespaces, supported: true}]").Replace(string(data)))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"gadgets-a", "gadgets-b"} {
		newNamespace(t, ns)
		if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "gadgets", Namespace: ns},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
			t.Fatal(err)
		}
		applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: gadgets}
spec: {startingCSV: gadget-operator.1.3.0, catalog: gadgets, targetNamespaces: [`+ns+`], uninstall: {deleteCRDs: true}}
`)
		waitRunning(t, ns, "gadgets", "gadget-operator.v1.3.0")
	}
	const crdName = "gadgets.preflight.samples.operator-manager.domain"
	uninstall := func(ns string) {
		t.Helper()
		if out, err := cli("uninstall", "gadgets", "-n", ns, "--delete-subscription", "--wait"); err != nil {
			t.Fatalf("uninstall %s: %v\n%s", ns, err, out)
		}
	}
	uninstall("gadgets-a")
	if err := k8s.Get(ctx(), client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Fatalf("the CRD was deleted while gadgets-b still provides it: %v", err)
	}
	uninstall("gadgets-b")
	eventually(t, time.Minute, "CRD deleted", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}))
	}, func() string { return "" })
}
