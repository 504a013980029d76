package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
)

func newRetryCmd(g *globals) *cobra.Command {
	var wait bool
	var timeout time.Duration
	out := &output{}
	cmd := &cobra.Command{
		Use:   "retry NAME",
		Short: "Try a failed, rolled back or blocked version change again, once its cause is mended",
		Long: `retry opens a new revision of the version change that failed (Failed), was rolled back
after failing (RolledBack) or was stopped by the CRD preflight (Blocked), as if it had
just been asked for: its objects are applied again and its health gate runs again. A
failed version is otherwise never tried again until the Subscription asks for another
(that is what stops a failing version from looping); retry is for when what made it
fail has been mended outside the installation: a namespace's Pod Security level, a quota,
a missing Secret, a custom resource the preflight named.

The Subscription is not changed. With --wait it follows the change to its end, with the
exit codes of install --wait.`,
		Example:           `  operator-manager retry cache -n team-a --wait`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, bp, err := g.blueprint(ctx, args[0])
			if err != nil {
				return err
			}
			if err := blueprint.Retryable(bp); err != nil {
				return err
			}
			said := fmt.Sprintf("retrying %s in %s/%s (it was %s)", bp.Spec.ClusterServiceVersionName, bp.Namespace, bp.Name, bp.Status.Phase)
			return out.changeBlueprint(cmd, c, bp, func() { blueprint.SetRetry(bp) }, said, bp.Spec.ClusterServiceVersionName, wait, timeout)
		},
	}
	out.bind(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the version runs and is healthy, printing progress")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	return cmd
}
