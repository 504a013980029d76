package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

// EnvDevDir moves the state of `dev` (cluster data, logs, kubeconfig) elsewhere.
const EnvDevDir = "OPM_DEV_DIR"

func devDir() (string, error) {
	if dir := os.Getenv(EnvDevDir); dir != "" {
		return filepath.Abs(dir)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory (set %s): %w", EnvDevDir, err)
	}
	return filepath.Join(cache, "operator-manager", "dev"), nil
}

func newDevCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a full local cluster and the manager for development (up, down, status)",
		Long: `dev runs a real local cluster (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok with a fake node, built from source on first use) in the
background, with the CRDs installed and the manager running against it as its own
ServiceAccount (` + config.ManagerNamespace + `/` + config.ManagerServiceAccount + `, with config/rbac
as shipped; its default CatalogSource lives in ` + config.ManagerNamespace + `). The printed
KUBECONFIG is the cluster admin's. Its state lives in $` + EnvDevDir + ` or the user cache
directory.`,
	}
	cmd.AddCommand(newDevUpCmd(), newDevDownCmd(), newDevStatusCmd(), newDevBuildCmd())
	return cmd
}

func newDevBuildCmd() *cobra.Command {
	out := &output{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build (or find in the cache) the control-plane binaries and print their directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := testenv.EnsureBinaries(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), map[string]string{"dir": dir}, func(tw *tabwriter.Writer) { fmt.Fprintln(tw, dir) })
		},
	}
	out.bind(cmd)
	return cmd
}

func newDevUpCmd() *cobra.Command {
	var catalog string
	out := &output{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster and the manager in the background; print the KUBECONFIG export",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dir, err := devDir()
			if err != nil {
				return err
			}
			clusterDir := filepath.Join(dir, "cluster")
			if e, err := testenv.Load(clusterDir); err == nil {
				if allRunning(e) {
					fmt.Fprintf(cmd.ErrOrStderr(), "already running (operator-manager dev status shows it)\n")
					return printDevUp(cmd, out, e, "")
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "stopping what is left of an earlier run\n")
				e.Stop()
			}
			if catalog == "" {
				if catalog, err = sampleCatalog(); err != nil {
					return err
				}
			}
			if catalog, err = filepath.Abs(catalog); err != nil {
				return err
			}
			if fi, err := os.Stat(catalog); err != nil || !fi.IsDir() {
				return fmt.Errorf("--catalog %s: not a directory", catalog)
			}
			_ = os.RemoveAll(clusterDir) // a fresh cluster each time: no stale etcd data
			e, err := testenv.Start(ctx, testenv.Options{Flavour: testenv.Full, Dir: clusterDir, Detached: true, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if err := devStartManager(ctx, cmd, e, dir, catalog); err != nil {
				e.Stop()
				return err
			}
			bins, _ := testenv.BinDir()
			w := cmd.ErrOrStderr()
			fmt.Fprintf(w, "\nThe local cluster and the manager run in the background.\n")
			fmt.Fprintf(w, "  catalog:  %s (CatalogSource %s/default)\n", catalog, config.ManagerNamespace)
			fmt.Fprintf(w, "  manager:  runs as ServiceAccount %s/%s (%s); you are the admin\n",
				config.ManagerNamespace, config.ManagerServiceAccount, filepath.Join(clusterDir, testenv.ManagerKubeconfigFile))
			fmt.Fprintf(w, "  logs:     %s/*.log\n  kubectl:  %s\n", clusterDir, filepath.Join(bins, testenv.BinKubectl))
			fmt.Fprintf(w, "  stop:     operator-manager dev down\n\n")
			return printDevUp(cmd, out, e, catalog)
		},
	}
	cmd.Flags().StringVar(&catalog, "catalog", "", "directory of the default catalog (default: the checkout's samples/catalog)")
	out.bind(cmd)
	return cmd
}

// printDevUp prints what a shell evaluates (export KUBECONFIG=...), or with -o json|yaml
// where the cluster is.
func printDevUp(cmd *cobra.Command, out *output, e *testenv.Env, catalog string) error {
	doc := map[string]string{"kubeconfig": e.Kubeconfig, "server": e.Server}
	if m := devManagerOf(e); m.kubeconfig != "" {
		doc["managerKubeconfig"] = m.kubeconfig
	}
	if catalog != "" {
		doc["catalog"] = catalog
	}
	return out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "export KUBECONFIG=%s\n", e.Kubeconfig) })
}

// devStartManager installs the CRDs and starts this binary's `run` against the cluster, then
// waits for its readiness probe.
func devStartManager(ctx context.Context, cmd *cobra.Command, e *testenv.Env, dir, catalog string) error {
	c, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "installing the CRDs and config/admission")
	installCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := config.InstallCRDs(installCtx, c); err != nil {
		return err
	}
	if _, err := config.InstallAdmission(installCtx, c); err != nil {
		return err
	}
	// The manager runs as itself: its ServiceAccount with config/rbac as shipped, never as the
	// admin whose kubeconfig the person gets.
	fmt.Fprintf(cmd.ErrOrStderr(), "applying config/rbac; the manager runs as ServiceAccount %s/%s\n",
		config.ManagerNamespace, config.ManagerServiceAccount)
	managerKubeconfig, err := e.ManagerKubeconfig(installCtx)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return err
	}
	probe := "127.0.0.1:" + strconv.Itoa(ports[1])
	fmt.Fprintf(cmd.ErrOrStderr(), "starting operator-manager (log %s)\n", filepath.Join(e.Dir, "operator-manager.log"))
	if err := e.AddProcess("operator-manager", exe, true, "run",
		"--kubeconfig="+managerKubeconfig, "--manager-namespace="+config.ManagerNamespace,
		"--catalog="+catalog, "--cache-dir="+filepath.Join(dir, "bundles"),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(ports[0]), "--health-probe-bind-address="+probe,
		"--leader-elect=false"); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + probe + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(cmd.ErrOrStderr(), "operator-manager is ready (metrics at http://127.0.0.1:%d/metrics)\n", ports[0])
				return nil
			}
		}
		for _, s := range e.Status() {
			if !s.Running {
				return fmt.Errorf("%s exited; see %s", s.Name, s.Log)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("operator-manager did not become ready within a minute; see " + filepath.Join(e.Dir, "operator-manager.log"))
}

func newDevDownCmd() *cobra.Command {
	out := &output{}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster and the manager that `dev up` started",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := devDir()
			if err != nil {
				return err
			}
			e, err := testenv.Load(filepath.Join(dir, "cluster"))
			if errors.Is(err, fs.ErrNotExist) {
				return out.print(cmd.OutOrStdout(), map[string]any{"stopped": []string{}}, func(tw *tabwriter.Writer) { fmt.Fprintln(tw, "nothing runs") })
			} else if err != nil {
				return err
			}
			e.Stop()
			stopped := []string{}
			for _, s := range e.Status() {
				if s.Running {
					return fmt.Errorf("%s (pid %d) still runs", s.Name, s.PID)
				}
				stopped = append(stopped, s.Name)
			}
			return out.print(cmd.OutOrStdout(), map[string]any{"stopped": stopped}, func(tw *tabwriter.Writer) {
				for _, s := range e.Status() {
					fmt.Fprintf(tw, "stopped %s (pid %d)\n", s.Name, s.PID)
				}
			})
		},
	}
	out.bind(cmd)
	return cmd
}

func newDevStatusCmd() *cobra.Command {
	out := &output{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say what `dev up` started and whether it still runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := devDir()
			if err != nil {
				return err
			}
			e, err := testenv.Load(filepath.Join(dir, "cluster"))
			if errors.Is(err, fs.ErrNotExist) {
				if out.format == "table" {
					fmt.Fprintln(cmd.OutOrStdout(), "nothing runs (start it with: operator-manager dev up)")
					return nil
				}
				return out.print(cmd.OutOrStdout(), map[string]any{"running": false}, nil)
			} else if err != nil {
				return err
			}
			status := map[string]any{"running": allRunning(e), "kubeconfig": e.Kubeconfig, "server": e.Server, "components": e.Status()}
			mgr := devManagerOf(e)
			if mgr.kubeconfig != "" {
				status["managerKubeconfig"] = mgr.kubeconfig
			}
			if mgr.namespace != "" {
				status["managerNamespace"] = mgr.namespace
			}
			if mgr.metrics != "" {
				status["managerMetrics"] = mgr.metrics
			}
			if err := out.print(cmd.OutOrStdout(), status, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "COMPONENT\tPID\tSTATUS\tLOG")
				for _, s := range e.Status() {
					state := "Running"
					if !s.Running {
						state = "Exited"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.Name, s.PID, state, s.Log)
				}
			}); err != nil {
				return err
			}
			if out.format == "table" {
				if mgr.kubeconfig != "" && mgr.namespace != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "\nThe manager runs as ServiceAccount %s/%s (%s);\nits namespace %s holds the default CatalogSource.\n",
						config.ManagerNamespace, config.ManagerServiceAccount, mgr.kubeconfig, mgr.namespace)
				}
				if mgr.metrics != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "Its Prometheus metrics: %s\n", mgr.metrics)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "\nexport KUBECONFIG=%s   # the cluster admin\n", e.Kubeconfig)
			}
			if !allRunning(e) {
				return errors.New("some components have exited; `operator-manager dev down` then `dev up` starts afresh")
			}
			return nil
		},
	}
	out.bind(cmd)
	return cmd
}

// devManager is how `dev up` started the manager, read from its arguments; empty where
// they do not say (an older operator-manager).
type devManager struct {
	kubeconfig, namespace string
	metrics               string // the URL of its /metrics
}

func devManagerOf(e *testenv.Env) devManager {
	var m devManager
	for _, p := range e.Processes {
		if p.Name != "operator-manager" {
			continue
		}
		for _, a := range p.Args {
			if v, ok := strings.CutPrefix(a, "--kubeconfig="); ok {
				m.kubeconfig = v
			} else if v, ok := strings.CutPrefix(a, "--manager-namespace="); ok {
				m.namespace = v
			} else if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok && v != "0" {
				m.metrics = "http://" + v + "/metrics"
			}
		}
	}
	return m
}

func allRunning(e *testenv.Env) bool {
	for _, s := range e.Status() {
		if !s.Running {
			return false
		}
	}
	return len(e.Processes) > 0
}

// sampleCatalog finds samples/catalog in the checkout above the working directory.
func sampleCatalog() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "samples", "catalog")
		if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
			return cand, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no samples/catalog above the working directory: pass --catalog DIR")
		}
	}
}
