// Package metrics defines operator-manager's Prometheus metrics, served on the manager's
// /metrics endpoint with controller-runtime's own.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// Installs counts finished installations of a CSV, by outcome (Succeeded or Failed).
	Installs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_installs_total",
		Help: "Installations of an operator version that reached an outcome, by package and outcome.",
	}, []string{"package", "outcome"})

	// InstallFailures counts failed installations by reason.
	InstallFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_install_failures_total",
		Help: "Installations of an operator version that failed, by package and reason.",
	}, []string{"package", "reason"})

	// Installed is 1 for the version each Subscription runs.
	Installed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "operator_manager_installed_info",
		Help: "The operator version each Subscription runs (value 1).",
	}, []string{"namespace", "subscription", "package", "version", "csv"})

	// Upgrades counts version changes started by a spec change.
	Upgrades = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_upgrades_total",
		Help: "Version changes started by a change of the Subscription or Blueprint, by package.",
	}, []string{"package"})

	// Rollbacks counts rollbacks to the last good revision.
	Rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_rollbacks_total",
		Help: "Rollbacks to the last good revision, by package and kind (automatic).",
	}, []string{"package", "kind"})

	// Blocked counts version changes refused by the CRD preflight.
	Blocked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_blocked_upgrades_total",
		Help: "Version changes refused by the CRD preflight, by package.",
	}, []string{"package"})

	// Healthy is 1 while the version a Subscription runs is healthy, 0 while it is not
	// (after its health gate: live health).
	Healthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "operator_manager_healthy",
		Help: "1 while the operator version a Blueprint runs is healthy, 0 while it is not.",
	}, []string{"namespace", "blueprint", "package"})

	// HealthChanges counts changes of live health after the health gate, by direction.
	HealthChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_health_changes_total",
		Help: "Changes of an installed operator's live health (to healthy or unhealthy), by package.",
	}, []string{"package", "to"})

	// DriftRepairs counts objects of an installation put back after someone changed or
	// deleted them.
	DriftRepairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_drift_repairs_total",
		Help: "Objects of an installation restored after being changed or deleted by hand, by package and kind.",
	}, []string{"package", "kind"})

	// BundleCacheErrors counts failures of the manager's local bundle cache (--cache-dir)
	// that the copy stored in the cluster made up for: nothing stops, but every install
	// and rollback reads the cluster's copy, and a disk that is full or failing is for a
	// person to mend.
	BundleCacheErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_manager_bundle_cache_errors_total",
		Help: "Failures to read, write or delete the local bundle cache (--cache-dir), by operation; the copy stored in the cluster was used instead.",
	}, []string{"operation"})

	// SubscriptionReady is 1 while a Subscription is Ready (its operator installed at the
	// version it resolves to, and healthy), 0 while it is not. state sorts the reasons it
	// is not into what an alert acts on (SubscriptionState); reason is the Ready
	// condition's. One series per Subscription: a change of state or reason replaces it,
	// so an alert's "for" counts from the moment the state began.
	SubscriptionReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "operator_manager_subscription_ready",
		Help: "1 while a Subscription is Ready, 0 while it is not; state is ready, progressing, waiting, scheduled, paused, failed, unhealthy, unresolved or uninstalled, reason the Ready condition's.",
	}, []string{"namespace", "subscription", "package", "state", "reason"})

	// InstalledVersions sets Installed, one series per Subscription.
	InstalledVersions = NewOneSeries(Installed)

	// SubscriptionStates sets SubscriptionReady, one series per Subscription.
	SubscriptionStates = NewOneSeries(SubscriptionReady)

	// CatalogReady is 1 while a CatalogSource's last load succeeded, 0 while it fails
	// (the last good catalog, if any, is still served).
	CatalogReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "operator_manager_catalog_ready",
		Help: "1 while a CatalogSource's last load succeeded, 0 while loading it fails (the last good catalog is still used).",
	}, []string{"namespace", "catalogsource"})

	// CatalogBundles is the number of bundles each CatalogSource holds.
	CatalogBundles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "operator_manager_catalog_bundles",
		Help: "Bundles loaded from each CatalogSource.",
	}, []string{"namespace", "catalogsource"})
)

// Collectors are operator-manager's own metrics, registered with controller-runtime's
// registry (the shipped alerting rules are checked against their names).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{APIRequests, Installs, InstallFailures, Installed, Upgrades, Rollbacks, Blocked,
		CatalogBundles, CatalogReady, Healthy, HealthChanges, DriftRepairs, SubscriptionReady, BundleCacheErrors}
}

func init() {
	ctrlmetrics.Registry.MustRegister(Collectors()...)
}
