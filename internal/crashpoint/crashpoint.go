// Package crashpoint is a test-only hook: with OPM_CRASH_AFTER_WRITES=N in its
// environment, the manager exits at once after its Nth API write (any request that is not
// a GET, LIST or WATCH and that the API server answered), as a crash at that point would.
// The reliability tests walk N over every write of an install, an upgrade, a rollback and
// an uninstall, restarting the manager each time, and check that it always converges.
// Unset, it costs nothing: the transport is not wrapped.
package crashpoint

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/operator-manager/operator-manager/internal/metrics"
)

// EnvVar names the hook's environment variable.
const EnvVar = "OPM_CRASH_AFTER_WRITES"

// EnvLogWrites, set to 1, logs every API write (method, path, status) to standard error:
// what a crash point would hit, and what a steady state should never show.
const EnvLogWrites = "OPM_LOG_WRITES"

// ExitCode is the exit code of a crash at a crash point, so a test tells it from a failure.
const ExitCode = 97

// Install wraps cfg's transport when EnvVar is set; it returns the crash point, or 0.
func Install(cfg *rest.Config) (int, error) {
	raw := os.Getenv(EnvVar)
	logWrites := os.Getenv(EnvLogWrites) == "1"
	if raw == "" && !logWrites {
		return 0, nil
	}
	n := 0
	if raw != "" {
		var err error
		if n, err = strconv.Atoi(raw); err != nil || n < 1 {
			return 0, fmt.Errorf("%s=%q: want a positive number of writes", EnvVar, raw)
		}
	}
	c := &counter{after: n, log: logWrites, exit: func(code int) { os.Exit(code) }}
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return &transport{next: rt, c: c}
	}
	return n, nil
}

type counter struct {
	mu    sync.Mutex
	n     int
	after int // 0: never exit
	log   bool
	exit  func(int)
}

type transport struct {
	next http.RoundTripper
	c    *counter
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	// A write as the manager's request metric counts one (access reviews are questions).
	if err != nil || !metrics.IsWrite(metrics.RequestInfo(req.Method, req.URL.Path, "")) {
		return resp, err
	}
	t.c.mu.Lock() // held until exit: no other write completes after the crash point
	t.c.n++
	if t.c.log {
		fmt.Fprintf(os.Stderr, "write %d: %s %s (%d)\n", t.c.n, req.Method, req.URL.Path, resp.StatusCode)
	}
	if t.c.after > 0 && t.c.n >= t.c.after {
		fmt.Fprintf(os.Stderr, "crash point: exiting after write %d: %s %s (%d)\n", t.c.n, req.Method, req.URL.Path, resp.StatusCode)
		t.c.exit(ExitCode)
	}
	t.c.mu.Unlock()
	return resp, err
}
