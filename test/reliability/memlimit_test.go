package reliability

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/operator-manager/operator-manager/test/harness"
)

// TestManagerTakesItsContainersMemoryLimit: run in a memory cgroup with the shipped
// Deployment's limit (256 MiB), as in its container, the manager sets Go's soft memory
// limit to nine tenths of it (--memory-limit-ratio), says so in its log, shows it in its
// go_gc_gomemlimit_bytes metric, and installs as usual.
func TestManagerTakesItsContainersMemoryLimit(t *testing.T) {
	const limit = 256 << 20
	m, err := cluster.StartManager("memlimit", harness.Options{SamplesAsDefault: true, MemoryLimit: limit})
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("cannot run the manager in a memory cgroup of its own without root: %v", err)
		}
		t.Fatal(err)
	}
	defer m.Kill()
	ns := "memlimit"
	newNamespace(t, ns, cluster.SampleDir)
	apply(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.2.0, catalog: samples}
`)
	eventually(t, m, 3*time.Minute, ns+"/cache Ready", func() bool { return ready(getSub(t, ns, "cache")) }, describe(ns, "cache"))
	if log := m.LogTail(1 << 20); !strings.Contains(log, "Go memory limit 230 MiB") {
		t.Errorf("the manager's log does not say it took nine tenths of its container's 256 MiB (\"Go memory limit 230 MiB\"):\n%s", m.LogTail(3000))
	}
	got, ok := metric(m, "go_gc_gomemlimit_bytes")
	if want := float64(limit) * 0.9; !ok || got < want-1 || got > want+1 {
		t.Errorf("go_gc_gomemlimit_bytes %v (present %v), want %v", got, ok, want)
	}
}
