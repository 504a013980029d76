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
	runtimemanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/controller/csv"
	"github.com/operator-manager/operator-manager/internal/controller/subscription"
	"github.com/operator-manager/operator-manager/internal/manager"
)

// EventSource names operator-manager as the reporter of its events.
const EventSource = "operator-manager"

// All lists what `run` starts. The controllers share one catalog store and one bundle cache.
func All() []manager.Setup {
	return []manager.Setup{setup}
}

func setup(mgr ctrl.Manager, o manager.Options) error {
	store := catalogsource.NewStore()
	cache := &bundlecache.Cache{Dir: o.CacheDir}
	rec := mgr.GetEventRecorder(EventSource)
	c := mgr.GetClient()
	if err := (&catalogsource.Reconciler{Client: c, Recorder: rec, Store: store, AllowedDirs: o.CatalogDirs, CacheDir: o.CacheDir}).SetupWithManager(mgr); err != nil {
		return err
	}
	defaultCatalog := types.NamespacedName{Namespace: o.Namespace, Name: catalogsource.DefaultName}
	kube, err := kubeVersion(mgr)
	if err != nil {
		return err
	}
	if err := (&subscription.Reconciler{Client: c, Recorder: rec, Catalogs: store, DefaultCatalog: defaultCatalog, KubeVersion: kube}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&blueprint.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: rec, Cache: cache, Catalogs: store}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&csv.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: rec, Cache: cache}).SetupWithManager(mgr); err != nil {
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
