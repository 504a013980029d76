package e2e

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

// testRegistry is an OCI registry served in the test process on loopback
// (go-containerregistry's registry package), which can be stopped and can be told to
// serve other bytes than a digest names.
type testRegistry struct {
	srv  *httptest.Server
	host string
	// down makes every request fail, as a registry that is gone.
	down atomic.Bool
	// tamper is a path prefix (/v2/<repo>/) whose manifests are served changed.
	tamper atomic.Value
}

func newTestRegistry(t *testing.T) *testRegistry {
	r := &testRegistry{}
	r.tamper.Store("")
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			http.Error(w, "registry stopped", http.StatusServiceUnavailable)
			return
		}
		prefix := r.tamper.Load().(string)
		if prefix == "" || req.Method != http.MethodGet || !strings.HasPrefix(req.URL.Path, prefix) || !strings.Contains(req.URL.Path, "/manifests/sha256:") {
			inner.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, req)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		// Same length, other bytes: one space more before the closing brace.
		body := bytes.TrimSuffix(rec.Body.Bytes(), []byte("}"))
		body = append(body, []byte(" }")...)
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// catalogTree copies the given package versions of the sample catalog to a directory.
func catalogTree(t *testing.T, name string, versions ...string) string {
	dir := filepath.Join(work, "image-catalogs", name)
	for _, v := range versions {
		copyTree(t, filepath.Join(sampleDir, v), filepath.Join(dir, v))
	}
	return dir
}

func publish(t *testing.T, dir, ref string) *imagecatalog.Published {
	t.Helper()
	p, err := imagecatalog.Publish(ctx(), dir, ref, remote.WithContext(ctx()))
	if err != nil {
		t.Fatalf("publishing %s as %s: %v", dir, ref, err)
	}
	return p
}

// catalogLoaded is a condition for eventually: the CatalogSource is Ready with these
// counts.
func catalogLoaded(t *testing.T, ns, name string, packages, bundles int32) func() bool {
	return func() bool {
		cs := getCatalogSource(t, ns, name)
		c := meta.FindStatusCondition(cs.Status.Conditions, omv1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && cs.Status.Packages == packages && cs.Status.Bundles == bundles
	}
}

// catalogFailing is a condition for eventually: the CatalogSource's load failed
// (Ready=False LoadFailed), its message saying each of words.
func catalogFailing(t *testing.T, ns, name string, words ...string) func() bool {
	return func() bool {
		c := meta.FindStatusCondition(getCatalogSource(t, ns, name).Status.Conditions, omv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != omv1.ReasonLoadFailed {
			return false
		}
		for _, w := range words {
			if !strings.Contains(c.Message, w) {
				return false
			}
		}
		return true
	}
}

// catalogStatus describes a CatalogSource's status, for eventually.
func catalogStatus(t *testing.T, ns, name string) func() string {
	return func() string { return fmt.Sprint(getCatalogSource(t, ns, name).Status) }
}

func getCatalogSource(t *testing.T, ns, name string) *omv1.CatalogSource {
	t.Helper()
	cs := &omv1.CatalogSource{}
	if err := k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: name}, cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestImageCatalog: the sample catalog published as an OCI catalog image and bundle images
// in a registry served by the test. A CatalogSource of type Image installs from it,
// upgrades when a new catalog image is pushed under the same tag, and rolls back with the
// registry stopped (the catalog stays in use, Ready=False naming the image). `catalog
// mirror` writes the catalog and its bundle images to a directory a Directory
// CatalogSource installs from. A registry serving other bytes than a bundle's digest is
// refused with a condition naming the image, and nothing is installed from it.
func TestImageCatalog(t *testing.T) {
	reg := newTestRegistry(t)
	tag := reg.host + "/samples/catalog:stable"
	pub1 := publish(t, catalogTree(t, "v1", "cache-operator/1.0.0", "cache-operator/1.1.0"), tag)
	for _, b := range pub1.Bundles {
		if !strings.Contains(b.Image, "@sha256:") {
			t.Fatalf("bundle image %s is not referenced by digest", b.Image)
		}
	}

	ns := "image"
	newNamespace(t, ns)
	applyYAML(t, ns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: images}
spec: {sourceType: Image, image: %q, pollInterval: 2s}
`, tag))
	eventually(t, time.Minute, "the Image CatalogSource loads", func() bool {
		cs := getCatalogSource(t, ns, "images")
		return cs.Status.ResolvedImage == pub1.Catalog && cs.Status.Bundles == 2
	}, func() string { return fmt.Sprintf("%+v\n%s", getCatalogSource(t, ns, "images").Status, managerLog()) })

	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, channel: stable, catalog: images}
`)
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	checkInstalled(t, ns, "cache-operator.v1.1.0")

	// A new catalog image under the same tag: the poll sees the new digest and the
	// channel's new head is installed, its bundle pulled from its image.
	pub2 := publish(t, catalogTree(t, "v2", "cache-operator/1.0.0", "cache-operator/1.1.0", "cache-operator/1.2.0"), tag)
	if pub2.Digest == pub1.Digest {
		t.Fatal("the second catalog image has the first one's digest")
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")
	if cs := getCatalogSource(t, ns, "images"); cs.Status.ResolvedImage != pub2.Catalog {
		t.Errorf("status.resolvedImage = %s, want %s", cs.Status.ResolvedImage, pub2.Catalog)
	}

	// Mirror while the registry is up; installed from below, after the registry stops.
	mirror := filepath.Join(work, "catalogs", "mirrored")
	if out, err := cli("catalog", "mirror", tag, mirror); err != nil {
		t.Fatalf("catalog mirror: %v\n%s", err, out)
	}

	// The registry stops: the catalog in use stays, Ready=False names the image, and a
	// rollback runs from the copy of the revision kept in the cluster.
	reg.down.Store(true)
	eventually(t, time.Minute, "Ready=False naming the image", func() bool {
		c := condition(getCatalogSource(t, ns, "images").Status.Conditions, omv1.ConditionReady)
		return c.Status == metav1.ConditionFalse && strings.Contains(c.Message, tag) && strings.Contains(c.Message, "still used")
	}, func() string { return fmt.Sprintf("%+v", getCatalogSource(t, ns, "images").Status.Conditions) })
	if out, err := cli("rollback", "cache", "-n", ns, "--to-revision", "1", "--wait"); err != nil {
		t.Fatalf("rollback with the registry stopped: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	reg.down.Store(false)
	kubectl(t, "delete", "subscription", "cache", "-n", ns, "--wait=true")

	// The mirror: the FBC and the bundle images in an OCI layout, read by a Directory
	// CatalogSource with no registry involved.
	if _, err := os.Stat(filepath.Join(mirror, "images", "oci-layout")); err != nil {
		t.Fatalf("the mirror has no images/ layout: %v", err)
	}
	mns := "image-mirror"
	newNamespaceWithCatalog(t, mns, mirror)
	reg.down.Store(true)
	applyYAML(t, mns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: test}
`)
	waitRunning(t, mns, "cache", "cache-operator.v1.1.0")
	setStartingCSV(t, mns, "cache", "cache-operator.1.2.0")
	waitRunning(t, mns, "cache", "cache-operator.v1.2.0")
	reg.down.Store(false)
	kubectl(t, "delete", "subscription", "cache", "-n", mns, "--wait=true")

	// A registry serving other bytes than the bundle image's digest.
	bad := reg.host + "/tampered/catalog:v1"
	publish(t, catalogTree(t, "tampered", "reloader-operator"), bad)
	reg.tamper.Store("/v2/tampered/catalog/reloader-operator/")
	tns := "image-tampered"
	newNamespace(t, tns)
	applyYAML(t, tns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: tampered}
spec: {sourceType: Image, image: %q, pollInterval: 2s}
`, bad))
	applyYAML(t, tns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: reloader}
spec: {package: reloader-operator, catalog: tampered}
`)
	eventually(t, 2*time.Minute, "the tampered bundle refused", func() bool {
		bp := &omv1.Blueprint{}
		if err := k8s.Get(ctx(), types.NamespacedName{Namespace: tns, Name: "reloader"}, bp); err != nil {
			return false
		}
		for _, h := range bp.Status.History {
			if h.Outcome == omv1.OutcomeFailed && strings.Contains(h.Reason+h.Message, reg.host+"/tampered/catalog/reloader-operator@sha256:") &&
				strings.Contains(h.Reason+h.Message, "does not match") {
				return true
			}
		}
		return false
	}, describeSub(t, tns, "reloader"))
	csvs := &omv1alpha1.ClusterServiceVersionList{}
	if err := k8s.List(ctx(), csvs); err != nil {
		t.Fatal(err)
	}
	for _, c := range csvs.Items {
		if c.Namespace == tns {
			t.Errorf("CSV %s was created from a bundle whose image did not match its digest", c.Name)
		}
	}
	dep := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), types.NamespacedName{Namespace: tns, Name: "reloader-operator"}, dep); !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment of the tampered bundle: %v (want not found)", err)
	}
}
