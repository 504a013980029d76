package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// APIRequests counts the manager's requests to the API server by verb and resource, as the
// API server would log them (verb get, list, watch, create, update, patch, delete;
// resource with its group and any subresource: "deployments.apps", "blueprints.<group>/status").
// controller-runtime's rest_client_requests_total counts by HTTP method only, which cannot
// tell a write from an access review (a POST that changes nothing) or a status patch from
// an object's: the figures a fleet's API server budget is planned with.
//
// Each attempt is counted with its answer's status code ("200", "409", "429"), or "error"
// when none came: client-go repeats a request the API server's priority and fairness
// turned away (429), so a busy API server shows as more requests of the same kind.
var APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "operator_manager_api_requests_total",
	Help: "Requests the manager sent the API server, by verb, resource (group and subresource included) and the answer's status code (\"error\" when none came).",
}, []string{"verb", "resource", "code"})

// InstrumentRequests wraps cfg's transport so every request is counted in APIRequests.
func InstrumentRequests(cfg *rest.Config) {
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return countingTransport{next: rt}
	}
}

type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, resource := RequestInfo(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	if WorkWrite(verb, resource) {
		workWrites.Add(1) // before it is sent: a write in flight is work going on
	}
	resp, err := t.next.RoundTrip(req)
	APIRequests.WithLabelValues(verb, resource, statusCode(resp, err)).Inc()
	return resp, err
}

// statusCode is the code label of an attempt's answer.
func statusCode(resp *http.Response, err error) string {
	if err != nil || resp == nil {
		return "error"
	}
	return strconv.Itoa(resp.StatusCode)
}

// workWrites counts the writes WorkWrite says are work.
var workWrites atomic.Uint64

// WorkWrites is how many writes of work (WorkWrite) the manager has sent: a count that
// stands still exactly while the manager has nothing to do, since a settled fleet costs
// no write (BENCHMARKS.md, the idle minute).
func WorkWrites() uint64 { return workWrites.Load() }

// WorkWrite says whether a request is a write of the manager's work: any write but the
// leader election's Lease renewals, which go on every few seconds whatever happens.
func WorkWrite(verb, resource string) bool {
	return IsWrite(verb, resource) && resource != "leases.coordination.k8s.io"
}

// RequestInfo names a request as the API server's audit log does: the verb from the method
// and whether a name is given, the resource ("deployments.apps", "pods/status") from the
// path. Paths outside the resource API (discovery, /version, /openapi) are resource "".
func RequestInfo(method, path, watch string) (verb, resource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	group := ""
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1], parts[3:] // apis/<group>/<version>
	default:
		parts = nil
	}
	// namespaces/<ns>/<resource>/... ; a bare namespaces[/<name>] is the resource itself.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	named := len(parts) >= 2
	if len(parts) > 0 {
		resource = parts[0]
		if group != "" {
			resource += "." + group
		}
		if len(parts) >= 3 {
			resource += "/" + parts[2]
		}
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}

// IsWrite says whether a verb and resource change what the API server stores: access,
// token and rules reviews are POSTs that only ask a question.
func IsWrite(verb, resource string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return !strings.HasSuffix(strings.SplitN(resource, ".", 2)[0], "reviews")
	}
	return false
}
