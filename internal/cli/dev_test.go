package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/operator-manager/operator-manager/internal/testenv"
)

// TestDevUpDown runs the README's run path for real: `operator-manager dev up` starts the full
// local cluster and the manager in the background, kubectl sees every operator-manager kind,
// `dev status` says what runs, and `dev down` leaves no process behind.
func TestDevUpDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a full local cluster")
	}
	bins, err := testenv.EnsureBinaries(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "operator-manager")
	if out, err := exec.Command("go", "build", "-o", exe, "../../cmd/operator-manager").CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	devDir := t.TempDir()
	run := func(name string, args ...string) (string, string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "OPM_DEV_DIR="+devDir)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	t.Cleanup(func() { _, _, _ = run(exe, "dev", "down") })

	start := time.Now()
	stdout, stderr, err := run(exe, "dev", "up", "--catalog", "../../samples/catalog")
	if err != nil {
		t.Fatalf("dev up: %v\n%s", err, stderr)
	}
	t.Logf("dev up took %s", time.Since(start).Round(time.Millisecond))
	m := regexp.MustCompile(`(?m)^export KUBECONFIG=(\S+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("dev up printed no export line on stdout:\n%s", stdout)
	}
	kubeconfig := m[1]
	// A person sees progress, not a library's complaint and stack trace.
	for _, noise := range []string{"log.SetLogger", "goroutine ", ".go:"} {
		if strings.Contains(stderr, noise) {
			t.Errorf("dev up printed %q:\n%s", noise, stderr)
		}
	}

	out, errOut, err := run(filepath.Join(bins, testenv.BinKubectl), "--kubeconfig", kubeconfig,
		"get", "subscriptions,blueprints,csv,catalogsources", "-A")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s%s", err, out, errOut)
	}

	out, errOut, err = run(exe, "dev", "status")
	if err != nil {
		t.Fatalf("dev status: %v\n%s%s", err, out, errOut)
	}
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "operator-manager"} {
		if !regexp.MustCompile(`(?m)^` + c + `\s+\d+\s+Running`).MatchString(out) {
			t.Errorf("dev status does not show %s Running:\n%s", c, out)
		}
	}
	metricsURL := regexp.MustCompile(`Its Prometheus metrics: (http://\S+/metrics)`).FindStringSubmatch(out)
	if metricsURL == nil {
		t.Errorf("dev status does not say where the manager's metrics are:\n%s", out)
	} else {
		// The default catalog's series, once the manager has loaded it.
		var body []byte
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			resp, err := http.Get(metricsURL[1])
			if err != nil {
				t.Fatalf("the metrics dev status names: %v", err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), `operator_manager_catalog_ready{catalogsource="default"`) {
				break
			}
		}
		if !strings.Contains(string(body), `operator_manager_catalog_ready{catalogsource="default"`) {
			t.Errorf("%s serves no operator_manager_catalog_ready of the default catalog:\n%.2000s", metricsURL[1], body)
		}
	}
	// A second `up` finds the running cluster instead of starting another.
	if stdout2, _, err := run(exe, "dev", "up"); err != nil || !strings.Contains(stdout2, kubeconfig) {
		t.Errorf("second dev up: %v, stdout %q", err, stdout2)
	}
	if stdout2, _, err := run(exe, "dev", "up", "-o", "json"); err != nil || !strings.Contains(stdout2, `"kubeconfig": "`+kubeconfig+`"`) {
		t.Errorf("dev up -o json: %v, stdout %q", err, stdout2)
	}

	out, errOut, err = run(exe, "dev", "status", "-o", "json")
	if err != nil || !strings.Contains(out, `"running": true`) {
		t.Errorf("dev status -o json: %v\n%s%s", err, out, errOut)
	}
	pids := regexp.MustCompile(`"pid": (\d+)`).FindAllStringSubmatch(out, -1)
	if len(pids) != 6 {
		t.Fatalf("dev status -o json lists %d processes, want 6:\n%s", len(pids), out)
	}

	if out, errOut, err = run(exe, "dev", "down"); err != nil {
		t.Fatalf("dev down: %v\n%s%s", err, out, errOut)
	}
	for _, p := range pids {
		if _, err := os.Stat("/proc/" + p[1]); err == nil {
			stat, _ := os.ReadFile("/proc/" + p[1] + "/stat")
			if !strings.Contains(string(stat), ") Z ") {
				t.Errorf("process %s still runs after dev down", p[1])
			}
		}
	}
	if out, _, _ = run(exe, "dev", "status"); !strings.Contains(out, "nothing runs") {
		t.Errorf("dev status after down: %q", out)
	}
}
