package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/operator-manager/operator-manager/internal/controller"
	"github.com/operator-manager/operator-manager/internal/manager"
)

func newRunCmd(g *globals) *cobra.Command {
	opts := manager.Options{}
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controllers (what the in-cluster Deployment runs)",
		Long: `Run the Subscription, Blueprint, ClusterServiceVersion and CatalogSource controllers
against the cluster of the kubeconfig (or in-cluster), with /healthz and /readyz probes, a
Prometheus /metrics endpoint and leader election (on by default in a cluster, off for
local runs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			inCluster := g.kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
			if !cmd.Flags().Changed("leader-elect") {
				opts.LeaderElect = inCluster
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
			return manager.Run(ctrl.SetupSignalHandler(), cfg, opts, controller.All()...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (0 turns it off)")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz probes")
	f.BoolVar(&opts.LeaderElect, "leader-elect", false, "elect one active manager through a Lease (default: on in a cluster, off locally)")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the manager's namespace)")
	f.StringVar(&opts.Namespace, "manager-namespace", "", "namespace of the manager's own objects, such as the default CatalogSource (default: $POD_NAMESPACE, or operator-manager-system in a cluster, default locally)")
	f.StringVar(&opts.CatalogDir, "catalog", "", "directory of the default catalog, kept as the CatalogSource \"default\" in the manager's namespace")
	f.StringSliceVar(&opts.CatalogDirs, "catalog-dirs", nil, "further directories Directory CatalogSources may read (the --catalog directory always may)")
	f.StringVar(&opts.CacheDir, "cache-dir", defaultCacheDir(), "directory of the bundle cache (bundles by digest, for installs and rollbacks without the catalog)")
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
