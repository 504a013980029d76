package crdready

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewCache is an informer cache of the cluster's CRDs without what makes them large: their
// schemas (often hundreds of KiB each), managed fields and kubectl's last-applied copy.
// What is left (names, annotations, versions served and stored, conversion, status) is a
// few KiB per CRD, and is enough to tell whether a CRD is Established, serves a version,
// and carries the annotations the Blueprint controller decides by (its hash, package,
// version and provider records). It is a cache of its own, not the manager's: a cached
// read through the manager's client must never return a CRD missing its schema. A read of
// a kind it has no informer for fails rather than starting one.
func NewCache(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper) (cache.Cache, error) {
	return cache.New(cfg, cache.Options{Scheme: scheme, Mapper: mapper, ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{&apiextensionsv1.CustomResourceDefinition{}: {Transform: Summarize}}})
}

// Summarize strips a CRD to what the cache keeps (see NewCache).
func Summarize(obj any) (any, error) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return obj, nil
	}
	crd.ManagedFields = nil
	delete(crd.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		v.Schema, v.AdditionalPrinterColumns, v.SelectableFields = nil, nil, nil
	}
	return crd, nil
}

// Cached returns the CRD name as the cache holds it (no schemas: see NewCache); false
// when there is no cache, the cache does not hold it, or cannot be read.
func (m *Memo) Cached(name string) (*apiextensionsv1.CustomResourceDefinition, bool) {
	if m == nil || m.Cache == nil {
		return nil, false
	}
	// Bounded: a cache still syncing is waited for, but never for long (the caller then
	// reads the CRD instead).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.Cache.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return nil, false
	}
	return crd, true
}

// Watched reports whether CRDs are cached, so a change of one arrives as an event.
func (m *Memo) Watched() bool { return m != nil && m.Cache != nil }
