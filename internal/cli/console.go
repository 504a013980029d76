package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/operator-manager/operator-manager/internal/console"
)

func newConsoleCmd(g *globals) *cobra.Command {
	var addr string
	var open, allowRemote bool
	cmd := &cobra.Command{
		Use:   "console [--addr 127.0.0.1:8090] [--open]",
		Short: "Serve the web console: browse catalogs, install, follow and act on installations",
		Long: `console serves a web page on --addr that browses the cluster's catalogs, installs
operators, follows installations live (health, history, events) and approves, upgrades,
rolls back, pauses, resumes and uninstalls them. It acts with your identity (the
kubeconfig's credentials and context), so whoever reaches the page acts as you: it serves
loopback only unless --allow-remote. Every change is shown as a dry run first. It stops on
Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return usageError("--addr %q: %v", addr, err)
			}
			if !allowRemote && !loopbackHost(host) {
				return usageError("--addr %s is not a loopback address: the console acts with your identity (your kubeconfig's credentials) for whoever reaches it; pass --allow-remote to serve it there anyway", addr)
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			ns, err := g.ns()
			if err != nil {
				return err
			}
			kubeContext := g.context
			if kubeContext == "" {
				if raw, err := g.clientConfig().RawConfig(); err == nil {
					kubeContext = raw.CurrentContext
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			defer ln.Close()
			listen := ln.Addr().String()
			opts := console.Options{Addr: listen, Context: kubeContext, Namespace: ns, CacheDir: defaultCacheDir()}
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				opts.AllowedHosts = localNames()
			}
			srv, err := console.NewLocal(cfg, opts)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			user, err := srv.User(ctx)
			if err != nil {
				return fmt.Errorf("asking the cluster who you are: %w", err)
			}
			url := "http://" + listen
			fmt.Fprintf(cmd.OutOrStdout(), "operator-manager console: %s (acting as %s on %s)\n", url, user, kubeContext)
			if open {
				opener := "xdg-open"
				if runtime.GOOS == "darwin" {
					opener = "open"
				}
				if err := exec.Command(opener, url).Start(); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "could not open a browser (%v): open %s\n", err, url)
				}
			}
			return console.Serve(ctx, "", srv, ln)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8090", "address to serve the console on (loopback unless --allow-remote)")
	cmd.Flags().BoolVar(&open, "open", false, "open the console in the browser (xdg-open, open)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "serve on a non-loopback address: anyone who reaches it acts with your identity")
	return cmd
}

// loopbackHost reports whether host is localhost or a loopback IP.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// localNames are the names and addresses a browser may reach this machine by, for a
// console listening on every interface.
func localNames() []string {
	var out []string
	if h, err := os.Hostname(); err == nil {
		out = append(out, h)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				out = append(out, n.IP.String())
			}
		}
	}
	return out
}
