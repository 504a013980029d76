package testenv

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// TestFreePortsBelowEphemeral: the ports are distinct, bindable, and outside the range the
// kernel hands to outgoing connections, which is what took kwok's port in CI.
func TestFreePortsBelowEphemeral(t *testing.T) {
	lo, hi := portsBelowEphemeral()
	if hi == 0 {
		t.Skip("the kernel's ephemeral port range cannot be read here; FreePorts uses port 0")
	}
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi {
			t.Errorf("port %d is outside [%d, %d), below the ephemeral range", p, lo, hi)
		}
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

// TestStartRetriesTakenPort: a port taken between picking and binding (here etcd's, held
// by the test) makes Start begin again on new ports, and the control plane serves.
func TestStartRetriesTakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	calls := 0
	startPorts = func(n int) ([]int, error) {
		calls++
		ports, err := FreePorts(n)
		if err == nil && calls == 1 {
			ports[0] = held.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}
	defer func() { startPorts = FreePorts }()
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := Start(ctx, Options{Flavour: APIOnly, Dir: t.TempDir(), Progress: &progress})
	if err != nil {
		t.Fatalf("Start with etcd's port taken: %v\nprogress:\n%s", err, progress.String())
	}
	defer e.Stop()
	if calls != 2 {
		t.Errorf("ports picked %d times, want 2 (the taken set, then a new one)", calls)
	}
	if !strings.Contains(progress.String(), "starting again on new ports") {
		t.Errorf("progress does not say it started again:\n%s", progress.String())
	}
	if _, err := kubernetes.NewForConfigOrDie(e.Config).Discovery().ServerVersion(); err != nil {
		t.Errorf("the control plane started again does not serve: %v", err)
	}
}
