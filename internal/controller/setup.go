// Package controller wires every controller into the manager; each lives in its own
// subpackage.
package controller

import (
	"context"

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
	if err := (&subscription.Reconciler{Client: c, Recorder: rec, Catalogs: store, DefaultCatalog: defaultCatalog}).SetupWithManager(mgr); err != nil {
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
