package bundles_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/bundles"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.APIOnly, &env, func(e *testenv.Env) error {
		c, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return config.InstallCRDs(ctx, c)
	}))
}

// failures records what a Source reports of its cache.
type failures []string

func (f *failures) record(operation, digest string, err error) {
	*f = append(*f, operation+": "+err.Error())
}

func setup(t *testing.T, name, cacheDir string) (*bundles.Source, *failures, *omv1.Blueprint, []catalog.File, string) {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "cache-operator.v1.1.0"}}
	if err := c.Create(context.Background(), bp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), bp) })
	files := []catalog.File{
		{Name: "manifests/cache.clusterserviceversion.yaml", Data: []byte("kind: ClusterServiceVersion\nmetadata: {name: cache-operator.v1.1.0}\n")},
	}
	f := &failures{}
	s := &bundles.Source{Cache: &bundlecache.Cache{Dir: cacheDir}, Store: &revisionstore.Store{Client: c}, CacheFailed: f.record}
	return s, f, bp, files, catalog.DigestFiles(files)
}

// A cache directory that cannot be written (a full or read-only disk; here a path under
// a regular file) slows installs down but stops none: the bundle is kept in the cluster,
// read back from there, and the failure is reported, not returned.
func TestUnwritableCache(t *testing.T) {
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, f, bp, files, digest := setup(t, "unwritable", filepath.Join(tmp, "file", "bundles"))
	ctx := context.Background()
	if err := s.Keep(ctx, bp, digest, files); err != nil {
		t.Fatalf("Keep with an unwritable cache: %v", err)
	}
	if len(*f) != 1 || !strings.HasPrefix((*f)[0], "write: ") {
		t.Errorf("reported %q, want one write failure", *f)
	}
	got, err := s.Get(ctx, bp.Namespace, bp.Name, digest)
	if err != nil || catalog.DigestFiles(got) != digest {
		t.Fatalf("Get from the cluster's copy: %v", err)
	}
	if err := s.Forget(ctx, bp, digest); err != nil {
		t.Fatalf("Forget with an unwritable cache: %v", err)
	}
	if _, err := s.Get(ctx, bp.Namespace, bp.Name, digest); err == nil {
		t.Error("the bundle is still kept after Forget")
	}

	// Without a store the cache is all there is: its failure is the caller's.
	local := &bundles.Source{Cache: s.Cache}
	if err := local.Keep(ctx, bp, digest, files); err == nil {
		t.Error("Keep without a store succeeded on an unwritable cache")
	}
}

// A corrupt cache entry (a torn write, a flipped bit) is read from the cluster instead,
// and written again from there.
func TestCorruptCacheEntry(t *testing.T) {
	dir := t.TempDir()
	s, f, bp, files, digest := setup(t, "corrupt", dir)
	ctx := context.Background()
	if err := s.Keep(ctx, bp, digest, files); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.TrimPrefix(digest, "sha256:")+".json")
	if err := os.WriteFile(path, []byte(`{"digest":"`+digest+`","files":[{"name":"x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, bp.Namespace, bp.Name, digest)
	if err != nil || catalog.DigestFiles(got) != digest {
		t.Fatalf("Get with a corrupt cache entry: %v", err)
	}
	if !slices.ContainsFunc(*f, func(s string) bool { return strings.HasPrefix(s, "read: ") && strings.Contains(s, "corrupt") }) {
		t.Errorf("reported %q, want the corrupt read", *f)
	}
	if again, err := (&bundlecache.Cache{Dir: dir}).Get(digest); err != nil || catalog.DigestFiles(again) != digest {
		t.Errorf("the cache entry was not written again from the cluster's copy: %v", err)
	}
}
