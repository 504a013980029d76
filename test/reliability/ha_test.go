package reliability

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/crashpoint"
	"github.com/operator-manager/operator-manager/internal/manager"
	"github.com/operator-manager/operator-manager/test/harness"
)

// metric reads one Prometheus sample from a manager's /metrics: the sum of the samples of
// name (with any labels), and whether there were any.
func metric(m *harness.Manager, name string) (float64, bool) {
	resp, err := http.Get("http://" + m.Metrics + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? ([0-9.e+-]+)$`)
	sum, found := 0.0, false
	for _, match := range re.FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(match[2], 64)
		if err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// leads reports whether a manager holds the Lease, by its own metric.
func leads(m *harness.Manager) bool {
	v, ok := metric(m, "leader_election_master_status")
	return ok && v == 1
}

// TestTwoReplicasTakeOver: two manager processes with leader election, as the shipped
// Deployment runs them. Only the leader acts: the standby writes nothing and reconciles
// nothing. The leader is killed in the middle of an upgrade; the standby takes over
// within the lease duration and finishes the upgrade from what is stored in the cluster,
// each revision once.
func TestTwoReplicasTakeOver(t *testing.T) {
	ns := "ha"
	newNamespace(t, ns, cluster.SampleDir)
	args := []string{"--leader-elect=true", "--leader-election-namespace=" + harness.ManagerNamespace,
		"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}
	env := []string{crashpoint.EnvLogWrites + "=1"}
	a, err := cluster.StartManager("ha-a", harness.Options{SamplesAsDefault: true, Args: args, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Kill()
	eventually(t, a, time.Minute, "ha-a leads", func() bool { return leads(a) }, func() string { return "" })
	b, err := cluster.StartManager("ha-b", harness.Options{SamplesAsDefault: true, Args: args, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Kill()
	eventually(t, b, 30*time.Second, "ha-b serves its metrics as a standby", func() bool {
		_, ok := metric(b, "leader_election_master_status")
		return ok
	}, func() string { return "" })

	subscribe(t, ns, "cache-operator.1.1.0", "")
	waitSettled(t, a, ns, "cache-operator.v1.1.0", omv1.BlueprintSucceeded)
	// The quota holds the new version's pod back, so the upgrade is still under way when
	// the leader dies; it goes once the leader is gone.
	release := harness.HoldPods(t, cluster.Client, ns, 1)
	setStartingCSV(t, ns, "cache-operator.1.2.0")
	eventually(t, a, time.Minute, "upgrade under way", func() bool {
		return getBlueprint(t, ns, "cache").Status.Phase == omv1.BlueprintUpgrading
	}, describe(ns, "cache"))

	// Until now the standby did nothing at all.
	if w := writesIn(b); len(w) > 0 {
		t.Errorf("the standby wrote while the leader lived: %v", w)
	}
	if n, _ := metric(b, "controller_runtime_reconcile_total"); n > 0 || leads(b) {
		t.Errorf("the standby reconciled %v times (leads: %v) while the leader lived", n, leads(b))
	}
	a.Kill()
	killed := time.Now()
	release()
	eventually(t, b, 30*time.Second, "ha-b takes over", func() bool { return leads(b) }, func() string { return "" })
	if took := time.Since(killed); took > 12*time.Second {
		t.Errorf("the standby took over after %s; want within the lease duration (6 s) and a retry", took)
	}
	waitSettled(t, b, ns, "cache-operator.v1.2.0", omv1.BlueprintSucceeded)
	checkObjects(t, ns, "cache-operator.v1.2.0")
	checkHistory(t, ns, "Install:Succeeded Upgrade:Succeeded")
	lease := &coordinationv1.Lease{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: harness.ManagerNamespace, Name: manager.LeaderElectionID}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions < 1 {
		t.Errorf("the Lease records no transition: %+v", lease.Spec)
	}
}

// TestAPIServerRestartMidUpgrade: the API server goes away right after an upgrade is asked
// for, while the manager acts on it, and comes back: the manager reconnects and the
// upgrade converges, each revision once, nothing left of the old version.
func TestAPIServerRestartMidUpgrade(t *testing.T) {
	ns := "apirestart"
	newNamespace(t, ns, cluster.SampleDir)
	m, err := cluster.StartManager("apirestart", harness.Options{SamplesAsDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Kill()
	subscribe(t, ns, "cache-operator.1.1.0", "")
	waitSettled(t, m, ns, "cache-operator.v1.1.0", omv1.BlueprintSucceeded)
	newCache(t, ns)
	setStartingCSV(t, ns, "cache-operator.1.2.0")
	time.Sleep(300 * time.Millisecond) // the manager has started on it
	if err := cluster.Env.RestartAPIServer(ctx(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
		t.Fatalf("the manager exited when the API server went away:\n%s", m.LogTail(3000))
	default:
	}
	waitSettled(t, m, ns, "cache-operator.v1.2.0", omv1.BlueprintSucceeded)
	checkObjects(t, ns, "cache-operator.v1.2.0")
	checkCache(t, ns)
	checkHistory(t, ns, "Install:Succeeded Upgrade:Succeeded")
}
