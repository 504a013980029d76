package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/console"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var (
	env    *testenv.Env
	k8s    client.Client
	sample string
)

// ns is the namespace the tests work in; team is where the restricted user may read.
const (
	ns   = "console-test"
	team = "console-team"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.APIOnly, &env, func(e *testenv.Env) error {
		var err error
		if sample, err = filepath.Abs("../../samples/catalog"); err != nil {
			return err
		}
		if k8s, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
			return err
		}
		ctx := context.Background()
		if err := config.InstallCRDs(ctx, k8s); err != nil {
			return err
		}
		for _, n := range []string{ns, team} {
			if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			// No controller-manager makes the default ServiceAccount pods need.
			if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "default"}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		return k8s.Create(ctx, &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "samples"},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: sample}})
	}))
}

// local starts a local console (the admin's identity) behind an httptest server whose
// address is the console's listen address.
func local(t testing.TB) (*httptest.Server, *console.Server) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	srv, err := console.NewLocal(env.Config, console.Options{Addr: ts.Listener.Addr().String(), Context: "test", Namespace: ns,
		CacheDir: t.TempDir(), KeepAlive: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, srv
}

type response struct {
	code int
	body []byte
	hdr  http.Header
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// call sends a request; POSTs carry the console's header unless hdr says otherwise.
func call(t *testing.T, ts *httptest.Server, method, path string, body any, hdr map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(console.RequestedByHeader, console.RequestedByValue)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: data, hdr: resp.Header}
}

func ok(t *testing.T, r response) {
	t.Helper()
	if r.code != http.StatusOK {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
}

func TestPageAndProtection(t *testing.T) {
	ts, _ := local(t)
	r := call(t, ts, "GET", "/", nil, nil)
	ok(t, r)
	if ct := r.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || r.hdr.Get("Cache-Control") != "no-cache" {
		t.Errorf("index: Content-Type %q, Cache-Control %q", ct, r.hdr.Get("Cache-Control"))
	}
	for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"} {
		if r.hdr.Get(k) != want {
			t.Errorf("%s = %q", k, r.hdr.Get(k))
		}
	}
	if csp := r.hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "img-src 'self' data:") {
		t.Errorf("CSP %q", csp)
	}
	// A POST without the console's header is refused before anything is read.
	r = call(t, ts, "POST", "/api/installations/"+ns+"/nothing/pause", map[string]any{}, map[string]string{console.RequestedByHeader: ""})
	if r.code != http.StatusForbidden || !strings.Contains(string(r.body), console.RequestedByHeader) {
		t.Errorf("POST without %s: %d %s", console.RequestedByHeader, r.code, r.body)
	}
	// DNS rebinding: another Host is refused; localhost with the port is fine.
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	if r = call(t, ts, "GET", "/api/whoami", nil, map[string]string{"Host": "evil.example:" + port}); r.code != http.StatusForbidden {
		t.Errorf("Host evil.example: %d %s", r.code, r.body)
	}
	if r = call(t, ts, "GET", "/api/whoami", nil, map[string]string{"Host": "localhost:" + port}); r.code != http.StatusOK {
		t.Errorf("Host localhost: %d %s", r.code, r.body)
	}
	if r = call(t, ts, "GET", "/api/whoami", nil, map[string]string{"Host": "localhost:1"}); r.code != http.StatusForbidden {
		t.Errorf("Host localhost:1: %d %s", r.code, r.body)
	}
}

func TestWhoami(t *testing.T) {
	ts, srv := local(t)
	var who struct {
		User    string   `json:"user"`
		Groups  []string `json:"groups"`
		Context string   `json:"context"`
		Server  string   `json:"server"`
	}
	r := call(t, ts, "GET", "/api/whoami", nil, nil)
	ok(t, r)
	r.decode(t, &who)
	if who.User == "" || who.Context != "test" || who.Server != env.Config.Host {
		t.Errorf("whoami = %+v", who)
	}
	if u, err := srv.User(context.Background()); err != nil || u != who.User {
		t.Errorf("User() = %q, %v", u, err)
	}
}

func TestCatalogs(t *testing.T) {
	ts, _ := local(t)
	var cats []map[string]any
	r := call(t, ts, "GET", "/api/catalogs", nil, nil)
	ok(t, r)
	r.decode(t, &cats)
	found := false
	for _, c := range cats {
		if c["namespace"] == ns && c["name"] == "samples" {
			found = c["type"] == "Directory" && c["source"] == sample
		}
	}
	if !found {
		t.Fatalf("catalogs = %v", cats)
	}
	var pkgs []struct {
		Name, DisplayName, Description, DefaultChannel, Latest string
		Channels, InstallModes                                 []string
	}
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages", nil, nil)
	ok(t, r)
	r.decode(t, &pkgs)
	if len(pkgs) != 4 {
		t.Fatalf("packages = %+v", pkgs)
	}
	for _, p := range pkgs {
		if p.Name == "cache-operator" && (p.Latest != "1.3.0" || p.DefaultChannel == "" || len(p.Channels) == 0 || p.Description == "" || len(p.InstallModes) == 0) {
			t.Errorf("cache-operator row %+v", p)
		}
	}
	// Search: by name, and by words of the description or display name.
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages?q=CACHE", nil, nil)
	ok(t, r)
	r.decode(t, &pkgs)
	// cache-operator by its name, backup-operator by its description ("Backs up the Caches").
	if len(pkgs) != 2 || pkgs[0].Name != "backup-operator" || pkgs[1].Name != "cache-operator" {
		t.Errorf("q=CACHE: %+v", pkgs)
	}
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages?q=in-memory", nil, nil)
	ok(t, r)
	r.decode(t, &pkgs)
	if len(pkgs) != 1 || pkgs[0].Name != "cache-operator" {
		t.Errorf("q=in-memory: %+v", pkgs)
	}
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages?q=no-such-thing-anywhere", nil, nil)
	ok(t, r)
	r.decode(t, &pkgs)
	if len(pkgs) != 0 {
		t.Errorf("q=no-such-thing: %+v", pkgs)
	}
	// Unknown catalog: the API server's 404, verbatim.
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/nope/packages", nil, nil)
	var e struct {
		Error, Reason string
		Code          int
	}
	r.decode(t, &e)
	if r.code != 404 || e.Code != 404 || e.Reason != "NotFound" || !strings.Contains(e.Error, `"nope" not found`) {
		t.Errorf("unknown catalog: %d %s", r.code, r.body)
	}
}

func TestPackageDetailRecommendPermissions(t *testing.T) {
	ts, _ := local(t)
	var pkg struct {
		Name, Description string
		Channels          []struct {
			Name, Head string
			Entries    []struct{ CSV, Version, Replaces string }
		}
		Versions []struct {
			CSV, Version string
			OwnedCRDs    []string
			Channels     []string
		}
	}
	r := call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages/cache-operator", nil, nil)
	ok(t, r)
	r.decode(t, &pkg)
	if pkg.Name != "cache-operator" || len(pkg.Versions) != 4 || pkg.Versions[0].Version != "1.3.0" || pkg.Versions[3].Version != "1.0.0" ||
		len(pkg.Versions[0].OwnedCRDs) == 0 || len(pkg.Channels) == 0 || len(pkg.Channels[0].Entries) == 0 || pkg.Description == "" {
		t.Errorf("detail = %s", r.body)
	}
	if r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages/nope", nil, nil); r.code != 404 {
		t.Errorf("unknown package: %d %s", r.code, r.body)
	}

	var rec struct {
		Recommended *struct{ CSV, Version string }
		PassedOver  []struct{ CSV, Version, Reason string }
		Notes       []string
	}
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages/cache-operator/recommend?namespace="+ns, nil, nil)
	ok(t, r)
	r.decode(t, &rec)
	if rec.Recommended == nil && len(rec.PassedOver) == 0 {
		t.Errorf("recommend = %s", r.body)
	}
	if !strings.Contains(string(r.body), `"passedOver":[`) || !strings.Contains(string(r.body), `"notes":[`) {
		t.Errorf("recommend lists must be arrays: %s", r.body)
	}

	var grants []struct {
		Subject, Scope, Role           string
		APIGroups, Resources, Verbs    []string
		ResourceNames, NonResourceURLs []string
	}
	r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages/cache-operator/permissions?csv=cache-operator.v1.2.0&namespace=ops", nil, nil)
	ok(t, r)
	r.decode(t, &grants)
	found := false
	for _, g := range grants {
		found = found || (g.Subject == "ServiceAccount ops/cache-operator" && g.Scope == "cluster" && strings.Join(g.Resources, ",") == "namespaces")
	}
	if !found || !strings.Contains(string(r.body), `"resourceNames":[`) {
		t.Errorf("permissions = %s", r.body)
	}
	if r = call(t, ts, "GET", "/api/catalogs/"+ns+"/samples/packages/cache-operator/permissions?csv=nope.v1&namespace=ops", nil, nil); r.code != 404 {
		t.Errorf("permissions of an unknown CSV: %d %s", r.code, r.body)
	}
}

func TestInstall(t *testing.T) {
	ts, _ := local(t)
	ctx := context.Background()
	body := map[string]any{"namespace": ns, "name": "installed", "catalog": ns + "/samples", "package": "cache-operator", "channel": "stable",
		"version": ">=1.1.0 <1.3.0", "approval": "Manual", "targetNamespaces": []string{}, "serviceAccountName": "", "dryRun": true}
	r := call(t, ts, "POST", "/api/subscriptions", body, nil)
	ok(t, r)
	var out struct {
		Change struct {
			Kind, Namespace, Name, Verb string
			Object                      omv1.Subscription
		}
		Applied bool
	}
	r.decode(t, &out)
	if out.Applied || out.Change.Verb != "create" || out.Change.Kind != "Subscription" || out.Change.Object.Spec.Package != "cache-operator" {
		t.Errorf("dry run: %s", r.body)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "installed"}, &omv1.Subscription{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run created the Subscription: %v", err)
	}
	body["dryRun"] = false
	r = call(t, ts, "POST", "/api/subscriptions", body, nil)
	ok(t, r)
	r.decode(t, &out)
	if !out.Applied {
		t.Errorf("applied: %s", r.body)
	}
	sub := &omv1.Subscription{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "installed"}, sub); err != nil {
		t.Fatal(err)
	}
	want := omv1.SubscriptionSpec{Option: omv1.OptionCreate, Package: "cache-operator", Channel: "stable", Version: ">=1.1.0 <1.3.0",
		Catalog: "samples", Approval: omv1.ApprovalManual}
	if sub.Spec.HistoryLimit != nil { // a default of the schema, if any
		want.HistoryLimit = sub.Spec.HistoryLimit
	}
	if !reflect.DeepEqual(sub.Spec, want) {
		t.Errorf("spec = %+v, want %+v", sub.Spec, want)
	}
	// A second one of that name: the API server's 409, verbatim.
	r = call(t, ts, "POST", "/api/subscriptions", body, nil)
	if r.code != http.StatusConflict || !strings.Contains(string(r.body), "already exists") {
		t.Errorf("again: %d %s", r.code, r.body)
	}
	// One of the same package by another name: refused before it is made (the manager
	// would refuse it, PackageAlreadySubscribed, and it was left behind failed).
	body["name"] = "another"
	r = call(t, ts, "POST", "/api/subscriptions", body, nil)
	if r.code != http.StatusConflict || !strings.Contains(string(r.body), `Subscription `+ns+`/installed already installs package \"cache-operator\"`) {
		t.Errorf("a second Subscription of the package: %d %s", r.code, r.body)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "another"}, &omv1.Subscription{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused install made Subscription %s/another (%v)", ns, err)
	}
}

// installation makes a Subscription and its Blueprint with a history of two good
// revisions (cache-operator 1.1.0 then 1.2.0, running 1.2.0), the first kept in the
// cluster's revision store.
func installation(t *testing.T, name string, mutate func(*omv1.Subscription, *omv1.Blueprint)) (*omv1.Subscription, *omv1.Blueprint) {
	t.Helper()
	ctx := context.Background()
	cat, err := catalog.Load(sample, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b1, b2 := cat.BundleByCSV("cache-operator.v1.1.0"), cat.BundleByCSV("cache-operator.v1.2.0")
	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: omv1.SubscriptionSpec{Option: omv1.OptionCreate, StartingCSV: "cache-operator.v1.2.0"}}
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "cache-operator.v1.2.0", Package: "cache-operator", Version: "1.2.0",
			Catalog: ns + "/samples", BundleDigest: b2.Digest, Generation: 2, OldVersion: "cache-operator.v1.1.0"}}
	if mutate != nil {
		mutate(sub, bp)
	}
	if err := k8s.Create(ctx, sub); err != nil {
		t.Fatal(err)
	}
	status := bp.Status
	if err := k8s.Create(ctx, bp); err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	end := metav1.NewTime(start.Add(63 * time.Second))
	bp.Status = omv1.BlueprintStatus{Phase: omv1.BlueprintSucceeded, CurrentCSV: "cache-operator.v1.2.0", CurrentVersion: "1.2.0", LastGoodRevision: 2,
		History: []omv1.Revision{
			{Revision: 1, Trigger: omv1.TriggerInstall, CSVName: "cache-operator.v1.1.0", Version: "1.1.0", BundleDigest: b1.Digest, StartTime: &start, EndTime: &end, Outcome: omv1.OutcomeSucceeded, Reason: "Succeeded"},
			{Revision: 2, Trigger: omv1.TriggerUpgrade, FromVersion: "1.1.0", CSVName: "cache-operator.v1.2.0", Version: "1.2.0", BundleDigest: b2.Digest, StartTime: &start, EndTime: &end, Outcome: omv1.OutcomeSucceeded, Reason: "Succeeded"},
		},
		Conditions: []metav1.Condition{{Type: omv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "running", LastTransitionTime: start}}}
	if status.Phase != "" {
		bp.Status.Phase = status.Phase
	}
	if err := k8s.Status().Update(ctx, bp); err != nil {
		t.Fatal(err)
	}
	files, err := cat.Files(b1)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&revisionstore.Store{Client: k8s}).Save(ctx, bp, b1.Digest, files); err != nil {
		t.Fatal(err)
	}
	return sub, bp
}

func TestInstallationsAndStream(t *testing.T) {
	ts, _ := local(t)
	installation(t, "listed", nil)
	var rows []map[string]any
	r := call(t, ts, "GET", "/api/installations", nil, nil)
	ok(t, r)
	r.decode(t, &rows)
	var row map[string]any
	for _, rw := range rows {
		if rw["namespace"] == ns && rw["name"] == "listed" {
			row = rw
		}
	}
	if row == nil || row["package"] != "cache-operator" || row["csv"] != "cache-operator.v1.2.0" || row["version"] != "1.2.0" ||
		row["phase"] != "Succeeded" || row["ready"] != "True" || row["revision"] != float64(2) || row["paused"] != false || row["catalog"] != ns+"/samples" {
		t.Fatalf("row = %v (rows %v)", row, rows)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/installations/stream", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("the stream ended: %v", lines.Err())
		}
		return lines.Text()
	}
	for next() != ": watching" {
	}
	// A change made after connecting arrives as its row.
	sub := &omv1.Subscription{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "listed"}, sub); err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Paused = true
	if err := k8s.Patch(ctx, sub, p); err != nil {
		t.Fatal(err)
	}
	keepalive := false
	for {
		line := next()
		keepalive = keepalive || line == ": keepalive"
		if line != "event: installation" {
			continue
		}
		data := strings.TrimPrefix(next(), "data: ")
		var got map[string]any
		if err := json.Unmarshal([]byte(data), &got); err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		if got["name"] == "listed" && got["paused"] == true {
			break
		}
	}
	// Deleted: the Subscription goes, the page is told.
	if err := k8s.Delete(ctx, sub); err != nil {
		t.Fatal(err)
	}
	for {
		if next() != "event: deleted" {
			continue
		}
		if data := next(); strings.Contains(data, `"name":"listed"`) {
			break
		}
	}
	// Keepalive comments come every KeepAlive (a second here).
	deadline := time.Now().Add(5 * time.Second)
	for !keepalive && time.Now().Before(deadline) {
		keepalive = next() == ": keepalive"
	}
	if !keepalive {
		t.Error("no keepalive comment")
	}
}

func TestInstallationDetail(t *testing.T) {
	ts, _ := local(t)
	ctx := context.Background()
	_, bp := installation(t, "detailed", func(_ *omv1.Subscription, bp *omv1.Blueprint) {
		bp.Spec.Dependencies = []omv1.ResolvedDependency{{Package: "backup-operator", CSVName: "backup-operator.v0.2.0"},
			// Met by an installation of another namespace that watches this one.
			{Package: "guard-operator", CSVName: "guard-operator.v1.1.0", ServedFrom: "guards/guard"}}
	})
	// A Blueprint of another namespace whose dependency this installation runs for it.
	elsewhere := ns + "-elsewhere"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}); err != nil {
		t.Fatal(err)
	}
	remote := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere, Name: "remote"},
		Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "backup-operator.v0.2.0", Package: "backup-operator", Version: "0.2.0",
			Dependencies: []omv1.ResolvedDependency{{Package: "cache-operator", CSVName: "cache-operator.v1.2.0", ServedFrom: ns + "/detailed"}}}}
	if err := k8s.Create(ctx, remote); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, remote) })
	// Another installation depends on this one's package.
	installation(t, "backup", func(sub *omv1.Subscription, bp *omv1.Blueprint) {
		sub.Spec.StartingCSV = "backup-operator.v0.2.0"
		bp.Spec.Package, bp.Spec.ClusterServiceVersionName = "backup-operator", "backup-operator.v0.2.0"
		bp.Spec.Dependencies = []omv1.ResolvedDependency{{Package: "cache-operator", CSVName: "cache-operator.v1.2.0"}}
	})
	// Revision 3 to 1.3.0 is under way, blocked by the CRD preflight.
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	bp.Spec.ClusterServiceVersionName = "cache-operator.v1.3.0"
	if err := k8s.Update(ctx, bp); err != nil {
		t.Fatal(err)
	}
	bp.Status.History = append(bp.Status.History, omv1.Revision{Revision: 3, Trigger: omv1.TriggerUpgrade, CSVName: "cache-operator.v1.3.0",
		Version: "1.3.0", StartTime: &start, Outcome: omv1.OutcomePending})
	bp.Status.Conditions = append(bp.Status.Conditions,
		metav1.Condition{Type: omv1.ConditionBlocked, Status: metav1.ConditionTrue, Reason: omv1.ReasonCRDPreflightFailed, Message: "caches v1alpha1 is stored", LastTransitionTime: start},
		metav1.Condition{Type: omv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "Upgrade", Message: "waiting for the CRDs", LastTransitionTime: start})
	if err := k8s.Status().Update(ctx, bp); err != nil {
		t.Fatal(err)
	}
	// Its CSV, the Deployment the CSV names, and a pod of it.
	labels := map[string]string{"app": "cache-operator"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "example.com/cache:1.3.0"}}}
	csv := &omv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-operator.v1.3.0"}}
	csv.Spec.InstallStrategy = olm.NamedInstallStrategy{StrategyName: "deployment", StrategySpec: olm.StrategyDetailsDeployment{
		DeploymentSpecs: []olm.StrategyDeploymentSpec{{Name: "cache-operator", Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}}}}}}
	if err := k8s.Create(ctx, csv); err != nil {
		t.Fatal(err)
	}
	csv.Status.Phase, csv.Status.Message = omv1alpha1.CSVInstalling, "waiting for deployment cache-operator"
	if err := k8s.Status().Update(ctx, csv); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-operator"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2),
		Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels,
			Annotations: map[string]string{"olm.targetNamespaces": ns + ",apps"}}, Spec: podSpec}}}
	if err := k8s.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	dep.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := k8s.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-operator-1", Labels: labels}, Spec: podSpec}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "manager",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// Events the manager wrote (events.k8s.io/v1): an older and a newer one about the
	// Blueprint, and one about something else.
	for i, e := range []struct{ kind, name, reason string }{{"Blueprint", "detailed", "Older"}, {"Blueprint", "detailed", "Newer"}, {"Blueprint", "other", "Unrelated"}} {
		ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("detailed.%d", i)},
			EventTime: metav1.NewMicroTime(start.Add(time.Duration(i) * time.Second)), ReportingController: "operator-manager", ReportingInstance: "test",
			Action: "VersionChange", Reason: e.reason, Note: e.reason + " note", Type: corev1.EventTypeNormal,
			Regarding: corev1.ObjectReference{APIVersion: omv1.GroupVersion.String(), Kind: e.kind, Namespace: ns, Name: e.name}}
		if err := k8s.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}

	var doc struct {
		Row          map[string]any
		Subscription *omv1.Subscription
		Blueprint    *omv1.Blueprint
		History      []struct {
			Revision                      int64
			CSV, Outcome, Duration, Start string
			Kept                          *bool
		}
		Health struct {
			CSV, Phase, Message, WaitingFor, Deadline, TimeLeft string
			Deployments                                         []struct {
				Name                               string
				Desired, Updated, Ready, Available int32
				Watches                            *string
			}
			Pods []struct {
				Name, Phase, Reason string
				Ready               bool
			}
		}
		Preflight    *struct{ Status, Reason, Message string }
		Dependencies []struct{ Package, CSV, Namespace, Subscription string }
		Dependents   []struct{ Namespace, Name, Package string }
		Events       []struct{ Type, Reason, Message, Object, Time string }
	}
	r := call(t, ts, "GET", "/api/installations/"+ns+"/detailed", nil, nil)
	ok(t, r)
	r.decode(t, &doc)
	if doc.Subscription == nil || doc.Blueprint == nil || doc.Row["name"] != "detailed" {
		t.Fatalf("detail = %s", r.body)
	}
	if len(doc.History) != 3 || doc.History[0].Revision != 3 || doc.History[1].Revision != 2 || doc.History[1].Duration != "1m3s" ||
		doc.History[1].Start == "" || doc.History[1].Kept == nil || *doc.History[1].Kept || doc.History[2].Kept == nil || !*doc.History[2].Kept {
		t.Errorf("history = %+v", doc.History)
	}
	h := doc.Health
	wantDeadline := start.Add(5*time.Minute + 30*time.Second).UTC().Format(time.RFC3339)
	if h.CSV != "cache-operator.v1.3.0" || h.Phase != "Installing" || h.Message != "waiting for deployment cache-operator" || h.WaitingFor != "waiting for the CRDs" ||
		h.Deadline != wantDeadline || h.TimeLeft == "" || h.TimeLeft == "0s" {
		t.Errorf("health = %+v (deadline want %s)", h, wantDeadline)
	}
	if len(h.Deployments) != 1 || h.Deployments[0].Name != "cache-operator" || h.Deployments[0].Desired != 2 || h.Deployments[0].Ready != 1 ||
		h.Deployments[0].Watches == nil || *h.Deployments[0].Watches != ns+",apps" ||
		len(h.Pods) != 1 || h.Pods[0].Name != "cache-operator-1" || h.Pods[0].Ready || h.Pods[0].Reason != "ImagePullBackOff" {
		t.Errorf("deployments %+v, pods %+v", h.Deployments, h.Pods)
	}
	if doc.Preflight == nil || doc.Preflight.Reason != omv1.ReasonCRDPreflightFailed || doc.Preflight.Status != "True" {
		t.Errorf("preflight = %+v", doc.Preflight)
	}
	if len(doc.Dependencies) != 2 || doc.Dependencies[0].Package != "backup-operator" || doc.Dependencies[0].Subscription != "backup" ||
		doc.Dependencies[0].Namespace != ns || doc.Dependencies[1].Namespace != "guards" || doc.Dependencies[1].Subscription != "guard" {
		t.Errorf("dependencies = %+v", doc.Dependencies)
	}
	if len(doc.Dependents) != 2 || doc.Dependents[0].Name != "backup" || doc.Dependents[1].Namespace != elsewhere || doc.Dependents[1].Name != "remote" {
		t.Errorf("dependents = %+v", doc.Dependents)
	}
	if len(doc.Events) != 2 || doc.Events[0].Reason != "Newer" || doc.Events[1].Reason != "Older" || doc.Events[0].Object != "Blueprint/detailed" ||
		doc.Events[0].Message != "Newer note" {
		t.Errorf("events = %+v", doc.Events)
	}
	if r = call(t, ts, "GET", "/api/installations/"+ns+"/nope", nil, nil); r.code != 404 {
		t.Errorf("unknown installation: %d %s", r.code, r.body)
	}
}

type actionOut struct {
	Change struct {
		Kind, Namespace, Name, Verb string
		Patch                       map[string]any
		Before, After               map[string]any
	}
	Applied bool
}

// act runs an action as a dry run (nothing changes) and then for real, and checks the
// object changed exactly as check says.
func act(t *testing.T, ts *httptest.Server, name, action string, body map[string]any, obj client.Object, want func(before client.Object)) actionOut {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: ns, Name: name}
	if err := k8s.Get(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	if body == nil {
		body = map[string]any{}
	}
	body["dryRun"] = true
	r := call(t, ts, "POST", "/api/installations/"+ns+"/"+name+"/"+action, body, nil)
	ok(t, r)
	var out actionOut
	r.decode(t, &out)
	if out.Applied {
		t.Errorf("%s dry run applied: %s", action, r.body)
	}
	if err := k8s.Get(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	if obj.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("%s: the dry run changed %s", action, name)
	}
	body["dryRun"] = false
	r = call(t, ts, "POST", "/api/installations/"+ns+"/"+name+"/"+action, body, nil)
	ok(t, r)
	r.decode(t, &out)
	if !out.Applied {
		t.Errorf("%s: not applied: %s", action, r.body)
	}
	if err := k8s.Get(ctx, key, obj); err != nil {
		if want == nil && apierrors.IsNotFound(err) {
			return out
		}
		t.Fatal(err)
	}
	expected := before.DeepCopyObject().(client.Object)
	want(expected)
	if got, exp := specOf(obj), specOf(expected); !reflect.DeepEqual(got, exp) {
		t.Errorf("%s: spec\n got %+v\nwant %+v", action, got, exp)
	}
	return out
}

func specOf(o client.Object) any {
	switch o := o.(type) {
	case *omv1.Subscription:
		return o.Spec
	case *omv1.Blueprint:
		return o.Spec
	}
	return nil
}

func TestActions(t *testing.T) {
	ts, _ := local(t)
	installation(t, "acted", func(_ *omv1.Subscription, bp *omv1.Blueprint) { bp.Status.Phase = omv1.BlueprintWaitingForApproval })

	out := act(t, ts, "acted", "approve", nil, &omv1.Blueprint{}, func(o client.Object) { o.(*omv1.Blueprint).Spec.Approved = true })
	if out.Change.Kind != "Blueprint" || out.Change.Verb != "patch" || !reflect.DeepEqual(out.Change.Patch, map[string]any{"spec": map[string]any{"approved": true}}) ||
		!reflect.DeepEqual(out.Change.Before, map[string]any{"spec": map[string]any{"approved": nil}}) ||
		!reflect.DeepEqual(out.Change.After, map[string]any{"spec": map[string]any{"approved": true}}) {
		t.Errorf("approve change = %+v", out.Change)
	}

	out = act(t, ts, "acted", "pause", nil, &omv1.Subscription{}, func(o client.Object) { o.(*omv1.Subscription).Spec.Paused = true })
	if !reflect.DeepEqual(out.Change.After, map[string]any{"spec": map[string]any{"paused": true}}) {
		t.Errorf("pause change = %+v", out.Change)
	}
	act(t, ts, "acted", "resume", nil, &omv1.Subscription{}, func(o client.Object) { o.(*omv1.Subscription).Spec.Paused = false })

	// A pinned Subscription is upgraded by its startingCSV.
	act(t, ts, "acted", "upgrade", map[string]any{"csv": "cache-operator.v1.3.0"}, &omv1.Subscription{},
		func(o client.Object) { o.(*omv1.Subscription).Spec.StartingCSV = "cache-operator.v1.3.0" })

	// Rollback to revision 1, as `operator-manager rollback --to-revision 1`.
	out = act(t, ts, "acted", "rollback", map[string]any{"revision": 1}, &omv1.Blueprint{}, func(o client.Object) {
		bp := o.(*omv1.Blueprint)
		bp.Spec.OldVersion, bp.Spec.ClusterServiceVersionName, bp.Spec.Version = "cache-operator.v1.2.0", "cache-operator.v1.1.0", "1.1.0"
		bp.Spec.BundleDigest = bp.Status.History[0].BundleDigest
		bp.Spec.Generation++
		bp.Spec.Approved = true
	})
	if out.Change.Before["spec"].(map[string]any)["clusterServiceVersionName"] != "cache-operator.v1.2.0" {
		t.Errorf("rollback change = %+v", out.Change)
	}
	// A revision that is the target already is refused, saying why.
	r := call(t, ts, "POST", "/api/installations/"+ns+"/acted/rollback", map[string]any{"revision": 1, "dryRun": true}, nil)
	if r.code != http.StatusConflict || !strings.Contains(string(r.body), "already the target") {
		t.Errorf("rollback to the target: %d %s", r.code, r.body)
	}

	// A Subscription following a channel is upgraded by spec.version, the CSV's exact
	// version, found in its catalog.
	installation(t, "channel", func(sub *omv1.Subscription, _ *omv1.Blueprint) {
		sub.Spec.StartingCSV, sub.Spec.Package, sub.Spec.Channel, sub.Spec.Version = "", "cache-operator", "stable", ">=1.0.0"
	})
	act(t, ts, "channel", "upgrade", map[string]any{"csv": "cache-operator.v1.3.0"}, &omv1.Subscription{},
		func(o client.Object) { o.(*omv1.Subscription).Spec.Version = "1.3.0" })

	// Retry: refused while nothing ended badly, then a new generation of the same target
	// once the upgrade to 1.2.0 has failed, as `operator-manager retry`.
	if r := call(t, ts, "POST", "/api/installations/"+ns+"/channel/retry", map[string]any{"dryRun": true}, nil); r.code != http.StatusConflict ||
		!strings.Contains(string(r.body), "nothing to retry") {
		t.Errorf("retry of a healthy installation: %d %s", r.code, r.body)
	}
	_, failed := installation(t, "failed", nil)
	failed.Status.Phase, failed.Status.ObservedGeneration = omv1.BlueprintFailed, failed.Generation
	failed.Status.History[1].Outcome, failed.Status.History[1].Generation = omv1.OutcomeFailed, failed.Spec.Generation
	if err := k8s.Status().Update(context.Background(), failed); err != nil {
		t.Fatal(err)
	}
	r = call(t, ts, "GET", "/api/installations/"+ns+"/failed", nil, nil)
	ok(t, r)
	if !strings.Contains(string(r.body), `"retry":"cache-operator.v1.2.0"`) {
		t.Errorf("the failed installation's row does not offer a retry: %s", r.body)
	}
	act(t, ts, "failed", "retry", nil, &omv1.Blueprint{}, func(o client.Object) { o.(*omv1.Blueprint).Spec.Generation++ })

	out = act(t, ts, "acted", "uninstall", nil, &omv1.Subscription{}, nil)
	if out.Change.Verb != "delete" {
		t.Errorf("uninstall change = %+v", out.Change)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "acted"}, &omv1.Subscription{}); !apierrors.IsNotFound(err) {
		t.Errorf("uninstall left the Subscription: %v", err)
	}
	if r := call(t, ts, "POST", "/api/installations/"+ns+"/channel/frobnicate", map[string]any{}, nil); r.code != 404 {
		t.Errorf("unknown action: %d %s", r.code, r.body)
	}
}

// TestInCluster: a token's rights, and only its rights. A ServiceAccount that may only
// read Subscriptions and Blueprints of one namespace is refused a change with the API
// server's message, and nothing changes; a request without a token gets 401.
func TestInCluster(t *testing.T) {
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "viewer"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "viewer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{omv1.GroupVersion.Group}, Resources: []string{"subscriptions", "blueprints"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: team, Name: "viewer"}}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := kube.CoreV1().ServiceAccounts(team).CreateToken(ctx, "viewer", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "guarded"},
		Spec: omv1.SubscriptionSpec{Option: omv1.OptionCreate, StartingCSV: "cache-operator.v1.2.0"}}
	if err := k8s.Create(ctx, sub); err != nil {
		t.Fatal(err)
	}

	// The catalogs every namespace installs from live in the manager's namespace, which
	// the shipped RBAC lets everyone signed in read (config/rbac/user_roles.yaml), though
	// not list cluster-wide.
	shared := "shared-catalogs"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shared}},
		&omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: shared, Name: "everyones"},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: sample}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: shared, Name: "reader"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{omv1.GroupVersion.Group}, Resources: []string{"catalogsources"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: shared, Name: "reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:authenticated"}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	// The base config is the administrator's: the console must not use its credentials.
	srv, err := console.NewInCluster(env.Config, console.Options{CatalogNamespaces: []string{shared}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	r := call(t, ts, "GET", "/api/whoami", nil, nil)
	if r.code != http.StatusUnauthorized || !strings.Contains(string(r.body), "no bearer token: serve the console behind an authenticating proxy, or run operator-manager console locally") {
		t.Errorf("without a token: %d %s", r.code, r.body)
	}
	bearer := map[string]string{"Authorization": "Bearer " + tr.Status.Token}
	r = call(t, ts, "GET", "/api/whoami", nil, bearer)
	ok(t, r)
	if !strings.Contains(string(r.body), `"user":"system:serviceaccount:`+team+`:viewer"`) {
		t.Errorf("whoami = %s", r.body)
	}
	r = call(t, ts, "GET", "/api/catalogs?namespace="+team, nil, bearer)
	ok(t, r)
	if !strings.Contains(string(r.body), `"namespace":"`+shared+`","name":"everyones"`) {
		t.Errorf("the viewer's catalogs = %s, want the shared catalog %s/everyones", r.body, shared)
	}
	// The proxy's header works as well.
	r = call(t, ts, "GET", "/api/installations?namespace="+team, nil, map[string]string{"X-Forwarded-Access-Token": tr.Status.Token})
	ok(t, r)
	if !strings.Contains(string(r.body), `"name":"guarded"`) || strings.Contains(string(r.body), `"namespace":"`+ns+`"`) {
		t.Errorf("the viewer's installations = %s", r.body)
	}

	for _, dry := range []bool{true, false} {
		r = call(t, ts, "POST", "/api/installations/"+team+"/guarded/pause", map[string]any{"dryRun": dry}, bearer)
		var e struct {
			Error, Reason string
			Code          int
		}
		r.decode(t, &e)
		if r.code != http.StatusForbidden || e.Code != 403 || e.Reason != "Forbidden" ||
			!strings.Contains(e.Error, `User "system:serviceaccount:`+team+`:viewer" cannot patch resource "subscriptions"`) {
			t.Errorf("pause by the viewer (dry run %v): %d %s", dry, r.code, r.body)
		}
	}
	got := &omv1.Subscription{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(sub), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != sub.ResourceVersion || got.Spec.Paused {
		t.Errorf("the refused pause changed the Subscription: %+v", got.Spec)
	}
	// Installing is refused the same way.
	r = call(t, ts, "POST", "/api/subscriptions", map[string]any{"namespace": team, "name": "x", "package": "cache-operator"}, bearer)
	if r.code != http.StatusForbidden || !strings.Contains(string(r.body), "cannot create resource") {
		t.Errorf("install by the viewer: %d %s", r.code, r.body)
	}
}
