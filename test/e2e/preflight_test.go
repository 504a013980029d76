package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/test/harness"
)

const widgetCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: widget-operator.v%[1]s}
spec:
  displayName: Widget Operator
  version: %[1]s
  installModes: [{type: AllNamespaces, supported: true}]
  customresourcedefinitions:
    owned: [{name: widgets.preflight.samples.operator-manager.domain, version: %[2]s, kind: Widget}]
  install:
    strategy: deployment
    spec:
      deployments:
      - name: widget-operator
        spec:
          replicas: 1
          selector: {matchLabels: {app: widget-operator}}
          template:
            metadata: {labels: {app: widget-operator}}
            spec: {containers: [{name: manager, image: "registry.example/widget-operator:%[1]s"}]}
`

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.preflight.samples.operator-manager.domain}
spec:
  group: preflight.samples.operator-manager.domain
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: %[1]s
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, maximum: %[2]d}
`

// writeWidgetCatalog writes a small catalog, in the original flat layout, whose versions
// change their CRD in the two ways the preflight must refuse.
func writeWidgetCatalog(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(work, "catalogs", "preflight")
	for _, v := range []struct {
		version, crdVersion string
		max                 int
	}{
		{"1.0.0", "v1", 10}, // installed first; a Widget of size 5 is created
		{"1.1.0", "v2", 10}, // drops v1, in which the Widget is stored
		{"1.2.0", "v1", 2},  // makes the Widget of size 5 invalid
		{"1.3.0", "v1", 20}, // a compatible change
	} {
		d := filepath.Join(dir, "widget-operator", v.version)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "csv.yaml"), []byte(fmt.Sprintf(widgetCSV, v.version, v.crdVersion)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "crd.yaml"), []byte(fmt.Sprintf(widgetCRD, v.crdVersion, v.max)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCRDPreflightBlocks: a CRD change that drops a stored version, and one that makes an
// existing custom resource invalid, are each Blocked with a condition naming the CRD, the
// version and the object, and the cluster is left unchanged. Once the custom resource is
// mended, the blocked change goes on by itself. A compatible one then passes.
func TestCRDPreflightBlocks(t *testing.T) {
	ns := "preflight"
	dir := writeWidgetCatalog(t)
	if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "widgets", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
		t.Fatal(err)
	}
	newNamespace(t, ns)
	if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "widgets", Namespace: ns},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
		t.Fatal(err)
	}
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: widgets}
spec: {startingCSV: widget-operator.1.0.0, catalog: widgets}
`)
	waitRunning(t, ns, "widgets", "widget-operator.v1.0.0")
	widget := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(5)}}}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "preflight.samples.operator-manager.domain", Version: "v1", Kind: "Widget"})
	widget.SetNamespace(ns)
	widget.SetName("big")
	if err := k8s.Create(ctx(), widget); err != nil {
		t.Fatal(err)
	}
	crdBefore := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "widgets.preflight.samples.operator-manager.domain"}, crdBefore); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		version string
		want    []string
	}{
		{"1.1.0", []string{"CRD widgets.preflight.samples.operator-manager.domain version v1", "drops version v1", "storedVersions [v1]", "nothing was changed"}},
		{"1.2.0", []string{"CRD widgets.preflight.samples.operator-manager.domain version v1", "custom resource preflight/big would become invalid", "spec.size", "nothing was changed"}},
	} {
		setStartingCSV(t, ns, "widgets", "widget-operator."+tc.version)
		// Within 30 s: a settled phase's words are news, not progress the Subscription may
		// repeat only once a minute (statuswrite.SummaryInterval), so the second blocked
		// version's reason (the same one, CRDPreflightFailed) is not left naming the first.
		eventually(t, 30*time.Second, "upgrade to "+tc.version+" blocked", func() bool {
			bp := getBlueprint(t, ns, "widgets")
			n := len(bp.Status.History)
			last := bp.Status.History[n-1]
			// The newest revision is this version's, blocked, and the Subscription says so.
			return bp.Status.Phase == omv1.BlueprintBlocked && last.CSVName == "widget-operator.v"+tc.version &&
				last.Outcome == omv1.OutcomeBlocked &&
				strings.Contains(condition(getSub(t, ns, "widgets").Status.Conditions, omv1.ConditionBlocked).Message, tc.want[1])
		}, describeSub(t, ns, "widgets"))
		sub := getSub(t, ns, "widgets")
		for _, typ := range []string{omv1.ConditionBlocked, omv1.ConditionReady} {
			c := condition(sub.Status.Conditions, typ)
			for _, w := range tc.want {
				if !strings.Contains(c.Message, w) {
					t.Errorf("%s: Subscription condition %s lacks %q: %s", tc.version, typ, w, c.Message)
				}
			}
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: crdBefore.Name}, crd); err != nil {
			t.Fatal(err)
		}
		if crd.ResourceVersion != crdBefore.ResourceVersion {
			t.Errorf("%s: the CRD was changed by a blocked upgrade", tc.version)
		}
		if img := containerImage(t, ns, "widget-operator"); img != "registry.example/widget-operator:1.0.0" {
			t.Errorf("%s: a blocked upgrade changed the Deployment to %s", tc.version, img)
		}
		csvs := &omv1alpha1.ClusterServiceVersionList{}
		if err := k8s.List(ctx(), csvs, client.InNamespace(ns)); err != nil || len(csvs.Items) != 1 || csvs.Items[0].Name != "widget-operator.v1.0.0" {
			t.Errorf("%s: CSVs after a blocked upgrade: %v", tc.version, csvs.Items)
		}
		if csvs.Items[0].Status.Phase != omv1alpha1.CSVSucceeded {
			t.Errorf("%s: the running CSV is %s", tc.version, csvs.Items[0].Status.Phase)
		}
	}
	// The preflight is checked again while blocked: once a person mends the custom
	// resource the new schema refuses, the change goes on by itself (no retry, no edit).
	if !strings.Contains(condition(getSub(t, ns, "widgets").Status.Conditions, omv1.ConditionBlocked).Message, "goes on by itself once it is safe") {
		t.Errorf("the Blocked condition does not say the change goes on by itself once safe")
	}
	harness.Patch(t, k8s, client.ObjectKeyFromObject(widget), widget.DeepCopy(), func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "size")
	})
	waitRunning(t, ns, "widgets", "widget-operator.v1.2.0")
	if h := historyOf(getBlueprint(t, ns, "widgets")); !strings.HasSuffix(h, "3:widget-operator.v1.2.0:Upgrade:Blocked 4:widget-operator.v1.2.0:Retry:Succeeded") {
		t.Errorf("history after the mend: %s", h)
	}

	setStartingCSV(t, ns, "widgets", "widget-operator.1.3.0")
	waitRunning(t, ns, "widgets", "widget-operator.v1.3.0")
	getCR(t, widget)
}
