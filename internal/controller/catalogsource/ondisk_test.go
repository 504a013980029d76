package catalogsource_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/test/registryserver"
)

// restarted is a manager started again on the same disk: a new reconciler with nothing in
// memory, over the same cache directory. It returns the catalog it then holds and the
// Ready condition it wrote last (read from its own request: the running
// manager of this test binary may write its own words a moment later).
func restarted(t *testing.T, name string) (*catalog.Catalog, *metav1.Condition) {
	t.Helper()
	kw, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var written *omv1.CatalogSource
	c := interceptor.NewClient(kw, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		if cs, ok := obj.(*omv1.CatalogSource); ok {
			written = cs.DeepCopy()
		}
		return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	}})
	r := &catalogsource.Reconciler{Client: c, Store: catalogsource.NewStore(), CacheDir: cache,
		Recorder: events.NewFakeRecorder(10), Clock: clock.RealClock{}}
	key := types.NamespacedName{Namespace: "default", Name: name}
	// Twice: the second pass, with the kept catalog in memory, must still say where it
	// came from (its status patch brings the pass back at once).
	for range 2 {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	if written == nil {
		return r.Store.Get(key), nil
	}
	return r.Store.Get(key), ready(written)
}

// TestRestartWithSourceDown: a manager that starts while its registry (an image registry,
// a registry server, an HTTP catalog server) cannot be reached uses the catalog the CatalogSource last reported,
// found on its disk by digest, and still says the source failed; with nothing on disk it
// has no catalog rather than a guess.
func TestRestartWithSourceDown(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Load(sampleSubset(t, "cache-operator/1.0.0", "cache-operator/1.1.0"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fbc := t.TempDir()
	if err := registryserver.WriteFBC(cat, fbc); err != nil {
		t.Fatal(err)
	}
	addr, stop, err := registryserver.Serve(ctx, fbc, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	httpSrv := httptest.NewServer(remote.Handler(cat))
	reg := newImageRegistry(t, "", "")
	if _, err := imagecatalog.Publish(ctx, sampleSubset(t, "reloader-operator"), reg.host+"/test/kept:latest"); err != nil {
		t.Fatal(err)
	}
	for _, cs := range []*omv1.CatalogSource{
		{ObjectMeta: metav1.ObjectMeta{Name: "kept-grpc", Namespace: "default"},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceGRPC, Address: addr, PollInterval: &metav1.Duration{Duration: time.Hour}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kept-image", Namespace: "default"},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceImage, Image: reg.host + "/test/kept:latest", PollInterval: &metav1.Duration{Duration: time.Hour}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kept-http", Namespace: "default"},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceHTTP, URL: httpSrv.URL, PollInterval: &metav1.Duration{Duration: time.Hour}}},
	} {
		if err := k8s.Create(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	loaded := map[string]*omv1.CatalogSource{}
	for _, name := range []string{"kept-grpc", "kept-image", "kept-http"} {
		loaded[name] = waitFor(t, name, func(cs *omv1.CatalogSource) bool {
			return cs.Status.Bundles == 2 && ready(cs).Status == metav1.ConditionTrue
		})
	}

	stop()
	reg.down.Store(true)
	httpSrv.Close()
	for _, name := range []string{"kept-grpc", "kept-image", "kept-http"} {
		got, c := restarted(t, name)
		if got == nil || got.Digest != loaded[name].Status.Digest || len(got.Bundles()) != 2 {
			t.Fatalf("%s: after a restart with its source down the manager holds %v, want the catalog of digest %s", name, got, loaded[name].Status.Digest)
		}
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != omv1.ReasonLoadFailed || !strings.Contains(c.Message, "kept on its disk, is used") {
			t.Errorf("%s: Ready %+v: want LoadFailed, saying the catalog kept on disk is used", name, c)
		}
	}

	// A registry server that served another catalog than the one reported: nothing on
	// disk has the reported digest, so nothing is used.
	cs := waitFor(t, "kept-grpc", func(*omv1.CatalogSource) bool { return true })
	cs.Status.Digest = "sha256:0000"
	if err := k8s.Status().Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if got, _ := restarted(t, "kept-grpc"); got != nil {
		t.Errorf("a catalog whose digest is not the one reported was used: %s", got.Digest)
	}
}
