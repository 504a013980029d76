package manager_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/manager"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.APIOnly, &env)) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestManagerServesProbesMetricsAndElectsALeader starts the manager as `run` does, with
// leader election on as in a cluster, and checks what a cluster relies on: the probes
// answer, /metrics serves Prometheus text, and the Lease names the leader.
func TestManagerServesProbesMetricsAndElectsALeader(t *testing.T) {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(ports[0])
	probes := "127.0.0.1:" + strconv.Itoa(ports[1])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, env.Config, manager.Options{
			MetricsAddr: metrics, ProbeAddr: probes, LeaderElect: true, LeaderElectionNamespace: "default", Namespace: "default",
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager ended with %v", err)
		}
	}()

	deadline := time.Now().Add(time.Minute)
	for {
		code, _ := get(t, "http://"+probes+"/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 200 (last %d)", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get(t, "http://"+probes+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %s", code, body)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	for {
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: manager.LeaderElectionID}, &lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader in Lease %s: %v", manager.LeaderElectionID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, body := get(t, "http://"+metrics+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "leader_election_master_status") || !strings.Contains(body, "# TYPE") {
		t.Errorf("/metrics = %d, want Prometheus text with leader_election_master_status:\n%.500s", code, body)
	}
}
