// Package badinput feeds operator-manager bad and hostile inputs on the full local cluster
// (malformed catalog files, lying catalog servers, Subscriptions, Blueprints and CSVs edited
// to nonsense, bundles the cluster refuses) and checks that each ends in a condition or an
// API error naming the problem, that nothing is left half-installed, and that the manager
// neither panics nor stops working. The cases are one table, in badinput_test.go.
package badinput

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/test/harness"
)

var (
	cluster *harness.Cluster
	// k8s is the cluster administrator's client.
	k8s client.Client
	// mgr is the one manager every case shares.
	mgr *harness.Manager
)

// defaultParallel is how many cases run at once unless -parallel is given: the cases
// mostly wait on the manager, so more than GOMAXPROCS of them fit on two cores.
const defaultParallel = "8"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", defaultParallel)
	}
	os.Exit(harness.Main(m, &cluster, func(c *harness.Cluster) error {
		k8s = c.Client
		p, err := c.StartManager("manager", harness.Options{})
		mgr = p
		return err
	}))
}

func managerLog() string { return mgr.LogTail(8000) }

// eventually polls cond until it holds or the timeout passes, then fails with describe()
// and the end of the manager's log.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	harness.Eventually(t, timeout, 500*time.Millisecond, what, cond, describe, managerLog)
}

// checkManagerAlive fails when the manager process has exited or its log shows a panic
// (controller-runtime recovers panics in reconcilers and logs them).
func checkManagerAlive(t *testing.T) {
	t.Helper()
	select {
	case <-mgr.Done():
		t.Errorf("the manager exited with code %d\n%s", mgr.ExitCode(), managerLog())
		return
	default:
	}
	data, err := os.ReadFile(mgr.Log)
	if err != nil {
		t.Error(err)
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(strings.ToLower(line), "panic") {
			t.Errorf("the manager's log shows a panic: %s", line)
			return
		}
	}
}
