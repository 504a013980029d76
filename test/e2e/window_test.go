package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// TestUpgradeWindow: a Subscription whose upgrade windows are all closed installs at once,
// holds an upgrade (Ready=False OutsideUpgradeWindow, saying when the next window opens,
// the old version left running), lets a downgrade a person asks for through, and
// upgrades as soon as a window is open.
func TestUpgradeWindow(t *testing.T) {
	ns := "window"
	newNamespace(t, ns)
	// Closed: it opens on New Year's midnight, for a minute.
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec:
  package: cache-operator
  version: 1.0.0
  catalog: samples
  targetNamespaces: [window]
  upgradeWindows: [{schedule: "0 0 1 1 *", duration: 1m}]
`)
	if sub := waitReady(t, ns, "cache", 2*time.Minute); sub.Status.InstalledVersion != "1.0.0" {
		t.Fatalf("the first install, which no window holds: installed %q", sub.Status.InstalledVersion)
	}

	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Version = "1.1.0" })
	next := time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	eventually(t, time.Minute, "the upgrade held for the window", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionUpgradePending)
		return c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonOutsideUpgradeWindow
	}, describeSub(t, ns, "cache"))
	sub := getSub(t, ns, "cache")
	ready := condition(sub.Status.Conditions, omv1.ConditionReady)
	if ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "cache-operator.v1.1.0 waits for an upgrade window") ||
		!strings.Contains(ready.Message, "the next upgrade window opens at "+next) {
		t.Errorf("Ready = %+v, want False naming the held version and the next window (%s)", ready, next)
	}
	if sub.Status.InstalledVersion != "1.0.0" || getBlueprint(t, ns, "cache").Status.Phase != omv1.BlueprintUpgradeHeld {
		t.Errorf("installed %q, Blueprint %s: want 1.0.0 still running, UpgradeHeld", sub.Status.InstalledVersion, getBlueprint(t, ns, "cache").Status.Phase)
	}
	checkInstalled(t, ns, "cache-operator.v1.0.0")
	if out := kubectl(t, "get", "events", "-n", ns, "--field-selector", "reason=OutsideUpgradeWindow", "-o", "name"); strings.TrimSpace(out) == "" {
		t.Error("no OutsideUpgradeWindow event")
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `operator_manager_subscription_ready{namespace="window",package="cache-operator",reason="OutsideUpgradeWindow",state="scheduled",subscription="cache"} 0`; !strings.Contains(string(page), want) {
		t.Errorf("/metrics lacks %s", want)
	}

	if out, err := cli("status", "cache", "-n", ns); err != nil || !strings.Contains(out, `"0 0 1 1 *" for 1m0s (UTC); closed, the next upgrade window opens at `+next) {
		t.Errorf("status does not show the closed window: %v\n%s", err, out)
	}

	// A window open now (one opens every minute, each for two), given with the CLI: the
	// upgrade goes.
	if out, err := cli("install", "cache", "-n", ns, "--upgrade-window", "* * * * * for 2m"); err != nil {
		t.Fatalf("install --upgrade-window: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")

	// Closed again: a downgrade a person asks for is not held.
	patchSub(t, ns, "cache", func(s *omv1.Subscription) {
		s.Spec.UpgradeWindows = []omv1.UpgradeWindow{{Schedule: "0 0 1 1 *", Duration: metav1.Duration{Duration: time.Minute}}}
		s.Spec.Version = "1.0.0"
	})
	waitRunning(t, ns, "cache", "cache-operator.v1.0.0")

	// A window the manager cannot read holds the upgrade too, naming the field.
	patchSub(t, ns, "cache", func(s *omv1.Subscription) {
		s.Spec.UpgradeWindows = []omv1.UpgradeWindow{{Schedule: "at two", Duration: metav1.Duration{Duration: time.Hour}}}
		s.Spec.Version = "1.1.0"
	})
	eventually(t, time.Minute, "the upgrade held by an unreadable window", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionUpgradePending)
		return c.Reason == omv1.ReasonInvalidUpgradeWindow && strings.Contains(c.Message, `spec.upgradeWindows[0].schedule "at two"`)
	}, describeSub(t, ns, "cache"))
	if v := getSub(t, ns, "cache").Status.InstalledVersion; v != "1.0.0" {
		t.Errorf("installed %q under an unreadable window, want 1.0.0", v)
	}
	// A person must mend it: the state alerts act on at once (OperatorChangeFailed).
	eventually(t, 30*time.Second, "the unreadable window's series", func() bool {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return false
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(page), `operator_manager_subscription_ready{namespace="window",package="cache-operator",reason="InvalidUpgradeWindow",state="failed",subscription="cache"} 0`)
	}, nil)

	// A window that opens in 30 to 90 seconds: held until then, and upgraded by itself
	// when it opens, with nothing else changing.
	opens := time.Now().UTC().Add(90 * time.Second).Truncate(time.Minute)
	patchSub(t, ns, "cache", func(s *omv1.Subscription) {
		s.Spec.UpgradeWindows = []omv1.UpgradeWindow{{Schedule: fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()),
			Duration: metav1.Duration{Duration: 10 * time.Minute}}}
	})
	eventually(t, time.Minute, "the upgrade held until "+opens.Format(time.RFC3339), func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionUpgradePending)
		return strings.Contains(c.Message, "the next upgrade window opens at "+opens.Format(time.RFC3339))
	}, describeSub(t, ns, "cache"))
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	bp := getBlueprint(t, ns, "cache")
	if last := bp.Status.History[len(bp.Status.History)-1]; last.StartTime == nil || last.StartTime.Time.Before(opens) {
		t.Errorf("the upgrade started at %v, before its window opened at %s", last.StartTime, opens.Format(time.RFC3339))
	}
}

// TestApprovedChangeWaitsForWindow: a Manual Subscription's change approved in its
// InstallPlan outside every upgrade window waits for the window, keeping its InstallPlan
// (whose spec.approved is the approval) approved and saying what it waits for, then runs
// when a window opens, and the InstallPlan says Complete.
func TestApprovedChangeWaitsForWindow(t *testing.T) {
	ns := "window-manual"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec:
  package: cache-operator
  version: 1.0.0
  catalog: samples
  approval: Manual
  targetNamespaces: [window-manual]
  upgradeWindows: [{schedule: "0 0 1 1 *", duration: 1m}]
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.0.0")
	patchSub(t, ns, "cache", func(s *omv1.Subscription) { s.Spec.Version = "1.1.0" })
	ip := waitInstallPlan(t, ns, "cache", omv1alpha1.InstallPlanRequiresApproval)
	approvePlan(t, ip)

	eventually(t, time.Minute, "the approved change held for the window, its InstallPlan kept", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionUpgradePending)
		got := &omv1alpha1.InstallPlan{}
		return c.Reason == omv1.ReasonOutsideUpgradeWindow && k8s.Get(ctx(), client.ObjectKeyFromObject(ip), got) == nil &&
			got.Spec.Approved && got.Status.Phase == omv1alpha1.InstallPlanInstalling &&
			strings.Contains(got.Status.Message, "approved; cache-operator.v1.1.0 waits for an upgrade window")
	}, describeSub(t, ns, "cache"))
	// Held a while, the approval stands: no new InstallPlan asks again.
	time.Sleep(3 * time.Second)
	if sub := getSub(t, ns, "cache"); sub.Status.InstallPlanRef == nil || sub.Status.InstallPlanRef.Name != ip.Name ||
		sub.Status.InstalledVersion != "1.0.0" || getBlueprint(t, ns, "cache").Status.Phase != omv1.BlueprintUpgradeHeld {
		t.Errorf("after approval, outside the window: installPlanRef %v, installed %q, Blueprint %s; want %s, 1.0.0, UpgradeHeld",
			sub.Status.InstallPlanRef, sub.Status.InstalledVersion, getBlueprint(t, ns, "cache").Status.Phase, ip.Name)
	}

	patchSub(t, ns, "cache", func(s *omv1.Subscription) {
		s.Spec.UpgradeWindows = []omv1.UpgradeWindow{{Schedule: "* * * * *", Duration: metav1.Duration{Duration: 2 * time.Minute}}}
	})
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	if got := waitInstallPlan(t, ns, "cache", omv1alpha1.InstallPlanComplete); got.Name != ip.Name {
		t.Errorf("the Subscription names InstallPlan %s, want the approved %s", got.Name, ip.Name)
	}
}
