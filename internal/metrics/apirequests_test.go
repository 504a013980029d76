package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
)

func TestRequestInfo(t *testing.T) {
	for _, tc := range []struct {
		method, path, watch string
		verb, resource      string
		write               bool
	}{
		{"GET", "/api/v1/namespaces/a/configmaps/x", "", "get", "configmaps", false},
		{"GET", "/api/v1/namespaces/a/configmaps", "", "list", "configmaps", false},
		{"GET", "/api/v1/configmaps", "true", "watch", "configmaps", false},
		{"GET", "/api/v1/namespaces", "", "list", "namespaces", false},
		{"GET", "/api/v1/namespaces/a", "", "get", "namespaces", false},
		{"PATCH", "/apis/apps/v1/namespaces/a/deployments/d", "", "patch", "deployments.apps", true},
		{"PATCH", "/apis/operators.coreos.com.operator-manager.domain/v1/namespaces/a/blueprints/b/status", "", "patch",
			"blueprints.operators.coreos.com.operator-manager.domain/status", true},
		{"PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.example.com/status", "", "update",
			"customresourcedefinitions.apiextensions.k8s.io/status", true},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "", "create", "subjectaccessreviews.authorization.k8s.io", false},
		{"POST", "/api/v1/namespaces/a/serviceaccounts/s/token", "", "create", "serviceaccounts/token", true},
		{"POST", "/api/v1/namespaces/a/events", "", "create", "events", true},
		{"DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/r", "", "delete", "clusterroles.rbac.authorization.k8s.io", true},
		{"DELETE", "/api/v1/namespaces/a/pods", "", "deletecollection", "pods", true},
		{"GET", "/apis/apps/v1", "", "list", "", false},
		{"GET", "/version", "", "list", "", false},
	} {
		verb, resource := RequestInfo(tc.method, tc.path, tc.watch)
		if verb != tc.verb || resource != tc.resource || IsWrite(verb, resource) != tc.write {
			t.Errorf("%s %s: got %s %q write=%v, want %s %q write=%v", tc.method, tc.path, verb, resource, IsWrite(verb, resource), tc.verb, tc.resource, tc.write)
		}
	}
}

func TestWorkWrite(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"PATCH", "/apis/apps/v1/namespaces/a/deployments/d", true},
		{"POST", "/apis/events.k8s.io/v1/namespaces/a/events", true},
		{"PATCH", "/apis/operators.coreos.com.operator-manager.domain/v1/namespaces/a/blueprints/b/status", true},
		// The leader's renewals go on every few seconds whether or not there is work.
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/operator-manager-system/leases/operator-manager", false},
		{"POST", "/apis/coordination.k8s.io/v1/namespaces/operator-manager-system/leases", false},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		{"GET", "/api/v1/namespaces/a/pods", false},
	} {
		verb, resource := RequestInfo(tc.method, tc.path, "")
		if got := WorkWrite(verb, resource); got != tc.want {
			t.Errorf("%s %s (%s %s): WorkWrite %v, want %v", tc.method, tc.path, verb, resource, got, tc.want)
		}
	}
}

// TestRequestsCountedWithTheirAnswer: every attempt is counted once, under the code the
// API server answered with, or "error" when no answer came.
func TestRequestsCountedWithTheirAnswer(t *testing.T) {
	codes := []int{http.StatusOK, http.StatusTooManyRequests, http.StatusOK, http.StatusConflict}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := codes[0]
		codes = codes[1:]
		w.WriteHeader(code)
	}))
	defer srv.Close()
	cfg := &rest.Config{}
	InstrumentRequests(cfg)
	client := &http.Client{Transport: cfg.WrapTransport(http.DefaultTransport)}
	const path = "/api/v1/namespaces/metrics-test/secrets/s"
	count := func(code string) float64 {
		m := &dto.Metric{}
		if err := APIRequests.WithLabelValues("get", "secrets", code).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	before200, before429 := count("200"), count("429")
	for range 3 {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := count("200") - before200; got != 2 {
		t.Errorf("get secrets answered 200: counted %v, want 2", got)
	}
	if got := count("429") - before429; got != 1 {
		t.Errorf("get secrets answered 429: counted %v, want 1", got)
	}
	beforeErr := count("error")
	srv.Close()
	if resp, err := client.Get(srv.URL + path); err == nil {
		resp.Body.Close()
		t.Fatal("a request to a closed server succeeded")
	}
	if got := count("error") - beforeErr; got != 1 {
		t.Errorf("get secrets with no answer: counted %v under \"error\", want 1", got)
	}
}
