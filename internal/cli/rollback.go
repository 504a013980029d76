package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
)

func newHistoryCmd(g *globals) *cobra.Command {
	out := &output{}
	cmd := &cobra.Command{
		Use:               "history NAME",
		Short:             "Show the revisions of an installation: version, trigger, outcome, reason and time (like helm history)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, bp, err := g.blueprint(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rows := historyRows(cmd.Context(), c, bp)
			return out.print(cmd.OutOrStdout(), rows, func(tw *tabwriter.Writer) { printHistory(tw, bp, rows) })
		},
	}
	out.bind(cmd)
	return cmd
}

// historyRow is a revision with what the cluster keeps of it (`history -o json|yaml`: the
// revision's fields, and "stored").
type historyRow struct {
	omv1.Revision `json:",inline"`
	// Stored is the bundle kept in the cluster for rollbacks; null when pruned. StoredError
	// says why it could not be read (the person may not get Secrets).
	Stored      *revisionstore.Stored `json:"stored"`
	StoredError string                `json:"storedError,omitempty"`
}

// historyRows reads, for each revision, the bundle Secrets the cluster keeps of it.
func historyRows(ctx context.Context, c client.Client, bp *omv1.Blueprint) []historyRow {
	store := &revisionstore.Store{Client: c}
	rows := make([]historyRow, 0, len(bp.Status.History))
	for _, h := range bp.Status.History {
		row := historyRow{Revision: h}
		if h.BundleDigest != "" {
			st, err := store.Stat(ctx, bp.Namespace, bp.Name, h.BundleDigest)
			row.Stored = st
			if err != nil {
				row.StoredError = notReadable(err, "the Secrets in which the manager keeps each revision's bundle")
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func printHistory(w io.Writer, bp *omv1.Blueprint, rows []historyRow) {
	fmt.Fprintln(w, "REVISION\tCSV\tVERSION\tTRIGGER\tOUTCOME\tREASON\tSTARTED\tDURATION\tKEPT\tMESSAGE")
	for _, row := range rows {
		h := row.Revision
		started, took := "", ""
		if h.StartTime != nil {
			started = h.StartTime.UTC().Format(time.RFC3339)
			if h.EndTime != nil {
				took = h.EndTime.Sub(h.StartTime.Time).Round(time.Second).String()
			}
		}
		marker := ""
		switch {
		case h.CSVName == bp.Status.CurrentCSV && h.Revision == bp.Status.LastGoodRevision:
			marker = " (current)"
		case h.Imported:
			marker = " (imported)" // ran on the cluster it was exported from
		}
		msg := h.Message
		if len(msg) > 80 {
			msg = msg[:77] + "..."
		}
		kept := "-" // pruned: only the record remains
		switch {
		case row.StoredError != "":
			kept = "?"
		case row.Stored != nil:
			kept = fmt.Sprintf("secret/%s (%s)", row.Stored.Secret, humanBytes(int64(row.Stored.Bytes)))
		}
		fmt.Fprintf(w, "%d%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Revision, marker, h.CSVName, h.Version, h.Trigger, h.Outcome, h.Reason, started, took, kept, msg)
	}
	// Why a KEPT cell is "?", once under the table, not in every row.
	var why []string
	for _, row := range rows {
		if row.StoredError != "" && !slices.Contains(why, row.StoredError) {
			why = append(why, row.StoredError)
		}
	}
	if len(why) > 0 {
		if f, ok := w.(interface{ Flush() error }); ok {
			_ = f.Flush() // a note, not a table row
		}
		fmt.Fprintf(w, "\nKEPT ?: %s\n", strings.Join(why, "; "))
	}
}

func newRollbackCmd(g *globals) *cobra.Command {
	var to int64
	var wait bool
	var timeout time.Duration
	out := &output{}
	cmd := &cobra.Command{
		Use:   "rollback NAME [--to-revision N]",
		Short: "Return an installation to an earlier revision (default: the newest good one before the current)",
		Long: `rollback points the Blueprint at the CSV of an earlier revision, as editing its
clusterServiceVersionName does. The bundle comes from the manager's local cache, so no
catalog is needed. The cluster's newer CRDs are kept. The Subscription is not changed: edit
it to move on again.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, bp, err := g.blueprint(ctx, args[0])
			if err != nil {
				return err
			}
			ns := bp.Namespace
			target, err := blueprint.RollbackTarget(bp, to)
			if err != nil {
				return err
			}
			said := fmt.Sprintf("rolling %s/%s back to revision %d: %s (%s)", ns, bp.Name, target.Revision, target.CSVName, target.Version)
			return out.changeBlueprint(cmd, c, bp, func() { blueprint.SetRollback(bp, target) }, said, target.CSVName, wait, timeout)
		},
	}
	out.bind(cmd)
	cmd.Flags().Int64Var(&to, "to-revision", 0, "the `REVISION` to return to (see 'operator-manager history')")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the older version runs, printing progress")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	return cmd
}

// changeBlueprint is how a verb acts on an installation's Blueprint (rollback, approve,
// retry): change applied as a patch that fails if the Blueprint changed since it was read,
// said on the human stream, and with wait the change followed until csv runs; with -o
// json|yaml the installation is printed as it was left.
func (o *output) changeBlueprint(cmd *cobra.Command, c client.Client, bp *omv1.Blueprint, change func(), said, csv string, wait bool, timeout time.Duration) error {
	ctx := cmd.Context()
	patch := client.MergeFromWithOptions(bp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	change()
	if err := c.Patch(ctx, bp, patch); err != nil {
		return fmt.Errorf("changing Blueprint %s/%s: %w", bp.Namespace, bp.Name, err)
	}
	w, key := o.human(cmd), client.ObjectKeyFromObject(bp)
	fmt.Fprintln(w, said)
	var err error
	if wait {
		err = waitBlueprint(ctx, c, key, csv, timeout, w)
	}
	return o.result(cmd, err, func() any { return installation(ctx, c, key) })
}

// blueprint reads the Blueprint of the installation NAME in the verb's namespace.
func (g *globals) blueprint(ctx context.Context, name string) (client.Client, *omv1.Blueprint, error) {
	c, ns, err := g.clientAndNamespace()
	if err != nil {
		return nil, nil, err
	}
	bp := &omv1.Blueprint{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, bp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, noBlueprint(ctx, c, ns, name)
		}
		return nil, nil, err
	}
	return c, bp, nil
}

// getSubscription reads the Subscription of an installation, saying so in a person's
// words when there is none.
func getSubscription(ctx context.Context, c client.Client, key client.ObjectKey) (*omv1.Subscription, error) {
	sub := &omv1.Subscription{}
	if err := c.Get(ctx, key, sub); apierrors.IsNotFound(err) {
		return nil, noSubscription(key)
	} else if err != nil {
		return nil, err
	}
	return sub, nil
}

func noSubscription(key client.ObjectKey) error {
	return fmt.Errorf("no installation %s in namespace %s: there is no Subscription of that name (see `operator-manager list -n %s`)", key.Name, key.Namespace, key.Namespace)
}

// noBlueprint says why an installation has no Blueprint, in a person's words: there is
// no Subscription of that name, or it has installed nothing yet (and why, from its Ready
// condition).
func noBlueprint(ctx context.Context, c client.Client, ns, name string) error {
	sub := &omv1.Subscription{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sub); apierrors.IsNotFound(err) {
		return noSubscription(client.ObjectKey{Namespace: ns, Name: name})
	} else if err != nil {
		return fmt.Errorf("%s/%s has no Blueprint, and its Subscription cannot be read: %w", ns, name, err)
	}
	why := ""
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionReady); c != nil && c.Message != "" {
		why = fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
	}
	return fmt.Errorf("%s/%s has installed nothing yet%s; see `operator-manager status %s -n %s`", ns, name, why, name, ns)
}

// waitBlueprint waits until the Blueprint runs csv, printing each new phase.
func waitBlueprint(ctx context.Context, c client.Client, key client.ObjectKey, csv string, timeout time.Duration, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake := watchAll(ctx, c, key, &omv1.BlueprintList{})
	return poll(ctx, timeout, w, key.String(), func(ctx context.Context) (string, bool, error) {
		bp := &omv1.Blueprint{}
		if err := c.Get(ctx, key, bp); err != nil {
			return "", false, err
		}
		line := blueprintLine(bp, revisionCSV(ctx, c, bp))
		if bp.Status.CurrentCSV == csv && bp.Status.Phase == omv1.BlueprintSucceeded {
			return line, true, nil
		}
		switch bp.Status.Phase {
		case omv1.BlueprintFailed, omv1.BlueprintBlocked, omv1.BlueprintRolledBack:
			if blueprint.SettledForTarget(bp) { // the phase is about this change
				return line, false, withCode(ExitFailed, fmt.Errorf("%s: see `operator-manager history %s`", endedMessage(bp), key.Name))
			}
		}
		return line, false, nil
	}, wake)
}

// runningCSV is the CSV the Blueprint runs, in words when none.
func runningCSV(bp *omv1.Blueprint) string {
	if bp.Status.CurrentCSV == "" {
		return "nothing yet"
	}
	return bp.Status.CurrentCSV
}

// blueprintLine is what waiting on a Blueprint prints: its phase and the version running,
// and while a revision is in progress the freshest words for it (the CSV's own once it
// has taken the revision up: revisionCSV; before, the Blueprint's). The status of the
// spec before a change is not printed as if it were the change's.
func blueprintLine(bp *omv1.Blueprint, csv *omv1alpha1.ClusterServiceVersion) string {
	switch g := bp.Status.ObservedGeneration; {
	case g == 0 && bp.Status.Phase == "":
		// A Blueprint just made (an import, a first install): nothing has read it yet.
		return "waiting for the manager to take up the Blueprint (running nothing yet)"
	case g > 0 && g < bp.Generation:
		return fmt.Sprintf("waiting for the manager to take up the change (generation %d; running %s)", bp.Generation, runningCSV(bp))
	}
	line := fmt.Sprintf("%s, running %s", bp.Status.Phase, runningCSV(bp))
	if p := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionProgressing); p != nil && p.Status == metav1.ConditionTrue {
		switch {
		case csv != nil:
			line += ": " + csv.RevisionProgress()
		case p.Message != "":
			line += ": " + p.Message
		}
	} else if r := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionReady); r != nil && r.Status != metav1.ConditionTrue && r.Message != "" {
		// Blocked or Failed, say, and nothing in progress: why, in the manager's words.
		line += ": " + r.Reason + ": " + r.Message
	}
	return line
}

func newApproveCmd(g *globals) *cobra.Command {
	var wait bool
	var timeout time.Duration
	out := &output{}
	cmd := &cobra.Command{
		Use:               "approve NAME",
		Short:             "Approve the version change a Manual Subscription waits for",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, bp, err := g.blueprint(ctx, args[0])
			if err != nil {
				return err
			}
			ns := bp.Namespace
			if bp.Status.Phase != omv1.BlueprintWaitingForApproval {
				return fmt.Errorf("%s/%s waits for no approval (phase %s, running %s)", ns, bp.Name, bp.Status.Phase, bp.Status.CurrentCSV)
			}
			what := bp.Spec.ClusterServiceVersionName + " replaces " + bp.Status.CurrentCSV
			if bp.Status.CurrentCSV == "" {
				what = bp.Spec.ClusterServiceVersionName + " is installed (a first install, OLM's installPlanApproval: Manual)"
			}
			said := fmt.Sprintf("approved %s/%s: %s", ns, bp.Name, what)
			return out.changeBlueprint(cmd, c, bp, func() { bp.Spec.Approved = true }, said, bp.Spec.ClusterServiceVersionName, wait, timeout)
		},
	}
	out.bind(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the approved version runs, printing progress")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	return cmd
}

// readyMessage is the reason and message of a Blueprint's Ready condition.
// endedMessage is why a change ended badly: the Ready condition's reason and words, led
// by the phase when the reason is another ("RolledBack: RolledBack: ..." said it twice).
func endedMessage(bp *omv1.Blueprint) string {
	msg := readyMessage(bp)
	if phase := string(bp.Status.Phase); !strings.HasPrefix(msg, phase+": ") {
		msg = phase + ": " + msg
	}
	return msg
}

func readyMessage(bp *omv1.Blueprint) string {
	for _, c := range bp.Status.Conditions {
		if c.Type == omv1.ConditionReady {
			return c.Reason + ": " + c.Message
		}
	}
	return "no Ready condition"
}
