// Package controller wires every controller into the manager; each lives in its own
// subpackage.
package controller

import (
	"context"
	"sync"

	"github.com/blang/semver/v4"
	"k8s.io/client-go/discovery"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-manager/operator-manager/internal/metrics"
	runtimemanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/operator-manager/operator-manager/internal/access"
	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/bundles"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/controller/csv"
	"github.com/operator-manager/operator-manager/internal/controller/subscription"
	"github.com/operator-manager/operator-manager/internal/crdready"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/manager"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
)

// EventSource names operator-manager as the reporter of its events.
const EventSource = "operator-manager"

// All lists what `run` starts. The controllers share one catalog store, one bundle
// source (local cache, then the cluster) and one set of installing identities.
func All() []manager.Setup {
	return []manager.Setup{setup}
}

func setup(mgr ctrl.Manager, o manager.Options) error {
	store := catalogsource.NewStore()
	source := &bundles.Source{
		Cache: &bundlecache.Cache{Dir: o.CacheDir},
		// Secrets are read directly: a cached read would watch every Secret of the cluster.
		Store: &revisionstore.Store{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()},
	}
	cacheLog := ctrl.Log.WithName("bundle-cache")
	source.CacheFailed = func(operation, digest string, err error) {
		metrics.BundleCacheErrors.WithLabelValues(operation).Inc()
		cacheLog.Error(err, "The local bundle cache failed; the copy stored in the cluster is used instead", "operation", operation, "digest", digest, "dir", o.CacheDir)
	}
	ids := &identity.Clients{Own: mgr.GetClient(), OwnReader: mgr.GetAPIReader(), Config: mgr.GetConfig(),
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}
	rec := mgr.GetEventRecorder(EventSource)
	crdCache, err := crdready.NewCache(mgr.GetConfig(), mgr.GetScheme(), mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if err := mgr.Add(crdCache); err != nil {
		return err
	}
	crds := &crdready.Memo{Cache: crdCache}
	c := mgr.GetClient()
	w := o.Workers
	if err := (&catalogsource.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: rec, Store: store, AllowedDirs: o.CatalogDirs, CacheDir: o.CacheDir,
		DefaultNamespace: o.Namespace, DefaultDir: o.CatalogDir, Workers: w.CatalogSource, MaxRetryDelay: o.MaxRetryDelay}).SetupWithManager(mgr); err != nil {
		return err
	}
	defaultCatalog := types.NamespacedName{Namespace: o.Namespace, Name: catalogsource.DefaultName}
	kube, err := kubeVersion(mgr)
	if err != nil {
		return err
	}
	if err := (&subscription.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: rec, Catalogs: store, DefaultCatalog: defaultCatalog,
		GlobalCatalogNamespace: o.GlobalCatalogNamespace, KubeVersion: kube,
		Workers: w.Subscription, MaxRetryDelay: o.MaxRetryDelay}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&blueprint.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: rec, Bundles: source, Catalogs: store, CRDs: crds, CRDCache: crdCache,
		Identities: ids, Access: access.Checker{Clients: ids}, DefaultServiceAccount: o.DefaultServiceAccount,
		Workers: w.Blueprint, MaxRetryDelay: o.MaxRetryDelay}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&csv.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: rec, Bundles: source, Identities: ids, CRDs: crds,
		Workers: w.CSV, MaxRetryDelay: o.MaxRetryDelay}).SetupWithManager(mgr); err != nil {
		return err
	}
	if o.CatalogDir == "" {
		return nil
	}
	// Runs once this manager leads, like the controllers.
	return mgr.Add(runtimemanager.RunnableFunc(func(ctx context.Context) error {
		return catalogsource.EnsureDefault(ctx, c, o.Namespace, o.CatalogDir)
	}))
}

// kubeVersion returns the cluster's version as the API server reports it (asked once,
// again after a failure), for minKubeVersion checks.
func kubeVersion(mgr ctrl.Manager) (func() semver.Version, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var known semver.Version
	return func() semver.Version {
		mu.Lock()
		defer mu.Unlock()
		if known.Major != 0 || known.Minor != 0 {
			return known
		}
		if info, err := dc.ServerVersion(); err == nil {
			if v, err := semver.ParseTolerant(info.GitVersion); err == nil {
				known = semver.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
			}
		}
		return known
	}, nil
}
