package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/test/harness"
)

func getBlueprint(t *testing.T, ns, name string) *omv1.Blueprint {
	t.Helper()
	bp := &omv1.Blueprint{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp); err != nil {
		t.Fatal(err)
	}
	return bp
}

// setStartingCSV edits the Subscription as a person would to upgrade or roll back.
func setStartingCSV(t *testing.T, ns, name, csv string) {
	t.Helper()
	patchSub(t, ns, name, func(s *omv1.Subscription) { s.Spec.StartingCSV = csv })
}

// waitRunning waits until the Blueprint runs csv, Succeeded, with no other CSV left.
func waitRunning(t *testing.T, ns, name, csv string) *omv1.Blueprint {
	t.Helper()
	eventually(t, 3*time.Minute, ns+"/"+name+" running "+csv, func() bool {
		bp := &omv1.Blueprint{}
		if k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp) != nil {
			return false
		}
		if bp.Status.CurrentCSV != csv || bp.Status.Phase != omv1.BlueprintSucceeded {
			return false
		}
		csvs := &omv1alpha1.ClusterServiceVersionList{}
		return k8s.List(ctx(), csvs, client.InNamespace(ns), client.MatchingLabels{omv1.LabelSubscription: name}) == nil && len(csvs.Items) == 1
	}, describeSub(t, ns, name))
	return getBlueprint(t, ns, name)
}

func newCache(t *testing.T, ns, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	cr := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	cr.SetGroupVersionKind(schema.GroupVersionKind{Group: "cache.samples.operator-manager.domain", Version: "v1", Kind: "Cache"})
	cr.SetNamespace(ns)
	cr.SetName(name)
	if err := k8s.Create(ctx(), cr); err != nil {
		t.Fatal(err)
	}
	return cr
}

func getCR(t *testing.T, cr *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := cr.DeepCopy()
	if err := k8s.Get(ctx(), client.ObjectKeyFromObject(cr), got); err != nil {
		t.Fatalf("custom resource %s lost: %v", cr.GetName(), err)
	}
	return got
}

func containerImage(t *testing.T, ns, name string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func historyOf(bp *omv1.Blueprint) string {
	var parts []string
	for _, h := range bp.Status.History {
		parts = append(parts, fmt.Sprintf("%d:%s:%s:%s", h.Revision, h.CSVName, h.Trigger, h.Outcome))
	}
	return strings.Join(parts, " ")
}

// TestUpgradeChainAndAutomaticRollback upgrades the sample operator 1.0.0 -> 1.1.0 ->
// 1.2.0 by editing the Subscription, keeping a custom resource unchanged throughout, then
// to the broken 1.3.0, which is rolled back automatically: 1.2.0 serves again, the
// conditions and an event name the failed version, and no further attempt follows.
func TestUpgradeChainAndAutomaticRollback(t *testing.T) {
	ns := "upgrade"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.0.0, catalog: samples, health: {timeout: 20s}}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.0.0")
	cr := newCache(t, ns, "data", map[string]any{"size": int64(4)})
	before := getCR(t, cr)

	for _, step := range []string{"1.1.0", "1.2.0"} {
		setStartingCSV(t, ns, "cache", "cache-operator."+step)
		bp := waitRunning(t, ns, "cache", "cache-operator.v"+step)
		if bp.Spec.OldVersion == "" || bp.Spec.ClusterServiceVersionName != "cache-operator.v"+step {
			t.Errorf("after %s: oldVersion %q", step, bp.Spec.OldVersion)
		}
		if img := containerImage(t, ns, "cache-operator"); img != "registry.example/samples/cache-operator:"+step {
			t.Errorf("after %s the Deployment runs %s", step, img)
		}
		checkInstalled(t, ns, "cache-operator.v"+step)
	}
	bp := getBlueprint(t, ns, "cache")
	if got := historyOf(bp); got != "1:cache-operator.v1.0.0:Install:Succeeded 2:cache-operator.v1.1.0:Upgrade:Succeeded 3:cache-operator.v1.2.0:Upgrade:Succeeded" {
		t.Errorf("history = %s", got)
	}
	if bp.Spec.Generation != 3 {
		t.Errorf("spec.generation = %d, want 3 (bumped on each version change)", bp.Spec.Generation)
	}
	after := getCR(t, cr)
	if after.GetUID() != before.GetUID() || fmt.Sprint(after.Object["spec"]) != fmt.Sprint(before.Object["spec"]) {
		t.Errorf("the custom resource changed across upgrades: %v -> %v", before.Object["spec"], after.Object["spec"])
	}

	// The broken version: rolled back automatically.
	setStartingCSV(t, ns, "cache", "cache-operator.1.3.0")
	eventually(t, 3*time.Minute, "automatic rollback", func() bool {
		return getBlueprint(t, ns, "cache").Status.Phase == omv1.BlueprintRolledBack
	}, describeSub(t, ns, "cache"))
	waitDeploymentAvailable(t, ns, "cache-operator")
	if img := containerImage(t, ns, "cache-operator"); img != "registry.example/samples/cache-operator:1.2.0" {
		t.Errorf("after the rollback the Deployment runs %s, want 1.2.0", img)
	}
	// The Subscription follows its Blueprint by watch, a moment later: wait
	// for it to say so rather than read it once.
	eventually(t, 30*time.Second, "the Subscription reports the rollback", func() bool {
		return condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionRolledBack).Status == metav1.ConditionTrue
	}, describeSub(t, ns, "cache"))
	sub := getSub(t, ns, "cache")
	rb := condition(sub.Status.Conditions, omv1.ConditionRolledBack)
	if rb.Status != metav1.ConditionTrue || !strings.Contains(rb.Message, "cache-operator.v1.3.0") || !strings.Contains(rb.Message, "failed") {
		t.Errorf("Subscription RolledBack = %+v", rb)
	}
	if sub.Status.InstalledCSV != "cache-operator.v1.2.0" {
		t.Errorf("installed %s after the rollback", sub.Status.InstalledCSV)
	}
	if ready := condition(sub.Status.Conditions, omv1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != omv1.ConditionRolledBack {
		t.Errorf("Ready = %+v: the wanted version does not run, and Ready must say why", ready)
	}
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events.Items {
		if e.Reason == omv1.ReasonRolledBack && strings.Contains(e.Message, "cache-operator.v1.3.0") {
			found = true
		}
	}
	if !found {
		t.Error("no RolledBack event naming cache-operator.v1.3.0")
	}
	settled := historyOf(getBlueprint(t, ns, "cache"))
	time.Sleep(25 * time.Second) // longer than the health timeout: a loop would show
	if again := historyOf(getBlueprint(t, ns, "cache")); again != settled {
		t.Errorf("the failed version was tried again without a spec change:\n%s\n%s", settled, again)
	}
	if !strings.HasSuffix(settled, "4:cache-operator.v1.3.0:Upgrade:Failed 5:cache-operator.v1.2.0:Rollback:Succeeded") {
		t.Errorf("history = %s", settled)
	}
	// The rollback re-applies 1.2.0's objects, which 1.3.0 had changed: that is the
	// rollback's own work, not a change by hand to repair (it was reported as one, a
	// Warning on every rollback). The retired 1.3.0 says once that its objects are gone.
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	deleted := int32(0)
	for _, e := range events.Items {
		if e.Reason == "DriftRepaired" {
			t.Errorf("the rollback was reported as a repair of a change by hand: %s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
		if e.Reason == "Deleted" && e.InvolvedObject.Name == "cache-operator.v1.3.0" {
			deleted += max(e.Count, 1)
		}
	}
	if deleted != 1 {
		t.Errorf("cache-operator.v1.3.0 reported its removal %d times, want once", deleted)
	}
	if getCR(t, cr).GetUID() != before.GetUID() {
		t.Error("the custom resource was replaced")
	}
}

func waitDeploymentAvailable(t *testing.T, ns, name string) {
	t.Helper()
	var last error
	eventually(t, time.Minute, "deployment "+name+" available", func() bool {
		last = deploymentAvailable(t, ns, name)
		return last == nil
	}, func() string { return fmt.Sprint(last) })
}

// TestManualRollbacks returns to older versions in the three ways users have: editing the
// Subscription, editing the Blueprint's clusterServiceVersionName (the original's second
// way), and `operator-manager rollback --to-revision`. Going back across a CRD change keeps
// the newer CRD and every custom resource.
func TestManualRollbacks(t *testing.T) {
	ns := "manual"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	cr := newCache(t, ns, "with-ttl", map[string]any{"size": int64(2), "ttlSeconds": int64(60)})

	// 1. Edit the Subscription back.
	setStartingCSV(t, ns, "cache", "cache-operator.1.1.0")
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "caches.cache.samples.operator-manager.domain"}, crd); err != nil {
		t.Fatal(err)
	}
	if _, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["ttlSeconds"]; !ok {
		t.Error("rolling back replaced the newer CRD: spec.ttlSeconds is gone from its schema")
	}
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator.v1.1.0"}, csv); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(csv.Status.CRDRepairs), "kept the cluster's CRD") {
		t.Errorf("the CSV status does not say the newer CRD was kept: %+v", csv.Status.CRDRepairs)
	}
	if v, _, _ := unstructured.NestedInt64(getCR(t, cr).Object, "spec", "ttlSeconds"); v != 60 {
		t.Errorf("the custom resource lost spec.ttlSeconds: %v", getCR(t, cr).Object["spec"])
	}

	// 2. Edit the Blueprint, as the original operator-manager documented.
	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	bp := getBlueprint(t, ns, "cache")
	patch := client.MergeFrom(bp.DeepCopy())
	bp.Spec.ClusterServiceVersionName, bp.Spec.Version, bp.Spec.BundleDigest = "cache-operator.v1.1.0", "1.1.0", ""
	for _, h := range bp.Status.History {
		if h.CSVName == "cache-operator.v1.1.0" {
			bp.Spec.BundleDigest = h.BundleDigest
		}
	}
	if err := k8s.Patch(ctx(), bp, patch); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	time.Sleep(2 * time.Second) // the Subscription controller must not undo a hand edit
	if got := getBlueprint(t, ns, "cache").Spec.ClusterServiceVersionName; got != "cache-operator.v1.1.0" {
		t.Errorf("the hand edit of the Blueprint was undone: target %s", got)
	}

	sub := getSub(t, ns, "cache")
	if c := condition(sub.Status.Conditions, omv1.ConditionResolved); !strings.Contains(c.Message, "pointed at cache-operator.v1.1.0 by hand") {
		t.Errorf("the Subscription does not say the Blueprint was pinned by hand: %+v", c)
	}

	// 3. The command line, to a named revision. First move on again: the Subscription
	// still says 1.2.0, so it is set to what runs, then forward.
	setStartingCSV(t, ns, "cache", "cache-operator.1.1.0")
	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	out, err := cli("rollback", "cache", "-n", ns, "--to-revision", "1", "--wait")
	if err != nil || !strings.Contains(out, "rolling manual/cache back to revision 1: cache-operator.v1.1.0") {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	out, err = cli("history", "cache", "-n", ns)
	if err != nil || !strings.Contains(out, "Downgrade") || !strings.Contains(out, "REVISION") {
		t.Errorf("history: %v\n%s", err, out)
	}
	if _, err := cli("rollback", "cache", "-n", ns, "--to-revision", "99"); err == nil {
		t.Error("rollback to a revision that does not exist succeeded")
	}
	getCR(t, cr)
}

// TestHistoryLimit: with historyLimit 2, after five version changes two revisions remain,
// and the current and last good ones are among them.
func TestHistoryLimit(t *testing.T) {
	ns := "retention"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, historyLimit: 2}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	for _, v := range []string{"1.2.0", "1.1.0", "1.2.0", "1.1.0", "1.2.0"} {
		setStartingCSV(t, ns, "cache", "cache-operator."+v)
		waitRunning(t, ns, "cache", "cache-operator.v"+v)
	}
	bp := getBlueprint(t, ns, "cache")
	if len(bp.Status.History) != 2 {
		t.Fatalf("history has %d revisions, want 2: %s", len(bp.Status.History), historyOf(bp))
	}
	newest := bp.Status.History[1]
	if newest.Revision != 6 || newest.CSVName != "cache-operator.v1.2.0" || bp.Status.LastGoodRevision != 6 {
		t.Errorf("history %s, last good %d: the current and last good revision must be kept", historyOf(bp), bp.Status.LastGoodRevision)
	}
}

// TestKillDuringUpgradeAndRollback kills the manager while an upgrade and then while a
// rollback is under way; after each restart it converges with no duplicate or orphaned
// objects.
func TestKillDuringUpgradeAndRollback(t *testing.T) {
	ns := "crash"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, health: {timeout: 90s}}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	// The quota holds the new version's pod back, so the upgrade stays under way until it
	// goes, which happens while the manager is down. The health timeout leaves room for a
	// slow restart: a deadline passed while down would fail the upgrade instead.
	release := harness.HoldPods(t, k8s, ns, 1)
	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	eventually(t, time.Minute, "upgrade under way", func() bool {
		return getBlueprint(t, ns, "cache").Status.Phase == omv1.BlueprintUpgrading
	}, describeSub(t, ns, "cache"))
	killManager(t)
	release()
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	checkOwned(t, ns, "cache-operator.v1.2.0")
	if left := ownedObjects(t, ns, "cache-operator.v1.1.0"); len(left) > 0 {
		t.Errorf("objects of the replaced version left: %v", left)
	}

	patchSub(t, ns, "cache", func(s *omv1.Subscription) {
		s.Spec.StartingCSV = "cache-operator.1.3.0"
		s.Spec.Health.Timeout = &metav1.Duration{Duration: 15 * time.Second}
	})
	// A rollback on the local cluster takes about a second: look often, so the kill lands
	// inside it. (The crash-point test kills the manager after every single write of a
	// rollback; this one is the plain "killed mid-rollback" case.)
	eventuallyEvery(t, 2*time.Minute, 5*time.Millisecond, "rollback under way", func() bool {
		return getBlueprint(t, ns, "cache").Status.Phase == omv1.BlueprintRollingBack
	}, describeSub(t, ns, "cache"))
	killManager(t)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "rolled back", func() bool {
		bp := getBlueprint(t, ns, "cache")
		csvs := &omv1alpha1.ClusterServiceVersionList{}
		return bp.Status.Phase == omv1.BlueprintRolledBack && k8s.List(ctx(), csvs, client.InNamespace(ns)) == nil && len(csvs.Items) == 1
	}, describeSub(t, ns, "cache"))
	waitDeploymentAvailable(t, ns, "cache-operator")
	checkOwned(t, ns, "cache-operator.v1.2.0")
	if left := ownedObjects(t, ns, "cache-operator.v1.3.0"); len(left) > 0 {
		t.Errorf("objects of the failed version left: %v", left)
	}
}

// checkOwned asserts exactly one of each object a running sample version owns.
func checkOwned(t *testing.T, ns, csv string) {
	t.Helper()
	got := ownedObjects(t, ns, csv)
	// The Role and RoleBinding are those of the version's OperatorCondition.
	want := map[string]int{"Deployment": 1, "ServiceAccount": 1, "Service": 1, "ClusterRole": 2, "ClusterRoleBinding": 2,
		"Role": 1, "RoleBinding": 1, "OperatorCondition": 1}
	if csv == "cache-operator.v1.1.0" {
		delete(want, "Service")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("objects of %s = %v, want %v", csv, got, want)
	}
	deps := &appsv1.DeploymentList{}
	if err := k8s.List(ctx(), deps, client.InNamespace(ns)); err != nil || len(deps.Items) != 1 {
		t.Errorf("deployments in %s: %d (%v)", ns, len(deps.Items), err)
	}
}

// TestAutomaticRollbackOff: with rollback.automatic false, a failed version stays failed
// and visible for a person, nothing is rolled back, and the old CSV is kept to return to.
func TestAutomaticRollbackOff(t *testing.T) {
	ns := "no-rollback"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.2.0, catalog: samples, health: {timeout: 10s}, rollback: {automatic: false}}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	setStartingCSV(t, ns, "cache", "cache-operator.1.3.0")
	eventually(t, 2*time.Minute, "failed", func() bool {
		return getBlueprint(t, ns, "cache").Status.Phase == omv1.BlueprintFailed
	}, describeSub(t, ns, "cache"))
	time.Sleep(15 * time.Second)
	bp := getBlueprint(t, ns, "cache")
	if bp.Status.Phase != omv1.BlueprintFailed || !strings.HasSuffix(historyOf(bp), "2:cache-operator.v1.3.0:Upgrade:Failed") {
		t.Errorf("phase %s, history %s: want Failed, no rollback", bp.Status.Phase, historyOf(bp))
	}
	sub := getSub(t, ns, "cache")
	if c := condition(sub.Status.Conditions, omv1.ConditionHealthy); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "cache-operator.v1.3.0") {
		t.Errorf("Healthy = %+v", c)
	}
	out, err := cli("rollback", "cache", "-n", ns, "--wait")
	if err != nil {
		t.Fatalf("a person rolls back: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
}

// TestPauseDuringAFailingUpgrade: a pause that comes while an upgrade is in its health
// gate holds what the Subscription asks next, not the installation's own recovery: the
// failed upgrade is rolled back, its objects applied, and the old version serves again.
// Before, the rollback's objects were not applied while paused, so its gate judged the
// failed version's pods and the rollback failed too, leaving the broken template.
func TestPauseDuringAFailingUpgrade(t *testing.T) {
	ns := "pause-upgrade"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.2.0, catalog: samples, health: {timeout: 15s}}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	setStartingCSV(t, ns, "cache", "cache-operator.1.3.0")
	eventually(t, time.Minute, "the upgrade in its gate", func() bool {
		bp := getBlueprint(t, ns, "cache")
		return bp.Status.Phase == omv1.BlueprintUpgrading && strings.Contains(historyOf(bp), "2:cache-operator.v1.3.0:Upgrade:")
	}, describeSub(t, ns, "cache"))
	if out, err := cli("pause", "cache", "-n", ns); err != nil {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	eventually(t, 2*time.Minute, "rolled back", func() bool {
		return getBlueprint(t, ns, "cache").Status.Phase == omv1.BlueprintRolledBack
	}, describeSub(t, ns, "cache"))
	bp := getBlueprint(t, ns, "cache")
	if h := historyOf(bp); !strings.HasSuffix(h, "2:cache-operator.v1.3.0:Upgrade:Failed 3:cache-operator.v1.2.0:Rollback:Succeeded") {
		t.Errorf("history %s: want the failed upgrade rolled back", h)
	}
	waitDeploymentAvailable(t, ns, "cache-operator")
	if img := containerImage(t, ns, "cache-operator"); !strings.HasSuffix(img, ":1.2.0") {
		t.Errorf("the Deployment runs %s after the rollback, want 1.2.0's image", img)
	}
	// Still paused: nothing more is tried, and resume leaves it where it is.
	if sub := getSub(t, ns, "cache"); !sub.Spec.Paused || condition(sub.Status.Conditions, omv1.ConditionResolved).Reason != omv1.ReasonPaused {
		t.Errorf("paused %v, Resolved %+v: want still paused", sub.Spec.Paused, condition(sub.Status.Conditions, omv1.ConditionResolved))
	}

	// An uninstall is not held by the pause, and once done the Subscription says so, not
	// the pause (found by hand: "deleted Ready=False (Paused): ... version changes wait").
	out, err := cli("uninstall", "cache", "-n", ns, "--wait", "--timeout", "2m")
	if err != nil || !strings.Contains(out, "(Uninstalled)") || strings.Contains(out, "deleted Ready=False (Paused)") {
		t.Errorf("uninstall --wait of a paused Subscription: %v\n%s", err, out)
	}
	if ready := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionReady); ready.Reason != omv1.ReasonUninstalled {
		t.Errorf("Ready after the uninstall: %+v, want reason Uninstalled", ready)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's Deployment after the uninstall: %v, want gone", err)
	}
}
