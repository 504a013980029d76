// Package bundles finds the bundle of a revision where it is kept: the local disk cache
// (fast, but one pod's), then the copy stored in the cluster beside the Blueprint (which
// any manager process can read), then the catalog. What it takes from a catalog it keeps in
// both, so a rollback, re-install or downgrade of any retained revision needs neither the
// catalog nor a warm cache.
package bundles

import (
	"context"
	"errors"
	"fmt"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
)

// ErrNotKept is wrapped when neither the cache nor the cluster holds a bundle.
var ErrNotKept = errors.New("bundle is neither in the local cache nor stored in the cluster")

// Source reads and keeps bundles.
type Source struct {
	Cache *bundlecache.Cache
	Store *revisionstore.Store
	// CacheFailed, if set, is told of each failure of the local cache that the cluster's
	// copy made up for (operation "read", "write" or "delete"). With a Store, the cache is
	// an accelerator: a full or broken disk slows installs and rollbacks down (each reads
	// the cluster's copy) but stops none of them, so it is said, not returned.
	CacheFailed func(operation, digest string, err error)
}

// cacheFailed reports a cache failure the Store made up for.
func (s *Source) cacheFailed(operation, digest string, err error) {
	if s.CacheFailed != nil {
		s.CacheFailed(operation, digest, err)
	}
}

// Get returns the files of a bundle of a Blueprint by digest: from the local cache, else
// from the cluster (refilling the cache).
func (s *Source) Get(ctx context.Context, namespace, blueprint, digest string) ([]catalog.File, error) {
	if digest == "" {
		return nil, fmt.Errorf("%w: no digest", ErrNotKept)
	}
	files, err := s.Cache.Get(digest)
	if err == nil {
		return files, nil
	}
	if s.Store == nil {
		if errors.Is(err, bundlecache.ErrNotCached) {
			return nil, fmt.Errorf("%w: %s", ErrNotKept, digest)
		}
		return nil, err
	}
	if !errors.Is(err, bundlecache.ErrNotCached) {
		// Unreadable or corrupt (a torn disk, a bit flipped): the cluster's copy is read
		// instead, and the entry removed so it is written again from that copy.
		s.cacheFailed("read", digest, err)
		if err := s.Cache.Delete(digest); err != nil {
			s.cacheFailed("delete", digest, err)
		}
	}
	files, err = s.Store.Load(ctx, namespace, blueprint, digest)
	if errors.Is(err, revisionstore.ErrNotStored) {
		return nil, fmt.Errorf("%w: %s", ErrNotKept, digest)
	}
	if err != nil {
		return nil, err
	}
	// The cache is an accelerator: failing to fill it costs speed, not correctness.
	if err := s.Cache.Put(digest, files); err != nil {
		s.cacheFailed("write", digest, err)
	}
	return files, nil
}

// Keep stores a bundle in the local cache and in the cluster beside the Blueprint. With
// a Store, only the cluster's copy must be made: it is what outlives this process.
func (s *Source) Keep(ctx context.Context, bp *omv1.Blueprint, digest string, files []catalog.File) error {
	cacheErr := s.Cache.Put(digest, files)
	if s.Store == nil {
		return cacheErr
	}
	if err := s.Store.Save(ctx, bp, digest, files); err != nil {
		return err
	}
	if cacheErr != nil {
		s.cacheFailed("write", digest, cacheErr)
	}
	return nil
}

// Forget removes a bundle a Blueprint no longer remembers, from the cache and the cluster.
func (s *Source) Forget(ctx context.Context, bp *omv1.Blueprint, digest string) error {
	cacheErr := s.Cache.Delete(digest)
	if s.Store == nil {
		return cacheErr
	}
	if err := s.Store.Delete(ctx, bp.Namespace, bp.Name, digest); err != nil {
		return err
	}
	if cacheErr != nil {
		s.cacheFailed("delete", digest, cacheErr)
	}
	return nil
}
