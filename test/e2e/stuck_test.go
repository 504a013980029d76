package e2e

import (
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/test/harness"
)

// lastRevision is the newest non-rollback revision of a Blueprint.
func lastAttempt(bp *omv1.Blueprint) *omv1.Revision {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if bp.Status.History[i].Trigger != omv1.TriggerRollback {
			return &bp.Status.History[i]
		}
	}
	return nil
}

// waitRolledBackFrom waits until the change to csv failed and was rolled back, and returns
// the failed revision.
func waitRolledBackFrom(t *testing.T, ns, name, csv string, timeout time.Duration) *omv1.Revision {
	t.Helper()
	eventually(t, timeout, "rollback from "+csv, func() bool {
		bp := getBlueprint(t, ns, name)
		a := lastAttempt(bp)
		return bp.Status.Phase == omv1.BlueprintRolledBack && a != nil && a.CSVName == csv && a.Outcome == omv1.OutcomeFailed
	}, describeSub(t, ns, name))
	return lastAttempt(getBlueprint(t, ns, name))
}

// waitRolledBackTo waits until csv runs again after a rollback, alone (the failed CSV retired).
func waitRolledBackTo(t *testing.T, ns, name, csv string) {
	t.Helper()
	eventually(t, time.Minute, ns+"/"+name+" back on "+csv, func() bool {
		bp := getBlueprint(t, ns, name)
		csvs := &omv1alpha1.ClusterServiceVersionList{}
		return bp.Status.CurrentCSV == csv && bp.Status.Phase == omv1.BlueprintRolledBack &&
			k8s.List(ctx(), csvs, client.InNamespace(ns), client.MatchingLabels{omv1.LabelSubscription: name}) == nil && len(csvs.Items) == 1
	}, describeSub(t, ns, name))
	waitDeploymentAvailable(t, ns, "gadget-operator")
}

// TestRevisionsNeverStuck: every version change reaches an outcome within its deadline,
// whatever stops it, and the previous version runs again:
//   - a CSV whose requirements are never met (it owns a CRD its bundle does not ship)
//     stays Pending until the revision's deadline, which fails it naming the missing CRD;
//   - a Deployment the API server refuses as Invalid (a container named Bad_Name) fails
//     the revision with the refusal named, within the retry budget, long before the deadline;
//   - a bundle object of an API version the cluster no longer serves fails the revision
//     naming the kind and the version, before anything is applied.
func TestRevisionsNeverStuck(t *testing.T) {
	ns := "stuck"
	files := map[string]string{}
	group := "stuck.samples.operator-manager.domain"
	gadget(files, group, "1.0.0", "", nil, nil)
	gadget(files, group, "1.1.0", "gadget-operator.v1.0.0", func(s string) string {
		return strings.Replace(s, "    - {name: gadgets."+group+", version: v1, kind: Gadget}",
			"    - {name: gadgets."+group+", version: v1, kind: Gadget}\n    - {name: sprockets."+group+", version: v1, kind: Sprocket}", 1)
	}, nil)
	gadget(files, group, "1.2.0", "gadget-operator.v1.0.0", func(s string) string {
		return strings.Replace(s, "containers: [{name: manager,", "containers: [{name: Bad_Name,", 1)
	}, nil)
	gadget(files, group, "1.3.0", "gadget-operator.v1.0.0", nil, map[string]string{"psp.yaml": `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: gadget-restricted}
spec: {privileged: false}
`})
	newNamespaceWithCatalog(t, ns, writeCatalog(t, "stuck", files))
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: gadget}
spec: {startingCSV: gadget-operator.1.0.0, catalog: test, health: {timeout: 40s}}
`)
	waitRunning(t, ns, "gadget", "gadget-operator.v1.0.0")

	// Requirements never met: Pending until the deadline (40 s and its grace), then failed
	// with what it waited for, and rolled back.
	start := time.Now()
	setStartingCSV(t, ns, "gadget", "gadget-operator.1.1.0")
	eventually(t, 30*time.Second, "1.1.0 Pending on its missing CRD", func() bool {
		csv := &omv1alpha1.ClusterServiceVersion{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "gadget-operator.v1.1.0"}, csv) == nil &&
			csv.Status.Phase == omv1alpha1.CSVPending && strings.Contains(csv.Status.Message, "sprockets."+group)
	}, describeSub(t, ns, "gadget"))
	failed := waitRolledBackFrom(t, ns, "gadget", "gadget-operator.v1.1.0", 2*time.Minute)
	if failed.Reason != omv1.ReasonDeadlineExceeded || !strings.Contains(failed.Message, "sprockets."+group) || !strings.Contains(failed.Message, "not present") {
		t.Errorf("revision %d: %s %q; want %s naming the CRD sprockets.%s that is not present", failed.Revision, failed.Reason, failed.Message, omv1.ReasonDeadlineExceeded, group)
	}
	if took := failed.EndTime.Sub(start); took < 40*time.Second || took > 60*time.Second {
		t.Errorf("the revision failed after %s; want its deadline (40 s and a grace of 5 s)", took)
	}
	waitRolledBackTo(t, ns, "gadget", "gadget-operator.v1.0.0")
	if img := containerImage(t, ns, "gadget-operator"); img != "registry.example/gadget-operator:1.0.0" {
		t.Errorf("after the rollback the Deployment runs %s", img)
	}
	sub := getSub(t, ns, "gadget")
	if c := condition(sub.Status.Conditions, omv1.ConditionReady); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "sprockets") {
		t.Errorf("Subscription Ready = %+v; want False naming the missing CRD", c)
	}

	// Refused by the API server: failed with the refusal named, within the retry budget.
	start = time.Now()
	setStartingCSV(t, ns, "gadget", "gadget-operator.1.2.0")
	failed = waitRolledBackFrom(t, ns, "gadget", "gadget-operator.v1.2.0", 2*time.Minute)
	if failed.Reason != omv1.ReasonInstallFailed || !strings.Contains(failed.Message, "Bad_Name") || !strings.Contains(failed.Message, "Invalid") {
		t.Errorf("revision %d: %s %q; want %s naming the invalid container Bad_Name", failed.Revision, failed.Reason, failed.Message, omv1.ReasonInstallFailed)
	}
	if took := failed.EndTime.Sub(start); took > 35*time.Second {
		t.Errorf("a refused install failed after %s; want it within the retry budget (about 15 s), before the deadline", took)
	}
	waitRolledBackTo(t, ns, "gadget", "gadget-operator.v1.0.0")

	// An object of a removed API version: failed before anything is applied.
	setStartingCSV(t, ns, "gadget", "gadget-operator.1.3.0")
	failed = waitRolledBackFrom(t, ns, "gadget", "gadget-operator.v1.3.0", time.Minute)
	if failed.Reason != omv1.ReasonInstallFailed || !strings.Contains(failed.Message, "PodSecurityPolicy") || !strings.Contains(failed.Message, "policy/v1beta1") {
		t.Errorf("revision %d: %s %q; want %s naming PodSecurityPolicy in policy/v1beta1", failed.Revision, failed.Reason, failed.Message, omv1.ReasonInstallFailed)
	}
	if left := ownedObjects(t, ns, "gadget-operator.v1.3.0"); len(left) > 0 {
		t.Errorf("the refused version applied %v", left)
	}
	waitRolledBackTo(t, ns, "gadget", "gadget-operator.v1.0.0")
}

// setPodsCrashing writes the pods' status as a kubelet would for containers that keep
// crashing (kwok, the fake kubelet, leaves running pods' status alone).
func setPodsCrashing(t *testing.T, ns string, sel client.MatchingLabels, crashing bool) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(ctx(), pods, client.InNamespace(ns), sel); err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods %v in %s: %d, %v", sel, ns, len(pods.Items), err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		patch := client.MergeFrom(p.DeepCopy())
		ready := corev1.ConditionTrue
		if crashing {
			ready = corev1.ConditionFalse
		}
		for j := range p.Status.Conditions {
			if c := &p.Status.Conditions[j]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.LastTransitionTime = ready, metav1.Now()
			}
		}
		for j := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[j]
			cs.Ready = !crashing
			if crashing {
				cs.RestartCount = 5
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}}
			} else {
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
			}
		}
		if err := k8s.Status().Patch(ctx(), p, patch); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLiveHealthAfterSucceeded: a version that passed its health gate keeps being judged.
// Its pods start crash-looping: the Subscription turns Ready=False with the reason, and no
// rollback starts (that is not a version problem); they recover: Ready=True again.
func TestLiveHealthAfterSucceeded(t *testing.T) {
	ns := "live"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitReady(t, ns, "cache", 2*time.Minute)
	revisions := len(getBlueprint(t, ns, "cache").Status.History)
	sel := client.MatchingLabels{"app.kubernetes.io/name": "cache-operator"}
	setPodsCrashing(t, ns, sel, true)
	eventually(t, time.Minute, "Ready=False ComponentUnhealthy", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionReady)
		return c.Status == metav1.ConditionFalse && c.Reason == omv1.ReasonComponentUnhealthy && strings.Contains(c.Message, "cache-operator")
	}, describeSub(t, ns, "cache"))
	bp := getBlueprint(t, ns, "cache")
	if len(bp.Status.History) != revisions || bp.Status.Phase != omv1.BlueprintSucceeded {
		t.Errorf("a degraded running version opened revisions or left Succeeded: phase %s, %s", bp.Status.Phase, historyOf(bp))
	}
	if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionHealthy); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Blueprint Healthy = %+v", c)
	}
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(events, omv1.ReasonComponentUnhealthy) {
		t.Errorf("no %s event", omv1.ReasonComponentUnhealthy)
	}
	setPodsCrashing(t, ns, sel, false)
	waitReady(t, ns, "cache", time.Minute)
	if n := len(getBlueprint(t, ns, "cache").Status.History); n != revisions {
		t.Errorf("recovery opened revisions: %d, want %d", n, revisions)
	}
}

// TestRolloutRestartIsNoFault: `kubectl rollout restart` of a running operator rolls its
// pods while the old one serves. That is no fault and no hand change to repair: the
// Subscription stays Ready all along (its condition's transition time unchanged), and no
// ComponentUnhealthy or DriftRepaired event is told. Before, each restart said the
// operator was unhealthy and its Deployment "restored", having changed nothing.
func TestRolloutRestartIsNoFault(t *testing.T) {
	ns := "rollout-restart"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitReady(t, ns, "cache", 2*time.Minute)
	since := readySince(t, ns, "cache")
	// The namespace's quota holds the restart's new pod back a while, as a namespace at
	// its quota would, so the manager surely looks at the rollout under way (a restart on
	// the local cluster takes a moment only).
	release := harness.HoldPods(t, k8s, ns, 1)
	key := client.ObjectKey{Namespace: ns, Name: "cache-operator"}
	d := &appsv1.Deployment{}
	harness.Patch(t, k8s, key, d, func(d *appsv1.Deployment) {
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339)
	})
	restarted := d.Generation
	eventually(t, time.Minute, "the restart held back by the quota", func() bool {
		now := &appsv1.Deployment{}
		if k8s.Get(ctx(), key, now) != nil || now.Status.ObservedGeneration < restarted {
			return false
		}
		for _, c := range now.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}, describeSub(t, ns, "cache"))
	time.Sleep(5 * time.Second) // the manager's look at the rollout, and its status writes, if any
	stayedReady(t, ns, "cache", since, "the restart held back by the quota, the old pod serving")
	release()
	eventually(t, time.Minute, "the restart rolled out", func() bool {
		now := &appsv1.Deployment{}
		return k8s.Get(ctx(), key, now) == nil && now.Status.ObservedGeneration >= restarted &&
			now.Status.UpdatedReplicas == 1 && now.Status.AvailableReplicas == 1 && now.Status.Replicas == 1
	}, describeSub(t, ns, "cache"))
	time.Sleep(5 * time.Second) // the manager's look at the rollout, and its status writes, if any
	now := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), key, now); err != nil || now.Generation != restarted || now.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("the restart was undone or the Deployment changed again: generation %d (restart %d), %v", now.Generation, restarted, err)
	}
	stayedReady(t, ns, "cache", since, "the restart rolled out")
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == omv1.ReasonComponentUnhealthy || e.Reason == "DriftRepaired" {
			t.Errorf("the restart was told as %s: %s", e.Reason, e.Message)
		}
	}
}

func hasEvent(events *corev1.EventList, reason string) bool {
	for _, e := range events.Items {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// TestConfigChangeReachesDeployment: a change of spec.config of a Subscription whose
// version does not change re-renders the Deployment, which rolls through the health gate,
// without a new revision.
func TestConfigChangeReachesDeployment(t *testing.T) {
	ns := "config"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitReady(t, ns, "cache", 2*time.Minute)
	revisions := len(getBlueprint(t, ns, "cache").Status.History)
	sub := getSub(t, ns, "cache")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Config = &omv1.SubscriptionConfig{Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}},
		NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the env reaches the Deployment", func() bool {
		d := &appsv1.Deployment{}
		if k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, d) != nil {
			return false
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "LOG_LEVEL" && e.Value == "debug" {
				return d.Spec.Template.Spec.NodeSelector["kubernetes.io/os"] == "linux"
			}
		}
		return false
	}, describeSub(t, ns, "cache"))
	waitDeploymentAvailable(t, ns, "cache-operator")
	waitReady(t, ns, "cache", time.Minute)
	if n := len(getBlueprint(t, ns, "cache").Status.History); n != revisions {
		t.Errorf("a config change opened revisions: %d, want %d", n, revisions)
	}
	// Its gate is no fault: the running version is not yet judged, not unhealthy (it was
	// reported as unhealthy, a Warning, for the length of every configuration change).
	time.Sleep(2 * time.Second) // events are sent in the background
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("a Warning for a configuration change that passed its gate: %s %s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// TestDriftRepaired: a deleted Deployment and a hand-edited ClusterRole of a Succeeded
// installation are put back, with an event; with spec.paused nothing is put back until
// the Subscription is resumed.
func TestDriftRepaired(t *testing.T) {
	ns := "drift"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitReady(t, ns, "cache", 2*time.Minute)
	key := client.ObjectKey{Namespace: ns, Name: "cache-operator"}
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), key, d); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deleted Deployment back", func() bool {
		back := &appsv1.Deployment{}
		return k8s.Get(ctx(), key, back) == nil && back.UID != d.UID
	}, describeSub(t, ns, "cache"))
	waitDeploymentAvailable(t, ns, "cache-operator")

	// A ClusterRole edited by hand: its rules come back.
	roles := ownedClusterRoles(t, ns)
	role := roles[0]
	want := len(role.Rules)
	patch := client.MergeFrom(role.DeepCopy())
	role.Rules = role.Rules[:1]
	if err := k8s.Patch(ctx(), &role, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the edited ClusterRole restored", func() bool {
		for _, r := range ownedClusterRoles(t, ns) {
			if r.Name == role.Name {
				return len(r.Rules) == want
			}
		}
		return false
	}, describeSub(t, ns, "cache"))
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil || !hasEvent(events, "DriftRepaired") {
		t.Errorf("no DriftRepaired event (%v)", err)
	}

	// Paused (by the CLI's verb): drift stays until the Subscription is resumed.
	if out, err := cli("pause", "cache", "-n", ns); err != nil || !strings.Contains(out, "paused "+ns+"/cache") {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	if !getSub(t, ns, "cache").Spec.Paused {
		t.Fatal("pause did not set spec.paused")
	}
	if out, err := cli("pause", "cache", "-n", ns); err != nil || !strings.Contains(out, "already paused") {
		t.Errorf("a second pause: %v\n%s", err, out)
	}
	if out, err := cli("list", "-n", ns); err != nil || !strings.Contains(out, "(paused)") {
		t.Errorf("list does not say the installation is paused (%v):\n%s", err, out)
	}
	if wide := kubectl(t, "get", "subscription", "cache", "-n", ns, "-o", "wide"); !strings.Contains(wide, "PAUSED") || !strings.Contains(wide, "true") {
		t.Errorf("kubectl get subscription -o wide does not show spec.paused:\n%s", wide)
	}
	eventually(t, 30*time.Second, "the Subscription says it is paused", func() bool {
		c := meta.FindStatusCondition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == omv1.ReasonPaused
	}, describeSub(t, ns, "cache"))
	time.Sleep(2 * time.Second) // the CSV controller hears of the pause
	if err := k8s.Get(ctx(), key, d); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx(), d); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	if err := k8s.Get(ctx(), key, &appsv1.Deployment{}); err == nil {
		t.Errorf("the Deployment of a paused Subscription was put back")
	}
	out, err := cli("resume", "cache", "-n", ns, "--wait", "--timeout", "2m")
	if err != nil || !strings.Contains(out, "resumed "+ns+"/cache") {
		t.Fatalf("resume --wait: %v\n%s", err, out)
	}
	if getSub(t, ns, "cache").Spec.Paused {
		t.Fatal("resume did not clear spec.paused")
	}
	// --wait returned once the installation was Ready again: the Deployment is back by then.
	if err := k8s.Get(ctx(), key, &appsv1.Deployment{}); err != nil {
		t.Errorf("resume --wait returned before the Deployment was put back: %v\n%s", err, out)
	}
	waitReady(t, ns, "cache", time.Minute)
}

// TestDeletedCSVIsCreatedAgain: a CSV deleted by hand while its Subscription still asks
// for it (its finalizer removes the operator's objects) is created again from the revision
// that installed it, and its objects with it, with an event saying so and the history
// unchanged. Before, the installation stayed without an operator, reporting CSVMissing,
// until a person changed its Subscription. Uninstalling stays the Subscription's.
func TestDeletedCSVIsCreatedAgain(t *testing.T) {
	ns := "csv-deleted"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	waitReady(t, ns, "cache", 2*time.Minute)
	history := historyOf(getBlueprint(t, ns, "cache"))
	key := client.ObjectKey{Namespace: ns, Name: "cache-operator.v1.1.0"}
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := k8s.Get(ctx(), key, csv); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx(), csv); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the CSV created again and Succeeded", func() bool {
		again := &omv1alpha1.ClusterServiceVersion{}
		return k8s.Get(ctx(), key, again) == nil && again.UID != csv.UID && again.Status.Phase == omv1alpha1.CSVSucceeded
	}, describeSub(t, ns, "cache"))
	waitDeploymentAvailable(t, ns, "cache-operator")
	waitReady(t, ns, "cache", time.Minute)
	if h := historyOf(getBlueprint(t, ns, "cache")); h != history {
		t.Errorf("history %s, want it unchanged: %s", h, history)
	}
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(events, "CSVRecreated") {
		t.Errorf("no CSVRecreated event")
	}

	// Uninstalling is the Subscription's: the CSV goes, and is not created again.
	if out, err := cli("uninstall", "cache", "-n", ns, "--wait"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	time.Sleep(5 * time.Second)
	if err := k8s.Get(ctx(), key, &omv1alpha1.ClusterServiceVersion{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the uninstall the CSV is there (%v), want it gone", err)
	}
}

// TestDeletedCRDIsCreatedAgain: a CRD of the running version deleted by hand (its custom
// resources go with it, by the API server) is created again from the revision that
// installed it, as the manager's own ServiceAccount, with its provider record; the
// history is unchanged and the installation Ready again. Before, it stayed gone while
// every condition said healthy, and the operator's watches failed.
func TestDeletedCRDIsCreatedAgain(t *testing.T) {
	ns := "crd-deleted"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	uninstallAtEnd(t, ns, "cache")
	waitReady(t, ns, "cache", 2*time.Minute)
	history := historyOf(getBlueprint(t, ns, "cache"))
	const name = "caches.cache.samples.operator-manager.domain"
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx(), crd); err != nil {
		t.Fatal(err)
	}
	again := &apiextensionsv1.CustomResourceDefinition{}
	eventually(t, 2*time.Minute, "the CRD created again and Established", func() bool {
		if err := k8s.Get(ctx(), client.ObjectKey{Name: name}, again); err != nil || again.UID == crd.UID {
			return false
		}
		for _, c := range again.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}, describeSub(t, ns, "cache"))
	if got := again.Annotations["operator-manager.domain/crd-version"]; got != "1.1.0" {
		t.Errorf("the CRD created again says it is of version %q, want 1.1.0: %v", got, again.Annotations)
	}
	provided := false
	for k, v := range again.Annotations {
		provided = provided || strings.HasSuffix(k, ns+".cache") && strings.HasPrefix(v, ns+"/cache ")
	}
	if !provided {
		t.Errorf("the CRD created again lacks the installation's provider record: %v", again.Annotations)
	}
	waitReady(t, ns, "cache", time.Minute)
	if h := historyOf(getBlueprint(t, ns, "cache")); h != history {
		t.Errorf("history %s, want it unchanged: %s", h, history)
	}
	if !eventIn(t, ns, corev1.EventTypeWarning, "CRDRecreated", name) {
		t.Errorf("no Warning event CRDRecreated naming %s", name)
	}
	out, err := cli("status", "cache", "-n", ns)
	if err != nil || !strings.Contains(out, name+"   "+ns+"/cache cache-operator.v1.1.0") {
		t.Errorf("status after the CRD came back: %v\n%s", err, out)
	}
}

// TestPackageChangeRefused: a Subscription edited to name another package does not
// replace its operator with that one (before: a "Downgrade" from cache-operator 1.1.0 to
// backup-operator 0.2.0, the first operator removed). The change is refused on Resolved,
// naming what runs; install --wait ends at once with it; nothing on the cluster changes;
// the package put back, the installation is Ready again with its history as it was.
func TestPackageChangeRefused(t *testing.T) {
	ns := "package-change"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: "1.1.0", catalog: samples}
`)
	uninstallAtEnd(t, ns, "cache")
	waitReady(t, ns, "cache", 2*time.Minute)
	history := historyOf(getBlueprint(t, ns, "cache"))

	out, err := cli("install", "cache", "--package", "backup-operator", "-n", ns, "--wait", "--timeout", "2m")
	if exitCode(err) != 3 || !strings.Contains(out, omv1.ReasonPackageChanged) || !strings.Contains(out, "cache-operator.v1.1.0 runs and stays") {
		t.Errorf("install --package backup-operator over cache-operator: %v, want exit 3 saying %s:\n%s", err, omv1.ReasonPackageChanged, out)
	}
	time.Sleep(5 * time.Second) // what a wrong change would have started by now
	if h := historyOf(getBlueprint(t, ns, "cache")); h != history {
		t.Errorf("history %s after the refused change, want it unchanged: %s", h, history)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "backup-operator"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("backup-operator's Deployment: %v, want none", err)
	}
	waitDeploymentAvailable(t, ns, "cache-operator")

	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Package, s.Spec.Version = "cache-operator", "1.1.0" })
	waitReady(t, ns, "cache", time.Minute)
	if h := historyOf(getBlueprint(t, ns, "cache")); h != history {
		t.Errorf("history %s with the package put back, want it unchanged: %s", h, history)
	}
}

// TestDeletedBlueprintIsSaid: a Blueprint deleted by hand (not an uninstall) takes its
// operator with it, and the Subscription installs it again; the Subscription says so in
// a Warning event, naming what to do to uninstall, since the Blueprint's history is gone.
func TestDeletedBlueprintIsSaid(t *testing.T) {
	ns := "blueprint-deleted"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples}
`)
	uninstallAtEnd(t, ns, "cache")
	waitReady(t, ns, "cache", 2*time.Minute)
	bp := getBlueprint(t, ns, "cache")
	if err := k8s.Delete(ctx(), bp); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "a new Blueprint running cache-operator.v1.1.0", func() bool {
		again := &omv1.Blueprint{}
		return k8s.Get(ctx(), client.ObjectKeyFromObject(bp), again) == nil && again.UID != bp.UID &&
			again.Status.CurrentCSV == "cache-operator.v1.1.0" && again.Status.Phase == omv1.BlueprintSucceeded
	}, describeSub(t, ns, "cache"))
	waitReady(t, ns, "cache", time.Minute)
	if !eventIn(t, ns, corev1.EventTypeWarning, "BlueprintDeleted", "set spec.option: delete") {
		t.Error("no Warning event BlueprintDeleted on the Subscription")
	}
	// Said once: a second pass of the finalizer, from a cache that still held it, told it
	// again (found by hand).
	events := &corev1.EventList{}
	if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	told := 0
	for _, e := range events.Items {
		if e.Reason == "BlueprintDeleted" {
			told += max(1, int(e.Count))
			if e.Series != nil {
				told += int(e.Series.Count) - 1
			}
		}
	}
	if told != 1 {
		t.Errorf("BlueprintDeleted told %d times, want once", told)
	}
}

// quota makes a ResourceQuota in ns with the hard limits given, and returns what deletes
// it: a person lifting the quota.
func quota(t *testing.T, ns, name string, hard corev1.ResourceList) (lift func()) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if err := k8s.Create(ctx(), q); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := k8s.Delete(ctx(), q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefusedWritesAreSaid: a write an installation needs that the API server refuses (a
// quota on Blueprints, a quota on Secrets that the stored bundle exceeds) is said on the
// Subscription, Ready False with reason RefusedByAPIServer naming the object and the
// quota, told once in a Warning event, and the change goes on by itself once the quota is
// lifted. Before, the refused Blueprint was said only in the manager's log and the
// Subscription waited "for Installed" for good.
func TestRefusedWritesAreSaid(t *testing.T) {
	ns := "refused-writes"
	newNamespace(t, ns)
	// The API server's words name the quota ("exceeded quota: NAME", or "status unknown
	// for quota: NAME" before the quota controller has counted).
	refused := func(what, quota string, installed metav1.ConditionStatus) func() bool {
		return func() bool {
			sub := getSub(t, ns, "cache")
			ready := condition(sub.Status.Conditions, omv1.ConditionReady)
			return ready.Status == metav1.ConditionFalse && ready.Reason == omv1.ReasonRefusedByAPIServer &&
				strings.Contains(ready.Message, what) && strings.Contains(ready.Message, "quota: "+quota) &&
				condition(sub.Status.Conditions, omv1.ConditionInstalled).Status == installed
		}
	}
	// toldOnce checks that the refusal naming what was told in Warning events of kind,
	// each wording once (the API server's words change once its quota controller counts).
	toldOnce := func(kind, what string) {
		t.Helper()
		events := &corev1.EventList{}
		if err := k8s.List(ctx(), events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		told := map[string]int32{}
		for _, e := range events.Items {
			if e.Reason == omv1.ReasonRefusedByAPIServer && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == kind && strings.Contains(e.Message, what) {
				told[e.Message] += max(e.Count, 1)
			}
		}
		if len(told) == 0 {
			t.Errorf("no Warning %s event of %s naming %s", omv1.ReasonRefusedByAPIServer, kind, what)
		}
		for msg, n := range told {
			if n != 1 {
				t.Errorf("told %d times, want once: %s", n, msg)
			}
		}
	}

	// A first install whose Blueprint a quota refuses.
	lift := quota(t, ns, "no-blueprints", corev1.ResourceList{
		corev1.ResourceName("count/blueprints." + omv1.Group): resource.MustParse("0")})
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: 1.1.0, catalog: samples, targetNamespaces: [`+ns+`]}
`)
	eventually(t, time.Minute, "Ready False RefusedByAPIServer naming the Blueprint", refused("creating Blueprint "+ns+"/cache", "no-blueprints", metav1.ConditionFalse), describeSub(t, ns, "cache"))
	if out, err := cli("status", "cache", "-n", ns); err != nil || !strings.Contains(out, "no-blueprints") {
		t.Errorf("status does not name the quota: %v\n%s", err, out)
	}
	time.Sleep(35 * time.Second) // one more try (every 30 s)
	toldOnce("Subscription", "no-blueprints")
	lift()
	waitReady(t, ns, "cache", 90*time.Second)

	// An upgrade whose bundle Secret a quota refuses: 1.1.0 runs on, the change waits.
	secrets := &corev1.SecretList{}
	if err := k8s.List(ctx(), secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	lift = quota(t, ns, "few-secrets", corev1.ResourceList{corev1.ResourceSecrets: *resource.NewQuantity(int64(len(secrets.Items)), resource.DecimalSI)})
	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Version = "1.2.0" })
	eventually(t, time.Minute, "Ready False RefusedByAPIServer naming the bundle Secret, 1.1.0 installed", refused("creating Secret "+ns+"/", "few-secrets", metav1.ConditionTrue), describeSub(t, ns, "cache"))
	if err := deploymentAvailable(t, ns, "cache-operator"); err != nil {
		t.Errorf("1.1.0's Deployment while the upgrade is refused: %v", err)
	}
	time.Sleep(35 * time.Second)
	toldOnce("Blueprint", "few-secrets")
	lift()
	eventually(t, 2*time.Minute, "1.2.0 running once the quota is lifted", func() bool {
		sub := getSub(t, ns, "cache")
		return sub.Status.InstalledCSV == "cache-operator.v1.2.0" && condition(sub.Status.Conditions, omv1.ConditionReady).Status == metav1.ConditionTrue
	}, describeSub(t, ns, "cache"))
	if got := historyOf(getBlueprint(t, ns, "cache")); got != "1:cache-operator.v1.1.0:Install:Succeeded 2:cache-operator.v1.2.0:Upgrade:Succeeded" {
		t.Errorf("history = %s", got)
	}

	// An upgrade refused so until its deadline is rolled back, at the quota still: the
	// API server refuses even a create of the Secret it holds (quota admission comes
	// first), and a restarted manager, which trusts nothing it saved, must find 1.2.0's
	// stored bundle there rather than stop at the refusal. Before, the rollback waited out
	// its own deadline and failed.
	if err := k8s.List(ctx(), secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	lift = quota(t, ns, "still-few-secrets", corev1.ResourceList{corev1.ResourceSecrets: *resource.NewQuantity(int64(len(secrets.Items)), resource.DecimalSI)})
	defer lift()
	killManager(t)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	patchSub(t, ns, "cache", func(s *omv1.Subscription) {
		s.Spec.Version = "1.3.0"
		s.Spec.Health = &omv1.HealthPolicy{Timeout: &metav1.Duration{Duration: 20 * time.Second}}
	})
	failed := waitRolledBackFrom(t, ns, "cache", "cache-operator.v1.3.0", 2*time.Minute)
	if failed.Reason != omv1.ReasonDeadlineExceeded || !strings.Contains(failed.Message, "still-few-secrets") {
		t.Errorf("the failed upgrade says %s %q, want its deadline naming the quota that refused it", failed.Reason, failed.Message)
	}
	if got := historyOf(getBlueprint(t, ns, "cache")); !strings.HasSuffix(got, "3:cache-operator.v1.3.0:Upgrade:Failed 4:cache-operator.v1.2.0:Rollback:Succeeded") {
		t.Errorf("history = %s", got)
	}
}
