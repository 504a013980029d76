package catalogsource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/controller"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/manager"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var (
	env     *testenv.Env
	k8s     client.Client
	scratch string // a directory the manager may read, for catalogs the tests change
	sample  string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.APIOnly, &env, func(e *testenv.Env) error {
		var err error
		if scratch, err = os.MkdirTemp("", "catalogsource-test-"); err != nil {
			return err
		}
		if sample, err = filepath.Abs("../../../samples/catalog"); err != nil {
			return err
		}
		c, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
		if err != nil {
			return err
		}
		if err := config.InstallCRDs(context.Background(), c); err != nil {
			return err
		}
		if k8s, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
			return err
		}
		// The manager runs as `operator-manager run` would, for the whole test binary.
		go func() {
			err := manager.Run(context.Background(), e.Config, manager.Options{
				MetricsAddr: "0", ProbeAddr: "0", Namespace: "default",
				CatalogDir: sample, CatalogDirs: []string{sample, scratch},
			}, controller.All()...)
			if err != nil {
				fmt.Fprintln(os.Stderr, "manager:", err)
				os.Exit(1)
			}
		}()
		return nil
	}))
}

// waitFor polls a CatalogSource until cond holds.
func waitFor(t *testing.T, name string, cond func(*omv1.CatalogSource) bool) *omv1.CatalogSource {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := &omv1.CatalogSource{}
	for {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cs)
		if err == nil && cond(cs) {
			return cs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CatalogSource %s: condition not reached: %v; status %+v", name, err, cs.Status)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(cs *omv1.CatalogSource) *metav1.Condition {
	return meta.FindStatusCondition(cs.Status.Conditions, omv1.ConditionReady)
}

// TestDefaultCatalogSource: the --catalog directory becomes the CatalogSource "default",
// loaded, with counts a person can check against the sample catalog's README.
func TestDefaultCatalogSource(t *testing.T) {
	cs := waitFor(t, catalogsource.DefaultName, func(cs *omv1.CatalogSource) bool { return ready(cs) != nil })
	if c := ready(cs); c.Status != metav1.ConditionTrue || c.Reason != omv1.ReasonLoaded {
		t.Fatalf("Ready = %+v", c)
	}
	if cs.Spec.Directory != sample || cs.Status.Packages != 2 || cs.Status.Bundles != 6 || cs.Status.RejectedCount != 0 {
		t.Errorf("directory %s, %d packages, %d bundles, %d rejected; want %s, 2, 6, 0 (rejected: %v)",
			cs.Spec.Directory, cs.Status.Packages, cs.Status.Bundles, cs.Status.RejectedCount, sample, cs.Status.Rejected)
	}
	if !strings.HasPrefix(cs.Status.Digest, "sha256:") || cs.Status.LastSync == nil {
		t.Errorf("digest %q lastSync %v", cs.Status.Digest, cs.Status.LastSync)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPollingByDigest: an unchanged catalog causes no status writes across polls; a new
// version and a broken bundle are picked up by the next poll, the rest keeps loading.
func TestPollingByDigest(t *testing.T) {
	dir := filepath.Join(scratch, "polled")
	copyDir(t, sample, dir)
	cs := &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "polled", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir,
			PollInterval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	if err := k8s.Create(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, "polled", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 6 })

	time.Sleep(3 * time.Second) // six polls
	again := waitFor(t, "polled", func(*omv1.CatalogSource) bool { return true })
	if again.ResourceVersion != first.ResourceVersion {
		t.Errorf("an unchanged catalog was written: resourceVersion %s -> %s", first.ResourceVersion, again.ResourceVersion)
	}

	copyDir(t, filepath.Join(sample, "cache-operator", "1.2.0"), filepath.Join(dir, "cache-operator", "1.4.0"))
	csv := filepath.Join(dir, "cache-operator", "1.4.0", "cache-operator.v1.2.0.clusterserviceversion.yaml")
	data, _ := os.ReadFile(csv)
	data = []byte(strings.NewReplacer("cache-operator.v1.2.0", "cache-operator.v1.4.0", "replaces: cache-operator.v1.1.0",
		"replaces: cache-operator.v1.3.0", "version: 1.2.0", "version: 1.4.0").Replace(string(data)))
	if err := os.WriteFile(csv, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cache-operator", "9.9.9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache-operator", "9.9.9", "broken.yaml"), []byte("kind: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := waitFor(t, "polled", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 7 })
	if changed.Status.Digest == first.Status.Digest || !changed.Status.LastSync.After(first.Status.LastSync.Time) {
		t.Errorf("digest %s -> %s, lastSync %v -> %v: want both to move", first.Status.Digest, changed.Status.Digest,
			first.Status.LastSync, changed.Status.LastSync)
	}
	if changed.Status.RejectedCount != 1 || len(changed.Status.Rejected) != 1 ||
		!strings.Contains(changed.Status.Rejected[0].Path, "9.9.9") {
		t.Errorf("rejected = %d %+v, want the 9.9.9 bundle named", changed.Status.RejectedCount, changed.Status.Rejected)
	}
}

// TestDirectoryOutsideAllowedDirs: a CatalogSource cannot make the manager read any
// directory it likes; the condition says which flag allows it.
func TestDirectoryOutsideAllowedDirs(t *testing.T) {
	cs := &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "etc", Namespace: "default"},
		Spec:       omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: "/etc"},
	}
	if err := k8s.Create(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, "etc", func(cs *omv1.CatalogSource) bool { return ready(cs) != nil })
	c := ready(got)
	if c.Status != metav1.ConditionFalse || c.Reason != omv1.ReasonLoadFailed ||
		!strings.Contains(c.Message, `spec.directory "/etc"`) || !strings.Contains(c.Message, "--catalog-dirs") {
		t.Errorf("Ready = %+v", c)
	}
}
