package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/console"
	"github.com/operator-manager/operator-manager/internal/manager"
	"github.com/operator-manager/operator-manager/test/harness"
)

// TestManagerServesConsole: `operator-manager run --console-addr` serves the console from
// the manager, as it runs in a cluster behind an authenticating proxy: on every replica
// (this one never leads: another replica holds the Lease), acting with each request's
// bearer token and never with the manager's rights. A request without a token is told how
// to get one; a reader's token reads what the reader may, and the reader's change is
// refused by the API server, which the console passes on, and nothing changes.
func TestManagerServesConsole(t *testing.T) {
	ns := "console-in-manager"
	newNamespace(t, ns)
	token := readerToken(t, ns)
	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
		Spec: omv1.SubscriptionSpec{Option: omv1.OptionCreate, StartingCSV: "cache-operator.v1.2.0", Paused: true}}
	if err := k8s.Create(ctx(), sub); err != nil {
		t.Fatal(err)
	}
	uninstallAtEnd(t, ns, sub.Name)

	// Another replica leads for the whole test, so this one reconciles nothing next to the
	// shared manager; the console does not wait for leadership.
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: manager.LeaderElectionID},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now}}
	if err := k8s.Create(ctx(), lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx(), lease) })

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	replica, err := cluster.StartManager("console-replica", harness.Options{SamplesAsDefault: true, Args: []string{
		"--leader-elect=true", "--leader-election-namespace=" + managerNamespace, "--console-addr=" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		replica.Kill()
		if t.Failed() {
			t.Logf("console replica log:\n%s", replica.LogTail(6000))
		}
	})
	base := "http://" + addr

	call := func(method, path, bearer string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		// What the console's own page sends with every change (its cross-site guard).
		req.Header.Set(console.RequestedByHeader, console.RequestedByValue)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}

	var page string
	eventually(t, time.Minute, "the manager serves the console page on "+addr, func() bool {
		code, body := call("GET", "/", "", "")
		page = body
		return code == http.StatusOK
	}, func() string { return page + "\n" + replica.LogTail(3000) })
	if !strings.Contains(page, "<html") {
		t.Errorf("GET / is not the console's page:\n%s", tail(page, 2000))
	}

	code, body := call("GET", "/api/whoami", "", "")
	if code != http.StatusUnauthorized || !strings.Contains(body, "no bearer token") {
		t.Errorf("whoami without a token: %d %s", code, body)
	}
	code, body = call("GET", "/api/whoami", token, "")
	if code != http.StatusOK || !strings.Contains(body, `"user":"system:serviceaccount:`+ns+`:reader"`) {
		t.Errorf("whoami with the reader's token: %d %s", code, body)
	}
	code, body = call("GET", "/api/installations?namespace="+ns, token, "")
	if code != http.StatusOK || !strings.Contains(body, `"name":"guarded"`) {
		t.Errorf("the reader's installations: %d %s", code, body)
	}
	// The manager may read CatalogSources everywhere; the reader may not.
	code, body = call("GET", "/api/catalogs", token, "")
	if code == http.StatusOK && strings.Contains(body, `"name":"samples"`) {
		t.Errorf("the reader sees CatalogSources it may not read (the manager's rights?): %s", body)
	}

	before := &omv1.Subscription{}
	if err := k8s.Get(ctx(), client.ObjectKeyFromObject(sub), before); err != nil {
		t.Fatal(err)
	}
	code, body = call("POST", "/api/installations/"+ns+"/guarded/resume", token, `{"dryRun":false}`)
	var refusal struct {
		Error, Reason string
	}
	_ = json.Unmarshal([]byte(body), &refusal)
	if code != http.StatusForbidden || refusal.Reason != "Forbidden" ||
		!strings.Contains(refusal.Error, `User "system:serviceaccount:`+ns+`:reader" cannot patch resource "subscriptions"`) {
		t.Errorf("resume by the reader: %d %s", code, body)
	}
	after := &omv1.Subscription{}
	if err := k8s.Get(ctx(), client.ObjectKeyFromObject(sub), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || !after.Spec.Paused {
		t.Errorf("the refused resume changed the Subscription: paused %v, resourceVersion %s -> %s",
			after.Spec.Paused, before.ResourceVersion, after.ResourceVersion)
	}

	// The replica served all that without leading.
	got := &coordinationv1.Lease{}
	if err := k8s.Get(ctx(), client.ObjectKeyFromObject(lease), got); err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(got.Spec.HolderIdentity, ""); h != "another-replica" {
		t.Errorf("the Lease is held by %q: the console replica took the lead", h)
	}
}
