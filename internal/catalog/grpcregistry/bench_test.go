package grpcregistry

import (
	"context"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
	"github.com/operator-manager/operator-manager/test/registryserver"
)

// Reading a registry server costs what the server's answers take to arrive and be
// written, on top of loading the catalog they make. The floor is the second half alone:
// loading the File-Based Catalog the server serves, from disk (BenchmarkLoadServedFBC).
// Both run on the community catalog, served by operator-registry's own server from that
// catalog rendered with its manifests (as `opm render` writes a bundle it read), less the
// packages operator-registry refuses (its validation is stricter than the loader's).
// Run: go test -run=^$ -bench=Community -benchmem -count=3 ./internal/catalog/grpcregistry/

type served struct {
	fbc, addr string
}

func serveCommunity(b *testing.B) served {
	b.Helper()
	cat, err := catalog.Load(catalogtest.CommunityPath(b), catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	fbc := b.TempDir()
	if err := registryserver.WriteFBC(cat, fbc); err != nil {
		b.Fatal(err)
	}
	refused, err := registryserver.DropRefused(context.Background(), fbc, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d of %d packages served (%d refused by operator-registry's validation)", len(cat.Packages())-len(refused), len(cat.Packages()), len(refused))
	addr, stop, err := registryserver.Serve(context.Background(), fbc, b.TempDir(), "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return served{fbc: fbc, addr: addr}
}

// BenchmarkFetchCommunity: the whole community catalog asked of a registry server,
// written to disk, and loaded (a first read: a new directory each time).
func BenchmarkFetchCommunity(b *testing.B) {
	s := serveCommunity(b)
	b.ReportAllocs()
	for b.Loop() {
		dir, err := Fetch(context.Background(), s.addr, b.TempDir(), "", Options{})
		if err != nil {
			b.Fatal(err)
		}
		cat, err := catalog.Load(dir, catalog.Options{})
		if err != nil || len(cat.Bundles()) == 0 {
			b.Fatalf("%v, %d bundles", err, len(cat.Bundles()))
		}
	}
}

// BenchmarkLoadServedFBCCommunity is the floor: loading the same catalog from the File-Based
// Catalog the server reads.
func BenchmarkLoadServedFBCCommunity(b *testing.B) {
	s := serveCommunity(b)
	b.ReportAllocs()
	for b.Loop() {
		cat, err := catalog.Load(s.fbc, catalog.Options{})
		if err != nil || len(cat.Bundles()) == 0 {
			b.Fatalf("%v, %d bundles", err, len(cat.Bundles()))
		}
	}
}
