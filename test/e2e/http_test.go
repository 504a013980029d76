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
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

// TestHTTPCatalog installs and upgrades from a catalog served by `operator-manager catalog
// serve`, then stops the server and restarts the manager on the same disk (the catalog's
// last index, kept there, is used), then starts a fresh one with an empty bundle cache
// (as after a move to another node), and rolls back: the revision's bundle comes from the
// copy stored in the cluster, with neither network nor local cache.
func TestHTTPCatalog(t *testing.T) {
	ports, err := testenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	server := exec.Command(managerBin, "catalog", "serve", sampleDir, "--addr", addr)
	logFile, err := os.Create(filepath.Join(work, "catalog-serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	server.Stdout, server.Stderr = logFile, logFile
	server.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			_ = server.Process.Signal(syscall.SIGTERM)
			_ = server.Wait()
			stopped = true
		}
	}
	defer stop()
	eventually(t, 30*time.Second, "catalog server up", func() bool {
		resp, err := http.Get("http://" + addr + "/index.json")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, func() string { data, _ := os.ReadFile(filepath.Join(work, "catalog-serve.log")); return string(data) })

	ns := "http"
	newNamespace(t, ns)
	applyYAML(t, ns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: served}
spec: {sourceType: HTTP, url: "http://%s", pollInterval: 2s}
`, addr))
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: served}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	setStartingCSV(t, ns, "cache", "cache-operator.1.2.0")
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")

	stop()
	// Restarted on the same disk while the server is down: the index it last read is
	// kept there, so the catalog is used and the Subscription stays resolved from it.
	killManager(t)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the restarted manager saying it uses the index kept on its disk",
		catalogFailing(t, ns, "served", addr, "kept on its disk, is used"), catalogStatus(t, ns, "served"))
	waitReady(t, ns, "cache", time.Minute)
	if c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved); c.Status != metav1.ConditionTrue {
		t.Errorf("Resolved %+v with the catalog kept on disk, want True", c)
	}

	killManager(t)
	fresh := filepath.Join(work, "bundles-of-a-fresh-manager")
	if err := startManagerWith(harness.Options{Args: []string{"--cache-dir=" + fresh}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		killManager(t)
		if err := startManager(); err != nil {
			t.Fatal(err)
		}
	}()
	eventually(t, 30*time.Second, "the CatalogSource notices the server is gone", func() bool {
		cs := &omv1.CatalogSource{}
		if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "served"}, cs); err != nil {
			return false
		}
		c := condition(cs.Status.Conditions, omv1.ConditionReady)
		return c.Status == metav1.ConditionFalse && strings.Contains(c.Message, addr)
	}, func() string { return "" })
	out, err := cli("rollback", "cache", "-n", ns, "--wait")
	if err != nil {
		t.Fatalf("rollback with the catalog server down: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	waitDeploymentAvailable(t, ns, "cache-operator")
	if entries, _ := os.ReadDir(fresh); len(entries) == 0 {
		t.Errorf("the fresh manager's cache %s is empty: the bundle was not read from the cluster into it", fresh)
	}
}
