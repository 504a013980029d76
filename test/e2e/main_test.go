// Package e2e runs operator-manager end to end on the full local cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok), with the manager binary
// running as it would in a cluster: a separate process, built from cmd/operator-manager.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var (
	env        *testenv.Env
	k8s        client.Client
	managerBin string
	work       string
	mgr        *managerProcess
	sampleDir  string
	// managerKubeconfig holds only a token of the manager's own ServiceAccount, bound to
	// config/rbac exactly as shipped: every test runs the manager as itself, never as
	// the cluster administrator.
	managerKubeconfig string
)

// managerNamespace is where the manager keeps its own objects (the default
// CatalogSource, its Lease), as in a cluster deployed from config/default.
const managerNamespace = config.ManagerNamespace

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Full, &env, setup))
}

func setup(e *testenv.Env) error {
	var err error
	if work, err = os.MkdirTemp("", "operator-manager-e2e-"); err != nil {
		return err
	}
	if sampleDir, err = filepath.Abs("../../samples/catalog"); err != nil {
		return err
	}
	managerBin = filepath.Join(work, "operator-manager")
	if out, err := exec.Command("go", "build", "-o", managerBin, "../../cmd/operator-manager").CombinedOutput(); err != nil {
		return fmt.Errorf("building the manager: %v\n%s", err, out)
	}
	c, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	if err := config.InstallCRDs(context.Background(), c); err != nil {
		return err
	}
	if k8s, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
		return err
	}
	if managerKubeconfig, err = e.ManagerKubeconfig(context.Background()); err != nil {
		return fmt.Errorf("giving the manager its own identity: %w", err)
	}
	return startManager()
}

// startManager runs `operator-manager run` against the cluster, as `dev up` does: as the
// manager's ServiceAccount, with the RBAC config/rbac ships.
func startManager() error {
	p, err := launchManager("manager", nil, nil)
	if err != nil {
		return err
	}
	mgr, metricsAddr = p, p.metrics
	return nil
}

// managerProcess is one running manager.
type managerProcess struct {
	cmd     *exec.Cmd
	metrics string
	log     string
	done    chan struct{} // closed when the process has exited
	exit    int           // its exit code, once done
}

// kill ends the process abruptly (SIGKILL), as a crash or node loss would, and waits.
func (p *managerProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// launchManager starts a manager process writing to <work>/<name>.log, with extra flags
// and environment (a crash point, leader election, a default service account).
func launchManager(name string, extraArgs, extraEnv []string) (*managerProcess, error) {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(work, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The default catalog is the community catalog when present, so the seed's Subscription
	// works exactly as written; tests of the project's samples name their CatalogSource.
	defaultCatalog := sampleDir
	if dir := communityDir(); dir != "" {
		defaultCatalog = dir
	}
	args := []string{"run", "--kubeconfig=" + managerKubeconfig, "--catalog=" + defaultCatalog, "--catalog-dirs=" + sampleDir,
		"--cache-dir=" + filepath.Join(work, "bundles"), "--manager-namespace=" + managerNamespace, "--catalog-dirs=" + filepath.Join(work, "catalogs"),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(ports[0]), "--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(ports[1]),
		"--leader-elect=false"}
	cmd := exec.Command(managerBin, append(args, extraArgs...)...)
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &managerProcess{cmd: cmd, metrics: "127.0.0.1:" + strconv.Itoa(ports[0]), log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.exit = cmd.ProcessState.ExitCode()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

var metricsAddr string

// killManager ends the manager abruptly (SIGKILL), as a crash or node loss would.
func killManager(t *testing.T) {
	t.Helper()
	mgr.kill()
}

// communityDir is the shared community catalog, or "" when it is absent.
func communityDir() string {
	if dir := os.Getenv("OPM_COMMUNITY_CATALOG"); dir != "" {
		return dir
	}
	dir, _ := filepath.Abs("../../../shared/catalogs/community-operators")
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

func managerLog() string {
	data, _ := os.ReadFile(filepath.Join(work, "manager.log"))
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	return string(data)
}

// eventually polls cond until it holds or the timeout passes, then fails with describe().
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	eventuallyEvery(t, timeout, 250*time.Millisecond, what, cond, describe)
}

// eventuallyEvery is eventually, looking every interval.
func eventuallyEvery(t *testing.T, timeout, interval time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s\n%s\n--- manager log (end) ---\n%s", what, timeout, describe(), managerLog())
		}
		time.Sleep(interval)
	}
}
