package e2e

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/test/promrules"
)

// TestAlerts evaluates the shipped alerting rules (config/prometheus/alerts.yaml), with
// Prometheus's own engine and alerting state machine, on what the running manager's
// /metrics serves while, in one namespace, one operator runs, a first install has failed
// its health check, a Subscription names a package no catalog has and a CatalogSource
// cannot be loaded: each of the three draws its alert, naming its own object, and the
// running operator draws none.
func TestAlerts(t *testing.T) {
	ns := "alerts"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: reloader}
spec: {package: reloader-operator, catalog: samples}
`)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: broken}
spec: {package: cache-operator, version: 1.3.0, catalog: samples, targetNamespaces: [alerts], health: {timeout: 10s}}
`)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: missing}
spec: {package: no-such-operator, catalog: samples}
`)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: gone}
spec: {sourceType: Directory, directory: /nonexistent/catalog}
`)
	waitReady(t, ns, "reloader", 2*time.Minute)
	eventually(t, 2*time.Minute, "the broken first install failed", func() bool {
		return getSub(t, ns, "broken").Status.Opstatus == strings.ToLower(string(omv1.BlueprintFailed))
	}, describeSub(t, ns, "broken"))
	eventually(t, time.Minute, "Subscription missing unresolved", func() bool {
		return condition(getSub(t, ns, "missing").Status.Conditions, omv1.ConditionResolved).Status == metav1.ConditionFalse
	}, describeSub(t, ns, "missing"))
	eventually(t, time.Minute, "CatalogSource gone not Ready", func() bool {
		cs := &omv1.CatalogSource{}
		if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "gone"}, cs); err != nil {
			return false
		}
		c := meta.FindStatusCondition(cs.Status.Conditions, omv1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse
	}, nil)

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := promrules.Load("../../config/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The page as if served unchanged for 25 hours, so every alert's "for" (a day at most)
	// has passed: what fires is what these states fire if they last.
	st := promrules.Scrape(t, strings.NewReader(string(page)), 25*time.Hour, 5*time.Minute)
	var got []string
	for _, a := range promrules.Firing(t, groups, st, 25*time.Hour, 5*time.Minute) {
		if a.Labels["namespace"] != ns {
			continue // other tests' installations share the manager
		}
		got = append(got, a.Name+" "+a.Labels["subscription"]+a.Labels["catalogsource"])
		if !strings.Contains(a.Annotations["description"], ns+"/") {
			t.Errorf("%s: the description names no object of %s: %q", a.Name, ns, a.Annotations["description"])
		}
	}
	slices.Sort(got)
	want := []string{"OperatorCatalogLoadFailing gone", "OperatorChangeFailed broken", "OperatorSubscriptionUnresolved missing"}
	if !slices.Equal(got, want) {
		var series []string
		for _, line := range strings.Split(string(page), "\n") {
			if strings.Contains(line, `namespace="`+ns+`"`) {
				series = append(series, line)
			}
		}
		t.Errorf("alerts about namespace %s: %q, want %q\nthe manager's series of it:\n%s", ns, got, want, strings.Join(series, "\n"))
	}
}
