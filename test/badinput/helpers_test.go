package badinput

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

func ctx() context.Context { return context.Background() }

// group is the API group of a case's own CRDs: CRDs are cluster-scoped, so every case
// owns a group of its own.
func group(ns string) string { return ns + ".badinput.operator-manager.domain" }

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// namespaceOf derives a DNS-safe namespace name from a case name.
func namespaceOf(name string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(name), "-"), "-")
	s = "bi-" + s
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}

func newNamespace(t *testing.T, ns string) {
	t.Helper()
	if err := k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
}

// --- objects written as a person writes them -------------------------------------------

func fromYAML(t *testing.T, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("test YAML: %v\n%s", err, doc)
	}
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

// create creates an object from YAML and fails the test when the API server refuses it.
func create(t *testing.T, ns, doc string) {
	t.Helper()
	u := fromYAML(t, ns, doc)
	// Every case installs the package gadget in a namespace of its own, at the same time.
	harness.WatchOwnNamespace(u)
	if err := k8s.Create(ctx(), u); err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// refused creates an object from YAML and checks that the API server refuses it as
// Invalid with a message naming the field, and that nothing was stored.
func refused(t *testing.T, ns, doc string, want ...string) {
	t.Helper()
	u := fromYAML(t, ns, doc)
	err := k8s.Create(ctx(), u)
	if err == nil {
		t.Errorf("the API server accepted %s %s; want it refused naming %q", u.GetKind(), u.GetName(), want)
		return
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("creating %s %s: %v; want an Invalid (422) refusal", u.GetKind(), u.GetName(), err)
	}
	t.Logf("refused: %v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal of %s %s does not name %q: %v", u.GetKind(), u.GetName(), w, err)
		}
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, got); !apierrors.IsNotFound(err) {
		t.Errorf("%s %s exists after the refusal (%v)", u.GetKind(), u.GetName(), err)
	}
}

func subscriptionYAML(name, spec string) string {
	return fmt.Sprintf("apiVersion: operators.coreos.com.operator-manager.domain/v1\nkind: Subscription\nmetadata: {name: %s}\nspec: %s\n", name, spec)
}

// --- reading state -------------------------------------------------------------------

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ, Status: "Absent"}
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func getSub(ns, name string) (*omv1.Subscription, error) {
	sub := &omv1.Subscription{}
	return sub, k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, sub)
}

func getBlueprint(ns, name string) (*omv1.Blueprint, error) {
	bp := &omv1.Blueprint{}
	return bp, k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp)
}

func getCSV(ns, name string) (*omv1alpha1.ClusterServiceVersion, error) {
	csv := &omv1alpha1.ClusterServiceVersion{}
	return csv, k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, csv)
}

// describe dumps the status of everything of the operator-manager kinds in a namespace,
// for failure messages. Kinds are read unstructured, so an object the typed client cannot
// decode is shown too.
func describe(ns string) func() string {
	return func() string {
		var b strings.Builder
		for _, kind := range []string{"CatalogSource", "Subscription", "Blueprint"} {
			describeKind(&b, ns, omv1.GroupVersion.WithKind(kind+"List"))
		}
		describeKind(&b, ns, omv1alpha1.GroupVersion.WithKind("ClusterServiceVersionList"))
		fmt.Fprintf(&b, "installed objects: %v\n", ownedObjects(ns))
		return b.String()
	}
}

func describeKind(b *strings.Builder, ns string, gvk schema.GroupVersionKind) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk)
	if err := k8s.List(ctx(), list, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(b, "%s: %v\n", gvk.Kind, err)
		return
	}
	for _, item := range list.Items {
		spec, _, _ := unstructured.NestedFieldNoCopy(item.Object, "spec")
		status, _, _ := unstructured.NestedFieldNoCopy(item.Object, "status")
		if gvk.Kind == "ClusterServiceVersionList" {
			spec = "(omitted)"
		}
		out, _ := yaml.Marshal(map[string]any{"spec": spec, "status": status})
		fmt.Fprintf(b, "--- %s %s\n%s", item.GetKind(), item.GetName(), out)
	}
}

// waitSubCondition waits until a Subscription's condition has the status and reason and
// its message holds every string of msg, and returns the Subscription.
func waitSubCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration, msg ...string) *omv1.Subscription {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("Subscription %s/%s %s=%s %s naming %q", ns, name, typ, status, reason, msg), func() bool {
		sub, err := getSub(ns, name)
		if err != nil {
			return false
		}
		c := condition(sub.Status.Conditions, typ)
		return c.Status == status && c.Reason == reason && containsAll(c.Message, msg)
	}, describe(ns))
	sub, err := getSub(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	c := condition(sub.Status.Conditions, typ)
	t.Logf("Subscription %s %s=%s %s: %s", name, typ, c.Status, c.Reason, c.Message)
	return sub
}

// waitUnresolved waits for Resolved=False with the reason and message, then checks that
// nothing was started: no Blueprint, nothing installed.
func waitUnresolved(t *testing.T, ns, name, reason string, msg ...string) {
	t.Helper()
	sub := waitSubCondition(t, ns, name, omv1.ConditionResolved, metav1.ConditionFalse, reason, 90*time.Second, msg...)
	if c := condition(sub.Status.Conditions, omv1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != reason {
		t.Errorf("Subscription Ready = %s %s %q; want False %s", c.Status, c.Reason, c.Message, reason)
	}
	if _, err := getBlueprint(ns, name); !apierrors.IsNotFound(err) {
		t.Errorf("a Subscription that does not resolve has a Blueprint (%v)", err)
	}
	checkNothingInstalled(t, ns)
}

// waitRunning waits until the Blueprint runs csv, Succeeded, with no other CSV left.
func waitRunning(t *testing.T, ns, name, csv string) {
	t.Helper()
	eventually(t, 2*time.Minute, ns+"/"+name+" running "+csv, func() bool {
		bp, err := getBlueprint(ns, name)
		if err != nil || bp.Status.CurrentCSV != csv || bp.Status.Phase != omv1.BlueprintSucceeded {
			return false
		}
		csvs := &omv1alpha1.ClusterServiceVersionList{}
		return k8s.List(ctx(), csvs, client.InNamespace(ns), client.MatchingLabels{omv1.LabelSubscription: name}) == nil && len(csvs.Items) == 1
	}, describe(ns))
}

// lastAttempt is the newest revision that is not an automatic rollback.
func lastAttempt(bp *omv1.Blueprint) *omv1.Revision {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if bp.Status.History[i].Trigger != omv1.TriggerRollback {
			return &bp.Status.History[i]
		}
	}
	return nil
}

// ownedObjects lists the objects labelled as installed for an installation in ns, in
// every namespace and cluster-wide (render.OwnerLabels).
func ownedObjects(ns string) []string {
	sel := client.MatchingLabels{render.LabelOwnerNamespace: render.LabelValue(ns)}
	var out []string
	for kind, list := range map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "ServiceAccount": &corev1.ServiceAccountList{}, "Service": &corev1.ServiceList{},
		"ConfigMap": &corev1.ConfigMapList{}, "Secret": &corev1.SecretList{},
		"Role": &rbacv1.RoleList{}, "RoleBinding": &rbacv1.RoleBindingList{},
		"ClusterRole": &rbacv1.ClusterRoleList{}, "ClusterRoleBinding": &rbacv1.ClusterRoleBindingList{},
	} {
		if err := k8s.List(ctx(), list, sel); err != nil {
			out = append(out, fmt.Sprintf("listing %s: %v", kind, err))
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			m, _ := meta.Accessor(o)
			out = append(out, kind+" "+strings.TrimPrefix(m.GetNamespace()+"/"+m.GetName(), "/"))
			return nil
		})
	}
	return out
}

// checkNothingInstalled checks that nothing of an installation in ns is left (within a
// short while: what the API server garbage-collects goes a moment after its owner), and
// that no CSV of ns is Succeeded.
func checkNothingInstalled(t *testing.T, ns string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		left := ownedObjects(ns)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("left installed: %v", left)
			break
		}
		time.Sleep(time.Second)
	}
	checkNoCSVSucceeded(t, ns, "")
}

// checkNoCSVSucceeded checks that no CSV of ns (or the one named) is Succeeded.
func checkNoCSVSucceeded(t *testing.T, ns, name string) {
	t.Helper()
	csvs := &omv1alpha1.ClusterServiceVersionList{}
	if err := k8s.List(ctx(), csvs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, c := range csvs.Items {
		if (name == "" || c.Name == name) && c.Status.Phase == omv1alpha1.CSVSucceeded {
			t.Errorf("CSV %s is Succeeded", c.Name)
		}
	}
}

// checkStillRuns checks that the previous good version still runs: its CSV Succeeded and
// its Deployment present.
func checkStillRuns(t *testing.T, ns, csvName, deployment string) {
	t.Helper()
	eventually(t, time.Minute, csvName+" still Succeeded", func() bool {
		csv, err := getCSV(ns, csvName)
		return err == nil && csv.Status.Phase == omv1alpha1.CSVSucceeded
	}, describe(ns))
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: deployment}, &appsv1.Deployment{}); err != nil {
		t.Errorf("the running version's Deployment %s: %v", deployment, err)
	}
}

// --- catalogs -------------------------------------------------------------------------

// catalogDir is a fresh directory for a case's catalog, where the manager may read.
func catalogDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(cluster.Work, "catalogs", name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeCatalog writes files into a fresh catalog directory and creates the Directory
// CatalogSource "test" in ns reading it.
func writeCatalog(t *testing.T, ns string, files map[string]string) string {
	t.Helper()
	dir := catalogDir(t, ns)
	writeFiles(t, dir, files)
	directorySource(t, ns, "test", dir)
	return dir
}

func directorySource(t *testing.T, ns, name, dir string) {
	t.Helper()
	create(t, ns, fmt.Sprintf(`apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: %s}
spec: {sourceType: Directory, directory: %q}
`, name, dir))
}

func httpSource(t *testing.T, ns, name, url string) {
	t.Helper()
	create(t, ns, fmt.Sprintf(`apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: %s}
spec: {sourceType: HTTP, url: %q, pollInterval: 5s}
`, name, url))
}

func getCatalogSource(ns, name string) (*omv1.CatalogSource, error) {
	cs := &omv1.CatalogSource{}
	return cs, k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, cs)
}

// waitCatalogReady waits until a CatalogSource loaded (Ready=True).
func waitCatalogReady(t *testing.T, ns, name string) *omv1.CatalogSource {
	t.Helper()
	eventually(t, time.Minute, "CatalogSource "+ns+"/"+name+" Ready", func() bool {
		cs, err := getCatalogSource(ns, name)
		return err == nil && condition(cs.Status.Conditions, omv1.ConditionReady).Status == metav1.ConditionTrue
	}, describe(ns))
	cs, _ := getCatalogSource(ns, name)
	return cs
}

// waitLoadFailed waits until a CatalogSource reports Ready=False LoadFailed naming msg.
func waitLoadFailed(t *testing.T, ns, name string, msg ...string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("CatalogSource %s/%s LoadFailed naming %q", ns, name, msg), func() bool {
		cs, err := getCatalogSource(ns, name)
		if err != nil {
			return false
		}
		c := condition(cs.Status.Conditions, omv1.ConditionReady)
		return c.Status == metav1.ConditionFalse && c.Reason == omv1.ReasonLoadFailed && containsAll(c.Message, msg)
	}, describe(ns))
	cs, _ := getCatalogSource(ns, name)
	t.Logf("CatalogSource %s Ready=False LoadFailed: %s", name, condition(cs.Status.Conditions, omv1.ConditionReady).Message)
}

// waitRejected waits until the catalog loaded with a rejection of path whose reason holds
// every string of reason.
func waitRejected(t *testing.T, ns, path string, reason ...string) {
	t.Helper()
	cs := waitCatalogReady(t, ns, "test")
	for _, r := range cs.Status.Rejected {
		if r.Path == path && containsAll(r.Reason, reason) {
			t.Logf("CatalogSource rejected %s: %s", r.Path, r.Reason)
			if int(cs.Status.RejectedCount) < 1 {
				t.Errorf("status.rejectedCount = %d with a rejection listed", cs.Status.RejectedCount)
			}
			return
		}
	}
	t.Errorf("CatalogSource %s/test has no rejection of %s naming %q: %+v", ns, path, reason, cs.Status.Rejected)
}

// gadget is one version of the test-only gadget operator.
type gadget struct {
	pkg, version, replaces string
	// csvName defaults to <pkg>.v<version>.
	csvName string
	// group, when set, makes the CSV own the CRD gadgets.<group> (crdVersion, default v1).
	group, crdVersion string
	// crdVersions, when set, are the CRD's versions instead of crdVersion, all served, the
	// last one the storage version (and the one the CSV owns).
	crdVersions []string
	minKube     string
	// edit changes the CSV text before it is written (to break it).
	edit func(string) string
}

func (g gadget) name() string {
	if g.csvName != "" {
		return g.csvName
	}
	return g.pkg + ".v" + g.version
}

func (g gadget) csv() string {
	var extra strings.Builder
	if g.replaces != "" {
		fmt.Fprintf(&extra, "  replaces: %s\n", g.replaces)
	}
	if g.minKube != "" {
		fmt.Fprintf(&extra, "  minKubeVersion: %s\n", g.minKube)
	}
	if g.group != "" {
		fmt.Fprintf(&extra, "  customresourcedefinitions:\n    owned: [{name: gadgets.%s, version: %s, kind: Gadget}]\n", g.group, g.crdv())
	}
	s := fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: %[1]s}
spec:
  displayName: Gadget Operator
  version: %[2]s
%[3]s  installModes: [{type: OwnNamespace, supported: true}, {type: AllNamespaces, supported: true}]
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
              containers: [{name: manager, image: "registry.example/gadget-operator:%[2]s"}]
`, g.name(), g.version, extra.String())
	if g.edit != nil {
		s = g.edit(s)
	}
	return s
}

func (g gadget) crdv() string {
	if len(g.crdVersions) > 0 {
		return g.crdVersions[len(g.crdVersions)-1]
	}
	if g.crdVersion == "" {
		return "v1"
	}
	return g.crdVersion
}

// gadgetCRD is the CRD gadgets.<group> with the versions given, all served, the last one
// the storage version, each accepting any object.
func gadgetCRD(group string, versions ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.%[1]s}
spec:
  group: %[1]s
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
`, group)
	for i, v := range versions {
		fmt.Fprintf(&b, `  - name: %s
    served: true
    storage: %t
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, v, i == len(versions)-1)
	}
	return b.String()
}

// crd is the gadget's CRD: its crdVersions, else its one crdVersion.
func (g gadget) crd() string {
	if len(g.crdVersions) > 0 {
		return gadgetCRD(g.group, g.crdVersions...)
	}
	return gadgetCRD(g.group, g.crdv())
}

// flat adds the gadget in the original flat layout (<pkg>/<version>/), with its CRD when it
// owns one, and extra files of the bundle.
func (g gadget) flat(files map[string]string, extra map[string]string) {
	dir := g.pkg + "/" + g.version + "/"
	files[dir+"csv.yaml"] = g.csv()
	if g.group != "" {
		files[dir+"crd.yaml"] = g.crd()
	}
	for name, data := range extra {
		files[dir+name] = data
	}
}

// bundle adds the gadget in the bundle layout (manifests/, metadata/), with the
// dependencies.yaml entries given (YAML list items), if any.
func (g gadget) bundle(files map[string]string, deps string) {
	dir := g.pkg + "/" + g.version + "/"
	files[dir+"manifests/csv.yaml"] = g.csv()
	if g.group != "" {
		files[dir+"manifests/crd.yaml"] = g.crd()
	}
	files[dir+"metadata/annotations.yaml"] = fmt.Sprintf(`annotations:
  operators.operatorframework.io.bundle.package.v1: %s
  operators.operatorframework.io.bundle.channels.v1: stable
  operators.operatorframework.io.bundle.channel.default.v1: stable
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
`, g.pkg)
	if deps != "" {
		files[dir+"metadata/dependencies.yaml"] = "dependencies:\n" + deps
	}
}

// goodGadget is the catalog content most cases start from: gadget 1.0.0, which installs.
func goodGadget(ns string) map[string]string {
	files := map[string]string{}
	gadget{pkg: "gadget", version: "1.0.0", group: group(ns)}.flat(files, nil)
	return files
}

// --- HTTP catalogs --------------------------------------------------------------------

func freeAddr(t *testing.T) string {
	t.Helper()
	ports, err := testenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0])
}

func loadCatalog(t *testing.T, dir string) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Rejections) > 0 {
		t.Fatalf("test catalog %s: %v", dir, cat.Rejections)
	}
	return cat
}

// lyingServer serves the index of the catalog in dir, but for each bundle the content of
// a tampered copy of it (its CSV gains a comment): the index lies about every bundle's
// digest. It returns the server's URL and the catalog it claims to serve.
func lyingServer(t *testing.T, dir string) (string, *catalog.Catalog) {
	t.Helper()
	honest := loadCatalog(t, dir)
	tampered := filepath.Join(t.TempDir(), "tampered")
	if err := os.CopyFS(tampered, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	for _, b := range honest.Bundles() {
		for _, f := range b.Files {
			if strings.HasSuffix(f, "csv.yaml") {
				p := filepath.Join(tampered, b.RelPath, f)
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, append(data, []byte("# tampered after the index was made\n")...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	other := loadCatalog(t, tampered)
	index, swapped := remote.Handler(honest), remote.Handler(other)
	mux := http.NewServeMux()
	mux.Handle("GET /index.json", index)
	mux.HandleFunc("GET /bundles/{digest}", func(w http.ResponseWriter, r *http.Request) {
		b := honest.BundleByDigest(r.PathValue("digest"))
		if b == nil {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.Header.Del("If-None-Match")
		r2.URL.Path = "/bundles/" + other.BundleByCSV(b.CSVName).Digest
		swapped.ServeHTTP(w, r2)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, honest
}

// indexServer serves body as /index.json with status 200.
func indexServer(t *testing.T, body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/index.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// indexWithDigest is the index of the catalog in dir with its catalog digest replaced.
func indexWithDigest(t *testing.T, dir, digest string) []byte {
	t.Helper()
	cat := loadCatalog(t, dir)
	data, err := json.Marshal(remote.Index{Digest: digest, Packages: cat.Packages(), Bundles: cat.Bundles()})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// serveCatalog runs `operator-manager catalog serve dir` (the built binary, reload off)
// until the test ends, and returns its URL.
func serveCatalog(t *testing.T, dir string) string {
	t.Helper()
	addr := freeAddr(t)
	logPath := filepath.Join(cluster.Work, "serve-"+filepath.Base(dir)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cluster.ManagerBin, "catalog", "serve", dir, "--addr", addr, "--reload", "0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logFile.Close()
	})
	eventually(t, 30*time.Second, "catalog server up", func() bool {
		resp, err := http.Get("http://" + addr + "/index.json")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, func() string { data, _ := os.ReadFile(logPath); return string(data) })
	return "http://" + addr
}

// --- objects the typed client cannot read ----------------------------------------------

// forceDelete deletes an object through the unstructured client (which reads anything the
// API server stored), clearing its finalizers first, and waits until it is gone.
func forceDelete(t *testing.T, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	key := types.NamespacedName{Namespace: ns, Name: name}
	if err := k8s.Get(ctx(), key, u); err != nil {
		if !apierrors.IsNotFound(err) {
			t.Errorf("reading %s %s: %v", gvk.Kind, key, err)
		}
		return
	}
	if len(u.GetFinalizers()) > 0 {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if err := k8s.Patch(ctx(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Errorf("clearing the finalizers of %s %s: %v", gvk.Kind, key, err)
		}
	}
	if err := k8s.Delete(ctx(), u); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting %s %s: %v", gvk.Kind, key, err)
	}
	eventually(t, 30*time.Second, gvk.Kind+" "+key.String()+" gone", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), key, u.DeepCopy()))
	}, func() string { return "" })
}

// logSize is the size of the manager's log now: where later log lines start.
func logSize() int {
	fi, err := os.Stat(mgr.Log)
	if err != nil {
		return 0
	}
	return int(fi.Size())
}

// watchErrors returns the distinct errors the manager logged, from offset on, when its
// cache failed to list or watch objects of kind.
func watchErrors(kind string, offset int) []string {
	data, _ := os.ReadFile(mgr.Log)
	if offset <= len(data) {
		data = data[offset:]
	}
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		var e struct{ Msg, Type, Error string }
		if json.Unmarshal([]byte(line), &e) != nil || e.Msg != "Failed to watch" || !strings.HasSuffix(e.Type, "."+kind) || seen[e.Error] {
			continue
		}
		seen[e.Error] = true
		out = append(out, e.Error)
	}
	return out
}

// hasEvent reports whether an event of reason was recorded in ns.
func hasEvent(t *testing.T, ns, reason string) bool {
	t.Helper()
	events := &eventsv1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// waitEvent waits for an event of type and reason about the Subscription name whose note
// holds each of msg.
func waitEvent(t *testing.T, ns, name, typ, reason string, msg ...string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("a %s event %s on Subscription %s/%s naming %q", typ, reason, ns, name, msg), func() bool {
		events := &eventsv1.EventList{}
		if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Type == typ && e.Reason == reason && e.Regarding.Kind == "Subscription" && e.Regarding.Name == name && containsAll(e.Note, msg) {
				return true
			}
		}
		return false
	}, describe(ns))
}

// policyWebhookDown registers a validating webhook for the resource of the API group in
// ns alone, failurePolicy Fail, at an address where nothing listens: a cluster policy
// engine that is down. It is removed when the test ends; its name is returned.
func policyWebhookDown(t *testing.T, ns, group, resource string) string {
	t.Helper()
	return policyWebhookDownOn(t, ns, group, resource, admissionregistrationv1.Create, admissionregistrationv1.Update)
}

// policyWebhookDownOn is policyWebhookDown for the operations given (Delete, say).
func policyWebhookDownOn(t *testing.T, ns, group, resource string, ops ...admissionregistrationv1.OperationType) string {
	t.Helper()
	name := "down." + ns + ".badinput.operator-manager.domain"
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/validate"
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: ops,
				Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"},
					Resources: []string{resource}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := k8s.Create(ctx(), hook); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(k8s.Delete(ctx(), hook)) })
	return name
}

// removeWebhook deletes the webhook configuration policyWebhookDown made: the policy
// engine back, as far as the API server can tell.
func removeWebhook(t *testing.T, name string) {
	t.Helper()
	if err := k8s.Delete(ctx(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// installUnderSecretWebhookDown subscribes to gadget 1.0.0 (health timeout timeout) under a
// policy webhook on the namespace's Secrets that is down, and waits for the Subscription
// to say the Blueprint's error (ReconcileError, naming the webhook). It returns the
// webhook's name.
func installUnderSecretWebhookDown(t *testing.T, ns, timeout string) string {
	t.Helper()
	writeCatalog(t, ns, goodGadget(ns))
	hook := policyWebhookDown(t, ns, "", "secrets")
	create(t, ns, subscriptionYAML("gadget", `{startingCSV: gadget.1.0.0, catalog: test, health: {timeout: `+timeout+`}}`))
	waitSubCondition(t, ns, "gadget", omv1.ConditionReady, metav1.ConditionFalse, omv1.ReasonReconcileError, 60*time.Second,
		"Secret", "failed calling webhook", hook)
	return hook
}
