// Package console is the backend of `operator-manager console`: one embedded page and the
// JSON API of docs/console-api.md. Every request acts on the cluster as the person, never
// with the manager's own rights: locally with their kubeconfig identity (NewLocal), in a
// cluster with the bearer token of the request (NewInCluster).
package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/operator-manager/operator-manager/config"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/scheme"
)

//go:embed web
var webFS embed.FS

// RequestedByHeader must carry RequestedByValue on every request that changes something:
// a cross-site page cannot send it without a CORS preflight, which the console never
// approves.
const (
	RequestedByHeader = "X-Requested-By"
	RequestedByValue  = "operator-manager-console"
)

// ContentSecurityPolicy allows the page only its own origin (and data: images, the
// packages' icons).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// noToken is the answer to a request without a bearer token in a cluster.
const noToken = "no bearer token: serve the console behind an authenticating proxy, or run operator-manager console locally"

// Options configure a console.
type Options struct {
	// Addr is the address the console listens on (host:port). The local console refuses
	// requests whose Host header is neither it nor localhost/127.0.0.1/[::1] with its
	// port (DNS rebinding); empty turns the check off.
	Addr string
	// AllowedHosts are further host names (without port) the Host header may carry with
	// Addr's port: a console listening on every interface is reached by the machine's
	// names and addresses.
	AllowedHosts []string
	// Context and Namespace are the kubeconfig context's name and default namespace
	// (local only): whoami shows the context, and the namespace is the one always read
	// when the person may not list cluster-wide.
	Context   string
	Namespace string
	// CacheDir keeps the catalogs and bundles of HTTP and Image CatalogSources.
	CacheDir string
	// CatalogNamespaces hold the catalogs every namespace installs from (the manager's
	// namespace, its global catalog namespace): the catalogs page lists theirs too for a
	// person who may not list cluster-wide (the shipped RBAC lets everyone signed in read
	// them). Default: the manager's usual namespace.
	CatalogNamespaces []string
	// KeepAlive is the interval of the stream's keepalive comments (default 15s).
	KeepAlive time.Duration
}

// Server serves the page and the API. It is an http.Handler.
type Server struct {
	opts    Options
	local   *identity    // NewLocal: the kubeconfig's identity
	base    *rest.Config // NewInCluster: the server and its CA, no credentials
	handler http.Handler

	catalogs *catalogCache

	mu     sync.Mutex
	tokens map[[32]byte]*tokenEntry // in a cluster: clients by token, briefly
}

// identity is the person's clients.
type identity struct {
	cfg  *rest.Config
	c    client.WithWatch
	kube kubernetes.Interface
	dyn  dynamic.Interface
	// namespace is always among those read when the person may not list cluster-wide.
	namespace string
}

type tokenEntry struct {
	id      *identity
	expires time.Time
}

// tokenTTL is how long the clients of one token are kept; maxTokens bounds how many.
const (
	tokenTTL  = 5 * time.Minute
	maxTokens = 256
)

// NewLocal serves the console for the person of cfg (their kubeconfig identity).
func NewLocal(cfg *rest.Config, o Options) (*Server, error) {
	id, err := newIdentity(rest.CopyConfig(cfg), o.Namespace)
	if err != nil {
		return nil, err
	}
	s := newServer(o)
	s.local = id
	return s, nil
}

// NewInCluster serves the console behind an authenticating proxy: each request acts with
// its own bearer token (Authorization: Bearer, or X-Forwarded-Access-Token) on a copy of
// base with every other credential cleared (no client certificate, token file,
// impersonation or auth plugin). A request without a token gets 401.
func NewInCluster(base *rest.Config, o Options) (*Server, error) {
	s := newServer(o)
	s.base = rest.AnonymousClientConfig(base)
	s.tokens = map[[32]byte]*tokenEntry{}
	return s, nil
}

func newServer(o Options) *Server {
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if len(o.CatalogNamespaces) == 0 {
		o.CatalogNamespaces = []string{config.ManagerNamespace}
	}
	s := &Server{opts: o, catalogs: newCatalogCache(o.CacheDir)}
	s.handler = s.routes()
	return s
}

func newIdentity(cfg *rest.Config, namespace string) (*identity, error) {
	if cfg.QPS == 0 && cfg.Burst == 0 { // a page view makes a handful of requests at once
		cfg.QPS, cfg.Burst = 50, 100
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &identity{cfg: cfg, c: c, kube: kube, dyn: dyn, namespace: namespace}, nil
}

// ServeHTTP answers one request: security headers on every answer, the Host and
// X-Requested-By checks, then the page or the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	if s.local != nil && !s.hostAllowed(r.Host) {
		writeError(w, &httpError{code: http.StatusForbidden, reason: metav1.StatusReasonForbidden,
			msg: fmt.Sprintf("the Host header %q is not the address the console listens on (%s): refused, against DNS rebinding", r.Host, s.opts.Addr)})
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(RequestedByHeader) != RequestedByValue {
		writeError(w, &httpError{code: http.StatusForbidden, reason: metav1.StatusReasonForbidden,
			msg: fmt.Sprintf("a request that changes something must carry the header %s: %s", RequestedByHeader, RequestedByValue)})
		return
	}
	s.handler.ServeHTTP(w, r)
}

// hostAllowed reports whether the Host header names the address the console listens on,
// or localhost with its port.
func (s *Server) hostAllowed(host string) bool {
	if s.opts.Addr == "" {
		return true
	}
	if strings.EqualFold(host, s.opts.Addr) {
		return true
	}
	_, port, err := net.SplitHostPort(s.opts.Addr)
	if err != nil {
		return false
	}
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != port {
		return false
	}
	switch strings.ToLower(h) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(h, a) {
			return true
		}
	}
	return false
}

type ctxKey struct{}

// api wraps an API handler: it finds the person's identity for the request.
func (s *Server) api(fn func(w http.ResponseWriter, r *http.Request, id *identity)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := s.identityFor(r)
		if err != nil {
			writeError(w, err)
			return
		}
		fn(w, r, id)
	}
}

// identityFor is the local identity, or the clients of the request's bearer token.
func (s *Server) identityFor(r *http.Request) (*identity, error) {
	if s.local != nil {
		return s.local, nil
	}
	token := ""
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		token = strings.TrimSpace(auth[7:])
	}
	if token == "" {
		token = strings.TrimSpace(r.Header.Get("X-Forwarded-Access-Token"))
	}
	if token == "" {
		return nil, &httpError{code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized, msg: noToken}
	}
	key, now := sha256.Sum256([]byte(token)), time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.tokens[key]; e != nil && now.Before(e.expires) {
		return e.id, nil
	}
	cfg := rest.CopyConfig(s.base)
	cfg.BearerToken = token
	// Nothing but the token: AnonymousClientConfig dropped the rest; say so again.
	cfg.BearerTokenFile, cfg.Username, cfg.Password = "", "", ""
	cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData = "", "", nil, nil
	cfg.Impersonate = rest.ImpersonationConfig{}
	cfg.AuthProvider, cfg.ExecProvider = nil, nil
	id, err := newIdentity(cfg, "")
	if err != nil {
		return nil, err
	}
	if len(s.tokens) >= maxTokens {
		for k, e := range s.tokens {
			if !now.Before(e.expires) || len(s.tokens) >= maxTokens {
				delete(s.tokens, k)
			}
		}
	}
	s.tokens[key] = &tokenEntry{id: id, expires: now.Add(tokenTTL)}
	return id, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.static("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /index.html", s.static("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /app.js", s.static("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", s.static("app.css", "text/css; charset=utf-8"))

	mux.HandleFunc("GET /api/whoami", s.api(s.whoami))
	mux.HandleFunc("GET /api/catalogs", s.api(s.listCatalogs))
	mux.HandleFunc("GET /api/catalogs/{ns}/{name}/packages", s.api(s.listPackages))
	mux.HandleFunc("GET /api/catalogs/{ns}/{name}/packages/{pkg}", s.api(s.packageDetail))
	mux.HandleFunc("GET /api/catalogs/{ns}/{name}/packages/{pkg}/recommend", s.api(s.recommend))
	mux.HandleFunc("GET /api/catalogs/{ns}/{name}/packages/{pkg}/permissions", s.api(s.permissions))
	mux.HandleFunc("POST /api/subscriptions", s.api(s.install))
	mux.HandleFunc("GET /api/installations", s.api(s.listInstallations))
	mux.HandleFunc("GET /api/installations/stream", s.api(s.stream))
	mux.HandleFunc("GET /api/installations/{ns}/{name}", s.api(s.installationDetail))
	mux.HandleFunc("POST /api/installations/{ns}/{name}/{action}", s.api(s.act))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &httpError{code: http.StatusNotFound, reason: metav1.StatusReasonNotFound, msg: fmt.Sprintf("no API %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

// static serves one embedded file of web/.
func (s *Server) static(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := fs.ReadFile(webFS, "web/"+name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(data)
	}
}

// httpError is an answer of the console's own: a bad request, a refusal.
type httpError struct {
	code   int
	reason metav1.StatusReason
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{code: http.StatusNotFound, reason: metav1.StatusReasonNotFound, msg: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &httpError{code: http.StatusConflict, reason: metav1.StatusReasonConflict, msg: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return &httpError{code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid, msg: fmt.Sprintf(format, args...)}
}

// errorBody is every error's JSON.
type errorBody struct {
	Error  string              `json:"error"`
	Reason metav1.StatusReason `json:"reason"`
	Code   int32               `json:"code"`
}

// writeError answers with the API server's code and message verbatim, or the console's.
func writeError(w http.ResponseWriter, err error) {
	body := errorBody{Error: err.Error(), Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError}
	var he *httpError
	var st apierrors.APIStatus
	switch {
	case errors.As(err, &he):
		body.Reason, body.Code = he.reason, int32(he.code)
	case errors.As(err, &st):
		status := st.Status()
		body.Error, body.Reason, body.Code = status.Message, status.Reason, status.Code
		if body.Code == 0 {
			body.Code = http.StatusInternalServerError
		}
		if body.Error == "" {
			body.Error = err.Error()
		}
	case errors.Is(err, context.DeadlineExceeded):
		body.Reason, body.Code = metav1.StatusReasonTimeout, http.StatusGatewayTimeout
	}
	writeJSON(w, int(body.Code), body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// readJSON decodes a request body into v.
func readJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &httpError{code: http.StatusUnsupportedMediaType, reason: metav1.StatusReasonUnsupportedMediaType, msg: "the body must be application/json, not " + ct}
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) { // an empty body is {}
		return badRequest("the body: %v", err)
	}
	return nil
}

// whoamiBody is GET /api/whoami.
type whoamiBody struct {
	User    string   `json:"user"`
	Groups  []string `json:"groups"`
	Context string   `json:"context"`
	Server  string   `json:"server"`
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request, id *identity) {
	doc, err := s.whoamiOf(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// whoamiOf asks the API server who the identity is (a SelfSubjectReview).
func (s *Server) whoamiOf(ctx context.Context, id *identity) (*whoamiBody, error) {
	if id == nil {
		id = s.local
	}
	doc := &whoamiBody{Groups: []string{}}
	if s.local != nil {
		doc.Context, doc.Server = s.opts.Context, id.cfg.Host
	}
	review, err := id.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	doc.User = review.Status.UserInfo.Username
	if review.Status.UserInfo.Groups != nil {
		doc.Groups = review.Status.UserInfo.Groups
	}
	return doc, nil
}

// User is the name the API server gives the local identity, for the CLI's first line.
func (s *Server) User(ctx context.Context) (string, error) {
	doc, err := s.whoamiOf(ctx, nil)
	if err != nil {
		return "", err
	}
	return doc.User, nil
}

// Runnable serves the console on addr until its context ends; it runs on every replica
// of the manager, not only the leader.
type Runnable struct {
	Addr    string
	Handler http.Handler
}

// Start serves until ctx ends.
func (r *Runnable) Start(ctx context.Context) error { return Serve(ctx, r.Addr, r.Handler, nil) }

// NeedLeaderElection is false: every replica serves the console.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Serve listens on addr (or uses ln when given) and serves h until ctx ends, then shuts
// down, letting requests in flight (streams end with ctx) finish for a few seconds.
func Serve(ctx context.Context, addr string, h http.Handler, ln net.Listener) error {
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return nil
}
