// Package e2e runs operator-manager end to end on the full local cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok), with the manager binary
// running as it would in a cluster: a separate process, built from cmd/operator-manager,
// authenticated as its own ServiceAccount with the RBAC config/rbac ships.
package e2e

import (
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

var (
	cluster    *harness.Cluster
	env        *testenv.Env
	k8s        client.Client
	managerBin string
	work       string
	sampleDir  string
	// mgr is the manager every test shares; tests that restart it set it anew.
	mgr         *harness.Manager
	metricsAddr string
)

// managerNamespace is where the manager keeps its own objects.
const managerNamespace = harness.ManagerNamespace

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, &cluster, func(c *harness.Cluster) error {
		env, k8s, managerBin, work, sampleDir = c.Env, c.Client, c.ManagerBin, c.Work, c.SampleDir
		return startManager()
	}))
}

// startManager runs the shared manager, as `dev up` does.
func startManager() error {
	return startManagerWith(harness.Options{})
}

// startManagerWith runs the shared manager with extra flags or environment.
func startManagerWith(o harness.Options) error {
	p, err := cluster.StartManager("manager", o)
	if err != nil {
		return err
	}
	mgr, metricsAddr = p, p.Metrics
	return nil
}

// killManager ends the shared manager abruptly (SIGKILL), as a crash or node loss would.
func killManager(t *testing.T) {
	t.Helper()
	mgr.Kill()
}

// communityDir is the shared community catalog, or "" when it is absent.
func communityDir() string { return harness.CommunityDir() }

func managerLog() string { return mgr.LogTail(6000) }

// eventually polls cond until it holds or the timeout passes, then fails with describe().
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	harness.Eventually(t, timeout, 250*time.Millisecond, what, cond, describe, managerLog)
}

// eventuallyEvery is eventually, looking every interval.
func eventuallyEvery(t *testing.T, timeout, interval time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	harness.Eventually(t, timeout, interval, what, cond, describe, managerLog)
}
