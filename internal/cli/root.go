// Package cli is operator-manager's command line: `run` starts the controllers, `dev`
// runs a local cluster, and the other verbs are for people.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/scheme"
)

// globals are the flags every verb shares.
type globals struct {
	kubeconfig string
	namespace  string
}

// NewRoot builds the command tree.
func NewRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "operator-manager",
		Short: "Install, upgrade, health-check and roll back Kubernetes operators from OperatorHub-format catalogs",
		Long: `operator-manager installs operators from catalogs of OperatorHub-format bundles, upgrades
them, proves each new version healthy, rolls back by itself when it is not, remembers
versions and resolves dependencies. It runs in the cluster as a controller ("run") and
is driven by Subscription objects or by the verbs below.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	root.PersistentFlags().StringVarP(&g.namespace, "namespace", "n", "", "namespace (default: the kubeconfig context's)")
	root.AddCommand(newInstallCmd(g), newUninstallCmd(g), newListCmd(g), newStatusCmd(g), newHistoryCmd(g), newRollbackCmd(g), newApproveCmd(g), newRecommendCmd(g),
		newRunCmd(g), newDevCmd(), newCatalogCmd(), newCRDsCmd(g), newVersionCmd())
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute() int {
	err := NewRoot().Execute()
	var silent silentError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &silent):
		return 1
	default:
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
}

// silentError fails the command after it has already said why on its output (as
// `catalog validate` does), so nothing more is printed.
type silentError struct{ error }

func (g *globals) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

func (g *globals) ns() (string, error) {
	if g.namespace != "" {
		return g.namespace, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
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
