package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/operator-manager/operator-manager/internal/backoff"
	"github.com/operator-manager/operator-manager/internal/console"
	"github.com/operator-manager/operator-manager/internal/controller"
	"github.com/operator-manager/operator-manager/internal/manager"
)

func newRunCmd(g *globals) *cobra.Command {
	opts := manager.Options{}
	gcPercent := 50
	memoryLimitRatio := 0.9
	zapOpts := zap.Options{}
	var consoleAddr string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controllers (what the in-cluster Deployment runs)",
		Long: `Run the Subscription, Blueprint, ClusterServiceVersion and CatalogSource controllers
against the cluster of the kubeconfig (or in-cluster), with /healthz and /readyz probes, a
Prometheus /metrics endpoint and leader election. In a cluster /metrics is served over
HTTPS to callers allowed to get /metrics (ClusterRole operator-manager-metrics-reader)
and leader election is on; local runs serve plain /metrics and run alone.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationOwnLogger: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			if os.Getenv("GOGC") == "" || cmd.Flags().Changed("gc-percent") {
				// The heap may grow by this share over the live heap before Go collects
				// (GOGC). Less keeps a burst's peak memory down and costs collection CPU
				// in the burst, when the CPU is what a fleet of installations waits on; the
				// default is measured (BENCHMARKS.md). GOGC, and GOMEMLIMIT, still rule
				// when set and the flag is not.
				debug.SetGCPercent(gcPercent)
			}
			said, err := setGoMemoryLimit(memoryLimitRatio, memlimit.FromCgroup)
			if err != nil {
				return err
			}
			if said != "" {
				ctrl.Log.WithName("setup").Info(said)
			}
			inCluster := g.kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
			if !cmd.Flags().Changed("leader-elect") {
				opts.LeaderElect = inCluster
			}
			if !cmd.Flags().Changed("metrics-secure") {
				opts.SecureMetrics = inCluster
			}
			if opts.MetricsAddr == "" {
				opts.MetricsAddr = ":8080"
				if opts.SecureMetrics {
					opts.MetricsAddr = ":8443"
				}
			}
			if opts.Namespace == "" {
				opts.Namespace = defaultNamespace(inCluster)
			}
			if opts.CatalogDir != "" {
				abs, err := filepath.Abs(opts.CatalogDir)
				if err != nil {
					return err
				}
				opts.CatalogDir = abs
				opts.CatalogDirs = append(opts.CatalogDirs, abs)
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			cfg.WarningHandler = nil // the manager logs the API server's warnings as controller-runtime does
			setups := controller.All()
			if consoleAddr != "" {
				// The console acts with each request's bearer token, never the manager's.
				srv, err := console.NewInCluster(cfg, console.Options{CacheDir: opts.CacheDir,
					CatalogNamespaces: []string{opts.Namespace, opts.GlobalCatalogNamespace}})
				if err != nil {
					return err
				}
				setups = append(setups, func(mgr ctrl.Manager, _ manager.Options) error {
					return mgr.Add(&console.Runnable{Addr: consoleAddr, Handler: srv})
				})
			}
			return manager.Run(ctrl.SetupSignalHandler(), cfg, opts, setups...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", "", "address of the Prometheus /metrics endpoint (default :8443 with --metrics-secure, else :8080; 0 turns it off)")
	f.BoolVar(&opts.SecureMetrics, "metrics-secure", false, "serve /metrics over HTTPS to callers the API server authenticates and authorizes for get on /metrics (default: on in a cluster, off locally)")
	f.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for --metrics-secure (default: a self-signed certificate)")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz probes")
	f.StringVar(&consoleAddr, "console-addr", "", "address to serve the web console on, acting with each request's bearer token (behind an authenticating proxy); empty: off")
	f.StringVar(&opts.PprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof profiles (memory, CPU), for diagnosing the manager; empty: off")
	f.BoolVar(&opts.LeaderElect, "leader-elect", false, "elect one active manager through a Lease (default: on in a cluster, off locally)")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the manager's namespace)")
	f.StringVar(&opts.Namespace, "manager-namespace", "", "namespace of the manager's own objects, such as the default CatalogSource (default: $POD_NAMESPACE, or operator-manager-system in a cluster, default locally)")
	f.StringVar(&opts.GlobalCatalogNamespace, "global-catalog-namespace", "", "namespace of the CatalogSources that every namespace's Subscriptions may name by spec.sourceNamespace, as OLM's global catalog namespace (olm, openshift-marketplace); default: the manager's namespace")
	f.StringVar(&opts.CatalogDir, "catalog", "", "directory of the default catalog, kept as the CatalogSource \"default\" in the manager's namespace")
	f.StringSliceVar(&opts.CatalogDirs, "catalog-dirs", nil, "further directories Directory CatalogSources may read (the --catalog directory always may)")
	f.StringVar(&opts.CacheDir, "cache-dir", defaultCacheDir(), "directory of the bundle cache (bundles by digest, for installs and rollbacks without the catalog)")
	f.StringVar(&opts.DefaultServiceAccount, "default-service-account", "", "ServiceAccount (of each Subscription's namespace) that installs for Subscriptions naming none; empty: the manager itself. Set it, and unbind the installer ClusterRole, to make every installation act as a tenant's ServiceAccount")
	f.IntVar(&opts.Workers.Subscription, "subscription-workers", 4, "Subscriptions reconciled at once")
	f.IntVar(&opts.Workers.Blueprint, "blueprint-workers", 8, "Blueprints reconciled at once")
	f.IntVar(&opts.Workers.CSV, "csv-workers", 8, "ClusterServiceVersions reconciled at once")
	f.IntVar(&opts.Workers.CatalogSource, "catalogsource-workers", 4, "CatalogSources loaded at once (a slow source holds one worker until it answers or times out)")
	f.DurationVar(&opts.MaxRetryDelay, "max-retry-delay", backoff.DefaultMaxDelay, "longest wait before a reconcile that keeps failing is tried again (it backs off from 5ms, doubling): a fault mended outside what the manager watches (a webhook back up, a role granted) is picked up within it")
	// 300 and 600: a fleet's installs starting together cost about 40 requests each, and at
	// 50 a second 159 installs waited two minutes on this limit alone (BENCHMARKS.md); the
	// API server's own priority and fairness still shares it out among its clients.
	f.Float32Var(&opts.QPS, "kube-api-qps", 300, "requests per second the manager may send the API server (client-side limit)")
	f.IntVar(&opts.Burst, "kube-api-burst", 600, "requests the manager may send the API server in a burst (client-side limit)")
	f.DurationVar(&opts.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a leader's Lease lasts without renewal: the longest a takeover waits after a crash")
	f.DurationVar(&opts.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it steps down")
	f.DurationVar(&opts.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	f.IntVar(&gcPercent, "gc-percent", gcPercent, "how far (in percent) the heap may grow over the live heap before Go collects: more spends less CPU on collection in a burst of installations and holds more memory at its peak (Go's GOGC; a negative value turns collection off)")
	f.Float64Var(&memoryLimitRatio, "memory-limit-ratio", memoryLimitRatio, "Go's soft memory limit as a share of the container's memory limit (its cgroup's), so a burst makes Go collect harder before the kernel would kill the process; 0 turns it off; GOMEMLIMIT (a limit) and AUTOMEMLIMIT (a share, or off) rule when set")
	f.BoolVar(&opts.ReleaseStartPages, "release-start-pages", true, "give back the binary's pages only the start used (package initialisation, setup) before the controllers start, so what stays resident is what the work uses (Linux)")
	f.DurationVar(&opts.ReleaseQuietPages, "release-quiet-pages", 30*time.Second, "give back the binary's pages and the free heap once the manager has written nothing (but its leader Lease) for this long after a burst of work; the next burst maps back what it uses (Linux; 0: never)")
	bindGoFlags(cmd, zapOpts.BindFlags)
	return cmd
}

func defaultNamespace(inCluster bool) string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if inCluster {
		return "operator-manager-system"
	}
	return "default"
}
