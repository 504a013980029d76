// Package harness runs operator-manager end to end on a full local cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok) for the test packages
// under test/: it builds the manager binary, installs the CRDs, gives the manager its own
// identity (a token of its ServiceAccount bound to config/rbac exactly as shipped, never
// the cluster administrator's certificate), and starts, kills and restarts manager
// processes as a cluster would. Each test package gets its own cluster, so packages run
// in parallel.
package harness

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

// ManagerNamespace is where the manager keeps its own objects (the default CatalogSource,
// its Lease), as in a cluster deployed from config/default.
const ManagerNamespace = config.ManagerNamespace

// Cluster is one full local cluster with what the tests need around it.
type Cluster struct {
	Env *testenv.Env
	// Client acts as the cluster administrator: the tests' own view and actions.
	Client client.Client
	// Work is a scratch directory: logs, the manager binary, the bundle cache, catalogs
	// (<Work>/catalogs, which Directory CatalogSources may read).
	Work string
	// ManagerBin is the manager binary, built from cmd/operator-manager.
	ManagerBin string
	// SampleDir is the project's sample catalog.
	SampleDir string
	// ManagerKubeconfig holds only a token of the manager's own ServiceAccount.
	ManagerKubeconfig string
}

// Main starts a full cluster for a test package, runs then (to start a manager, say) and
// the package's tests, and stops it all:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m, &cluster, startManager)) }
func Main(m *testing.M, c **Cluster, then ...func(*Cluster) error) int {
	return MainWith(m, testenv.Options{}, c, then...)
}

// MainWith is Main with options for the full cluster (node address, aggregator routing).
func MainWith(m *testing.M, opts testenv.Options, c **Cluster, then ...func(*Cluster) error) int {
	// The tests' own clients log nothing a test reads; without a logger set,
	// controller-runtime prints a warning with a stack trace into the test output.
	ctrllog.SetLogger(logr.Discard())
	var env *testenv.Env
	opts.Flavour = testenv.Full
	return testenv.MainWith(m, opts, &env, func(e *testenv.Env) error {
		cl, err := NewCluster(e)
		if err != nil {
			return err
		}
		*c = cl
		for _, f := range then {
			if err := f(cl); err != nil {
				return err
			}
		}
		return nil
	})
}

// NewCluster prepares a full cluster started elsewhere (testenv.Start) as MainWith does:
// the manager binary, the CRDs, the manager's own identity. A test that compares several
// fresh clusters (test/fleet) starts and stops them itself.
func NewCluster(e *testenv.Env) (*Cluster, error) {
	c := &Cluster{Env: e}
	var err error
	if c.Work, err = os.MkdirTemp("", "operator-manager-e2e-"); err != nil {
		return nil, err
	}
	root := ModuleRoot()
	c.SampleDir = SampleDir()
	c.ManagerBin = filepath.Join(c.Work, "operator-manager")
	build := exec.Command("go", "build", "-o", c.ManagerBin, "./cmd/operator-manager")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the manager: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(c.Work, "catalogs"), 0o755); err != nil {
		return nil, err
	}
	admin, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	if err := config.InstallCRDs(context.Background(), admin); err != nil {
		return nil, err
	}
	// As config/default installs it: the API server adds the Subscription finalizer.
	if names, err := config.InstallAdmission(context.Background(), admin); err != nil {
		return nil, err
	} else if len(names) == 0 {
		return nil, fmt.Errorf("the API server does not serve admission policies (config/admission)")
	}
	// A new client discovers the kinds the CRDs just added.
	if c.Client, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
		return nil, err
	}
	if c.ManagerKubeconfig, err = e.ManagerKubeconfig(context.Background()); err != nil {
		return nil, fmt.Errorf("giving the manager its own identity: %w", err)
	}
	return c, nil
}

// SampleDir is the project's sample catalog.
func SampleDir() string { return filepath.Join(ModuleRoot(), "samples", "catalog") }

// PackageNamespace is a test's namespace for a package: prefix-package, made a DNS label.
func PackageNamespace(prefix, pkg string) string {
	ns := prefix + "-" + strings.ToLower(pkg)
	if len(ns) > 63 {
		ns = strings.TrimRight(ns[:63], "-.")
	}
	return strings.ReplaceAll(ns, ".", "-")
}

// ModuleRoot is the directory of go.mod, found from this source file.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CommunityDir is the shared community catalog, or "" when it is absent.
func CommunityDir() string {
	if dir := os.Getenv("OPM_COMMUNITY_CATALOG"); dir != "" {
		return dir
	}
	dir := filepath.Join(ModuleRoot(), "..", "shared", "catalogs", "community-operators")
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// Manager is one running manager process.
type Manager struct {
	Name    string
	Cmd     *exec.Cmd
	Metrics string // host:port of /metrics
	Probes  string // host:port of /healthz and /readyz
	Log     string
	logFrom int64 // where this run's lines begin in Log, which the runs of one name share
	done    chan struct{}
	exit    int
}

// Options of a manager process beyond the defaults.
type Options struct {
	// SamplesAsDefault makes the project's samples the default catalog instead of the
	// community catalog (837 CSVs to load at every start): for tests that restart the
	// manager often and need only the samples.
	SamplesAsDefault bool
	// Args are extra flags of `run` (later flags override earlier ones).
	Args []string
	// Env is extra environment (a crash point).
	Env []string
	// MemoryLimit (bytes), when set, runs the manager in a memory cgroup of its own with
	// that limit, as a container's: StartManager fails where cgroups cannot be made.
	MemoryLimit int64
}

// StartManager runs `operator-manager run` as a separate process, as the manager's
// ServiceAccount, with the default catalog (the community catalog when present, so the
// seed's Subscription works as written; else the samples), logging to <Work>/<name>.log.
func (c *Cluster) StartManager(name string, o Options) (*Manager, error) {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.Work, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defaultCatalog := c.SampleDir
	if dir := CommunityDir(); dir != "" && !o.SamplesAsDefault {
		defaultCatalog = dir
	}
	m := &Manager{Name: name, Log: logPath, done: make(chan struct{}),
		Metrics: "127.0.0.1:" + strconv.Itoa(ports[0]), Probes: "127.0.0.1:" + strconv.Itoa(ports[1])}
	args := []string{"run", "--kubeconfig=" + c.ManagerKubeconfig, "--catalog=" + defaultCatalog, "--catalog-dirs=" + c.SampleDir,
		"--cache-dir=" + filepath.Join(c.Work, "bundles"), "--manager-namespace=" + ManagerNamespace,
		"--catalog-dirs=" + filepath.Join(c.Work, "catalogs"),
		"--metrics-bind-address=" + m.Metrics, "--health-probe-bind-address=" + m.Probes, "--leader-elect=false"}
	argv := append([]string{c.ManagerBin}, append(args, o.Args...)...)
	var cg *memoryCgroup
	if o.MemoryLimit > 0 {
		if cg, err = newMemoryCgroup("operator-manager-"+name, o.MemoryLimit); err != nil {
			logFile.Close()
			return nil, err
		}
		// The shell moves itself into the cgroup, then becomes the manager: the manager
		// reads its limit from its first instruction on, as in a container.
		argv = append([]string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.procs()}, argv...)
	}
	m.Cmd = exec.Command(argv[0], argv[1:]...)
	m.Cmd.Env = append(os.Environ(), o.Env...)
	m.Cmd.Stdout, m.Cmd.Stderr = logFile, logFile
	m.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(logFile, "=== %s: starting %s\n", time.Now().Format(time.RFC3339Nano), name)
	if st, err := logFile.Stat(); err == nil {
		m.logFrom = st.Size()
	}
	if err := m.Cmd.Start(); err != nil {
		logFile.Close()
		if cg != nil {
			cg.remove()
		}
		return nil, err
	}
	go func() {
		_ = m.Cmd.Wait()
		m.exit = m.Cmd.ProcessState.ExitCode()
		logFile.Close()
		if cg != nil {
			cg.remove()
		}
		close(m.done)
	}()
	return m, nil
}

// APIRequests reads the manager's requests to the API server so far, by "verb resource"
// (its operator_manager_api_requests_total metric: "get secrets", "patch
// blueprints.<group>/status").
func (m *Manager) APIRequests() (map[string]float64, error) { return m.apiRequests(false) }

// APIRequestsWithCodes is APIRequests by "verb resource code", code being the API
// server's answer ("200", "429") or "error".
func (m *Manager) APIRequestsWithCodes() (map[string]float64, error) { return m.apiRequests(true) }

func (m *Manager) apiRequests(withCode bool) (map[string]float64, error) {
	resp, err := http.Get("http://" + m.Metrics + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	const prefix = "operator_manager_api_requests_total{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, prefix), "} ")
		if !ok {
			continue
		}
		var verb, resource, code string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "verb":
				verb = v
			case "resource":
				resource = v
			case "code":
				code = v
			}
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		key := verb + " " + resource
		if withCode {
			key += " " + code
		}
		out[key] += n
	}
	return out, sc.Err()
}

// Kill ends the process abruptly (SIGKILL), as a crash or node loss would, and waits.
func (m *Manager) Kill() {
	_ = m.Cmd.Process.Kill()
	<-m.done
}

// Done is closed when the process has exited.
func (m *Manager) Done() <-chan struct{} { return m.done }

// ExitCode is the process's exit code once Done.
func (m *Manager) ExitCode() int { return m.exit }

// LogSinceStart is all this run of the manager has logged: its log from where the run
// began, none of an earlier run of the same name.
func (m *Manager) LogSinceStart() string {
	data, _ := os.ReadFile(m.Log)
	if int64(len(data)) < m.logFrom {
		return ""
	}
	return string(data[m.logFrom:])
}

// LogTail is the end of the manager's log.
func (m *Manager) LogTail(n int) string {
	data, _ := os.ReadFile(m.Log)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// Eventually polls cond every interval until it holds or the timeout passes, then fails
// with describe() and the end of the manager's log.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func() bool, describe func() string, log func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s\n%s\n--- manager log (end) ---\n%s", what, timeout, describe(), log())
		}
		time.Sleep(interval)
	}
}

// Patch reads the object at key into obj, applies change and sends what changed as a
// merge patch, as a person editing it would; a failure fails the test.
func Patch[T client.Object](t testing.TB, c client.Client, key client.ObjectKey, obj T, change func(T)) {
	t.Helper()
	if err := c.Get(context.Background(), key, obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	change(obj)
	if err := c.Patch(context.Background(), obj, patch); err != nil {
		t.Fatal(err)
	}
}

// WatchOwnNamespace makes a Subscription that names no target namespaces watch only its
// own, for suites that install one package in many namespaces at once: installations of
// a package side by side must not overlap, so two watching all namespaces (the default
// where the CSV supports it) would be refused with TargetNamespacesOverlap. Other kinds,
// and a Subscription that names its targets (even none, `[]`), are left as they are.
func WatchOwnNamespace(u *unstructured.Unstructured) {
	if u.GetKind() != "Subscription" {
		return
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "targetNamespaces"); !found {
		_ = unstructured.SetNestedStringSlice(u.Object, []string{u.GetNamespace()}, "spec", "targetNamespaces")
	}
}

// HoldPods keeps a namespace at the pods it has now, with a ResourceQuota of that many, so
// a rollout's new pod is refused and the change stays under way until the returned
// release is called. A change on the local cluster takes about a second, too short to land
// a kill inside it by looking for it; this one lasts as long as the test needs.
func HoldPods(t testing.TB, c client.Client, ns string, pods int) (release func()) {
	t.Helper()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "hold-pods", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)}}}
	if err := c.Create(context.Background(), quota); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := c.Delete(context.Background(), quota); err != nil {
			t.Fatal(err)
		}
	}
}
