// Package manager assembles the controllers into one controller-runtime manager with
// health and readiness probes, a Prometheus metrics endpoint and leader election.
package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	olmv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/crashpoint"
	"github.com/operator-manager/operator-manager/internal/exepages"
	ommetrics "github.com/operator-manager/operator-manager/internal/metrics"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// LeaderElectionID names the Lease that elects one active manager.
const LeaderElectionID = "operator-manager.operators.coreos.com.operator-manager.domain"

// The secure metrics endpoint asks the API server who the caller is (TokenReview) and
// whether it may get /metrics (SubjectAccessReview); the scraper needs the ClusterRole
// operator-manager-metrics-reader.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options configure a manager run.
type Options struct {
	// MetricsAddr serves /metrics; "0" turns it off.
	MetricsAddr string
	// SecureMetrics serves /metrics over HTTPS to callers the API server authenticates
	// (a bearer token) and authorizes (get on the non-resource URL /metrics), with
	// controller-runtime's filters. On by default in a cluster; local runs serve plain
	// HTTP on loopback.
	SecureMetrics bool
	// MetricsCertDir holds tls.crt and tls.key for the secure metrics endpoint (reloaded
	// when they change); empty means a self-signed certificate made at start.
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz.
	ProbeAddr string
	// LeaderElect turns on leader election (on by default in a cluster).
	LeaderElect bool
	// LeaderElectionNamespace holds the Lease; empty means the manager's own namespace.
	LeaderElectionNamespace string
	// Namespace is where the manager keeps its own objects (the default CatalogSource).
	Namespace string
	// GlobalCatalogNamespace holds CatalogSources every namespace's Subscriptions may name
	// (OLM's spec.sourceNamespace, OLM's global catalog namespace); empty means Namespace.
	GlobalCatalogNamespace string
	// CatalogDir is the default catalog: a directory of bundles.
	CatalogDir string
	// CatalogDirs are the directories Directory CatalogSources may read; CatalogDir is
	// always among them.
	CatalogDirs []string
	// CacheDir keeps fetched bundles by digest, so rollbacks need no network.
	CacheDir string
	// DefaultServiceAccount is the ServiceAccount (of each Subscription's namespace) that
	// installs for Subscriptions naming none; empty means the manager itself.
	DefaultServiceAccount string
	// Workers is how many objects of each kind are reconciled at once.
	Workers Workers
	// MaxRetryDelay caps the backoff of a reconcile that keeps failing: a fault mended
	// outside what the manager watches is picked up within it (zero: a minute).
	MaxRetryDelay time.Duration
	// PprofAddr serves Go's /debug/pprof profiles; empty turns them off.
	PprofAddr string
	// QPS and Burst limit the manager's requests to the API server (client-side).
	QPS   float32
	Burst int
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election (zero: defaults).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseStartPages gives back the binary's pages that only the start used (package
	// initialisation, setup) just before the controllers start: see internal/exepages.
	ReleaseStartPages bool
	// ReleaseQuietPages gives back the binary's pages once the manager has written
	// nothing (but its Lease) for this long after a burst of work (0: never).
	ReleaseQuietPages time.Duration
}

// Workers are the concurrent reconciles of each controller.
type Workers struct {
	Subscription, Blueprint, CSV, CatalogSource int
}

// Setup registers one controller with the manager.
type Setup func(mgr ctrl.Manager, opts Options) error

// Run starts the manager with the given controllers and blocks until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options, setups ...Setup) error {
	metrics, err := metricsOptions(opts)
	if err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	if opts.QPS > 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst > 0 {
		cfg.Burst = opts.Burst
	}
	ommetrics.InstrumentRequests(cfg)
	if n, err := crashpoint.Install(cfg); err != nil {
		return err
	} else if n > 0 {
		ctrl.Log.WithName("setup").Info("Test hook: exiting after API write", "write", n)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.Scheme,
		Metrics:                 metrics,
		Cache:                   cacheOptions(),
		Client:                  client.Options{Cache: &client.CacheOptions{DisableFor: uncached}},
		LeaseDuration:           nonZero(opts.LeaseDuration),
		RenewDeadline:           nonZero(opts.RenewDeadline),
		RetryPeriod:             nonZero(opts.RetryPeriod),
		HealthProbeBindAddress:  opts.ProbeAddr,
		PprofBindAddress:        opts.PprofAddr,
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
	if opts.ReleaseQuietPages > 0 {
		// Work is told by writes: a settled fleet costs none, while reconciles go on
		// (CatalogSource polls, the CSVs' resync after the gate) whether or not there is
		// anything to do, and their pages are the steady state's own.
		if err := mgr.Add(&exepages.Scavenger{Quiet: opts.ReleaseQuietPages, Log: ctrl.Log.WithName("pages"),
			Activity: ommetrics.WorkWrites}); err != nil {
			return err
		}
	}
	if opts.ReleaseStartPages {
		// Last thing before the start: what setup touched once is given back too.
		if kib, err := exepages.Release(); err != nil {
			ctrl.Log.WithName("setup").Error(err, "Releasing the binary's start-up pages (nothing lost; they stay resident)")
		} else if kib > 0 {
			ctrl.Log.WithName("setup").Info("Released the binary's start-up pages", "MiB", kib/1024)
		}
	}
	ctrl.Log.WithName("setup").Info("Starting manager", "metrics", opts.MetricsAddr, "secureMetrics", opts.SecureMetrics,
		"probes", opts.ProbeAddr, "leaderElection", opts.LeaderElect, "catalog", opts.CatalogDir)
	return mgr.Start(ctx)
}

// metricsOptions configure the metrics server: plain HTTP, or HTTPS with authentication
// and authorization by the API server.
func metricsOptions(opts Options) (metricsserver.Options, error) {
	m := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if !opts.SecureMetrics {
		return m, nil
	}
	m.SecureServing = true
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/1.1 only: HTTP/2 exposes the server to stream-reset floods (CVE-2023-44487,
	// CVE-2023-39325) and a scraper gains nothing from it.
	m.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	if opts.MetricsCertDir != "" {
		// controller-runtime falls back to a self-signed certificate when the files are
		// missing; a directory that was asked for but is empty is a mistake to report.
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(opts.MetricsCertDir, f)); err != nil {
				return m, fmt.Errorf("metrics certificate directory: %w", err)
			}
		}
		m.CertDir = opts.MetricsCertDir
	} else {
		// Nothing in a directory nobody writes to, so the certificate is always the
		// self-signed one made at start (not whatever another process left in the default
		// directory under /tmp).
		m.CertDir = filepath.Join(os.TempDir(), "operator-manager-no-metrics-certificate")
	}
	return m, nil
}

func ptrDuration(d time.Duration) *time.Duration { return &d }

func nonZero(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

// uncached kinds are read directly, never through an informer: a cluster-wide cache of
// every pod, Secret, ConfigMap, ReplicaSet or CRD would cost far more memory than the few
// reads the manager makes of them.
var uncached = []client.Object{&corev1.Pod{}, &corev1.Secret{}, &corev1.ConfigMap{}, &appsv1.ReplicaSet{},
	&apiextensionsv1.CustomResourceDefinition{}}

// cacheOptions keep the informers small: the kinds the manager installs are cached only
// for the objects it manages (selected by its managed-by label), and managedFields, which
// can be most of an object, are dropped from every cached object.
func cacheOptions() cache.Options {
	mine := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedBy})
	by := map[client.Object]cache.ByObject{}
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}, &corev1.Service{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&apiregistrationv1.APIService{}} {
		by[o] = cache.ByObject{Label: mine}
	}
	// One transform for every kind (a ByObject entry for CSVs would need their CRD served
	// before the manager starts): managed fields dropped everywhere, CSVs slimmed.
	strip := cache.TransformStripManagedFields()
	return cache.Options{ByObject: by, DefaultTransform: func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		return slimCSV(obj)
	}}
}

// slimCSV drops from cached CSVs what only a console shows, so each of a fleet's CSVs
// costs the manager a few KiB rather than its icon, long description, examples and UI
// descriptors (tens of KiB for many community CSVs): spec.icon, spec.description, the
// alm-examples annotation, and the descriptors of owned and required CRDs and APIServices
// (managed fields go in the transform before it). Nothing the manager decides or renders reads them, and
// CSVs are only ever patched (merge patches of what changed) or applied whole from the
// bundle, never updated from a cached copy.
func slimCSV(obj any) (any, error) {
	csv, ok := obj.(*omv1alpha1.ClusterServiceVersion)
	if !ok {
		return obj, nil
	}
	delete(csv.Annotations, "alm-examples")
	spec := &csv.Spec.ClusterServiceVersionSpec
	spec.Icon, spec.Description = nil, ""
	for _, list := range [][]olmv1alpha1.CRDDescription{spec.CustomResourceDefinitions.Owned, spec.CustomResourceDefinitions.Required} {
		for i := range list {
			list[i].Description, list[i].SpecDescriptors, list[i].StatusDescriptors, list[i].ActionDescriptor = "", nil, nil, nil
		}
	}
	for _, list := range [][]olmv1alpha1.APIServiceDescription{spec.APIServiceDefinitions.Owned, spec.APIServiceDefinitions.Required} {
		for i := range list {
			list[i].Description, list[i].SpecDescriptors, list[i].StatusDescriptors, list[i].ActionDescriptor = "", nil, nil, nil
		}
	}
	return csv, nil
}
