// Package cli is operator-manager's command line: `run` starts the controllers, `dev`
// runs a local cluster, and the other verbs are for people.
package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/operator-manager/operator-manager/internal/scheme"
)

// globals are the flags every verb shares, named and meant as kubectl's.
type globals struct {
	kubeconfig string
	context    string
	namespace  string
}

// PluginName is the name under which kubectl finds the binary as a plugin:
// `kubectl operator-manager ...` runs `kubectl-operator_manager ...` from the PATH.
const PluginName = "kubectl-operator_manager"

// annotationOwnLogger marks a verb that sets up its own logging (`run`); every other verb
// is for a person, who must not see controller-runtime's "log.SetLogger(...) was never
// called" stack or its structured warnings.
const annotationOwnLogger = "operator-manager/own-logger"

// NewRoot builds the command tree, named after how the binary was invoked: as a kubectl
// plugin, help and completion say "kubectl operator-manager".
func NewRoot() *cobra.Command { return newRoot(filepath.Base(os.Args[0])) }

func newRoot(invokedAs string) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "operator-manager",
		Short: "Install, upgrade, health-check and roll back Kubernetes operators from OperatorHub-format catalogs",
		Long: `operator-manager installs operators from catalogs of OperatorHub-format bundles, upgrades
them, proves each new version healthy, rolls back by itself when it is not, remembers
versions and resolves dependencies. It runs in the cluster as a controller ("run") and
is driven by Subscription objects or by the verbs below.

Exit codes: 0 done; 1 failed; 2 wrong command line; with --wait: 3 the change ended
badly (Failed, RolledBack, Blocked, unsatisfiable), 4 timed out, 5 waits for a person
(approval, or an upgrade held).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Annotations[annotationOwnLogger] == "" {
				ctrllog.SetLogger(logr.Discard())
			}
		},
	}
	if strings.TrimSuffix(invokedAs, ".exe") == PluginName {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl operator-manager"}
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	pf.StringVar(&g.context, "context", "", "the kubeconfig context to use (default: its current context)")
	pf.StringVarP(&g.namespace, "namespace", "n", "", "namespace (default: the kubeconfig context's)")
	_ = root.RegisterFlagCompletionFunc("namespace", g.completeNamespaces)
	_ = root.RegisterFlagCompletionFunc("context", g.completeContexts)
	root.AddCommand(newInstallCmd(g), newUninstallCmd(g), newListCmd(g), newStatusCmd(g), newHistoryCmd(g), newRollbackCmd(g), newRetryCmd(g), newApproveCmd(g), newPauseCmd(g), newResumeCmd(g), newRecommendCmd(g),
		newDiffCmd(g), newConsoleCmd(g), newExportCmd(g), newImportCmd(g), newRunCmd(g), newDevCmd(), newCatalogCmd(g), newCacheCmd(g), newCRDsCmd(g), newVersionCmd())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) })
	// cobra adds help and completion when it executes; added now, the strict tree below
	// covers them too (`completion foo` is an unknown command as well).
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	strictTree(root)
	return root
}

// strictTree makes the command line fail as scripts need: an unknown verb at any level
// and a wrong number of arguments exit with ExitUsage. By default cobra prints the help
// of a command group given an unknown verb, and exits 0.
func strictTree(cmd *cobra.Command) {
	cmd.SuggestionsMinimumDistance = 2
	if cmd.HasSubCommands() {
		if !cmd.Runnable() {
			cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		if cmd.Args == nil {
			cmd.Args = unknownSubcommand
		}
	}
	if validate := cmd.Args; validate != nil {
		cmd.Args = func(c *cobra.Command, args []string) error { return withCode(ExitUsage, validate(c, args)) }
	}
	for _, sub := range cmd.Commands() {
		strictTree(sub)
	}
}

// unknownSubcommand refuses any argument to a command group, suggesting close verbs.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError("%s (see %q)", msg, cmd.CommandPath()+" --help")
}

// Execute runs the command line and returns the process exit code (see exitcode.go).
func Execute() int {
	err := NewRoot().Execute()
	var silent silentError
	switch {
	case err == nil:
	case errors.As(err, &silent):
	default:
		fmt.Fprintln(os.Stderr, "Error:", err)
	}
	return exitCode(err)
}

// silentError fails the command after it has already said why on its output (as
// `catalog validate` does), so nothing more is printed.
type silentError struct{ error }

func (g *globals) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.context})
}

func (g *globals) restConfig() (*rest.Config, error) {
	cfg, err := g.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	// The API server's warnings (a deprecated API, say) reach the person as kubectl shows
	// them, not as a controller's structured log line.
	cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	return cfg, nil
}

func (g *globals) ns() (string, error) {
	if g.namespace != "" {
		return g.namespace, nil
	}
	ns, _, err := g.clientConfig().Namespace()
	return ns, err
}

// clientAndNamespace returns a client and the namespace the verb acts in.
func (g *globals) clientAndNamespace() (client.Client, string, error) {
	c, err := g.client()
	if err != nil {
		return nil, "", err
	}
	ns, err := g.ns()
	return c, ns, err
}

func (g *globals) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	// With watches: `--wait` follows the objects by watching them.
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
}
