// Package testenv starts a real local Kubernetes control plane built from source: the
// API-only flavour (etcd and kube-apiserver) for integration tests, and the full flavour
// (plus kube-controller-manager, kube-scheduler and kwok with fake nodes) where a
// Deployment really rolls out and becomes Available. Tests, benchmarks and
// `operator-manager dev` share it.
package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Flavour is which components run.
type Flavour string

const (
	// APIOnly runs etcd and kube-apiserver: enough for controllers and validation.
	APIOnly Flavour = "api"
	// Full adds kube-controller-manager, kube-scheduler and kwok with fake nodes, so
	// Deployments create ReplicaSets and pods that are scheduled and become Ready.
	Full Flavour = "full"
)

// Options say what to start and where.
type Options struct {
	Flavour Flavour
	// Dir holds data, logs, certificates and the kubeconfig; empty means a temporary
	// directory removed by Stop.
	Dir string
	// Detached processes outlive the caller (for `dev up`); Stop or Load(...).Stop ends them.
	Detached bool
	// Progress receives what is being built or started; nil discards it.
	Progress io.Writer
	// Nodes is how many fake nodes the full flavour creates (default 1).
	Nodes int
	// NodeIP is the address of the fake nodes, and so of hostNetwork pods: a test that
	// serves what such a pod would serve listens on it. Empty keeps kwok's default.
	NodeIP string
	// AggregatorRouting makes the API server call aggregated APIs (and webhooks) at their
	// Service's endpoints rather than its cluster IP, which nothing routes here.
	AggregatorRouting bool
	// ControllerManagerArgs are extra flags of the full flavour's kube-controller-manager
	// (for example --kube-api-qps, whose default of 20 requests a second all its
	// controllers share here).
	ControllerManagerArgs []string
}

// Env is a running control plane.
type Env struct {
	Flavour    Flavour    `json:"flavour"`
	Dir        string     `json:"dir"`
	Kubeconfig string     `json:"kubeconfig"`
	Server     string     `json:"server"`
	Processes  []*process `json:"processes"`
	ownsDir    bool
	// Config is a client configuration for the admin user.
	Config *rest.Config `json:"-"`
}

const stateFile = "state.json"

// Start starts a control plane and waits until it serves (and, in the full flavour, until
// a fake node is Ready and the controller manager has made the default service account).
// On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Flavour == "" {
		opts.Flavour = APIOnly
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	bins, err := EnsureBinaries(ctx, opts.Progress)
	if err != nil {
		return nil, err
	}
	// etcd's data of an earlier environment in opts.Dir is kept across attempts; data a
	// failed attempt made is not, since it names that attempt's ports.
	etcdData := ""
	if opts.Dir != "" {
		if _, err := os.Stat(filepath.Join(opts.Dir, "etcd-data")); os.IsNotExist(err) {
			etcdData = filepath.Join(opts.Dir, "etcd-data")
		}
	}
	// A port FreePorts found free can still be taken before its component binds it (by
	// another test package's picker): start again on new ports, a few times.
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, opts, bins)
		if err == nil || !addressInUse(err) || attempt == 3 || ctx.Err() != nil {
			return e, err
		}
		fmt.Fprintf(opts.Progress, "a port was taken before its component bound it; starting again on new ports (%v)\n", firstLine(err))
		if etcdData != "" {
			_ = os.RemoveAll(etcdData)
		}
	}
}

// startPorts picks a control plane's ports; a test replaces it to hand Start a taken one.
var startPorts = FreePorts

// firstLine is an error's first line, for a progress message.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// start is one attempt of Start.
func start(ctx context.Context, opts Options, bins string) (_ *Env, err error) {
	e := &Env{Flavour: opts.Flavour, Dir: opts.Dir}
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "operator-manager-env-"); err != nil {
			return nil, err
		}
		e.ownsDir = true
	} else if err := os.MkdirAll(e.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	p, err := writePKI(filepath.Join(e.Dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("writing certificates: %w", err)
	}
	ports, err := startPorts(6)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	e.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := e.writeKubeconfig(p); err != nil {
		return nil, err
	}
	start := func(name, bin string, args ...string) error {
		fmt.Fprintf(opts.Progress, "starting %s (log %s)\n", name, filepath.Join(e.Dir, name+".log"))
		proc, err := startProcess(e.Dir, name, filepath.Join(bins, bin), opts.Detached, args...)
		if err != nil {
			return err
		}
		e.Processes = append(e.Processes, proc)
		return e.saveState()
	}
	if err := start("etcd", binEtcd,
		"--name=default", "--data-dir="+filepath.Join(e.Dir, "etcd-data"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--log-level=warn",
		// Throwaway data: fsync buys nothing and costs seconds on a busy disk.
		"--unsafe-no-fsync=true", "--quota-backend-bytes=4294967296"); err != nil {
		return nil, err
	}
	if err := start("kube-apiserver", binAPIServer,
		"--etcd-servers="+etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--tls-cert-file="+p.ServingCert, "--tls-private-key-file="+p.ServingKey,
		"--client-ca-file="+p.CAFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.SAPub, "--service-account-signing-key-file="+p.SAKey,
		"--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=RBAC",
		"--allow-privileged=true", "--enable-priority-and-fairness=false",
		// Loopback may not be advertised in the kubernetes Service endpoints; nothing here
		// reaches the API server through that Service.
		"--endpoint-reconciler-type=none",
		// On SIGTERM, finish the requests in flight, then give long-running ones (watches) 2s
		// instead of --request-timeout (60s): Stop and RestartAPIServer take seconds, not a
		// minute, and clients see the restart at once and reconnect.
		"--shutdown-send-retry-after=true",
		"--cert-dir="+filepath.Join(e.Dir, "pki"),
		"--enable-aggregator-routing="+strconv.FormatBool(opts.AggregatorRouting)); err != nil {
		return nil, err
	}
	if err := e.waitServing(ctx, 90*time.Second); err != nil {
		return nil, err
	}
	if opts.Flavour == Full {
		kc := e.Kubeconfig
		kcmArgs := append([]string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[3]),
			"--controllers=*,-serviceaccount-token", "--root-ca-file=" + p.CAFile,
			"--service-account-private-key-file=" + p.SAKey, "--use-service-account-credentials=false",
			"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10"}, opts.ControllerManagerArgs...)
		if err := start("kube-controller-manager", binController, kcmArgs...); err != nil {
			return nil, err
		}
		if err := start("kube-scheduler", binScheduler,
			"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[4])); err != nil {
			return nil, err
		}
		stages := filepath.Join(bins, kwokStages)
		extra, err := writeProjectStages(e.Dir)
		if err != nil {
			return nil, err
		}
		kwokArgs := []string{"--kubeconfig=" + kc, "--manage-all-nodes=true", "--config=" + stages, "--config=" + extra,
			"--node-lease-duration-seconds=40", "--cidr=10.244.0.0/16",
			"--server-address=127.0.0.1:" + strconv.Itoa(ports[5])}
		if opts.NodeIP != "" {
			kwokArgs = append(kwokArgs, "--node-ip="+opts.NodeIP)
		}
		if err := start("kwok", binKwok, kwokArgs...); err != nil {
			return nil, err
		}
		if err := e.waitFull(ctx, opts.Nodes, 120*time.Second); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(opts.Progress, "control plane (%s) serving at %s\n", opts.Flavour, e.Server)
	return e, nil
}

// Stop ends every component, newest first, and removes a temporary directory.
func (e *Env) Stop() {
	for i := len(e.Processes) - 1; i >= 0; i-- {
		e.Processes[i].stop(10 * time.Second)
	}
	if e.ownsDir {
		_ = os.RemoveAll(e.Dir)
	} else {
		_ = os.Remove(filepath.Join(e.Dir, stateFile))
	}
}

// Load reads the state of a detached environment started in dir.
func Load(dir string) (*Env, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	e := &Env{}
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, stateFile), err)
	}
	if e.Config, err = clientcmd.BuildConfigFromFlags("", e.Kubeconfig); err != nil {
		return nil, err
	}
	return e, nil
}

// ComponentStatus is whether one component of an environment runs.
type ComponentStatus struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Running bool   `json:"running"`
	Log     string `json:"log"`
}

// Status reports each component's process.
func (e *Env) Status() []ComponentStatus {
	var out []ComponentStatus
	for _, p := range e.Processes {
		done, _ := p.exited()
		out = append(out, ComponentStatus{Name: p.Name, PID: p.PID, Running: !done, Log: p.Log})
	}
	return out
}

// AddProcess starts another detached or attached process as part of the environment (the
// manager, under `dev up`), so Stop ends it too.
func (e *Env) AddProcess(name, bin string, detached bool, args ...string) error {
	proc, err := startProcess(e.Dir, name, bin, detached, args...)
	if err != nil {
		return err
	}
	e.Processes = append(e.Processes, proc)
	return e.saveState()
}

func (e *Env) saveState() error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.Dir, stateFile), data, 0o644)
}

func (e *Env) writeKubeconfig(p *pki) error {
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["operator-manager-local"] = &clientcmdapi.Cluster{Server: e.Server, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.adminCertPEM, ClientKeyData: p.adminKeyPEM}
	cfg.Contexts["operator-manager-local"] = &clientcmdapi.Context{Cluster: "operator-manager-local", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "operator-manager-local"
	if err := clientcmd.WriteToFile(*cfg, e.Kubeconfig); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400
	e.Config = rc
	return nil
}

// failedProcess returns an error naming a component that has exited, with its log's end.
func (e *Env) failedProcess() error {
	for _, p := range e.Processes {
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited (%v); end of %s:\n%s", p.Name, err, p.Log, tail(p.Log, 2000))
		}
	}
	return nil
}

func poll(ctx context.Context, timeout time.Duration, what string, e *Env, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if err := e.failedProcess(); err != nil {
			return err
		}
		ok, err := check(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
