package e2e

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestManualRollbackSticks: a channel-following Subscription rolled back by hand stays at
// the version a person chose, and its Resolved condition says until when; a change of its
// spec lets it follow the channel again.
func TestManualRollbackSticks(t *testing.T) {
	ns := "sticks"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, channel: stable, version: ">=1.0.0 <1.2.0", catalog: samples}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	sub := getSub(t, ns, "cache")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Version = ">=1.0.0 <1.3.0"
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")

	if out, err := cli("rollback", "cache", "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	eventually(t, 30*time.Second, "Resolved says it is held", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c.Reason == omv1.ReasonHeldAfterRollback && strings.Contains(c.Message, "1.2.0")
	}, describeSub(t, ns, "cache"))
	// What it wants and what runs, side by side, as kubectl shows them.
	if s := getSub(t, ns, "cache"); s.Status.CurrentCSV != "cache-operator.v1.2.0" || s.Status.InstalledCSV != "cache-operator.v1.1.0" {
		t.Errorf("held Subscription: currentCSV %q, installedCSV %q; want cache-operator.v1.2.0 wanted, cache-operator.v1.1.0 running", s.Status.CurrentCSV, s.Status.InstalledCSV)
	}
	if out := kubectl(t, "get", "subscription", "cache", "-n", ns); !strings.Contains(out, "WANTED") ||
		!regexp.MustCompile(`cache-operator\.v1\.2\.0\s+1\.1\.0\s`).MatchString(out) {
		t.Errorf("kubectl get subscription should show the CSV wanted and the version running:\n%s", out)
	}
	// `install --wait` that changes nothing (no flags) does not report the version
	// rolled back to as the install asked for: it says the installation is held, and
	// exits 5 (waits for a person).
	out, err := cli("install", "cache", "-n", ns, "--wait", "--timeout", "1m")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 5 || !strings.Contains(out, omv1.ReasonHeldAfterRollback) {
		t.Errorf("install --wait of a Subscription held after a rollback by hand: %v, want exit 5 naming %s:\n%s", err, omv1.ReasonHeldAfterRollback, out)
	}
	// Nudge the Subscription (an annotation: no spec change) and give channel following
	// every chance to move it forward again.
	sub = getSub(t, ns, "cache")
	patch = client.MergeFrom(sub.DeepCopy())
	sub.Annotations = map[string]string{"test/nudge": "1"}
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * time.Second)
	if bp := getBlueprint(t, ns, "cache"); bp.Status.CurrentCSV != "cache-operator.v1.1.0" || bp.Spec.ClusterServiceVersionName != "cache-operator.v1.1.0" {
		t.Fatalf("the manual rollback was undone: running %s, target %s (%s)", bp.Status.CurrentCSV, bp.Spec.ClusterServiceVersionName, historyOf(bp))
	}
	// Changes of the spec that ask for no other version leave it too: paused and
	// resumed (a maintenance window), its config edited. Each once brought back the
	// version the person had rolled back from.
	for _, verb := range []string{"pause", "resume"} {
		if out, err := cli(verb, "cache", "-n", ns); err != nil {
			t.Fatalf("%s: %v\n%s", verb, err, out)
		}
		time.Sleep(4 * time.Second)
	}
	sub = getSub(t, ns, "cache")
	patch = client.MergeFrom(sub.DeepCopy())
	sub.Spec.Config = &omv1.SubscriptionConfig{Env: []corev1.EnvVar{{Name: "CACHE_SIZE", Value: "64"}}}
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the config edit taken up, the version rolled back to held", func() bool {
		s := getSub(t, ns, "cache")
		c := condition(s.Status.Conditions, omv1.ConditionResolved)
		return s.Status.ObservedGeneration == s.Generation && c.Reason == omv1.ReasonHeldAfterRollback
	}, describeSub(t, ns, "cache"))
	time.Sleep(4 * time.Second)
	if bp := getBlueprint(t, ns, "cache"); bp.Status.CurrentCSV != "cache-operator.v1.1.0" || bp.Spec.ClusterServiceVersionName != "cache-operator.v1.1.0" {
		t.Fatalf("the manual rollback was undone by a pause, a resume or a config edit: running %s, target %s (%s)", bp.Status.CurrentCSV, bp.Spec.ClusterServiceVersionName, historyOf(bp))
	}
	// Asking for another version lets it follow the channel again.
	sub = getSub(t, ns, "cache")
	patch = client.MergeFrom(sub.DeepCopy())
	sub.Spec.Version = ">=1.0.0 <1.2.1"
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
}

// TestInstallWaitEndsOnRollback: `install --wait` of a version that fails and is rolled
// back returns at once with the rollback and its reason, non-zero, not at its own timeout.
func TestInstallWaitEndsOnRollback(t *testing.T) {
	ns := "waitrb"
	newNamespace(t, ns)
	if out, err := cli("install", "cache", "--csv", "cache-operator.1.2.0", "--catalog", "samples", "-n", ns, "--wait"); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	uninstallAtEnd(t, ns, "cache")
	out, err := cli("install", "cache", "--csv", "cache-operator.1.3.0", "--health-timeout", "15s", "-n", ns, "--wait", "--timeout", "5m")
	returned := time.Now()
	if err == nil || !strings.Contains(out, "RolledBack") || !strings.Contains(out, "cache-operator.v1.3.0") {
		t.Fatalf("install --wait of the broken version: err %v, want non-zero naming the rollback:\n%s", err, out)
	}
	bp := getBlueprint(t, ns, "cache")
	if bp.Status.Phase != omv1.BlueprintRolledBack {
		t.Fatalf("--wait returned before the outcome: phase %s", bp.Status.Phase)
	}
	rb := bp.Status.History[len(bp.Status.History)-1]
	if rb.Trigger != omv1.TriggerRollback || rb.EndTime == nil {
		t.Fatalf("newest revision %+v, want the finished rollback", rb)
	}
	if lag := returned.Sub(rb.EndTime.Time); lag > 5*time.Second {
		t.Errorf("--wait returned %s after the rollback finished; want within seconds", lag)
	}
}

// TestSecondSubscriptionOfAPackageRefused: two Subscriptions of one package created in the
// same instant in one namespace: exactly one installs, the other is refused naming it, and
// which one is decided the same way by every reconcile (the older, then the smaller name).
func TestSecondSubscriptionOfAPackageRefused(t *testing.T) {
	ns := "twins"
	newNamespace(t, ns)
	errs := make(chan error, 2)
	for _, name := range []string{"cache-b", "cache-a"} {
		uninstallAtEnd(t, ns, name)
		go func() {
			errs <- k8s.Create(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: omv1.SubscriptionSpec{StartingCSV: "cache-operator.1.1.0", Catalog: "samples"}})
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a, b := getSub(t, ns, "cache-a"), getSub(t, ns, "cache-b")
	winner, loser := a, b
	if b.CreationTimestamp.Before(&a.CreationTimestamp) {
		winner, loser = b, a
	}
	waitReady(t, ns, winner.Name, 2*time.Minute)
	eventually(t, 30*time.Second, loser.Name+" refused", func() bool {
		c := condition(getSub(t, ns, loser.Name).Status.Conditions, omv1.ConditionResolved)
		return c.Status == metav1.ConditionFalse && c.Reason == "PackageAlreadySubscribed" && strings.Contains(c.Message, winner.Name)
	}, describeSub(t, ns, loser.Name))
	bps := &omv1.BlueprintList{}
	if err := k8s.List(ctx(), bps, client.InNamespace(ns)); err != nil || len(bps.Items) != 1 || bps.Items[0].Name != winner.Name {
		t.Errorf("Blueprints in %s: %d (%v), want only %s's", ns, len(bps.Items), err, winner.Name)
	}
}

// TestUnresolvableSubscriptionKeepsNoOneOut: a Subscription that cannot be resolved (a
// version its catalog lacks), watching all namespaces, runs nothing and keeps no other
// installation of its package out, however long it stays wrong (a mistyped version once
// held a dependency of another namespace until its deadline failed it). Mended after the
// other installed, it is the one refused.
func TestUnresolvableSubscriptionKeepsNoOneOut(t *testing.T) {
	bad, good := "unresolved-a", "unresolved-b"
	for _, ns := range []string{bad, good} {
		newNamespace(t, ns)
		uninstallAtEnd(t, ns, "cache")
	}
	applyYAML(t, bad, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: 9.9.9, catalog: samples}
`)
	eventually(t, 30*time.Second, "the older Subscription unresolved", func() bool {
		return condition(getSub(t, bad, "cache").Status.Conditions, omv1.ConditionResolved).Reason == omv1.ReasonVersionNotFound
	}, describeSub(t, bad, "cache"))
	applyYAML(t, good, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: 1.1.0, catalog: samples, targetNamespaces: [unresolved-b]}
`)
	waitReady(t, good, "cache", 2*time.Minute)

	sub := getSub(t, bad, "cache")
	sub.Spec.Version = "1.1.0"
	if err := k8s.Update(ctx(), sub); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the mended one refused, the installed one standing", func() bool {
		c := condition(getSub(t, bad, "cache").Status.Conditions, omv1.ConditionResolved)
		return c.Status == metav1.ConditionFalse && c.Reason == "TargetNamespacesOverlap" && strings.Contains(c.Message, good+"/cache")
	}, describeSub(t, bad, "cache"))
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: bad, Name: "cache"}, &omv1.Blueprint{}); err == nil {
		t.Error("the refused Subscription has a Blueprint")
	}
}
