package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/csv"
)

// TestTargetNamespaceMissing: an operator told to watch a namespace that is not there
// installs all the same, says so, and is granted its rights there once the namespace is
// created; the namespace deleted under the running operator takes those rights with it
// and leaves the installation Succeeded, with no health gate for either. Before, the
// install waited for ever at "is new", and a watched namespace deleted left the
// installation in its health gate with a stale "retrying" message, the manager retrying
// every few seconds.
func TestTargetNamespaceMissing(t *testing.T) {
	ns, watched := "targets", "targets-watched"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [`+watched+`]}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	installed := func() metav1.Condition {
		return condition(getCSV(t, ns, "cache-operator.v1.1.0").Status.Conditions, csv.ConditionInstalled)
	}
	if c := installed(); c.Status != metav1.ConditionTrue || c.Reason != csv.ReasonTargetNamespacesMissing ||
		!strings.Contains(c.Message, "target namespace "+watched+" does not exist") {
		t.Errorf("CSV Installed = %+v, want True %s naming %s", c, csv.ReasonTargetNamespacesMissing, watched)
	}
	if !eventIn(t, ns, corev1.EventTypeWarning, csv.ReasonTargetNamespacesMissing, watched) {
		t.Errorf("no %s Warning naming %s", csv.ReasonTargetNamespacesMissing, watched)
	}
	if out, err := cli("status", "cache", "-n", ns); err != nil || !strings.Contains(out, watched+" (does not exist)") {
		t.Errorf("status does not say the watched namespace is missing: %v\n%s", err, out)
	}
	gate := getCSV(t, ns, "cache-operator.v1.1.0").Status.GateStartTime

	// Created: the operator's Role there, as for a namespace that was there all along.
	if err := k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: watched}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: watched}}) })
	granted := func() int {
		roles := &rbacv1.RoleList{}
		if err := k8s.List(ctx(), roles, client.InNamespace(watched), client.MatchingLabels{"operator-manager.domain/owner-namespace": ns}); err != nil {
			t.Fatal(err)
		}
		return len(roles.Items)
	}
	eventually(t, time.Minute, "the operator's Role in "+watched, func() bool {
		return granted() > 0 && installed().Reason == "Applied"
	}, describeSub(t, ns, "cache"))

	// Deleted: gone with it, the installation untouched.
	if err := k8s.Delete(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: watched}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, watched+" gone and the CSV saying so", func() bool {
		gone := apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Name: watched}, &corev1.Namespace{}))
		return gone && installed().Reason == csv.ReasonTargetNamespacesMissing
	}, describeSub(t, ns, "cache"))
	c := getCSV(t, ns, "cache-operator.v1.1.0")
	if c.Status.Phase != omv1alpha1.CSVSucceeded || !c.Status.GateStartTime.Equal(gate) {
		t.Errorf("CSV phase %s, gate started %v (was %v): a watched namespace coming and going is no change to the operator", c.Status.Phase, c.Status.GateStartTime, gate)
	}
	if eventIn(t, ns, "", "GateStarted", "") {
		t.Error("a health gate ran for a watched namespace coming or going")
	}
	sub := getSub(t, ns, "cache")
	if ready := condition(sub.Status.Conditions, omv1.ConditionReady); ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v after the watched namespace was deleted", ready)
	}
}

// eventIn says whether namespace ns holds an event of type typ ("" any) and reason whose
// message contains text.
func eventIn(t *testing.T, ns, typ, reason, text string) bool {
	t.Helper()
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if (typ == "" || e.Type == typ) && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// TestRetryAfterTheCauseIsMended: a first install that failed because of its namespace
// (Pod Security "restricted" refuses the operator's pod) stays Failed when the namespace
// is mended, since a failed version is never tried again on its own; `retry` tries it
// again, and it installs. The Subscription is not touched, and retry refuses when there
// is nothing to retry.
func TestRetryAfterTheCauseIsMended(t *testing.T) {
	ns := "retry"
	newNamespace(t, ns)
	setLabel := func(level string) {
		t.Helper()
		n := &corev1.Namespace{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: ns}, n); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels = map[string]string{"pod-security.kubernetes.io/enforce": level}
		if err := k8s.Patch(ctx(), n, patch); err != nil {
			t.Fatal(err)
		}
	}
	setLabel("restricted")
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [`+ns+`], health: {timeout: 15s}}
`)
	eventually(t, 2*time.Minute, "the first install Failed", func() bool {
		bp := &omv1.Blueprint{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp) == nil && bp.Status.Phase == omv1.BlueprintFailed
	}, describeSub(t, ns, "cache"))
	out, err := cli("status", "cache", "-n", ns)
	if err != nil || !strings.Contains(out, `violates PodSecurity "restricted`) || !strings.Contains(out, "operator-manager retry cache") {
		t.Errorf("status of the failed install names neither Pod Security nor retry: %v\n%s", err, out)
	}
	subGen := getSub(t, ns, "cache").Generation

	setLabel("baseline")
	out, err = cli("retry", "cache", "-n", ns, "--wait", "--timeout", "2m")
	if err != nil || !strings.Contains(out, "retrying cache-operator.v1.1.0 in "+ns+"/cache (it was Failed)") {
		t.Fatalf("retry --wait: exit %d: %v\n%s", exitCode(err), err, out)
	}
	bp := getBlueprint(t, ns, "cache")
	if got := historyOf(bp); got != "1:cache-operator.v1.1.0:Install:Failed 2:cache-operator.v1.1.0:Install:Succeeded" {
		t.Errorf("history = %s", got)
	}
	if err := deploymentAvailable(t, ns, "cache-operator"); err != nil {
		t.Errorf("the operator's Deployment after the retry: %v", err)
	}
	// retry --wait follows the Blueprint; the Subscription says so by watch a moment later
	// (read once, it was caught before that in CI).
	eventually(t, 30*time.Second, "the Subscription saying cache-operator.v1.1.0 is installed", func() bool {
		return getSub(t, ns, "cache").Status.InstalledCSV == "cache-operator.v1.1.0"
	}, describeSub(t, ns, "cache"))
	if sub := getSub(t, ns, "cache"); sub.Generation != subGen {
		t.Errorf("the retry changed the Subscription: generation %d (was %d)", sub.Generation, subGen)
	}
	out, err = cli("retry", "cache", "-n", ns)
	if exitCode(err) != 1 || !strings.Contains(out, "nothing to retry: cache-operator.v1.1.0 runs and passed its health gate") {
		t.Errorf("retry of a healthy installation: exit %d\n%s", exitCode(err), out)
	}
}

// TestConfigMendsAFailedInstall: a first install whose config makes it fail (a node
// selector no node has) is tried again when the Subscription's config is mended, as a
// person would expect of their edit; before, the CSV took the new config and turned
// Succeeded while the installation stayed Failed, "nothing installed".
func TestConfigMendsAFailedInstall(t *testing.T) {
	ns := "mended"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [`+ns+`], health: {timeout: 15s}, config: {nodeSelector: {disk: none-has-this}}}
`)
	eventually(t, 2*time.Minute, "the first install Failed", func() bool {
		bp := &omv1.Blueprint{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp) == nil && bp.Status.Phase == omv1.BlueprintFailed
	}, describeSub(t, ns, "cache"))
	// The Subscription mirrors the Blueprint a moment later.
	eventually(t, 30*time.Second, "Ready saying the pod could not be scheduled", func() bool {
		return strings.Contains(condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionReady).Message, "not scheduled")
	}, describeSub(t, ns, "cache"))
	sub := getSub(t, ns, "cache")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Config = nil
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "cache", 2*time.Minute)
	if got := historyOf(getBlueprint(t, ns, "cache")); got != "1:cache-operator.v1.1.0:Install:Failed 2:cache-operator.v1.1.0:Install:Succeeded" {
		t.Errorf("history = %s", got)
	}
	if s := getSub(t, ns, "cache"); s.Status.InstalledCSV != "cache-operator.v1.1.0" {
		t.Errorf("installed %q after the config was mended", s.Status.InstalledCSV)
	}
}

// TestUnsupportedTargetsLeaveOperatorRunning: targets that the running CSV's install
// modes do not support (two namespaces for an operator without MultiNamespace) are not
// applied. The operator runs on as it was deployed, and every word says so: Ready False
// UnsupportedOperatorGroup "its configuration cannot be applied ... runs on as it was
// deployed", and `status` says what it watches ("NS, as deployed"), not "is unhealthy" and
// "cannot tell". Putting the targets back makes it Ready again, with nothing rolled.
func TestUnsupportedTargetsLeaveOperatorRunning(t *testing.T) {
	ns, other := "unsupported-targets", "unsupported-targets-b"
	newNamespace(t, ns)
	newNamespace(t, other)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: guard}
spec: {package: guard-operator, version: 1.0.0, catalog: samples, targetNamespaces: [`+ns+`]}
`)
	waitReady(t, ns, "guard", 2*time.Minute)
	dep := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: ns, Name: "guard-operator"}
	if err := k8s.Get(ctx(), key, dep); err != nil {
		t.Fatal(err)
	}
	generation := dep.Generation

	patchSub(t, ns, "guard", func(s *omv1.Subscription) { s.Spec.TargetNamespaces = []string{ns, other} })
	eventually(t, time.Minute, "Ready False UnsupportedOperatorGroup saying it runs on", func() bool {
		ready := condition(getSub(t, ns, "guard").Status.Conditions, omv1.ConditionReady)
		return ready.Status == metav1.ConditionFalse && ready.Reason == "UnsupportedOperatorGroup" &&
			strings.Contains(ready.Message, "its configuration cannot be applied") && strings.Contains(ready.Message, "runs on as it was deployed")
	}, describeSub(t, ns, "guard"))
	out, err := cli("status", "guard", "-n", ns)
	if err != nil || !strings.Contains(out, "Watches:        "+ns+", as deployed: the spec's targets cannot be applied") {
		t.Errorf("status does not say what the operator watches: %v\n%s", err, out)
	}
	if err := k8s.Get(ctx(), key, dep); err != nil {
		t.Fatal(err)
	}
	if dep.Generation != generation || dep.Spec.Template.Annotations["olm.targetNamespaces"] != ns {
		t.Errorf("the Deployment changed: generation %d (was %d), targets %q", dep.Generation, generation, dep.Spec.Template.Annotations["olm.targetNamespaces"])
	}
	if err := deploymentAvailable(t, ns, "guard-operator"); err != nil {
		t.Errorf("the operator stopped: %v", err)
	}

	patchSub(t, ns, "guard", func(s *omv1.Subscription) { s.Spec.TargetNamespaces = []string{ns} })
	waitReady(t, ns, "guard", time.Minute)

	// The same for a config the API server refuses (memory requests above the limit).
	patchSub(t, ns, "guard", func(s *omv1.Subscription) {
		s.Spec.Config = &omv1.SubscriptionConfig{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	})
	eventually(t, time.Minute, "Ready False InstallFailed saying it runs on", func() bool {
		ready := condition(getSub(t, ns, "guard").Status.Conditions, omv1.ConditionReady)
		return ready.Status == metav1.ConditionFalse && ready.Reason == omv1.ReasonInstallFailed &&
			strings.Contains(ready.Message, "its configuration cannot be applied, and the operator runs on as it was deployed") &&
			strings.Contains(ready.Message, "must be less than or equal to memory limit")
	}, describeSub(t, ns, "guard"))
	if err := k8s.Get(ctx(), key, dep); err != nil {
		t.Fatal(err)
	}
	if dep.Generation != generation {
		t.Errorf("the Deployment changed: generation %d (was %d)", dep.Generation, generation)
	}
	patchSub(t, ns, "guard", func(s *omv1.Subscription) { s.Spec.Config = nil })
	waitReady(t, ns, "guard", time.Minute)
	if got := historyOf(getBlueprint(t, ns, "guard")); got != "1:guard-operator.v1.0.0:Install:Succeeded" {
		t.Errorf("history = %s", got)
	}
}
