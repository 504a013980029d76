package catalogsource_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
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
	cache   string // the manager's --cache-dir
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
		if cache, err = os.MkdirTemp("", "catalogsource-cache-"); err != nil {
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
				CatalogDir: sample, CatalogDirs: []string{sample, scratch}, CacheDir: cache,
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
	if cs.Spec.Directory != sample || cs.Status.Packages != 4 || cs.Status.Bundles != 10 || cs.Status.RejectedCount != 0 {
		t.Errorf("directory %s, %d packages, %d bundles, %d rejected; want %s, 4, 10, 0 (rejected: %v)",
			cs.Spec.Directory, cs.Status.Packages, cs.Status.Bundles, cs.Status.RejectedCount, sample, cs.Status.Rejected)
	}
	if !strings.HasPrefix(cs.Status.Digest, "sha256:") || cs.Status.LastSync == nil {
		t.Errorf("digest %q lastSync %v", cs.Status.Digest, cs.Status.LastSync)
	}
}

// TestDefaultCatalogSourceKept: the default CatalogSource deleted by hand is created
// again at once, pointing at the --catalog directory, and loads; before, it stayed gone
// (every Subscription naming no catalog stopped resolving) until the manager restarted.
func TestDefaultCatalogSourceKept(t *testing.T) {
	old := waitFor(t, catalogsource.DefaultName, func(cs *omv1.CatalogSource) bool { return ready(cs) != nil })
	if err := k8s.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	cs := waitFor(t, catalogsource.DefaultName, func(cs *omv1.CatalogSource) bool {
		c := ready(cs)
		return cs.UID != old.UID && c != nil && c.Status == metav1.ConditionTrue
	})
	if cs.Spec.Directory != sample || cs.Labels[catalogsource.ManagedByLabel] != "operator-manager" || cs.Status.Bundles != 10 {
		t.Errorf("the default created again: directory %s, labels %v, %d bundles; want %s, managed by operator-manager, 10",
			cs.Spec.Directory, cs.Labels, cs.Status.Bundles, sample)
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
	first := waitFor(t, "polled", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 10 })

	time.Sleep(3 * time.Second) // six polls
	again := waitFor(t, "polled", func(*omv1.CatalogSource) bool { return true })
	if again.ResourceVersion != first.ResourceVersion {
		t.Errorf("an unchanged catalog was written: resourceVersion %s -> %s", first.ResourceVersion, again.ResourceVersion)
	}

	addCacheOperator140(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, "cache-operator", "9.9.9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache-operator", "9.9.9", "broken.yaml"), []byte("kind: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := waitFor(t, "polled", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 11 })
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

// catalogServer serves a catalog directory as `operator-manager catalog serve` does; reload
// swaps in the directory's current content, as a restarted server would serve it. It
// counts the requests it answers.
type catalogServer struct {
	t       *testing.T
	dir     string
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	cat     atomic.Pointer[catalog.Catalog]

	indexOK, notModified, bundles atomic.Int64
}

func newCatalogServer(t *testing.T, dir string) *catalogServer {
	s := &catalogServer{t: t, dir: dir}
	s.reload()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		(*s.handler.Load()).ServeHTTP(rec, r)
		switch {
		case strings.HasPrefix(r.URL.Path, "/bundles/"):
			s.bundles.Add(1)
		case rec.status == http.StatusNotModified:
			s.notModified.Add(1)
		case rec.status == http.StatusOK:
			s.indexOK.Add(1)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *catalogServer) reload() *catalog.Catalog {
	s.t.Helper()
	cat, err := catalog.Load(s.dir, catalog.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	if len(cat.Rejections) > 0 {
		s.t.Fatalf("served catalog has rejections: %v", cat.Rejections)
	}
	h := remote.Handler(cat)
	s.handler.Store(&h)
	s.cat.Store(cat)
	return cat
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// catalogBundles reads the operator_manager_catalog_bundles series of a CatalogSource in
// the default namespace from the manager's registry (the manager runs in this process).
func catalogBundles(t *testing.T, name string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "operator_manager_catalog_bundles" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == "default" && labels["catalogsource"] == name {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func waitForMetric(t *testing.T, name string, cond func(v float64, ok bool) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, ok := catalogBundles(t, name)
		if cond(v, ok) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric operator_manager_catalog_bundles{catalogsource=%q} = %v (present %v): condition not reached", name, v, ok)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// addCacheOperator140 adds a cache-operator 1.4.0 bundle to a copy of the sample catalog.
func addCacheOperator140(t *testing.T, dir string) {
	t.Helper()
	copyDir(t, filepath.Join(sample, "cache-operator", "1.2.0"), filepath.Join(dir, "cache-operator", "1.4.0"))
	csv := filepath.Join(dir, "cache-operator", "1.4.0", "cache-operator.v1.2.0.clusterserviceversion.yaml")
	data, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.NewReplacer("cache-operator.v1.2.0", "cache-operator.v1.4.0", "replaces: cache-operator.v1.1.0",
		"replaces: cache-operator.v1.3.0", "version: 1.2.0", "version: 1.4.0").Replace(string(data)))
	if err := os.WriteFile(csv, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPSource: a catalog served over HTTP is counted right; polls of an unchanged
// catalog are conditional requests answered 304 that write nothing; a new bundle on the
// server is picked up by the next poll and moves the digest; the bundle gauge follows,
// and its series goes with the CatalogSource.
func TestHTTPSource(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "served")
	copyDir(t, sample, dir)
	server := newCatalogServer(t, dir)
	served := server.cat.Load()

	cs := &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "served", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceHTTP, URL: server.srv.URL,
			PollInterval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, "served", func(cs *omv1.CatalogSource) bool { return ready(cs) != nil && cs.Status.Bundles > 0 })
	if c := ready(first); c.Status != metav1.ConditionTrue || c.Reason != omv1.ReasonLoaded {
		t.Fatalf("Ready = %+v", c)
	}
	if first.Status.Packages != 4 || first.Status.Bundles != 10 || first.Status.RejectedCount != 0 ||
		first.Status.Digest != served.Digest || first.Status.LastSync == nil || first.Status.ObservedGeneration != first.Generation {
		t.Fatalf("status %+v; want 4 packages, 10 bundles, digest %s", first.Status, served.Digest)
	}
	waitForMetric(t, "served", func(v float64, ok bool) bool { return ok && v == 10 })
	waitForMetric(t, catalogsource.DefaultName, func(v float64, ok bool) bool { return ok && v == 10 }) // a Directory source

	// Several polls of an unchanged catalog: 304s, no rebuild, no write, no bundle read.
	polls := server.notModified.Load()
	time.Sleep(3 * time.Second)
	again := waitFor(t, "served", func(*omv1.CatalogSource) bool { return true })
	if again.ResourceVersion != first.ResourceVersion {
		t.Errorf("an unchanged catalog was written: resourceVersion %s -> %s", first.ResourceVersion, again.ResourceVersion)
	}
	if n := server.notModified.Load() - polls; n < 3 {
		t.Errorf("%d conditional polls answered 304 in 3s at a 500ms interval, want several", n)
	}
	if n := server.indexOK.Load(); n != 1 {
		t.Errorf("the full index was sent %d times for an unchanged catalog, want once", n)
	}
	if n := server.bundles.Load(); n != 0 {
		t.Errorf("%d bundles fetched while nothing read them", n)
	}

	// A new version on the server: the next poll gets the new index.
	addCacheOperator140(t, dir)
	changedCat := server.reload()
	changed := waitFor(t, "served", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 11 })
	if changed.Status.Digest != changedCat.Digest || changed.Status.Digest == first.Status.Digest ||
		!changed.Status.LastSync.After(first.Status.LastSync.Time) || changed.Status.Packages != 4 {
		t.Errorf("digest %s -> %s (served %s), lastSync %v -> %v: want both to move", first.Status.Digest, changed.Status.Digest,
			changedCat.Digest, first.Status.LastSync, changed.Status.LastSync)
	}
	if c := ready(changed); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "11 bundles") {
		t.Errorf("Ready = %+v", c)
	}
	waitForMetric(t, "served", func(v float64, ok bool) bool { return ok && v == 11 })

	if err := k8s.Delete(ctx, changed); err != nil {
		t.Fatal(err)
	}
	waitForMetric(t, "served", func(_ float64, ok bool) bool { return !ok })
}

// TestHTTPSourceUnreachable: a server that cannot be reached makes Ready False naming the
// URL; a source that loaded before keeps its last good catalog and says so, and is Ready
// again once the server is back.
func TestHTTPSourceUnreachable(t *testing.T) {
	ctx := context.Background()
	const nowhere = "http://127.0.0.1:1"
	cs := &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "nowhere", Namespace: "default"},
		Spec:       omv1.CatalogSourceSpec{SourceType: omv1.SourceHTTP, URL: nowhere},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, "nowhere", func(cs *omv1.CatalogSource) bool { return ready(cs) != nil })
	if c := ready(got); c.Status != metav1.ConditionFalse || c.Reason != omv1.ReasonLoadFailed || !strings.Contains(c.Message, nowhere) {
		t.Errorf("Ready = %+v; want False, LoadFailed, naming %s", c, nowhere)
	}
	if got.Status.Bundles != 0 || got.Status.Digest != "" {
		t.Errorf("status of a source never loaded: %+v", got.Status)
	}
	if _, ok := catalogBundles(t, "nowhere"); ok {
		t.Error("a source never loaded has a bundle gauge")
	}

	// A source that loaded, then lost its server.
	dir := filepath.Join(t.TempDir(), "flaky")
	copyDir(t, sample, dir)
	server := newCatalogServer(t, dir)
	var down atomic.Bool
	up := *server.handler.Load()
	flaky := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !down.Load() {
			up.ServeHTTP(w, r)
			return
		}
		// As a server gone away: the connection drops without an answer.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	server.handler.Store(&flaky)

	cs = &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "flaky", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceHTTP, URL: server.srv.URL,
			PollInterval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	loaded := waitFor(t, "flaky", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 10 })
	down.Store(true)
	failed := waitFor(t, "flaky", func(cs *omv1.CatalogSource) bool {
		c := ready(cs)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := ready(failed)
	if c.Reason != omv1.ReasonLoadFailed || !strings.Contains(c.Message, server.srv.URL) ||
		!strings.Contains(c.Message, "the previously loaded catalog (digest "+loaded.Status.Digest+") is still used") {
		t.Errorf("Ready = %+v; want LoadFailed naming %s and the catalog still used", c, server.srv.URL)
	}
	if failed.Status.Bundles != 10 || failed.Status.Digest != loaded.Status.Digest {
		t.Errorf("status while the server is down: %+v", failed.Status)
	}
	if v, ok := catalogBundles(t, "flaky"); !ok || v != 10 {
		t.Errorf("gauge while the server is down: %v %v", v, ok)
	}
	down.Store(false)
	back := waitFor(t, "flaky", func(cs *omv1.CatalogSource) bool {
		c := ready(cs)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if back.Status.Digest != loaded.Status.Digest || !back.Status.LastSync.Equal(loaded.Status.LastSync) {
		t.Errorf("back: digest %s lastSync %v; want the catalog as it was loaded (%s, %v)", back.Status.Digest,
			back.Status.LastSync, loaded.Status.Digest, loaded.Status.LastSync)
	}
}
