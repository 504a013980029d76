package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

// copyTree copies from into to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestChannelFollowingAndApproval: a Subscription on a channel upgrades by itself when the
// HTTP catalog gains a new head during the test; one with Manual approval waits
// (WaitingForApproval, UpgradePending naming the target) while the other proceeds, then
// upgrades after `operator-manager approve`.
func TestChannelFollowingAndApproval(t *testing.T) {
	dir := filepath.Join(work, "catalogs", "channel")
	for _, v := range []string{"cache-operator/1.0.0", "cache-operator/1.1.0", "backup-operator/0.1.0"} {
		copyTree(t, filepath.Join(sampleDir, v), filepath.Join(dir, v))
	}
	ports, err := testenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	server := exec.Command(managerBin, "catalog", "serve", dir, "--addr", addr, "--reload", "1s")
	server.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()
	eventually(t, 30*time.Second, "catalog server up", func() bool {
		resp, err := http.Get("http://" + addr + "/index.json")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, func() string { return "" })

	ns := "channel"
	newNamespace(t, ns)
	applyYAML(t, ns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: served}
spec: {sourceType: HTTP, url: "http://%s", pollInterval: 1s}
`, addr))
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, channel: stable, catalog: served}
`)
	// The Manual one from the command line, as a person would write it.
	if out, err := cli("install", "backup", "--package", "backup-operator", "--catalog", "served", "--approval", "Manual", "-n", ns); err != nil {
		t.Fatalf("install --approval Manual: %v\n%s", err, out)
	}
	uninstallAtEnd(t, ns, "backup")
	if a := getSub(t, ns, "backup").Spec.Approval; a != omv1.ApprovalManual {
		t.Fatalf("install --approval Manual wrote approval %q", a)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	waitRunning(t, ns, "backup", "backup-operator.v0.1.0")

	// The catalog gains new heads.
	copyTree(t, filepath.Join(sampleDir, "cache-operator/1.2.0"), filepath.Join(dir, "cache-operator/1.2.0"))
	copyTree(t, filepath.Join(sampleDir, "backup-operator/0.2.0"), filepath.Join(dir, "backup-operator/0.2.0"))

	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	eventually(t, time.Minute, "backup waits for approval", func() bool {
		return getBlueprint(t, ns, "backup").Status.Phase == omv1.BlueprintWaitingForApproval
	}, describeSub(t, ns, "backup"))
	// The Subscription follows its Blueprint by watch, a moment later.
	eventually(t, 30*time.Second, "the Subscription reports the pending upgrade", func() bool {
		return condition(getSub(t, ns, "backup").Status.Conditions, omv1.ConditionUpgradePending).Status == metav1.ConditionTrue
	}, describeSub(t, ns, "backup"))
	sub := getSub(t, ns, "backup")
	if c := condition(sub.Status.Conditions, omv1.ConditionUpgradePending); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "backup-operator.v0.2.0") {
		t.Errorf("UpgradePending = %+v", c)
	}
	if sub.Status.InstalledCSV != "backup-operator.v0.1.0" {
		t.Errorf("installed %s while waiting for approval", sub.Status.InstalledCSV)
	}
	// Asked again for the version that runs, the change that waits is withdrawn: no
	// revision of the running version to itself (there was one, through a health gate).
	patchSub(t, ns, "backup", func(s *omv1.Subscription) { s.Spec.Version = "0.1.0" })
	eventually(t, time.Minute, "the waiting change withdrawn", func() bool {
		bp := getBlueprint(t, ns, "backup")
		return bp.Spec.ClusterServiceVersionName == "backup-operator.v0.1.0" && bp.Status.Phase == omv1.BlueprintSucceeded &&
			eventIn(t, ns, "Normal", omv1.ReasonChangeWithdrawn, "The change to backup-operator.v0.2.0, which had not started, is withdrawn")
	}, describeSub(t, ns, "backup"))
	if h := getBlueprint(t, ns, "backup").Status.History; len(h) != 1 {
		t.Errorf("withdrawing the change opened a revision: %+v", h)
	}
	patchSub(t, ns, "backup", func(s *omv1.Subscription) { s.Spec.Version = "" })
	eventually(t, time.Minute, "backup waits for approval again", func() bool {
		return getBlueprint(t, ns, "backup").Status.Phase == omv1.BlueprintWaitingForApproval
	}, describeSub(t, ns, "backup"))
	out, err := cli("approve", "backup", "-n", ns, "--wait")
	if err != nil || !strings.Contains(out, "approved channel/backup: backup-operator.v0.2.0 replaces backup-operator.v0.1.0") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	waitRunning(t, ns, "backup", "backup-operator.v0.2.0")
	if c := condition(getSub(t, ns, "backup").Status.Conditions, omv1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready after approval = %+v", c)
	}

	// The catalog gains a head backup does not accept (it needs cache-operator <1.3.0):
	// cache stays at 1.2.0 and says why, and follows its channel again once backup is gone.
	uninstallAtEnd(t, ns, "cache")
	copyTree(t, filepath.Join(sampleDir, "cache-operator/1.3.0"), filepath.Join(dir, "cache-operator/1.3.0"))
	eventually(t, time.Minute, "cache held for backup", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved)
		return c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonHeldForDependents &&
			strings.Contains(c.Message, "backup (backup-operator.v0.2.0) requires olm.package cache-operator >=1.1.0 <1.3.0")
	}, describeSub(t, ns, "cache"))
	if bp := getBlueprint(t, ns, "cache"); bp.Spec.ClusterServiceVersionName != "cache-operator.v1.2.0" {
		t.Errorf("cache moved to %s under backup, which needs <1.3.0", bp.Spec.ClusterServiceVersionName)
	}
	// diff without a catalog reads the installation's own CatalogSource (served over
	// HTTP here), whose channel head is what it is held below.
	if out, err := cli("diff", "cache", "-n", ns); err != nil || !strings.Contains(out, "cache-operator.v1.2.0 -> cache-operator.v1.3.0") {
		t.Errorf("diff from the installation's own HTTP catalog: %v\n%s", err, out)
	}
	if out, err := cli("uninstall", "backup", "-n", ns, "--delete-subscription", "--wait"); err != nil {
		t.Fatalf("uninstall backup: %v\n%s", err, out)
	}
	eventually(t, time.Minute, "cache follows its channel again", func() bool {
		return getBlueprint(t, ns, "cache").Spec.ClusterServiceVersionName == "cache-operator.v1.3.0"
	}, describeSub(t, ns, "cache"))
}
