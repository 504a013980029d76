package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/test/harness"
)

const gadgetCRDName = "gadgets.sidebyside.samples.operator-manager.domain"

const gadgetCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: twin-operator.v%[1]s}
spec:
  displayName: Gadget Operator
  version: %[1]s
  installModes:
  - {type: OwnNamespace, supported: true}
  - {type: SingleNamespace, supported: true}
  - {type: MultiNamespace, supported: true}
  - {type: AllNamespaces, supported: true}
  customresourcedefinitions:
    owned: [{name: ` + gadgetCRDName + `, version: v1, kind: Gadget}]
  install:
    strategy: deployment
    spec:
      permissions:
      - serviceAccountName: twin-operator
        rules: [{apiGroups: [sidebyside.samples.operator-manager.domain], resources: [gadgets], verbs: [get, list, watch, update]}]
      deployments:
      - name: twin-operator
        spec:
          replicas: 1
          selector: {matchLabels: {app: twin-operator}}
          template:
            metadata: {labels: {app: twin-operator}}
            spec:
              serviceAccountName: twin-operator
              containers: [{name: manager, image: "registry.example/twin-operator:%[1]s"}]
`

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + gadgetCRDName + `}
spec:
  group: sidebyside.samples.operator-manager.domain
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, maximum: %d}
`

const sharedClusterRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: twin-operator-gadget-reader}
rules: [{apiGroups: [sidebyside.samples.operator-manager.domain], resources: [gadgets], verbs: [get, list, watch]}]
`

// sharedRole is the bundle's shared ClusterRole: its owner and resourceVersion, or ""
// when it does not exist.
func sharedRole(t *testing.T) (owner, rv string) {
	t.Helper()
	cr := &rbacv1.ClusterRole{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "twin-operator-gadget-reader"}, cr); err != nil {
		if apierrors.IsNotFound(err) {
			return "", ""
		}
		t.Fatal(err)
	}
	return cr.Annotations[render.AnnotationOwner], cr.ResourceVersion
}

// writeGadgetCatalog writes a catalog whose operator supports every install mode, so it
// runs side by side, with a compatible CRD change (1.1.0) and one that makes a Gadget of
// size 5 invalid (1.2.0).
func writeGadgetCatalog(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(work, "catalogs", "sidebyside")
	for version, max := range map[string]int{"1.0.0": 10, "1.1.0": 20, "1.2.0": 2} {
		d := filepath.Join(dir, "twin-operator", version)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "csv.yaml"), []byte(fmt.Sprintf(gadgetCSV, version)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "crd.yaml"), []byte(fmt.Sprintf(gadgetCRD, max)), 0o644); err != nil {
			t.Fatal(err)
		}
		// A cluster-scoped object the bundle names itself: every installation shares it.
		if err := os.WriteFile(filepath.Join(d, "reader.clusterrole.yaml"), []byte(sharedClusterRole), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSideBySide runs one package at two versions in two namespaces, each watching only
// its own: an upgrade of one leaves the other alone, the shared CRD is kept at the newest
// schema and names both providers, an upgrade whose CRD would invalidate the other's
// custom resources is Blocked naming them, an AllNamespaces installation and an
// overlapping one are refused naming the installation in the way (and the latter installs
// once that one is gone), and uninstalling one (even with deleteCRDs) leaves the CRD and
// the other's custom resources in place.
func TestSideBySide(t *testing.T) {
	dir := writeGadgetCatalog(t)
	nsA, nsB, nsC, nsD := "sbs-a", "sbs-b", "sbs-c", "sbs-d"
	for _, ns := range []string{nsA, nsB, nsC, nsD} {
		newNamespace(t, ns)
		if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "gadgets", Namespace: ns},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
			t.Fatal(err)
		}
	}
	subscribe := func(ns, name, csv string, targets ...string) {
		t.Helper()
		sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: omv1.SubscriptionSpec{StartingCSV: csv, Catalog: "gadgets", Option: omv1.OptionCreate, TargetNamespaces: targets}}
		if err := k8s.Create(ctx(), sub); err != nil {
			t.Fatal(err)
		}
		uninstallAtEnd(t, ns, name)
	}
	subscribe(nsA, "gadgets", "twin-operator.1.0.0", nsA)
	waitRunning(t, nsA, "gadgets", "twin-operator.v1.0.0")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have seconds: A is the older
	subscribe(nsB, "gadgets", "twin-operator.1.1.0", nsB)
	waitRunning(t, nsB, "gadgets", "twin-operator.v1.1.0")

	// Each Deployment watches only its own namespace.
	for _, ns := range []string{nsA, nsB} {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "twin-operator"}, d); err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.Template.Annotations[render.AnnotationTargetNamespaces]; got != ns {
			t.Errorf("the Deployment in %s watches %q, want only %s", ns, got, ns)
		}
	}
	crdMax := func() int64 {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: gadgetCRDName}, crd); err != nil {
			t.Fatal(err)
		}
		return int64(*crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"].Maximum)
	}
	providers := func() []string {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: gadgetCRDName}, crd); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k, v := range crd.Annotations {
			if strings.HasPrefix(k, omv1.AnnotationProviderPrefix) {
				out = append(out, v)
			}
		}
		sort.Strings(out)
		return out
	}
	if got := crdMax(); got != 20 {
		t.Errorf("the shared CRD has maximum %d, want 20: the newest version's (1.1.0) schema", got)
	}
	// The bundle's own ClusterRole, which both applied, is not fought over: it stays as the
	// last applier left it.
	_, rv := sharedRole(t)
	time.Sleep(5 * time.Second)
	if _, rv2 := sharedRole(t); rv2 != rv || rv == "" {
		t.Errorf("the shared ClusterRole was rewritten while both installations were idle (resourceVersion %s -> %s)", rv, rv2)
	}
	eventually(t, 30*time.Second, "the CRD names both providers", func() bool {
		return strings.Join(providers(), ",") == nsA+"/gadgets twin-operator.v1.0.0,"+nsB+"/gadgets twin-operator.v1.1.0"
	}, func() string { return strings.Join(providers(), "\n") })
	var status struct {
		CRDs []struct {
			Name       string   `json:"name"`
			ProvidedBy []string `json:"providedBy"`
		} `json:"crds"`
	}
	r := mustJSON(t, &status, "status", "gadgets", "-n", nsA)
	if len(status.CRDs) != 1 || status.CRDs[0].Name != gadgetCRDName || len(status.CRDs[0].ProvidedBy) != 2 {
		t.Errorf("status -o json should show the shared CRD with both providers:\n%s", r.stdout)
	}

	// Upgrading A leaves B's Deployment and CSV alone.
	depB := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: nsB, Name: "twin-operator"}, depB); err != nil {
		t.Fatal(err)
	}
	setStartingCSV(t, nsA, "gadgets", "twin-operator.1.1.0")
	waitRunning(t, nsA, "gadgets", "twin-operator.v1.1.0")
	depB2 := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: nsB, Name: "twin-operator"}, depB2); err != nil {
		t.Fatal(err)
	}
	if depB2.Generation != depB.Generation || containerImage(t, nsB, "twin-operator") != "registry.example/twin-operator:1.1.0" {
		t.Errorf("upgrading %s changed %s's Deployment (generation %d -> %d)", nsA, nsB, depB.Generation, depB2.Generation)
	}

	// A custom resource of A's that B's next CRD would make invalid: B's upgrade is Blocked
	// naming it, and nothing changes.
	gadget := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(5)}}}
	gadget.SetGroupVersionKind(schema.GroupVersionKind{Group: "sidebyside.samples.operator-manager.domain", Version: "v1", Kind: "Gadget"})
	gadget.SetNamespace(nsA)
	gadget.SetName("big")
	if err := k8s.Create(ctx(), gadget); err != nil {
		t.Fatal(err)
	}
	setStartingCSV(t, nsB, "gadgets", "twin-operator.1.2.0")
	eventually(t, time.Minute, nsB+" upgrade to 1.2.0 Blocked naming "+nsA+"/big", func() bool {
		c := condition(getSub(t, nsB, "gadgets").Status.Conditions, omv1.ConditionBlocked)
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "custom resource "+nsA+"/big would become invalid")
	}, describeSub(t, nsB, "gadgets"))
	if got := crdMax(); got != 20 {
		t.Errorf("a blocked upgrade changed the shared CRD: maximum %d", got)
	}
	if img := containerImage(t, nsB, "twin-operator"); img != "registry.example/twin-operator:1.1.0" {
		t.Errorf("a blocked upgrade changed %s's Deployment to %s", nsB, img)
	}
	setStartingCSV(t, nsB, "gadgets", "twin-operator.1.1.0")
	waitReady(t, nsB, "gadgets", time.Minute)

	// A second installation watching all namespaces, and one watching B's namespace, are
	// refused naming the installation in the way; neither installs anything.
	subscribe(nsC, "gadgets", "twin-operator.1.1.0")
	subscribe(nsD, "gadgets", "twin-operator.1.1.0", nsD, nsB)
	for _, tc := range []struct{ ns, says string }{
		{nsC, "Subscription " + nsA + "/gadgets already installs package \"twin-operator\" watching " + nsA},
		{nsD, "Subscription " + nsB + "/gadgets already installs package \"twin-operator\" watching " + nsB + "; this one would watch " + nsB + " too"},
	} {
		eventually(t, 30*time.Second, tc.ns+" refused", func() bool {
			c := condition(getSub(t, tc.ns, "gadgets").Status.Conditions, omv1.ConditionResolved)
			return c.Status == metav1.ConditionFalse && c.Reason == "TargetNamespacesOverlap" && strings.Contains(c.Message, tc.says)
		}, describeSub(t, tc.ns, "gadgets"))
		if err := k8s.Get(ctx(), client.ObjectKey{Namespace: tc.ns, Name: "gadgets"}, &omv1.Blueprint{}); !apierrors.IsNotFound(err) {
			t.Errorf("a refused installation in %s has a Blueprint (%v)", tc.ns, err)
		}
	}

	// Uninstalling B, even asking for its CRDs to go, keeps the CRD A uses (at the newest
	// schema) and A's custom resource; then D, which only B was in the way of, installs.
	sub := getSub(t, nsB, "gadgets")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Uninstall = &omv1.UninstallPolicy{DeleteCRDs: true}
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx(), sub); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, nsB+" uninstalled", func() bool {
		err := k8s.Get(ctx(), client.ObjectKey{Namespace: nsB, Name: "gadgets"}, &omv1.Subscription{})
		return apierrors.IsNotFound(err)
	}, describeSub(t, nsB, "gadgets"))
	if got := crdMax(); got != 20 {
		t.Errorf("after uninstalling %s the shared CRD has maximum %d, want 20 (not removed, not downgraded)", nsB, got)
	}
	getCR(t, gadget)
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: nsB, Name: "twin-operator"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s's Deployment is still there after its uninstall: %v", nsB, err)
	}
	// The shared ClusterRole stays for the installations still using it.
	if owner, _ := sharedRole(t); owner != nsA+"/twin-operator.v1.1.0" && owner != nsD+"/twin-operator.v1.1.0" {
		t.Errorf("after %s's uninstall the shared ClusterRole is owned by %q, want a live installation", nsB, owner)
	}
	waitRunning(t, nsD, "gadgets", "twin-operator.v1.1.0")
	eventually(t, 30*time.Second, "the CRD names A and D as providers, not B", func() bool {
		return strings.Join(providers(), ",") == nsA+"/gadgets twin-operator.v1.1.0,"+nsD+"/gadgets twin-operator.v1.1.0"
	}, func() string { return strings.Join(providers(), "\n") })
	// C still waits: A watches all it would watch.
	if c := condition(getSub(t, nsC, "gadgets").Status.Conditions, omv1.ConditionResolved); c.Reason != "TargetNamespacesOverlap" {
		t.Errorf("%s after B's uninstall: Resolved %s %s", nsC, c.Reason, c.Message)
	}

	for _, ns := range []string{nsA, nsC, nsD} {
		if err := k8s.Delete(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gadgets"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{nsA, nsC, nsD} {
		eventually(t, time.Minute, ns+" uninstalled", func() bool {
			err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "gadgets"}, &omv1.Subscription{})
			return apierrors.IsNotFound(err)
		}, describeSub(t, ns, "gadgets"))
	}
	if got := providers(); len(got) != 0 {
		t.Errorf("provider records left after every installation is gone: %v", got)
	}
	eventually(t, 30*time.Second, "the shared ClusterRole removed with the last installation", func() bool {
		owner, _ := sharedRole(t)
		return owner == ""
	}, func() string { owner, _ := sharedRole(t); return owner })
}

// TestSideBySideCreatedAtOnce: six installations of one package, at three versions in six
// namespaces, created at the same moment. Their shared CRD ends at the newest version's
// schema with every installation's provider record; and so again once it is deleted by
// hand and the installations create it again. Before, each installation read no CRD and
// applied its own (the Blueprint controller runs several workers), and the last one's
// stood, often an older version's, with half the records (found by hand).
func TestSideBySideCreatedAtOnce(t *testing.T) {
	const crdName = "widgets.race.samples.operator-manager.domain"
	to := strings.NewReplacer("twin-operator", "race-operator", "sidebyside.samples", "race.samples",
		"gadgets", "widgets", "Gadget", "Widget", "gadget", "widget")
	dir := filepath.Join(work, "catalogs", "race")
	for version, max := range map[string]int{"1.0.0": 10, "1.1.0": 20, "1.2.0": 30, "1.3.0": 40} {
		d := filepath.Join(dir, "race-operator", version)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "csv.yaml"), []byte(to.Replace(fmt.Sprintf(gadgetCSV, version))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "crd.yaml"), []byte(to.Replace(fmt.Sprintf(gadgetCRD, max))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = k8s.Delete(ctx(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}})
	})
	versions := []string{"1.0.0", "1.1.0", "1.2.0", "1.2.0", "1.1.0", "1.0.0"}
	var namespaces []string
	for i := range versions {
		ns := fmt.Sprintf("race-%d", i+1)
		newNamespace(t, ns)
		if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "race", Namespace: ns},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
			t.Fatal(err)
		}
		namespaces = append(namespaces, ns)
	}
	// Every catalog loaded first, so the six start together.
	for _, ns := range namespaces {
		eventually(t, time.Minute, "catalog "+ns+"/race Ready", func() bool {
			cs := &omv1.CatalogSource{}
			return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "race"}, cs) == nil &&
				condition(cs.Status.Conditions, omv1.ConditionReady).Status == metav1.ConditionTrue
		}, func() string { return "" })
	}
	for i, ns := range namespaces {
		sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: "race", Namespace: ns},
			Spec: omv1.SubscriptionSpec{StartingCSV: "race-operator." + versions[i], Catalog: "race", Option: omv1.OptionCreate, TargetNamespaces: []string{ns}}}
		if err := k8s.Create(ctx(), sub); err != nil {
			t.Fatal(err)
		}
		uninstallAtEnd(t, ns, "race")
	}
	// check says what is wrong with the shared CRD: not at the schema of version (whose
	// size maximum is max), or a provider record not naming what versions says runs in
	// its namespace; "" when nothing is.
	check := func(version string, max float64, versions []string) string {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: crdName}, crd); err != nil {
			return err.Error()
		}
		var problems []string
		got := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"].Maximum
		if got == nil {
			return "the CRD's spec.size has no maximum"
		}
		if v := crd.Annotations["operator-manager.domain/crd-version"]; v != version || *got != max {
			problems = append(problems, fmt.Sprintf("the CRD is at version %q (size maximum %v), want %s's (%v)", v, *got, version, max))
		}
		for i, ns := range namespaces {
			want := ns + "/race race-operator.v" + versions[i]
			if got := crd.Annotations["provided-by.operator-manager.domain/"+ns+".race"]; got != want {
				problems = append(problems, fmt.Sprintf("provider record of %s: %q, want %q", ns, got, want))
			}
		}
		return strings.Join(problems, "; ")
	}
	for i, ns := range namespaces {
		waitRunning(t, ns, "race", "race-operator.v"+versions[i])
	}
	if problem := check("1.2.0", 30, versions); problem != "" {
		t.Errorf("created at once: %s", problem)
	}

	// Deleted by hand: it is created again (within moments: the new one is told by its
	// UID), with every installation's record, at the newest running version's schema. The
	// first installation to notice it gone may run an older version (CI, under load, found
	// it at 1.1.0): the newer ones, finding it so, bring it up.
	before := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: crdName}, before); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx(), before); err != nil {
		t.Fatal(err)
	}
	var last string
	eventually(t, 2*time.Minute, "the CRD created again, at 1.2.0's schema, with every provider", func() bool {
		again := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: crdName}, again); err != nil || again.UID == before.UID {
			last = fmt.Sprintf("not created again yet (%v)", err)
			return false
		}
		last = check("1.2.0", 30, versions)
		return last == ""
	}, func() string { return last })
	for _, ns := range namespaces {
		waitReady(t, ns, "race", time.Minute)
		// Each installation either made it again or found it made by another: none was
		// ever missing a CRD it could not have (before, those that found it made said
		// CRDMissing "is gone" of a CRD that was back, then Recovered; found by hand).
		if eventIn(t, ns, "", "CRDMissing", "") {
			t.Errorf("%s: a CRDMissing event, though the CRD came back at once", ns)
		}
	}

	// The same, made deterministic: the CRD written as 1.0.0's restore would write it
	// (its schema and version, every record kept). The 1.2.0 installations bring it up,
	// and say so.
	writeAs := func(version string, max int64) {
		t.Helper()
		// A conflict is an installation's record or a bring-up meanwhile: read again.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := k8s.Get(ctx(), client.ObjectKey{Name: crdName}, crd); err != nil {
				return err
			}
			crd.Annotations["operator-manager.domain/crd-version"] = version
			size := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"]
			size.Maximum = ptr.To(float64(max))
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = size
			return k8s.Update(ctx(), crd)
		}); err != nil {
			t.Fatal(err)
		}
	}
	writeAs("1.0.0", 10)
	eventually(t, time.Minute, "the CRD, written at 1.0.0's schema, brought up to 1.2.0's", func() bool {
		last = check("1.2.0", 30, versions)
		return last == ""
	}, func() string { return last })
	eventually(t, 30*time.Second, "a CRDUpdated event", func() bool {
		return eventIn(t, "race-3", "Normal", "CRDUpdated", "brought up to race-operator.v1.2.0's") ||
			eventIn(t, "race-4", "Normal", "CRDUpdated", "brought up to race-operator.v1.2.0's")
	}, func() string { return "" })

	// Written so with a looser schema, and a custom resource made under it that 1.2.0's
	// refuses: nothing is changed, the 1.2.0 installations say what stops them (Healthy
	// False, naming the custom resource), and once a person mends it the CRD is brought
	// up by itself.
	// (Written first as a newer version's, which every installation leaves as it is, so
	// the custom resource is made before any installation can bring the CRD up.)
	writeAs("9.0.0", 100)
	widget := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(50)}}}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "race.samples.operator-manager.domain", Version: "v1", Kind: "Widget"})
	widget.SetNamespace("race-3")
	widget.SetName("big")
	eventually(t, 30*time.Second, "a widget of size 50 made under the looser schema", func() bool {
		err := k8s.Create(ctx(), widget)
		last = fmt.Sprint(err)
		return err == nil
	}, func() string { return last })
	writeAs("1.0.0", 100)
	eventually(t, 2*time.Minute, "the 1.2.0 installations saying the CRD cannot be brought up", func() bool {
		h := condition(getSub(t, "race-4", "race").Status.Conditions, omv1.ConditionHealthy)
		last = fmt.Sprintf("Healthy %s %s: %s", h.Status, h.Reason, h.Message)
		return h.Status == metav1.ConditionFalse && h.Reason == "CRDOutdated" && strings.Contains(h.Message, "race-3/big")
	}, func() string { return last })
	if problem := check("1.0.0", 100, versions); problem != "" {
		t.Errorf("the CRD changed though a custom resource stops it: %s", problem)
	}
	harness.Patch(t, k8s, client.ObjectKeyFromObject(widget), widget.DeepCopy(), func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "size")
	})
	eventually(t, 2*time.Minute, "the CRD brought up to 1.2.0's once the custom resource is mended", func() bool {
		last = check("1.2.0", 30, versions)
		return last == ""
	}, func() string { return last })
	for _, ns := range []string{"race-3", "race-4"} {
		eventually(t, time.Minute, ns+" Healthy again", func() bool {
			h := condition(getSub(t, ns, "race").Status.Conditions, omv1.ConditionHealthy)
			last = fmt.Sprintf("Healthy %s %s: %s", h.Status, h.Reason, h.Message)
			return h.Status == metav1.ConditionTrue
		}, func() string { return last })
	}

	// Every version changed at once, one to a newer CRD: each record names its new version
	// (before, the newer CRD's apply, from a read made before another installation recorded
	// its upgrade, set that record back: the apply dropped the version it read).
	next := []string{"1.2.0", "1.0.0", "1.1.0", "1.3.0", "1.2.0", "1.1.0"}
	var wg sync.WaitGroup
	errs := make([]error, len(namespaces))
	for i, ns := range namespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"startingCSV":"race-operator.`+next[i]+`"}}`))
			errs[i] = k8s.Patch(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "race"}}, patch)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, ns := range namespaces {
		waitRunning(t, ns, "race", "race-operator.v"+next[i])
	}
	eventually(t, time.Minute, "the CRD at 1.3.0 with every provider at its new version", func() bool {
		last = check("1.3.0", 40, next)
		return last == ""
	}, func() string { return last })
}
