package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/configmapcatalog"
	"github.com/operator-manager/operator-manager/internal/migration"
	"github.com/operator-manager/operator-manager/test/registryserver"
)

// createStrict creates an object from YAML with strict field validation, as kubectl apply
// sends it: a field the API does not know is an error, not silently dropped.
func createStrict(t *testing.T, namespace, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(namespace)
	if err := k8s.Create(ctx(), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("creating %s %s as written: %v", u.GetKind(), u.GetName(), err)
	}
	if u.GetKind() == "Subscription" {
		uninstallAtEnd(t, namespace, u.GetName())
	}
}

// TestOLMSubscription: an OLM Subscription, with only its apiVersion changed, installs and
// means what it means in OLM. Its CatalogSource is named by source and sourceNamespace in
// the global catalog namespace; installPlanApproval: Manual makes the first install wait
// in an InstallPlan, approved by setting its spec.approved; startingCSV is where the first
// install starts, after which the channel is followed, each edge in a new InstallPlan
// (approved here with `operator-manager approve`, which the plan then says); its config's
// OLM fields reach the Deployment. A
// sourceNamespace that is neither the Subscription's own nor the global one is refused,
// naming the rule.
func TestOLMSubscription(t *testing.T) {
	ns := "olm-yaml"
	newNamespace(t, ns)
	// A catalog every namespace may name: in the global catalog namespace (the manager's).
	createStrict(t, managerNamespace, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: olm-yaml-samples}
spec: {sourceType: Directory, directory: `+sampleDir+`, displayName: Samples, publisher: operator-manager}
`)
	t.Cleanup(func() {
		_ = k8s.Delete(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: "olm-yaml-samples"}})
	})
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec:
  name: cache-operator
  source: olm-yaml-samples
  sourceNamespace: `+managerNamespace+`
  startingCSV: cache-operator.v1.0.0
  installPlanApproval: Manual
  config:
    selector: {matchLabels: {app.kubernetes.io/name: cache-operator}}
    envFrom: [{configMapRef: {name: proxy-env, optional: true}}]
    annotations: {cost-center: "42"}
`)
	// installPlanApproval: Manual is OLM's: the first install waits for approval too, in
	// an InstallPlan the Subscription names. Nothing is installed meanwhile.
	first := waitInstallPlan(t, ns, "cache", omv1alpha1.InstallPlanRequiresApproval)
	if got := first.Spec.ClusterServiceVersionNames; !slices.Equal(got, []string{"cache-operator.v1.0.0"}) || first.Spec.Approved || first.Spec.Approval != "Manual" {
		t.Errorf("the first InstallPlan = %+v, want Manual, not approved, installing startingCSV", first.Spec)
	}
	if sub := getSub(t, ns, "cache"); sub.Status.InstalledCSV != "" || sub.Status.State != omv1.SubscriptionStateUpgradePending {
		t.Errorf("before approval: installedCSV %q, state %q; want nothing installed, UpgradePending", sub.Status.InstalledCSV, sub.Status.State)
	}
	// OLM's conditions say it as OLM's would, and a health check written for OLM reads it.
	eventually(t, 30*time.Second, "InstallPlanPending RequiresApproval", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, "InstallPlanPending")
		return c.Status == metav1.ConditionTrue && c.Reason == "RequiresApproval"
	}, describeSub(t, ns, "cache"))
	if h := argoCDHealth(getSub(t, ns, "cache")); h != "Progressing" {
		t.Errorf("ArgoCD's Subscription health check says %s waiting for approval, want Progressing: %v", h, getSub(t, ns, "cache").Status.Conditions)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &appsv1.Deployment{}); err == nil {
		t.Error("the operator's Deployment exists before its InstallPlan was approved")
	}
	// Approved as in OLM, by setting spec.approved (kubectl patch installplan).
	approvePlan(t, first)
	// It installs startingCSV first. And startingCSV was where it started, not a pin: the
	// channel's next version is planned at once, in a new InstallPlan waiting for approval.
	eventually(t, 3*time.Minute, "v1.0.0 running, the next version of the channel waiting for approval", func() bool {
		bp := &omv1.Blueprint{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp) == nil && bp.Status.CurrentCSV == "cache-operator.v1.0.0" && bp.Status.Phase == omv1.BlueprintWaitingForApproval &&
			bp.Spec.ClusterServiceVersionName == "cache-operator.v1.1.0"
	}, describeSub(t, ns, "cache"))
	if h := getBlueprint(t, ns, "cache").Status.History; len(h) != 1 || h[0].CSVName != "cache-operator.v1.0.0" || h[0].Outcome != omv1.OutcomeSucceeded || h[0].InstallPlan != first.Name {
		t.Errorf("history = %+v, want the startingCSV's install, Succeeded, approved in %s", h, first.Name)
	}
	if ip := getInstallPlan(t, ns, first.Name); ip.Status.Phase != omv1alpha1.InstallPlanComplete || ip.Status.Revision != 1 {
		t.Errorf("the first InstallPlan's status = %+v, want Complete by revision 1", ip.Status)
	}
	if wide := kubectl(t, "get", "subscription", "cache", "-n", ns, "-o", "wide"); !strings.Contains(wide, "SOURCE") || !strings.Contains(wide, "olm-yaml-samples") {
		t.Errorf("kubectl get subscription -o wide does not show OLM's spec.source:\n%s", wide)
	}
	// Waited on as OLM users' scripts wait on an InstallPlan.
	kubectl(t, "wait", "installplan/"+first.Name, "-n", ns, "--for=condition=Installed", "--timeout=30s")
	second := waitInstallPlan(t, ns, "cache", omv1alpha1.InstallPlanRequiresApproval)
	if second.Name == first.Name || !slices.Equal(second.Spec.ClusterServiceVersionNames, []string{"cache-operator.v1.1.0"}) {
		t.Errorf("the upgrade's InstallPlan = %s %+v, want a new plan installing v1.1.0", second.Name, second.Spec)
	}
	sub := getSub(t, ns, "cache")
	if sub.Status.InstalledCSV != "cache-operator.v1.0.0" {
		t.Errorf("installedCSV %q while the upgrade waits for approval", sub.Status.InstalledCSV)
	}
	// OLM's currentCSV: the edge waiting for approval, not the channel's head (v1.2.0).
	if sub.Status.CurrentCSV != "cache-operator.v1.1.0" || sub.Status.State != omv1.SubscriptionStateUpgradePending {
		t.Errorf("currentCSV %q, state %q while v1.1.0 waits; want cache-operator.v1.1.0, UpgradePending", sub.Status.CurrentCSV, sub.Status.State)
	}
	if c := condition(sub.Status.Conditions, omv1.ConditionResolved); !strings.Contains(c.Message, "in catalog "+managerNamespace+"/olm-yaml-samples") {
		t.Errorf("Resolved = %+v, want the global catalog named", c)
	}
	if c := condition(sub.Status.Conditions, omv1.ConditionUpgradePending); !strings.Contains(c.Message, "InstallPlan "+second.Name) {
		t.Errorf("UpgradePending = %+v, want the InstallPlan to approve named", c)
	}
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Annotations["cost-center"] != "42" || len(d.Spec.Template.Spec.Containers[0].EnvFrom) != 1 {
		t.Errorf("config not applied: annotations %v envFrom %+v", d.Spec.Template.Annotations, d.Spec.Template.Spec.Containers[0].EnvFrom)
	}
	// Approved the operator-manager way, the InstallPlan says so too.
	if out, err := cli("approve", "cache", "-n", ns, "--wait"); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	// Approved, it moves one edge, and the next one waits again.
	eventually(t, 3*time.Minute, "v1.1.0 running, its InstallPlan approved and Complete", func() bool {
		ip := getInstallPlan(t, ns, second.Name)
		return getBlueprint(t, ns, "cache").Status.CurrentCSV == "cache-operator.v1.1.0" && ip.Spec.Approved && ip.Status.Phase == omv1alpha1.InstallPlanComplete
	}, describeSub(t, ns, "cache"))

	// Another tenant's namespace is not a catalog namespace.
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: elsewhere}
spec: {name: backup-operator, source: samples, sourceNamespace: channel}
`)
	eventually(t, time.Minute, "a catalog of another namespace refused", func() bool {
		c := condition(getSub(t, ns, "elsewhere").Status.Conditions, omv1.ConditionResolved)
		return c.Reason == omv1.ReasonCatalogNotAllowed && strings.Contains(c.Message, `spec.sourceNamespace "channel"`)
	}, describeSub(t, ns, "elsewhere"))
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "elsewhere"}, &omv1.Blueprint{}); err == nil {
		t.Error("a Blueprint was made for a Subscription whose catalog is refused")
	}
	if c := condition(getSub(t, ns, "elsewhere").Status.Conditions, "ResolutionFailed"); c.Status != metav1.ConditionTrue || c.Reason != "ErrorPreventedResolution" ||
		!strings.Contains(c.Message, `spec.sourceNamespace "channel"`) {
		t.Errorf("ResolutionFailed = %+v, want True ErrorPreventedResolution with the refusal", c)
	}
	if h := argoCDHealth(getSub(t, ns, "elsewhere")); h != "Degraded" {
		t.Errorf("ArgoCD's Subscription health check says %s of a refused Subscription, want Degraded", h)
	}
}

// argoCDHealth is ArgoCD's health check of an OLM Subscription
// (resource_customizations/operators.coreos.com/Subscription/health.lua), in Go: what a
// GitOps user who points that check at this API's group sees.
func argoCDHealth(sub *omv1.Subscription) string {
	if len(sub.Status.Conditions) == 0 {
		return "Progressing"
	}
	degraded, pending := 0, 0
	for _, c := range sub.Status.Conditions {
		switch {
		case c.Type == "InstallPlanPending" && c.Status == metav1.ConditionTrue:
			pending++
		case c.Type == "InstallPlanMissing" && c.Reason != "ReferencedInstallPlanNotFound":
			degraded++
		case (c.Type == "CatalogSourcesUnhealthy" || c.Type == "InstallPlanFailed" || c.Type == "ResolutionFailed") && c.Status == metav1.ConditionTrue:
			degraded++
		}
	}
	switch {
	case degraded > 0:
		return "Degraded"
	case pending > 0:
		return "Progressing"
	}
	return "Healthy"
}

// TestOLMCatalogSourceFromImage: OLM's CatalogSource of a catalog image (sourceType grpc),
// with only its apiVersion changed, is read as an Image source: it loads, an OLM
// Subscription installs its channel head from it, and its updateStrategy's registryPoll
// interval is the poll interval (a new image under the same tag is installed within it,
// where the default ten minutes would not be).
func TestOLMCatalogSourceFromImage(t *testing.T) {
	reg := newTestRegistry(t)
	tag := reg.host + "/olm/catalog:latest"
	pub1 := publish(t, catalogTree(t, "olm-v1", "cache-operator/1.0.0", "cache-operator/1.1.0"), tag)
	ns := "olm-image"
	newNamespace(t, ns)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: hub}
spec:
  sourceType: grpc
  image: `+tag+`
  displayName: Test Operators
  publisher: operator-manager tests
  grpcPodConfig: {securityContextConfig: restricted}
  updateStrategy: {registryPoll: {interval: 2s}}
`)
	// Waited on as OLM users' scripts wait on a CatalogSource.
	kubectl(t, "wait", "catalogsource/hub", "-n", ns, "--for=jsonpath={.status.connectionState.lastObservedState}=READY", "--timeout=60s")
	eventually(t, time.Minute, "the grpc CatalogSource loads from its image", func() bool {
		cs := getCatalogSource(t, ns, "hub")
		return cs.Status.ResolvedImage == pub1.Catalog && cs.Status.Bundles == 2
	}, func() string { return getCatalogSource(t, ns, "hub").Status.Conditions[0].Message })
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {name: cache-operator, channel: stable, source: hub, sourceNamespace: `+ns+`, installPlanApproval: Automatic}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	publish(t, catalogTree(t, "olm-v2", "cache-operator/1.0.0", "cache-operator/1.1.0", "cache-operator/1.2.0"), tag)
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	// At the channel's head: OLM's state, and Healthy to a health check written for OLM.
	eventually(t, 30*time.Second, "AtLatestKnown and Healthy to ArgoCD's check", func() bool {
		sub := getSub(t, ns, "cache")
		return sub.Status.State == omv1.SubscriptionStateAtLatest && argoCDHealth(sub) == "Healthy" &&
			condition(sub.Status.Conditions, "CatalogSourcesUnhealthy").Status == metav1.ConditionFalse
	}, describeSub(t, ns, "cache"))
	kubectl(t, "delete", "subscription", "cache", "-n", ns, "--wait=true")
}

// deploymentTargets is what a Deployment's operator is told to watch (olm.targetNamespaces).
func deploymentTargets(t *testing.T, ns, name string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return "(" + err.Error() + ")"
	}
	return d.Spec.Template.Annotations["olm.targetNamespaces"]
}

// TestOLMOperatorGroup: OLM's OperatorGroup, with only its apiVersion changed, gives the
// Subscriptions of its namespace the namespaces their operators watch; a change of it
// re-renders the installed operator; a second OperatorGroup in the namespace holds the
// Subscription (TooManyOperatorGroups, naming both) and changes nothing installed.
func TestOLMOperatorGroup(t *testing.T) {
	ns, apps := "olm-og", "olm-og-apps"
	newNamespace(t, ns)
	newNamespace(t, apps)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: OperatorGroup
metadata: {name: og}
spec: {targetNamespaces: [`+apps+`], upgradeStrategy: {name: Default}}
`)
	// Without the OperatorGroup, cache-operator (AllNamespaces) would watch all namespaces.
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: 1.2.0, catalog: samples}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	if got := deploymentTargets(t, ns, "cache-operator"); got != apps {
		t.Errorf("the operator watches %q, want the OperatorGroup's %q", got, apps)
	}
	if s := getSub(t, ns, "cache"); len(s.Spec.TargetNamespaces) != 0 {
		t.Errorf("the Subscription was written: spec.targetNamespaces %v", s.Spec.TargetNamespaces)
	}

	// The OperatorGroup changes: the installed operator follows.
	patchOperatorGroup(t, ns, "og", func(og *omv1.OperatorGroup) { og.Spec.TargetNamespaces = []string{ns} })
	eventually(t, time.Minute, "the operator re-rendered for the OperatorGroup's new targets", func() bool {
		return deploymentTargets(t, ns, "cache-operator") == ns
	}, func() string { return "watches " + deploymentTargets(t, ns, "cache-operator") })

	// A second OperatorGroup: ambiguous, so the Subscription waits and nothing changes.
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: OperatorGroup
metadata: {name: another}
spec: {targetNamespaces: [`+apps+`]}
`)
	eventually(t, time.Minute, "TooManyOperatorGroups", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c.Reason == omv1.ReasonTooManyOperatorGroups && strings.Contains(c.Message, "another, og")
	}, describeSub(t, ns, "cache"))
	time.Sleep(3 * time.Second) // a re-render would have happened by now
	if got := deploymentTargets(t, ns, "cache-operator"); got != ns {
		t.Errorf("with two OperatorGroups the operator was changed to watch %q", got)
	}
	if err := k8s.Delete(ctx(), &omv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "another"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "resolved again with one OperatorGroup", func() bool {
		return condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved).Status == metav1.ConditionTrue
	}, describeSub(t, ns, "cache"))

	// An export carries what the OperatorGroup gives, so the archive alone recreates it.
	file := filepath.Join(t.TempDir(), "olm-og.tgz")
	if out, err := cli("export", "-n", ns, "-f", file); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := migration.Read(f, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Installations) != 1 || !slices.Equal(a.Installations[0].Spec.TargetNamespaces, []string{ns}) {
		t.Errorf("exported installations = %+v, want cache with the OperatorGroup's targets [%s]", a.Installations, ns)
	}
}

// TestOLMSubscriptionDependency: the dependency of an OLM Subscription whose catalog is in
// the global catalog namespace is installed from that same catalog: its Subscription names
// it by namespace too.
func TestOLMSubscriptionDependency(t *testing.T) {
	ns := "olm-yaml-deps"
	newNamespace(t, ns)
	createStrict(t, managerNamespace, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: olm-deps-samples}
spec: {sourceType: Directory, directory: `+sampleDir+`}
`)
	t.Cleanup(func() {
		_ = k8s.Delete(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: "olm-deps-samples"}})
	})
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {name: backup-operator, source: olm-deps-samples, sourceNamespace: `+managerNamespace+`, targetNamespaces: [`+ns+`], installPlanApproval: Manual}
`)
	uninstallAtEnd(t, ns, "cache-operator")
	// One InstallPlan holds the operator and the dependency it brings; neither is
	// installed, nor the dependency's Subscription made, before it is approved.
	ip := waitInstallPlan(t, ns, "backup", omv1alpha1.InstallPlanRequiresApproval)
	if got := ip.Spec.ClusterServiceVersionNames; !slices.Equal(got, []string{"backup-operator.v0.2.0", "cache-operator.v1.2.0"}) {
		t.Errorf("InstallPlan CSVs = %v, want the operator and its dependency", got)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &omv1.Subscription{}); err == nil {
		t.Error("the dependency's Subscription was made before the InstallPlan was approved")
	}
	approvePlan(t, ip)
	waitRunning(t, ns, "backup", "backup-operator.v0.2.0")
	waitRunning(t, ns, "cache-operator", "cache-operator.v1.2.0")
	dep := getSub(t, ns, "cache-operator")
	if dep.Spec.CatalogName() != "olm-deps-samples" || dep.Spec.CatalogNamespace(ns) != managerNamespace {
		t.Errorf("the dependency's Subscription names catalog %s/%s, want %s/olm-deps-samples",
			dep.Spec.CatalogNamespace(ns), dep.Spec.CatalogName(), managerNamespace)
	}
}

// waitInstallPlan waits for the Subscription to name an InstallPlan in the phase given,
// and returns it.
func waitInstallPlan(t *testing.T, ns, sub string, phase omv1alpha1.InstallPlanPhase) *omv1alpha1.InstallPlan {
	t.Helper()
	var ip *omv1alpha1.InstallPlan
	eventually(t, 2*time.Minute, "Subscription "+sub+" naming an InstallPlan "+string(phase), func() bool {
		ref := getSub(t, ns, sub).Status.InstallPlanRef
		if ref == nil || ref.Kind != "InstallPlan" || ref.APIVersion != omv1alpha1.GroupVersion.String() {
			return false
		}
		ip = &omv1alpha1.InstallPlan{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: ref.Name}, ip) == nil && ip.Status.Phase == phase
	}, describeSub(t, ns, sub))
	return ip
}

func getInstallPlan(t *testing.T, ns, name string) *omv1alpha1.InstallPlan {
	t.Helper()
	ip := &omv1alpha1.InstallPlan{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, ip); err != nil {
		t.Fatalf("InstallPlan %s/%s: %v", ns, name, err)
	}
	return ip
}

// approvePlan approves an InstallPlan as an OLM user does:
// kubectl patch installplan NAME --type merge -p '{"spec":{"approved":true}}'.
func approvePlan(t *testing.T, ip *omv1alpha1.InstallPlan) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"approved":true}}`))
	if err := k8s.Patch(ctx(), &omv1alpha1.InstallPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ip.Namespace, Name: ip.Name}}, patch); err != nil {
		t.Fatalf("approving InstallPlan %s/%s: %v", ip.Namespace, ip.Name, err)
	}
}

// TestInstallPlanFollowsTheChange: a Subscription written with this API's own approval:
// Manual installs its first version without asking (and without an InstallPlan); each
// later change waits in an InstallPlan. A change replaced before it was approved takes
// its InstallPlan with it; an approved one that fails its health check leaves its
// InstallPlan Failed, saying why, and the old version running.
func TestInstallPlanFollowsTheChange(t *testing.T) {
	ns := "installplans"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: 1.0.0, catalog: samples, approval: Manual, health: {timeout: 20s}}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.0.0")
	plans := func() []omv1alpha1.InstallPlan {
		list := &omv1alpha1.InstallPlanList{}
		if err := k8s.List(ctx(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	if p := plans(); len(p) != 0 {
		t.Errorf("InstallPlans after a first install that did not wait: %d, want none", len(p))
	}
	setVersion := func(v string) {
		t.Helper()
		sub := getSub(t, ns, "cache")
		patch := client.MergeFrom(sub.DeepCopy())
		sub.Spec.Version = v
		if err := k8s.Patch(ctx(), sub, patch); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(csv string) *omv1alpha1.InstallPlan {
		t.Helper()
		var ip *omv1alpha1.InstallPlan
		eventually(t, time.Minute, "an InstallPlan of "+csv+" waiting", func() bool {
			ip = waitInstallPlan(t, ns, "cache", omv1alpha1.InstallPlanRequiresApproval)
			return slices.Equal(ip.Spec.ClusterServiceVersionNames, []string{csv})
		}, describeSub(t, ns, "cache"))
		return ip
	}

	setVersion("1.1.0")
	replaced := waitFor("cache-operator.v1.1.0")
	// Replaced before approval: its InstallPlan goes, the new change waits in its own.
	setVersion("1.2.0")
	upgrade := waitFor("cache-operator.v1.2.0")
	eventually(t, time.Minute, "the replaced change's InstallPlan deleted", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: replaced.Name}, &omv1alpha1.InstallPlan{}))
	}, describeSub(t, ns, "cache"))
	if getBlueprint(t, ns, "cache").Status.CurrentCSV != "cache-operator.v1.0.0" {
		t.Error("a version changed before its InstallPlan was approved")
	}
	approvePlan(t, upgrade)
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	eventually(t, time.Minute, "the approved InstallPlan Complete", func() bool {
		return getInstallPlan(t, ns, upgrade.Name).Status.Phase == omv1alpha1.InstallPlanComplete
	}, describeSub(t, ns, "cache"))

	// 1.3.0 never becomes ready: approved, it fails its health check and is rolled back.
	setVersion("1.3.0")
	broken := waitFor("cache-operator.v1.3.0")
	approvePlan(t, broken)
	eventually(t, 2*time.Minute, "the broken version's InstallPlan Failed, 1.2.0 running again", func() bool {
		ip := getInstallPlan(t, ns, broken.Name)
		bp := getBlueprint(t, ns, "cache")
		return ip.Status.Phase == omv1alpha1.InstallPlanFailed && bp.Status.Phase == omv1.BlueprintRolledBack &&
			bp.Status.CurrentCSV == "cache-operator.v1.2.0"
	}, describeSub(t, ns, "cache"))
	if ip := getInstallPlan(t, ns, broken.Name); !strings.Contains(ip.Status.Message, "did not install cache-operator.v1.3.0") {
		t.Errorf("the failed InstallPlan's message %q does not say what failed", ip.Status.Message)
	}
	if ref := getSub(t, ns, "cache").Status.InstallPlanRef; ref == nil || ref.Name != broken.Name {
		t.Errorf("installPlanRef = %+v, want the newest plan %s", ref, broken.Name)
	}
	if p := plans(); len(p) != 2 {
		t.Errorf("InstallPlans kept: %d, want the two whose revisions the history remembers", len(p))
	}
}

// scopeCSV is a test-only operator that may watch its own namespace, one other or several
// (not all), with namespaced permissions: its Role is made in every namespace it watches.
const scopeCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: scope-operator.v1.0.0}
spec:
  displayName: Scope Operator
  version: 1.0.0
  installModes:
  - {type: OwnNamespace, supported: true}
  - {type: SingleNamespace, supported: true}
  - {type: MultiNamespace, supported: true}
  - {type: AllNamespaces, supported: false}
  install:
    strategy: deployment
    spec:
      permissions:
      - serviceAccountName: scope-operator
        rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}]
      deployments:
      - name: scope-operator
        spec:
          replicas: 1
          selector: {matchLabels: {app: scope-operator}}
          template:
            metadata: {labels: {app: scope-operator}}
            spec:
              serviceAccountName: scope-operator
              containers: [{name: manager, image: "registry.example/scope-operator:1.0.0"}]
`

// TestOLMOperatorGroupSelector: an OperatorGroup that selects its target namespaces by
// label, as OLM's spec.selector does. The operator watches, and is granted its
// permissions in, the namespaces labelled so; labelling a namespace in or out renders it
// again (its Role made in the new one, removed from the old). When the selector selects
// no namespace the Subscription says so (NoTargetNamespaces, naming the OperatorGroup and
// its selector) and the operator is left watching what it watched; targetNamespaces, once
// set, win over the selector, as in OLM.
func TestOLMOperatorGroupSelector(t *testing.T) {
	dir := filepath.Join(work, "catalogs", "og-selector", "scope-operator", "1.0.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "csv.yaml"), []byte(scopeCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	ns, a, b := "ogsel", "ogsel-a", "ogsel-b"
	newNamespaceWithCatalog(t, ns, filepath.Join(work, "catalogs", "og-selector"))
	for _, n := range []string{a, b} {
		if err := k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	label := func(name string, on bool) {
		t.Helper()
		n := &corev1.Namespace{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(n.DeepCopy())
		if on {
			n.Labels = map[string]string{"ogsel-team": "blue"}
		} else {
			delete(n.Labels, "ogsel-team")
		}
		if err := k8s.Patch(ctx(), n, patch); err != nil {
			t.Fatal(err)
		}
	}
	roleIn := func(n string) bool {
		roles := &rbacv1.RoleList{}
		if err := k8s.List(ctx(), roles, client.InNamespace(n)); err != nil {
			t.Fatal(err)
		}
		for _, r := range roles.Items {
			if strings.Contains(r.Name, "scope-operator") {
				return true
			}
		}
		return false
	}
	watches := func() string { return deploymentTargets(t, ns, "scope-operator") }

	label(a, true)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: OperatorGroup
metadata: {name: og}
spec:
  selector:
    matchLabels: {ogsel-team: blue}
`)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: scope}
spec: {name: scope-operator, source: test, sourceNamespace: `+ns+`}
`)
	waitRunning(t, ns, "scope", "scope-operator.v1.0.0")
	if got := watches(); got != a {
		t.Errorf("the operator watches %q, want the selected %q", got, a)
	}
	if !roleIn(a) || roleIn(b) {
		t.Errorf("the operator's Role: in %s %v, in %s %v; want only in the selected %s", a, roleIn(a), b, roleIn(b), a)
	}

	// Another namespace labelled in: watched and granted.
	label(b, true)
	eventually(t, time.Minute, "the operator re-rendered for the newly selected namespace", func() bool {
		return watches() == a+","+b && roleIn(b)
	}, func() string { return fmt.Sprintf("watches %q, Role in %s: %v", watches(), b, roleIn(b)) })
	if out, err := cli("status", "scope", "-n", ns); err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "Watches: "+a+", "+b+" (from OperatorGroup og)") {
		t.Errorf("status does not say what the operator watches: %v\n%s", err, out)
	}

	// One labelled out: no longer watched, its Role removed.
	label(a, false)
	eventually(t, time.Minute, "the operator re-rendered without the namespace labelled out", func() bool {
		return watches() == b && !roleIn(a)
	}, func() string { return fmt.Sprintf("watches %q, Role in %s: %v", watches(), a, roleIn(a)) })

	// None selected: the Subscription says so, and the operator keeps watching what it did
	// (never all namespaces, which no targets would mean).
	label(b, false)
	eventually(t, time.Minute, "NoTargetNamespaces", func() bool {
		c := condition(getSub(t, ns, "scope").Status.Conditions, omv1.ConditionResolved)
		return c.Status == metav1.ConditionFalse && c.Reason == omv1.ReasonNoTargetNamespaces &&
			strings.Contains(c.Message, "OperatorGroup "+ns+"/og") && strings.Contains(c.Message, "ogsel-team=blue")
	}, describeSub(t, ns, "scope"))
	time.Sleep(3 * time.Second) // a re-render would have happened by now
	if got := watches(); got != b || !roleIn(b) {
		t.Errorf("with no namespace selected the operator was changed: watches %q, Role in %s: %v", got, b, roleIn(b))
	}
	label(a, true)
	eventually(t, time.Minute, "resolved again and watching the labelled namespace", func() bool {
		return condition(getSub(t, ns, "scope").Status.Conditions, omv1.ConditionResolved).Status == metav1.ConditionTrue && watches() == a
	}, func() string { return "watches " + watches() + "; " + describeSub(t, ns, "scope")() })

	// targetNamespaces win over the selector.
	patchOperatorGroup(t, ns, "og", func(og *omv1.OperatorGroup) { og.Spec.TargetNamespaces = []string{ns} })
	eventually(t, time.Minute, "the named targetNamespaces taken over the selector", func() bool {
		return watches() == ns && !roleIn(a)
	}, func() string { return fmt.Sprintf("watches %q, Role in %s: %v", watches(), a, roleIn(a)) })
}

// serveRegistry serves the catalog in dir (any layout) with operator-registry's own gRPC
// server at addr (empty: a free port) until stopped or the test ends.
func serveRegistry(t *testing.T, dir, addr string) (string, func()) {
	t.Helper()
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fbc := t.TempDir()
	if err := registryserver.WriteFBC(cat, fbc); err != nil {
		t.Fatal(err)
	}
	var got string
	var stop func()
	// The port of a server just stopped may take a moment to be free again.
	eventually(t, 30*time.Second, "the registry server listening", func() bool {
		got, stop, err = registryserver.Serve(ctx(), fbc, t.TempDir(), addr)
		return err == nil
	}, func() string { return fmt.Sprint(err) })
	once := sync.OnceFunc(stop)
	t.Cleanup(once)
	return got, once
}

// TestOLMCatalogSourceFromAddress: an OLM CatalogSource that names a registry server by
// spec.address (sourceType grpc, no image), served by operator-registry's own server as
// `opm serve` runs it, loads over the registry's gRPC API; a Subscription installs from
// it. With the server gone the CatalogSource says so, naming the address, and keeps the
// catalog it last read, from which an upgrade still installs. A server that comes back
// with a new version is polled (registryPoll) and the channel followed to it.
func TestOLMCatalogSourceFromAddress(t *testing.T) {
	addr, stop := serveRegistry(t, catalogTree(t, "grpc-v1", "cache-operator/1.0.0", "cache-operator/1.1.0"), "")
	ns := "olm-address"
	newNamespace(t, ns)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: registry}
spec:
  sourceType: grpc
  address: `+addr+`
  displayName: A registry server
  updateStrategy: {registryPoll: {interval: 2s}}
`)
	status := catalogStatus(t, ns, "registry")
	eventually(t, time.Minute, "the CatalogSource loads from its registry server", catalogLoaded(t, ns, "registry", 1, 2), status)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, channel: stable, version: 1.0.0, catalog: registry}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.0.0")

	// The server goes: the CatalogSource says so and keeps its catalog, from which the
	// next version still installs. The manager restarts meanwhile (a crash): it finds the
	// catalog it last read on its disk, says so, and uses it.
	stop()
	eventually(t, time.Minute, "the CatalogSource saying its registry server is gone",
		catalogFailing(t, ns, "registry", "registry server "+addr, "still used"), status)
	if st := getCatalogSource(t, ns, "registry").Status.ConnectionState; st == nil || st.LastObservedState != omv1.ConnectionTransientFailure || st.Address != addr {
		t.Errorf("connectionState %+v with the server gone, want TRANSIENT_FAILURE at %s", st, addr)
	}
	killManager(t)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the restarted manager saying it uses the catalog kept on its disk",
		catalogFailing(t, ns, "registry", "registry server "+addr, "kept on its disk, is used"), status)
	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Version = "1.1.0" })
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")

	// It comes back at the same address with a new version: polled, and followed.
	serveRegistry(t, catalogTree(t, "grpc-v2", "cache-operator/1.0.0", "cache-operator/1.1.0", "cache-operator/1.2.0"), addr)
	eventually(t, time.Minute, "the CatalogSource reloaded with 1.2.0", catalogLoaded(t, ns, "registry", 1, 3), status)
	if st := getCatalogSource(t, ns, "registry").Status.ConnectionState; st == nil || st.LastObservedState != omv1.ConnectionReady {
		t.Errorf("connectionState %+v with the server back, want READY", st)
	}
	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Version = "" })
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	kubectl(t, "delete", "subscription", "cache", "-n", ns, "--wait=true")
}

// TestOLMCatalogSourceFromAddressImageBundles: a registry server whose catalog names its
// bundles by image only (as opm renders catalogs; OLM unpacks the images): the manager
// pulls the bundle from its image and installs it whole, its CRD and Deployment, not the
// CSV the registry makes up from the metadata.
func TestOLMCatalogSourceFromAddressImageBundles(t *testing.T) {
	reg := newTestRegistry(t)
	dir := catalogTree(t, "grpc-images", "cache-operator/1.0.0", "cache-operator/1.1.0")
	pub := publish(t, dir, reg.host+"/grpc/catalog:v1")
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := registryserver.ServeImageOnly(t, cat, registryserver.Images(pub))
	ns := "olm-address-images"
	newNamespace(t, ns)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: registry}
spec: {sourceType: grpc, address: `+addr+`}
`)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {name: cache-operator, channel: stable, source: registry, sourceNamespace: `+ns+`}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &appsv1.Deployment{}); err != nil {
		t.Errorf("the operator's Deployment: %v", err)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "caches.cache.samples.operator-manager.domain"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("the operator's CRD: %v", err)
	}
	kubectl(t, "delete", "subscription", "cache", "-n", ns, "--wait=true")
}

// olmConfigMapData is an OLM ConfigMap catalog of cache-operator's sample versions named
// (its CRD as the newest of them ships it), its channel stable headed by the last.
func olmConfigMapData(t *testing.T, versions ...string) map[string]string {
	t.Helper()
	read := func(rel string) []byte {
		data, err := os.ReadFile(filepath.Join(sampleDir, "cache-operator", rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var csvs [][]byte
	for _, v := range versions {
		csvs = append(csvs, read(v+"/cache-operator.v"+v+".clusterserviceversion.yaml"))
	}
	last := versions[len(versions)-1]
	data, err := configmapcatalog.Data([][]byte{read(last + "/caches.crd.yaml")}, csvs,
		[][]byte{[]byte("packageName: cache-operator\nchannels: [{name: stable, currentCSV: cache-operator.v" + last + "}]\ndefaultChannel: stable\n")})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOLMCatalogSourceFromConfigMap: OLM's ConfigMap catalog, as older OLM setups and
// OLM's own tests write one (sourceType configmap, the ConfigMap's three YAML lists).
// The manager, under its own ServiceAccount, installs from it; an edit of the ConfigMap
// (a new version) is read at the next poll and the channel followed; a deleted ConfigMap
// is said so on the CatalogSource, and the operator keeps running.
func TestOLMCatalogSourceFromConfigMap(t *testing.T) {
	ns := "olm-configmap"
	newNamespace(t, ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "catalog"}, Data: olmConfigMapData(t, "1.1.0")}
	if err := k8s.Create(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: olm-catalog}
spec:
  sourceType: configmap
  configMap: catalog
  displayName: An OLM ConfigMap catalog
  updateStrategy: {registryPoll: {interval: 2s}}
`)
	status := catalogStatus(t, ns, "olm-catalog")
	eventually(t, time.Minute, "the CatalogSource loads its ConfigMap", catalogLoaded(t, ns, "olm-catalog", 1, 1), status)
	createStrict(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {name: cache-operator, channel: stable, source: olm-catalog, sourceNamespace: `+ns+`}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &appsv1.Deployment{}); err != nil {
		t.Errorf("the operator's Deployment: %v", err)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "caches.cache.samples.operator-manager.domain"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("the operator's CRD: %v", err)
	}

	// The ConfigMap edited to carry 1.2.0: read at the next poll, and followed.
	cm.Data = olmConfigMapData(t, "1.1.0", "1.2.0")
	if err := k8s.Update(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the CatalogSource reloaded with 1.2.0", catalogLoaded(t, ns, "olm-catalog", 1, 2), status)
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	// diff without a catalog reads the installation's ConfigMap catalog through the API.
	if out, err := cli("diff", "cache", "-n", ns, "--version", "1.1.0"); err != nil || !strings.Contains(out, "cache-operator.v1.2.0 -> cache-operator.v1.1.0") {
		t.Errorf("diff from the installation's own ConfigMap catalog: %v\n%s", err, out)
	}

	// The ConfigMap deleted: said so, the last catalog kept, nothing uninstalled.
	if err := k8s.Delete(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the CatalogSource saying its ConfigMap is gone",
		catalogFailing(t, ns, "olm-catalog", "ConfigMap "+ns+"/catalog, named by spec.configMap, does not exist", "still used"), status)
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	kubectl(t, "delete", "subscription", "cache", "-n", ns, "--wait=true")
}
