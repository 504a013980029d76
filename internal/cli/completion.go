package cli

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// Shell completion beyond verbs and flags (which cobra's `completion bash|zsh|fish|powershell`
// covers): the names a person would otherwise look up with kubectl. Each asks the cluster
// with a short deadline and offers nothing, rather than an error, when it cannot.

const completionTimeout = 3 * time.Second

// completeSubscriptions offers the Subscriptions of the verb's namespace for its NAME.
func (g *globals) completeSubscriptions(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, ns, err := g.clientAndNamespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	list := &omv1.SubscriptionList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces offers the cluster's namespaces for -n.
func (g *globals) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	c, err := g.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	list := &corev1.NamespaceList{}
	if err := c.List(ctx, list); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeContexts offers the kubeconfig's contexts for --context.
func (g *globals) completeContexts(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	raw, err := g.clientConfig().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for name := range raw.Contexts {
		names = append(names, name)
	}
	return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// matching keeps the names that start with prefix, sorted.
func matching(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
