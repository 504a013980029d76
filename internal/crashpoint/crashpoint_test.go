package crashpoint

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

func TestExitsAfterTheNthWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	t.Setenv(EnvVar, "2")
	cfg := &rest.Config{Host: srv.URL}
	n, err := Install(cfg)
	if err != nil || n != 2 {
		t.Fatalf("Install = %d, %v", n, err)
	}
	exited := 0
	rt := cfg.WrapTransport(http.DefaultTransport).(*transport)
	rt.c.exit = func(code int) {
		if code != ExitCode {
			t.Errorf("exit code %d", code)
		}
		exited++
	}
	do := func(method string) {
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	do(http.MethodGet)   // reads never count
	do(http.MethodPatch) // write 1
	if exited != 0 {
		t.Fatal("exited after the first write")
	}
	do(http.MethodGet)
	do(http.MethodPost) // write 2: the crash point
	if exited != 1 {
		t.Fatalf("exited %d times after the second write, want once", exited)
	}
}

func TestUnsetWrapsNothing(t *testing.T) {
	t.Setenv(EnvVar, "")
	cfg := &rest.Config{}
	if n, err := Install(cfg); n != 0 || err != nil || cfg.WrapTransport != nil {
		t.Fatalf("Install with the hook unset = %d, %v, wrapped %v", n, err, cfg.WrapTransport != nil)
	}
	t.Setenv(EnvVar, "zero")
	if _, err := Install(cfg); err == nil {
		t.Fatal("a non-number was accepted")
	}
}
