package catalogsource_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

// imageRegistry serves an OCI registry on loopback, counting manifest requests by method,
// optionally behind basic auth, and can be stopped.
type imageRegistry struct {
	srv        *httptest.Server
	host       string
	heads      atomic.Int64
	gets       atomic.Int64
	down       atomic.Bool
	user, pass string
}

func newImageRegistry(t *testing.T, user, pass string) *imageRegistry {
	r := &imageRegistry{user: user, pass: pass}
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			http.Error(w, "stopped", http.StatusServiceUnavailable)
			return
		}
		if u, p, ok := req.BasicAuth(); r.user != "" && (!ok || u != r.user || p != r.pass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if strings.Contains(req.URL.Path, "/manifests/") {
			switch req.Method {
			case http.MethodHead:
				r.heads.Add(1)
			case http.MethodGet:
				r.gets.Add(1)
			}
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// sampleSubset copies some package versions of the sample catalog.
func sampleSubset(t *testing.T, versions ...string) string {
	dir := filepath.Join(t.TempDir(), "catalog")
	for _, v := range versions {
		copyDir(t, filepath.Join(sample, v), filepath.Join(dir, v))
	}
	return dir
}

// TestImageSource: a catalog image is polled by digest with HEAD requests, writing
// nothing while the tag names the same image; a new image under the tag is loaded; a
// registry gone keeps the last good catalog and says which image failed.
func TestImageSource(t *testing.T) {
	ctx := context.Background()
	reg := newImageRegistry(t, "", "")
	tag := reg.host + "/test/catalog:latest"
	pub1, err := imagecatalog.Publish(ctx, sampleSubset(t, "cache-operator/1.0.0", "cache-operator/1.1.0"), tag)
	if err != nil {
		t.Fatal(err)
	}
	cs := &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "image", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceImage, Image: tag,
			PollInterval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, "image", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 2 })
	if first.Status.ResolvedImage != pub1.Catalog || first.Status.Packages != 1 || first.Status.RejectedCount != 0 {
		t.Fatalf("status %+v; want resolvedImage %s, 1 package", first.Status, pub1.Catalog)
	}
	if c := ready(first); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v", c)
	}

	// An unchanged tag: HEAD requests only, and nothing written.
	heads, gets := reg.heads.Load(), reg.gets.Load()
	time.Sleep(3 * time.Second)
	again := waitFor(t, "image", func(*omv1.CatalogSource) bool { return true })
	if again.ResourceVersion != first.ResourceVersion {
		t.Errorf("an unchanged catalog image was written: resourceVersion %s -> %s", first.ResourceVersion, again.ResourceVersion)
	}
	if n := reg.heads.Load() - heads; n < 3 {
		t.Errorf("%d HEAD polls in 3s at a 500ms interval, want several", n)
	}
	if n := reg.gets.Load() - gets; n != 0 {
		t.Errorf("%d manifests fetched while the tag did not move", n)
	}

	// A new catalog image under the tag.
	pub2, err := imagecatalog.Publish(ctx, sampleSubset(t, "cache-operator/1.0.0", "cache-operator/1.1.0", "cache-operator/1.2.0"), tag)
	if err != nil {
		t.Fatal(err)
	}
	changed := waitFor(t, "image", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 3 })
	if changed.Status.ResolvedImage != pub2.Catalog || changed.Status.Digest == first.Status.Digest {
		t.Errorf("after a push: resolvedImage %s digest %s; want %s and a new digest", changed.Status.ResolvedImage, changed.Status.Digest, pub2.Catalog)
	}

	// The registry stops: the catalog stays, Ready says which image could not be read.
	reg.down.Store(true)
	failed := waitFor(t, "image", func(cs *omv1.CatalogSource) bool {
		c := ready(cs)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	if c := ready(failed); c.Reason != omv1.ReasonLoadFailed || !strings.Contains(c.Message, tag) || !strings.Contains(c.Message, "is still used") {
		t.Errorf("Ready = %+v; want LoadFailed naming %s and the catalog still used", c, tag)
	}
	if failed.Status.Bundles != 3 || failed.Status.ResolvedImage != pub2.Catalog {
		t.Errorf("status while the registry is down: %+v", failed.Status)
	}
	reg.down.Store(false)
	waitFor(t, "image", func(cs *omv1.CatalogSource) bool { c := ready(cs); return c != nil && c.Status == metav1.ConditionTrue })
	if err := k8s.Delete(ctx, failed); err != nil {
		t.Fatal(err)
	}
}

// TestImageSourcePullSecret: a registry asking for credentials is refused with a message
// naming it until spec.pullSecret names a dockerconfigjson Secret with them.
func TestImageSourcePullSecret(t *testing.T) {
	ctx := context.Background()
	reg := newImageRegistry(t, "", "")
	tag := reg.host + "/private/catalog:v1"
	if _, err := imagecatalog.Publish(ctx, sampleSubset(t, "reloader-operator"), tag); err != nil {
		t.Fatal(err)
	}
	reg.user, reg.pass = "robot", "s3cret"

	cs := &omv1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: "default"},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceImage, Image: tag, PullSecret: "registry-creds",
			PollInterval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	missing := waitFor(t, "private", func(cs *omv1.CatalogSource) bool { return ready(cs) != nil })
	if c := ready(missing); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "spec.pullSecret: Secret default/registry-creds not found") {
		t.Errorf("Ready without the Secret = %+v", c)
	}

	auth := base64.StdEncoding.EncodeToString([]byte("robot:wrong"))
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.host: map[string]string{"auth": auth}}})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-creds", Namespace: "default"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: config}}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	refused := waitFor(t, "private", func(cs *omv1.CatalogSource) bool {
		c := ready(cs)
		return c != nil && strings.Contains(c.Message, tag) && strings.Contains(strings.ToLower(c.Message), "unauthorized")
	})
	if refused.Status.Bundles != 0 {
		t.Errorf("loaded with wrong credentials: %+v", refused.Status)
	}

	auth = base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	config, _ = json.Marshal(map[string]any{"auths": map[string]any{reg.host: map[string]string{"auth": auth}}})
	secret.Data[corev1.DockerConfigJsonKey] = config
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	loaded := waitFor(t, "private", func(cs *omv1.CatalogSource) bool { return cs.Status.Bundles == 2 })
	if c := ready(loaded); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready with the right credentials = %+v", c)
	}
	if err := k8s.Delete(ctx, loaded); err != nil {
		t.Fatal(err)
	}
}
