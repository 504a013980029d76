// Package manager assembles the controllers into one controller-runtime manager with
// health and readiness probes, a Prometheus metrics endpoint and leader election.
package manager

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/operator-manager/operator-manager/internal/scheme"
)

// LeaderElectionID names the Lease that elects one active manager.
const LeaderElectionID = "operator-manager.operators.coreos.com.operator-manager.domain"

// Options configure a manager run.
type Options struct {
	// MetricsAddr serves /metrics; "0" turns it off.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz.
	ProbeAddr string
	// LeaderElect turns on leader election (on by default in a cluster).
	LeaderElect bool
	// LeaderElectionNamespace holds the Lease; empty means the manager's own namespace.
	LeaderElectionNamespace string
	// Namespace is where the manager keeps its own objects (the default CatalogSource).
	Namespace string
	// CatalogDir is the default catalog: a directory of bundles.
	CatalogDir string
	// CatalogDirs are the directories Directory CatalogSources may read; CatalogDir is
	// always among them.
	CatalogDirs []string
	// CacheDir keeps fetched bundles by digest, so rollbacks need no network.
	CacheDir string
}

// Setup registers one controller with the manager.
type Setup func(mgr ctrl.Manager, opts Options) error

// Run starts the manager with the given controllers and blocks until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options, setups ...Setup) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.Scheme,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.ProbeAddr,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// Give up leadership at once on shutdown so a rolling update hands over quickly.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptrDuration(30 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	for _, s := range setups {
		if err := s(mgr, opts); err != nil {
			return err
		}
	}
	ctrl.Log.WithName("setup").Info("Starting manager", "metrics", opts.MetricsAddr, "probes", opts.ProbeAddr,
		"leaderElection", opts.LeaderElect, "catalog", opts.CatalogDir)
	return mgr.Start(ctx)
}

func ptrDuration(d time.Duration) *time.Duration { return &d }
