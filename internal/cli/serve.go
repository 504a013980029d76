package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
)

// serveOptions are the flags of `catalog serve`.
type serveOptions struct {
	addr   string
	reload time.Duration
}

// shutdownTimeout bounds how long a stopping server waits for requests in flight.
const shutdownTimeout = 10 * time.Second

func newCatalogServeCmd() *cobra.Command {
	opts := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve DIR",
		Short: "Serve a catalog directory over HTTP, for HTTP CatalogSources",
		Long: `serve loads the catalog in DIR and serves it for CatalogSources of sourceType HTTP
(spec.url: http://ADDR) and for "catalog list|search|show|validate --url":

  GET /index.json        packages, channels and bundles with their digests (ETag: the
                         catalog digest; If-None-Match gives 304 Not Modified)
  GET /bundles/<digest>  a bundle's files as a tar, checked against the digest

It prints what it serves, logs each request, checks DIR for changes every --reload (0
turns it off) and serves the new content once it has loaded, and stops gracefully on
SIGINT or SIGTERM.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serveCatalog(ctx, args[0], opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&opts.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().DurationVar(&opts.reload, "reload", 30*time.Second, "how often to check DIR for changes and reload it (0: never)")
	return cmd
}

// catalogServer is the state of `catalog serve`: the catalog being served and its handler,
// swapped together when DIR changes.
type catalogServer struct {
	dir     string
	current atomic.Pointer[servedCatalog]
}

type servedCatalog struct {
	cat     *catalog.Catalog
	handler http.Handler
}

func (s *catalogServer) set(cat *catalog.Catalog) {
	s.current.Store(&servedCatalog{cat: cat, handler: remote.Handler(cat)})
}

func (s *catalogServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.current.Load().handler.ServeHTTP(w, r)
}

// serveCatalog serves dir on opts.addr until ctx is done, then shuts down gracefully.
// What it serves goes to out, request lines and reloads to logw.
func serveCatalog(ctx context.Context, dir string, opts serveOptions, out, logw io.Writer) error {
	if opts.reload < 0 {
		return fmt.Errorf("--reload %s: must not be negative", opts.reload)
	}
	cat, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		return err
	}
	s := &catalogServer{dir: dir}
	s.set(cat)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.addr)
	if err != nil {
		return fmt.Errorf("serving catalog %s: %w", dir, err)
	}
	logger := &lineLogger{w: logw}
	srv := &http.Server{
		Handler:           logRequests(s, logger),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	describeServed(out, cat)
	fmt.Fprintf(out, "Serving catalog %s on http://%s\n", cat.Root, ln.Addr())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	reloadCtx, stopReloads := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopReloads(); wg.Wait() }()
	if opts.reload > 0 {
		wg.Go(func() { s.reloadEvery(reloadCtx, opts.reload, logger) })
	}
	select {
	case err := <-errc:
		// Serve returned without a shutdown: the listener failed.
		return fmt.Errorf("serving catalog %s: %w", dir, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("stopping the catalog server: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.printf("Stopped serving catalog %s", cat.Root)
	return nil
}

// reloadEvery checks the directory for changes each interval and, when it changed and
// loads, serves the new catalog. A failed load keeps the catalog being served.
func (s *catalogServer) reloadEvery(ctx context.Context, interval time.Duration, logger *lineLogger) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		prev := s.current.Load().cat
		cat, changed, err := catalog.LoadIfChanged(s.dir, prev, catalog.Options{})
		switch {
		case err != nil:
			logger.printf("Reloading catalog %s failed, still serving digest %s: %v", s.dir, prev.Digest, err)
		case changed && cat.Digest != prev.Digest:
			s.set(cat)
			logger.printf("Reloaded catalog %s: %d packages, %d bundles, %d rejected, digest %s (was %s)",
				cat.Root, len(cat.Packages()), len(cat.Bundles()), len(cat.Rejections), cat.Digest, prev.Digest)
			for _, r := range cat.Rejections {
				logger.printf("Rejected %s", r)
			}
		case changed:
			// Files changed but not what is served (a comment, a README): keep the new
			// fingerprint so the next check is cheap again, and the same index.
			s.set(cat)
		}
	}
}

// describeServed prints the catalog being served: a summary, each package with its
// default channel head, and each rejected bundle with its reason.
func describeServed(w io.Writer, cat *catalog.Catalog) {
	fmt.Fprintf(w, "Catalog %s: %d packages, %d bundles, %d rejected, digest %s\n",
		cat.Root, len(cat.Packages()), len(cat.Bundles()), len(cat.Rejections), cat.Digest)
	for _, p := range cat.Packages() {
		head := ""
		if b, err := cat.Head(p.Name, ""); err == nil {
			head = ", head " + b.CSVName
		}
		fmt.Fprintf(w, "  package %s: %d bundles, default channel %q%s\n", p.Name, len(p.Bundles), p.DefaultChannel, head)
	}
	for _, r := range cat.Rejections {
		fmt.Fprintf(w, "  rejected %s\n", r)
	}
}

// lineLogger writes whole timestamped lines; requests are logged from many goroutines.
type lineLogger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineLogger) printf(format string, args ...any) {
	line := time.Now().UTC().Format(time.RFC3339) + " " + fmt.Sprintf(format, args...) + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, line)
}

// logRequests logs one line per request: client, request line, status, bytes, duration.
func logRequests(next http.Handler, logger *lineLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &responseRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		logger.printf("%s %q %d %d %s", r.RemoteAddr, r.Method+" "+r.RequestURI+" "+r.Proto, rec.status, rec.bytes,
			time.Since(start).Round(time.Microsecond))
	})
}

type responseRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *responseRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *responseRecorder) Write(p []byte) (int, error) {
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}
