package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pausedMeans is what a pause holds, in the words pause, status and the help use.
const pausedMeans = "no version change, config change or drift repair"

// newPauseCmd and newResumeCmd set and clear a Subscription's spec.paused, as the
// console's buttons do and as `kubectl rollout pause` does for a Deployment: a person
// holding an installation still while they look at it, without editing YAML.
func newPauseCmd(g *globals) *cobra.Command {
	out := &output{}
	cmd := &cobra.Command{
		Use:   "pause NAME",
		Short: "Hold an installation as it is: " + pausedMeans + " until resume",
		Long: `pause sets the Subscription's spec.paused. What runs keeps running, but no new
version is resolved or installed, a change of spec.config does not reach the Deployments,
and objects edited or deleted by hand are not put back. The Subscription says so (Resolved
False, reason Paused). ` + "`operator-manager resume NAME`" + ` undoes it.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return setPaused(cmd, g, out, args[0], true, false, 0)
		},
	}
	out.bind(cmd)
	return cmd
}

func newResumeCmd(g *globals) *cobra.Command {
	var wait bool
	var timeout time.Duration
	out := &output{}
	cmd := &cobra.Command{
		Use:   "resume NAME",
		Short: "Let a paused installation go on: held version and config changes start, drift is repaired",
		Long: `resume clears the Subscription's spec.paused. A version change that waited starts
(through the health gate, with rollback), a config change reaches the Deployments, and what
was edited or deleted by hand is put back. With --wait it follows the installation until it
is Ready again, or until the change ends badly, as install --wait does.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return setPaused(cmd, g, out, args[0], false, wait, timeout)
		},
	}
	out.bind(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the installation is Ready again, printing progress")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	return cmd
}

// setPaused patches spec.paused of Subscription name (only when it differs: a second
// pause writes nothing) and says what that means.
func setPaused(cmd *cobra.Command, g *globals, out *output, name string, paused, wait bool, timeout time.Duration) error {
	ctx := cmd.Context()
	c, ns, err := g.clientAndNamespace()
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: ns, Name: name}
	sub, err := getSubscription(ctx, c, key)
	if err != nil {
		return err
	}
	w := out.human(cmd)
	switch {
	case sub.Spec.Paused == paused && paused:
		fmt.Fprintf(w, "%s is already paused\n", key)
	case sub.Spec.Paused == paused:
		fmt.Fprintf(w, "%s is not paused\n", key)
	default:
		patch := client.MergeFrom(sub.DeepCopy())
		sub.Spec.Paused = paused
		if err := c.Patch(ctx, sub, patch); err != nil {
			return err
		}
		if paused {
			fmt.Fprintf(w, "paused %s: %s until `operator-manager resume %s`\n", key, pausedMeans, name)
		} else {
			fmt.Fprintf(w, "resumed %s: held version and config changes start, drift is repaired\n", key)
		}
	}
	if wait {
		err = waitSubscription(ctx, c, key, timeout, w, installDone)
	}
	return out.result(cmd, err, func() any { return installation(ctx, c, key) })
}
