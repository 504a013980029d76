package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blang/semver/v4"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/controller/subscription"
	"github.com/operator-manager/operator-manager/internal/installevents"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/resolve"
	"github.com/operator-manager/operator-manager/internal/upgradewindow"
)

func newInstallCmd(g *globals) *cobra.Command {
	var spec omv1.SubscriptionSpec
	var wait bool
	var timeout, health time.Duration
	var windowFlags []string
	out := &output{}
	cmd := &cobra.Command{
		Use:   "install NAME [--csv PACKAGE.VERSION | --package PACKAGE] [--channel C] [--version V]",
		Short: "Install an operator: create (or update) its Subscription, and with --wait follow it to the end",
		Long: `Install an operator: create the Subscription NAME, or update it, and with --wait follow it to the end.

The version is named as the original operator-manager named it (--csv, its startingCSV), or
by package with a channel and an exact version or a range. Without --csv or --package, a
new Subscription installs the package called NAME, and an existing one keeps what it
names: --version or --channel alone upgrade or roll it forward within its package, and
no flags at all install it again after an uninstall (option: delete).`,
		Example: `  operator-manager install prometheus --csv prometheus.0.22.2 --wait
  operator-manager install cache-operator --wait
  operator-manager install cache --package cache-operator --version ">=1.1.0 <1.3.0" --catalog samples --wait
  operator-manager install cache --version 1.2.0 --wait
  operator-manager install cache --upgrade-window "0 2 * * 1-5 for 2h in Europe/Berlin"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec.StartingCSV != "" && spec.Package != "" {
				return usageError("give at most one of --csv and --package")
			}
			switch spec.Approval {
			case "", omv1.ApprovalAutomatic, omv1.ApprovalManual:
			default:
				return usageError("--approval %q: give %s or %s", spec.Approval, omv1.ApprovalAutomatic, omv1.ApprovalManual)
			}
			if spec.Version != "" {
				if err := resolve.CheckVersion(spec.Version); err != nil {
					return usageError("--version %q: %v", spec.Version, err)
				}
			}
			windows, err := parseWindows(windowFlags)
			if err != nil {
				return usageError("%v", err)
			}
			spec.UpgradeWindows = windows
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			spec.Option = omv1.OptionCreate
			ctx, w := cmd.Context(), out.human(cmd)
			if spec.Catalog != "" {
				// Written as the Subscription names it: its name, and the namespace when it is
				// not the Subscription's own (OLM's sourceNamespace).
				key, err := findClusterCatalog(ctx, c, ns, spec.Catalog)
				if err != nil {
					return err
				}
				spec.Catalog = key.Name
				if key.Namespace != ns {
					spec.SourceNamespace = key.Namespace
				}
			}
			if health > 0 {
				spec.Health = &omv1.HealthPolicy{Timeout: &metav1.Duration{Duration: health}}
			}
			sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: args[0], Namespace: ns}}
			err = c.Get(ctx, client.ObjectKeyFromObject(sub), sub)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			var existing *omv1.SubscriptionSpec
			if err == nil {
				existing = &sub.Spec
			}
			want, err := wantedVersion(sub.Name, existing, spec, cmd.Flags().Changed("channel"), cmd.Flags().Changed("version"))
			if err != nil {
				return err
			}
			fromName := existing == nil && spec.StartingCSV == "" && spec.Package == ""
			switch {
			case existing == nil:
				spec.StartingCSV, spec.Package, spec.Channel, spec.Version = want.StartingCSV, want.Package, want.Channel, want.Version
				// A second Subscription of a package in one namespace is refused by the
				// manager (PackageAlreadySubscribed), and was left behind, failed, by a
				// person who meant the one already there under another name.
				others := &omv1.SubscriptionList{}
				if err := c.List(ctx, others, client.InNamespace(ns)); err != nil {
					return err
				}
				if other := subscription.SubscribedAlready(others.Items, sub.Name, spec); other != nil {
					return fmt.Errorf("subscription %s/%s already installs package %q, and a namespace runs one version of a package: change that one (operator-manager install %s%s), or install this one side by side in another namespace; nothing was created",
						ns, other.Name, subscription.PackageOf(other), other.Name, flagsGiven(cmd))
				}
				sub.Spec = spec
				if err := c.Create(ctx, sub); err != nil {
					return err
				}
				how := ""
				if fromName {
					how = fmt.Sprintf(" (package %s, from its name)", sub.Name)
				}
				fmt.Fprintf(w, "subscription %s/%s created%s\n", ns, sub.Name, how)
			default:
				patch := client.MergeFrom(sub.DeepCopy())
				setIntent(&sub.Spec, want)
				sub.Spec.Option = omv1.OptionCreate
				if spec.Catalog != "" {
					sub.Spec.Source, sub.Spec.Catalog = olmOrOwn(sub.Spec.Source, sub.Spec.Catalog, spec.Catalog)
					sub.Spec.SourceNamespace = spec.SourceNamespace
				}
				if spec.Health != nil {
					sub.Spec.Health = spec.Health
				}
				if cmd.Flags().Changed("target-namespaces") {
					sub.Spec.TargetNamespaces = spec.TargetNamespaces
				}
				if cmd.Flags().Changed("upgrade-window") {
					sub.Spec.UpgradeWindows = spec.UpgradeWindows
				}
				if spec.Approval != "" {
					sub.Spec.InstallPlanApproval, sub.Spec.Approval = olmOrOwn(sub.Spec.InstallPlanApproval, sub.Spec.Approval, spec.Approval)
				}
				if err := c.Patch(ctx, sub, patch); err != nil {
					return err
				}
				fmt.Fprintf(w, "subscription %s/%s updated\n", ns, sub.Name)
			}
			key := client.ObjectKeyFromObject(sub)
			if wait {
				err = waitSubscription(ctx, c, key, timeout, w, installDone)
			}
			return out.result(cmd, err, func() any { return installation(ctx, c, key) })
		},
	}
	out.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&spec.StartingCSV, "csv", "", "the version, as the original startingCSV: <package>.<version>, <package>.v<version> or a CSV name")
	f.StringVar(&spec.Package, "package", "", "the catalog package")
	f.StringVar(&spec.Channel, "channel", "", "the channel to follow (default: the package's default channel)")
	f.StringVar(&spec.Version, "version", "", "an exact version or a semver range")
	f.StringVar(&spec.Catalog, "catalog", "", "the CatalogSource: NAME (in the namespace, else in the manager's namespace) or NAMESPACE/NAME (default: the manager's default catalog)")
	f.StringVar((*string)(&spec.Approval), "approval", "", "Manual: each version change waits for operator-manager approve (default: Automatic for a new Subscription, unchanged for one that exists)")
	f.StringSliceVar(&spec.TargetNamespaces, "target-namespaces", nil, "the namespaces the operator watches (default: all, when the CSV supports it); installations of one package side by side must not overlap")
	f.StringArrayVar(&windowFlags, "upgrade-window", nil, `when upgrades may start, "SCHEDULE for DURATION [in TIME-ZONE]" ("0 2 * * 1-5 for 2h in Europe/Berlin"); repeat for more; "none" removes them`)
	f.DurationVar(&health, "health-timeout", 0, "how long the new version may take to become healthy (default 5m)")
	f.BoolVar(&wait, "wait", false, "wait until the operator is installed and healthy, printing progress")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	return cmd
}

// flagsGiven writes the flags given to cmd again (" --version 1.2.0"), for a command line
// to suggest.
func flagsGiven(cmd *cobra.Command) string {
	var b strings.Builder
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if cmd.InheritedFlags().Lookup(f.Name) != nil {
			return
		}
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if f.Value.Type() == "bool" {
				fmt.Fprintf(&b, " --%s", f.Name)
				continue
			}
			if v == "" || strings.ContainsAny(v, " \t\"'<>|&;*?$") {
				v = strconv.Quote(v)
			}
			fmt.Fprintf(&b, " --%s %s", f.Name, v)
		}
	})
	return b.String()
}

// wantedVersion is what install asks for: the version flags given, else what the
// existing Subscription names (a new one: the package called name). A Subscription that
// names its version by startingCSV has no channel or range to change: --version or
// --channel alone are refused for it rather than guessed into a package.
func wantedVersion(name string, existing *omv1.SubscriptionSpec, flags omv1.SubscriptionSpec, channelSet, versionSet bool) (omv1.SubscriptionSpec, error) {
	want := omv1.SubscriptionSpec{StartingCSV: flags.StartingCSV, Package: flags.Package, Channel: flags.Channel, Version: flags.Version}
	switch {
	case flags.StartingCSV != "" || flags.Package != "":
		return want, nil
	case existing == nil:
		want.Package = name
		return want, nil
	case existing.PackageName() != "":
		want.Package = existing.PackageName()
		if !channelSet {
			want.Channel = existing.Channel
		}
		if !versionSet {
			want.Version = existing.Version
			if existing.OLMStyle() {
				// OLM's startingCSV (where the first install started) stays unless a
				// version is given, which replaces it.
				want.StartingCSV = existing.StartingCSV
			}
		}
		return want, nil
	case channelSet || versionSet:
		return want, usageError("subscription %s names its version by startingCSV (%s): give --csv for another version, or --package to follow a channel or a version range",
			name, existing.StartingCSV)
	default:
		want.StartingCSV = existing.StartingCSV
		return want, nil
	}
}

// setIntent writes the wanted version into a Subscription's spec, in the words it is
// written in: an OLM Subscription keeps naming its package by spec.name. A wanted CSV
// alone (--csv) clears the package, in either spelling: startingCSV then names the
// version to run, which with OLM's name it would not once something is installed.
func setIntent(s *omv1.SubscriptionSpec, want omv1.SubscriptionSpec) {
	s.StartingCSV, s.Channel, s.Version = want.StartingCSV, want.Channel, want.Version
	s.Name, s.Package = olmOrOwn(s.Name, s.Package, want.Package)
}

// olmOrOwn sets a field that has an OLM name (olm) beside this API's own (own) to v, in
// the spelling(s) the Subscription uses: OLM's when only it is set, both when both are
// (the API server refuses two that disagree). It returns both.
func olmOrOwn[T ~string](olm, own, v T) (T, T) {
	switch {
	case olm != "" && own != "":
		return v, v
	case olm != "":
		return v, own
	}
	return olm, v
}

func newUninstallCmd(g *globals) *cobra.Command {
	var wait, deleteSub bool
	var timeout time.Duration
	out := &output{}
	cmd := &cobra.Command{
		Use:               "uninstall NAME",
		Short:             "Uninstall an operator (option: delete); its CRDs and custom resources are kept",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			ctx, w := cmd.Context(), out.human(cmd)
			key := client.ObjectKey{Namespace: ns, Name: args[0]}
			sub, err := getSubscription(ctx, c, key)
			if err != nil {
				return err
			}
			if deleteSub {
				if err := c.Delete(ctx, sub); err != nil {
					return err
				}
				fmt.Fprintf(w, "subscription %s deleted\n", key)
			} else {
				patch := client.MergeFrom(sub.DeepCopy())
				sub.Spec.Option = omv1.OptionDelete
				if err := c.Patch(ctx, sub, patch); err != nil {
					return err
				}
				fmt.Fprintf(w, "subscription %s set to option: delete\n", key)
			}
			if wait {
				err = waitSubscription(ctx, c, key, timeout, w, uninstallDone)
			}
			return out.result(cmd, err, func() any { return installation(ctx, c, key) })
		},
	}
	out.bind(cmd)
	cmd.Flags().BoolVar(&deleteSub, "delete-subscription", false, "delete the Subscription too, instead of keeping it with option: delete")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until everything of the operator is removed, printing progress")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

// doneFunc says whether waiting is over: done, and an error when it ended badly. bp is
// the installation's Blueprint, nil when there is none.
type doneFunc func(sub *omv1.Subscription, bp *omv1.Blueprint, gone bool) (bool, error)

// terminalResolve are the reasons of a Resolved=False that only a change of the spec or
// the catalog can fix: waiting longer is pointless.
var terminalResolve = map[string]bool{"PackageNotFound": true, "VersionNotFound": true, "ChannelNotFound": true, "InvalidVersion": true,
	"PackageAlreadySubscribed": true, "TargetNamespacesOverlap": true, omv1.ReasonUnsatisfiable: true, omv1.ReasonPackageChanged: true}

// installDone ends the wait as soon as the outcome of the change is known: Ready, or a
// settled Blueprint phase other than Succeeded (RolledBack, Failed, Blocked,
// WaitingForApproval, UpgradeHeld) for the change asked for, with its reason.
func installDone(sub *omv1.Subscription, bp *omv1.Blueprint, gone bool) (bool, error) {
	if gone {
		return true, withCode(ExitFailed, errors.New("the Subscription was deleted"))
	}
	if sub.Status.ObservedGeneration < sub.Generation {
		return false, nil
	}
	// A rollback by hand stands until the Subscription asks for another version: an
	// install that changed nothing of that (the version asked for is the one already
	// written; a new approval or config only) leaves the older version running, which is
	// not the install asked for.
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved); c != nil && c.Status == metav1.ConditionTrue && heldByHand[c.Reason] {
		return true, withCode(ExitHeld, fmt.Errorf("%s: %s; `operator-manager rollback %s --to-revision N` moves it to another revision (see `operator-manager history %s`)",
			c.Reason, c.Message, sub.Name, sub.Name))
	}
	// Ready=True counts only once the Blueprint has settled the change asked for: right
	// after a version change the Subscription can still mirror the previous version's
	// Ready=True.
	ready := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionReady)
	if ready != nil && ready.Status == metav1.ConditionTrue && bp != nil && blueprint.SettledForTarget(bp) &&
		bp.Status.Phase == omv1.BlueprintSucceeded && bp.Status.CurrentCSV == bp.Spec.ClusterServiceVersionName {
		return true, nil
	}
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved); c != nil && c.Status == metav1.ConditionFalse && terminalResolve[c.Reason] {
		return true, withCode(ExitFailed, fmt.Errorf("%s: %s", c.Reason, c.Message))
	}
	if bp == nil || !blueprint.SettledForTarget(bp) {
		return false, nil
	}
	switch bp.Status.Phase {
	case omv1.BlueprintRolledBack, omv1.BlueprintFailed, omv1.BlueprintBlocked, omv1.BlueprintWaitingForApproval, omv1.BlueprintUpgradeHeld:
		reason, msg := string(bp.Status.Phase), ""
		if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionReady); c != nil {
			reason, msg = c.Reason, c.Message
		}
		code := ExitFailed
		if bp.Status.Phase == omv1.BlueprintWaitingForApproval || bp.Status.Phase == omv1.BlueprintUpgradeHeld {
			code = ExitHeld
		}
		what := string(bp.Status.Phase)
		if reason != what {
			what += ": " + reason
		}
		return true, withCode(code, fmt.Errorf("%s: %s", what, msg))
	}
	return false, nil
}

// heldByHand are the Resolved reasons of a Subscription held at a version a person
// rolled its Blueprint back to.
var heldByHand = map[string]bool{omv1.ReasonHeldAfterRollback: true, omv1.ReasonPointedByHand: true}

func uninstallDone(sub *omv1.Subscription, _ *omv1.Blueprint, gone bool) (bool, error) {
	if gone {
		return true, nil
	}
	c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionInstalled)
	if c != nil && c.Reason == "RequiredByOthers" {
		return true, withCode(ExitFailed, fmt.Errorf("%s: %s", c.Reason, c.Message))
	}
	return c != nil && c.Reason == omv1.ReasonUninstalled, nil
}

// stillEvery is how often a wait repeats a state that has not changed.
var stillEvery = 30 * time.Second

// poll calls look every half second until it reports done, printing each new state line
// so a person sees what is being waited for, and the same line again (as "still ...")
// every stillEvery while it does not change; it gives up after timeout naming what.
//
// It looks again whenever wake says a watched object changed, and at least every
// interval (half a second without a watch, a few seconds with one).
func poll(ctx context.Context, timeout time.Duration, w io.Writer, what string, look func(context.Context) (line string, done bool, err error), wake <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start, last, printed := time.Now(), "", time.Time{}
	interval := 500 * time.Millisecond
	if wake != nil {
		interval = 5 * time.Second
	}
	for {
		line, done, err := look(ctx)
		switch {
		case line != "" && line != last:
			fmt.Fprintf(w, "[%s] %s\n", duration.HumanDuration(time.Since(start)), line)
			last, printed = line, time.Now()
		case line != "" && !done && time.Since(printed) >= stillEvery:
			// A health gate can wait minutes on one state: say the wait is alive.
			fmt.Fprintf(w, "[%s] still %s\n", duration.HumanDuration(time.Since(start)), line)
			printed = time.Now()
		}
		if err != nil {
			if ctx.Err() != nil || outOfTime(err) {
				return withCode(ExitTimeout, fmt.Errorf("timed out after %s waiting for %s; last state: %s", timeout, what, last))
			}
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return withCode(ExitTimeout, fmt.Errorf("timed out after %s waiting for %s; last state: %s", timeout, what, last))
		case <-wake:
		case <-time.After(interval):
		}
	}
}

// outOfTime reports whether err says the wait's deadline ended the request, even before
// the context itself is done: client-go's rate limiter refuses a request whose turn would
// come after the deadline ("rate: Wait(n=1) would exceed context deadline") without
// wrapping context.DeadlineExceeded, and a script must still see a timeout (exit 4), not
// a failure (exit 1).
func outOfTime(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "would exceed context deadline")
}

// watchChanges watches the object key of list's kind and signals wake (without blocking)
// at each change, until ctx ends. It reports whether the watch started: a client without
// watches, or an identity that may not watch, leaves the caller to poll.
func watchChanges(ctx context.Context, c client.Client, list client.ObjectList, key client.ObjectKey, wake chan<- struct{}) bool {
	return watchMatching(ctx, c, list, wake, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name})
}

// watchMatching sends on wake (without blocking) whenever an object of the list kind that
// opts select changes; false when the watch cannot start.
func watchMatching(ctx context.Context, c client.Client, list client.ObjectList, wake chan<- struct{}, opts ...client.ListOption) bool {
	wc, ok := c.(client.WithWatch)
	if !ok {
		return false
	}
	wi, err := wc.Watch(ctx, list, opts...)
	if err != nil {
		return false
	}
	go func() {
		defer wi.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-wi.ResultChan():
				if !ok {
					return // closed by the server: the timer of poll goes on
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	return true
}

// watchAll watches each object key of the given list kinds; the channel is nil when no
// watch started.
func watchAll(ctx context.Context, c client.Client, key client.ObjectKey, lists ...client.ObjectList) <-chan struct{} {
	wake := make(chan struct{}, 1)
	started := false
	for _, l := range lists {
		started = watchChanges(ctx, c, l, key, wake) || started
	}
	if !started {
		return nil
	}
	return wake
}

// watchInstallation watches the Subscription key, its Blueprint and its CSVs (whose
// rollout words are fresher than the Blueprint's summary of them); nil when no watch
// started.
func watchInstallation(ctx context.Context, c client.Client, key client.ObjectKey) <-chan struct{} {
	wake := make(chan struct{}, 1)
	started := watchChanges(ctx, c, &omv1.SubscriptionList{}, key, wake)
	started = watchChanges(ctx, c, &omv1.BlueprintList{}, key, wake) || started
	started = watchMatching(ctx, c, &omv1alpha1.ClusterServiceVersionList{}, wake,
		client.InNamespace(key.Namespace), client.MatchingLabels{omv1.LabelSubscription: key.Name}) || started
	if !started {
		return nil
	}
	return wake
}

// waitSubscription waits until done says the Subscription reached its end.
func waitSubscription(ctx context.Context, c client.Client, key client.ObjectKey, timeout time.Duration, w io.Writer, done doneFunc) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake := watchInstallation(ctx, c, key)
	var result error
	err := poll(ctx, timeout, w, key.String(), func(ctx context.Context) (string, bool, error) {
		sub := &omv1.Subscription{}
		err := c.Get(ctx, key, sub)
		gone := apierrors.IsNotFound(err)
		if err != nil && !gone {
			return "", false, err
		}
		var bp *omv1.Blueprint
		if !gone {
			bp = &omv1.Blueprint{}
			if err := c.Get(ctx, key, bp); err != nil {
				if !apierrors.IsNotFound(err) {
					return "", false, err
				}
				bp = nil
			}
		}
		ok, res := done(sub, bp, gone)
		result = res
		var csv *omv1alpha1.ClusterServiceVersion
		if !ok {
			csv = revisionCSV(ctx, c, bp)
		}
		return progressLine(sub, bp, csv, gone), ok, nil
	}, wake)
	if err != nil {
		return err
	}
	return result
}

// revisionCSV is the CSV of the Blueprint's revision in progress once it has taken that
// revision up: while it judges it, and after it reached its outcome until the Blueprint
// records it. nil otherwise, or when it cannot be read (a person allowed to read
// Subscriptions but not CSVs still sees the Blueprint's words).
func revisionCSV(ctx context.Context, c client.Client, bp *omv1.Blueprint) *omv1alpha1.ClusterServiceVersion {
	if bp == nil || len(bp.Status.History) == 0 {
		return nil
	}
	w := bp.Status.History[len(bp.Status.History)-1]
	if w.Outcome != "" && w.Outcome != omv1.OutcomePending {
		return nil
	}
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: w.CSVName}, csv); err != nil || csv.Status.Revision != w.Revision {
		return nil
	}
	return csv
}

// inProgress says whether a Blueprint phase, or the Subscription's status word that
// mirrors it (the phase in lower case), is one of a change under way.
func inProgress(phase string) bool {
	for _, p := range []omv1.BlueprintPhase{omv1.BlueprintPending, omv1.BlueprintInstalling, omv1.BlueprintUpgrading, omv1.BlueprintRollingBack} {
		if strings.EqualFold(phase, string(p)) {
			return true
		}
	}
	return false
}

// progressLine is what a wait prints: the Subscription's status and Ready condition, and
// the freshest words for the change, which never go back to an earlier step. Each object
// repeats the words of the one below it only now and then (statuswrite.SummaryInterval),
// so while a revision is in progress the words are the CSV's own, live, from the moment
// it takes the revision up until the Blueprint records its outcome (before, the
// Blueprint's words, of its CRDs and of creating the CSV); once the Blueprint has recorded
// the outcome, its words until the Subscription repeats them. csv is the CSV of the
// revision in progress (revisionCSV), or nil.
func progressLine(sub *omv1.Subscription, bp *omv1.Blueprint, csv *omv1alpha1.ClusterServiceVersion, gone bool) string {
	if gone {
		return "subscription is gone"
	}
	if g := sub.Status.ObservedGeneration; g > 0 && g < sub.Generation {
		// Its status still tells of the spec before the change: printing it would say
		// "succeeded" of the version being left.
		return fmt.Sprintf("waiting for the manager to take up the change (generation %d; its status is of generation %d)", sub.Generation, g)
	}
	parts := []string{}
	opstatus := sub.Status.Opstatus
	if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionReady); c != nil {
		status, reason, msg := c.Status, c.Reason, c.Message
		if bp != nil {
			p := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionProgressing)
			ready := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionReady)
			switch {
			case p != nil && p.Status == metav1.ConditionTrue && csv != nil:
				msg = csv.RevisionProgress()
			case p != nil && p.Status == metav1.ConditionTrue:
				msg = p.Message
			case ready != nil && bp.Status.Phase != "" && inProgress(sub.Status.Opstatus) && !inProgress(string(bp.Status.Phase)):
				// The Blueprint has its outcome; the Subscription still says the change
				// goes on, and would print words older than the ones just printed. The
				// outcome is said whole (the Blueprint's phase, Ready and reason): not
				// "installing Ready=False (Install): ... is installed and healthy".
				opstatus, status, reason, msg = strings.ToLower(string(bp.Status.Phase)), ready.Status, ready.Reason, ready.Message
			}
		}
		parts = append(parts, fmt.Sprintf("%s=%s (%s): %s", c.Type, status, reason, msg))
	}
	if opstatus != "" {
		parts = append([]string{opstatus}, parts...)
	}
	if len(parts) == 0 {
		return "waiting for the manager to pick the Subscription up"
	}
	return strings.Join(parts, " ")
}

// wantedOf is list's WANTED column, beside INSTALLED: the version of the CSV the
// Subscription resolves to (status.currentCSV, kubectl's WANTED column), else what it asks
// for: the CSV an openEuler-style startingCSV pins, the version or range it names, else
// the channel it follows (from OLM's startingCSV, where that first install started). Its
// package is a column of its own.
func wantedOf(s *omv1.SubscriptionSpec, currentCSV, pkg string) string {
	if currentCSV != "" {
		if rest, ok := strings.CutPrefix(currentCSV, pkg+"."); ok {
			if v, err := semver.ParseTolerant(rest); err == nil {
				return v.String()
			}
		}
		return currentCSV
	}
	switch {
	case s.StartingCSV != "" && !s.OLMStyle():
		return s.StartingCSV
	case s.Version != "":
		return s.Version
	}
	w := "default channel"
	if s.Channel != "" {
		w = "channel " + s.Channel
	}
	if s.StartingCSV != "" {
		w += " from " + s.StartingCSV
	}
	return w
}

// subscriptionRow is one line of `list`.
type subscriptionRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Package   string `json:"package"`
	Wanted    string `json:"wanted"`
	Installed string `json:"installed"`
	Status    string `json:"status"`
	Ready     string `json:"ready"`
	Reason    string `json:"reason"`
	Age       string `json:"age"`
	Paused    bool   `json:"paused,omitempty"`
	// What -o wide adds: the installed and the wanted CSV, the revision and the catalog.
	InstalledCSV string `json:"installedCSV,omitempty"`
	CurrentCSV   string `json:"currentCSV,omitempty"`
	Revision     int64  `json:"revision,omitempty"`
	Catalog      string `json:"catalog,omitempty"`
}

func newListCmd(g *globals) *cobra.Command {
	out := &output{wide: true}
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List Subscriptions: package, wanted and installed version, status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			opts := []client.ListOption{}
			if !all {
				opts = append(opts, client.InNamespace(ns))
			}
			list := &omv1.SubscriptionList{}
			if err := c.List(cmd.Context(), list, opts...); err != nil {
				return err
			}
			var rows []subscriptionRow
			for _, s := range list.Items {
				row := subscriptionRow{Namespace: s.Namespace, Name: s.Name, Package: s.Status.Package, Installed: s.Status.InstalledVersion,
					Status: s.Status.Opstatus, Age: duration.HumanDuration(time.Since(s.CreationTimestamp.Time)), Paused: s.Spec.Paused,
					InstalledCSV: s.Status.InstalledCSV, CurrentCSV: s.Status.CurrentCSV, Revision: s.Status.CurrentRevision,
					Catalog: s.Spec.CatalogRef(s.Namespace)}
				if row.Package == "" {
					row.Package = s.Spec.PackageName() // not resolved (yet): the package it asks for
				}
				row.Wanted = wantedOf(&s.Spec, s.Status.CurrentCSV, row.Package)
				if c := meta.FindStatusCondition(s.Status.Conditions, omv1.ConditionReady); c != nil {
					row.Ready, row.Reason = string(c.Status), c.Reason
				}
				rows = append(rows, row)
			}
			if len(rows) == 0 && !out.structured() {
				// As kubectl says it, on the human stream: a header alone reads as a fault.
				where := "in namespace " + ns
				if all {
					where = "in any namespace"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "No Subscriptions found %s.\n", where)
				return nil
			}
			return out.print(cmd.OutOrStdout(), rows, func(tw *tabwriter.Writer) {
				head := "NAMESPACE\tNAME\tPACKAGE\tWANTED\tINSTALLED\tSTATUS\tREADY\tREASON\tAGE"
				if out.Wide() {
					head += "\tINSTALLED CSV\tTARGET CSV\tREVISION\tCATALOG"
				}
				fmt.Fprintln(tw, head)
				for _, r := range rows {
					status := r.Status
					if r.Paused {
						status += " (paused)"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", r.Namespace, r.Name, r.Package, r.Wanted, r.Installed, status, r.Ready, r.Reason, r.Age)
					if out.Wide() {
						catalog := r.Catalog
						if catalog == "" {
							catalog = "(default)"
						}
						revision := "-"
						if r.Revision > 0 {
							revision = strconv.FormatInt(r.Revision, 10)
						}
						fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s", dash(r.InstalledCSV), dash(r.CurrentCSV), revision, catalog)
					}
					fmt.Fprintln(tw)
				}
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list in every namespace")
	out.bind(cmd)
	return cmd
}

// dash is s, or "-" when empty (a table cell).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// statusDoc is an installation as `status`, `install`, `uninstall`, `rollback` and
// `approve` print it with -o json|yaml. Subscription is null once it is deleted.
type statusDoc struct {
	Subscription *omv1.Subscription `json:"subscription"`
	Blueprint    *omv1.Blueprint    `json:"blueprint,omitempty"`
	// CRDs are the CRDs the running version owns, each with every installation that
	// provides it (`status` only).
	CRDs []crdProviders `json:"crds,omitempty"`
	// Watches is what the running operator watches (`status` only).
	Watches *watches `json:"watches,omitempty"`
	// Events are the manager's events about the installation (`status` only).
	Events *eventsDoc `json:"events,omitempty"`
}

// eventsDoc is the newest of the manager's events about an installation: about its
// Subscription, its Blueprint and the CSVs it has run (installevents).
type eventsDoc struct {
	// Newest are at most --events of them, newest first.
	Newest []installevents.Event `json:"newest"`
	// Total is how many the cluster keeps (an hour's, by the API server's default).
	Total int `json:"total"`
	// Error says why they could not be read (a person who may not list events).
	Error string `json:"error,omitempty"`
}

// installationEvents reads the newest max events about sub's installation.
func installationEvents(ctx context.Context, c client.Client, sub *omv1.Subscription, bp *omv1.Blueprint, max int) *eventsDoc {
	evs, err := installevents.List(ctx, c, sub, bp)
	if err != nil {
		return &eventsDoc{Newest: []installevents.Event{}, Error: err.Error()}
	}
	doc := &eventsDoc{Newest: evs, Total: len(evs)}
	if len(evs) > max {
		doc.Newest = evs[:max]
	}
	return doc
}

// watches is what a running operator watches: the namespaces its Subscription names, or
// its namespace's OperatorGroup's (named, or selected by label), as the CSV's install
// modes take them.
type watches struct {
	// AllNamespaces is true when it watches every namespace.
	AllNamespaces bool     `json:"allNamespaces,omitempty"`
	Namespaces    []string `json:"namespaces,omitempty"`
	// OperatorGroup names the OperatorGroup the namespaces come from; empty when the
	// Subscription names them or neither does.
	OperatorGroup string `json:"operatorGroup,omitempty"`
	// Missing are the namespaces among them that do not exist or are being deleted: what
	// the operator is granted there waits for them.
	Missing []string `json:"missing,omitempty"`
	// Error says why it cannot be told (an OperatorGroup that gives no answer, a read
	// refused), or why the spec's targets are not applied (an install mode the CSV does not
	// support).
	Error string `json:"error,omitempty"`
	// Deployed: the namespaces above are those the operator's Deployment was rendered
	// with, since the spec's cannot be applied (Error says why).
	Deployed bool `json:"deployed,omitempty"`
}

// crdProviders is one CRD and the installations recorded on it as providing it.
type crdProviders struct {
	Name string `json:"name"`
	// ProvidedBy are "<namespace>/<subscription> <csv>", one per installation.
	ProvidedBy []string `json:"providedBy"`
	// ConvertsThrough is the Service ("<namespace>/<name>") of the conversion webhook the
	// CRD calls, when it has one: of installations side by side, the one that holds it.
	ConvertsThrough string `json:"convertsThrough,omitempty"`
	// Error says why the CRD could not be read.
	Error string `json:"error,omitempty"`
}

// sharedCRDs reads the CRDs the installed CSV owns and who provides each.
func sharedCRDs(ctx context.Context, c client.Client, csv *omv1alpha1.ClusterServiceVersion) []crdProviders {
	if csv == nil {
		return nil
	}
	var out []crdProviders
	for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
		row := crdProviders{Name: o.Name, ProvidedBy: []string{}}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: o.Name}, crd); err != nil {
			row.Error = notReadable(err, "CRDs, which are cluster-scoped")
		}
		for k, v := range crd.Annotations {
			if strings.HasPrefix(k, omv1.AnnotationProviderPrefix) {
				row.ProvidedBy = append(row.ProvidedBy, v)
			}
		}
		sort.Strings(row.ProvidedBy)
		row.ConvertsThrough = render.ConversionService(crd.Spec.Conversion)
		out = append(out, row)
	}
	return out
}

// notReadable words a read that failed: plainly when the person's role refuses it (the
// shipped namespace roles give no cluster-scoped reads, and no Secrets), else the error.
func notReadable(err error, what string) string {
	if apierrors.IsForbidden(err) {
		return "your role may not read " + what
	}
	return err.Error()
}

// installedCSV reads the CSV sub runs; nil when none runs or it cannot be read.
func installedCSV(ctx context.Context, c client.Client, sub *omv1.Subscription) *omv1alpha1.ClusterServiceVersion {
	if sub.Status.InstalledCSV == "" {
		return nil
	}
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: sub.Status.InstalledCSV}, csv); err != nil {
		return nil
	}
	return csv
}

// watching tells what the running csv of sub watches, as the manager renders it: the
// Subscription's targets, else its OperatorGroup's (a selector resolved now), taken by
// the CSV's install modes.
func watching(ctx context.Context, c client.Client, sub *omv1.Subscription, csv *omv1alpha1.ClusterServiceVersion) *watches {
	if csv == nil {
		return nil
	}
	s, w := sub.DeepCopy(), &watches{}
	if len(s.Spec.TargetNamespaces) == 0 {
		og, err := operatorgroup.Of(ctx, c, s.Namespace)
		if err != nil {
			return &watches{Error: err.Error()}
		}
		if operatorgroup.Apply(s, og) && len(s.Spec.TargetNamespaces) > 0 {
			w.OperatorGroup = og.Name
		}
	}
	targets, err := render.TargetNamespaces(csv.Spec.InstallModes, s.Namespace, s.Spec.TargetNamespaces)
	if err != nil {
		// Targets its install modes refuse are not applied: the operator watches what it
		// was deployed to watch, which is what a person needs to know.
		w = &watches{Error: err.Error()}
		if deployed, ok := deployedTargets(ctx, c, csv); ok {
			w.Deployed = true
			w.AllNamespaces, w.Namespaces = deployed == "", strings.Split(deployed, ",")
			if deployed == "" {
				w.Namespaces = nil
			}
		}
		return w
	}
	w.AllNamespaces, w.Namespaces = targets == nil, targets
	// A read refused (a person without rights on namespaces) tells nothing more.
	w.Missing, _ = operatorgroup.AbsentNamespaces(ctx, c, "", targets)
	return w
}

// deployedTargets is what the csv's first Deployment was rendered to watch (its pod
// template's olm.targetNamespaces, "" for all namespaces), and whether it could be read.
func deployedTargets(ctx context.Context, c client.Client, csv *omv1alpha1.ClusterServiceVersion) (string, bool) {
	specs := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(specs) == 0 {
		return "", false
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: csv.Namespace, Name: specs[0].Name}, dep); err != nil {
		return "", false
	}
	targets, ok := dep.Spec.Template.Annotations[render.AnnotationTargetNamespaces]
	return targets, ok
}

// describeWatches is the status line of w.
func describeWatches(w *watches) string {
	switch {
	case w.Error != "" && w.Deployed && w.AllNamespaces:
		return "all namespaces, as deployed: the spec's targets cannot be applied: " + w.Error
	case w.Error != "" && w.Deployed:
		return strings.Join(w.Namespaces, ", ") + ", as deployed: the spec's targets cannot be applied: " + w.Error
	case w.Error != "":
		return "cannot tell: " + w.Error
	case w.AllNamespaces:
		return "all namespaces"
	}
	names := make([]string, len(w.Namespaces))
	for i, ns := range w.Namespaces {
		names[i] = ns
		if slices.Contains(w.Missing, ns) {
			names[i] += " (does not exist)"
		}
	}
	line := strings.Join(names, ", ")
	if w.OperatorGroup != "" {
		line += " (from OperatorGroup " + w.OperatorGroup + ")"
	}
	return line
}

// installation reads the installation key as it is now; what is not there is left out.
func installation(ctx context.Context, c client.Client, key client.ObjectKey) statusDoc {
	doc := statusDoc{}
	if sub := (&omv1.Subscription{}); c.Get(ctx, key, sub) == nil {
		doc.Subscription = sub
	}
	if bp := (&omv1.Blueprint{}); c.Get(ctx, key, bp) == nil {
		doc.Blueprint = bp
	}
	return doc
}

func newStatusCmd(g *globals) *cobra.Command {
	out := &output{}
	events := 10
	cmd := &cobra.Command{
		Use:               "status NAME",
		Short:             "Show one Subscription: what runs, its conditions and its revisions",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSubscriptions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			key := client.ObjectKey{Namespace: ns, Name: args[0]}
			sub, err := getSubscription(cmd.Context(), c, key)
			if err != nil {
				return err
			}
			doc := statusDoc{Subscription: sub}
			bp := &omv1.Blueprint{}
			if err := c.Get(cmd.Context(), key, bp); err == nil {
				doc.Blueprint = bp
			}
			csv := installedCSV(cmd.Context(), c, doc.Subscription)
			doc.CRDs = sharedCRDs(cmd.Context(), c, csv)
			doc.Watches = watching(cmd.Context(), c, doc.Subscription, csv)
			if events > 0 {
				doc.Events = installationEvents(cmd.Context(), c, doc.Subscription, doc.Blueprint, events)
			}
			return out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) { printStatus(tw, doc) })
		},
	}
	cmd.Flags().IntVar(&events, "events", events, "how many of the newest events about the installation to show (0: none)")
	out.bind(cmd)
	return cmd
}

func printStatus(w io.Writer, doc statusDoc) {
	s := doc.Subscription
	fmt.Fprintf(w, "Subscription:\t%s/%s\n", s.Namespace, s.Name)
	pkg := s.Status.Package
	if pkg == "" {
		pkg = s.Spec.PackageName() // not resolved (yet): what it asks for
	}
	installed := "nothing yet"
	uninstalled := s.Status.Opstatus == "deleted"
	switch {
	case s.Status.InstalledCSV != "":
		installed = fmt.Sprintf("%s (%s)", s.Status.InstalledVersion, s.Status.InstalledCSV)
	case uninstalled:
		// Not "yet": nothing is installed because it was asked to be uninstalled.
		installed = "nothing: uninstalled (spec.option: delete)"
	}
	fmt.Fprintf(w, "Package:\t%s\nInstalled:\t%s\n", pkg, installed)
	if s.Status.CurrentCSV != "" && s.Status.CurrentCSV != s.Status.InstalledCSV && !uninstalled {
		fmt.Fprintf(w, "Wanted:\t%s\n", s.Status.CurrentCSV)
	}
	status := s.Status.Opstatus
	if status == "" {
		// No Blueprint to mirror (nothing started, or its creation fails): the state the
		// metrics and the console give it.
		status = subscription.State(&s.Status)
	}
	fmt.Fprintf(w, "Status:\t%s\n", status)
	if s.Spec.Paused {
		fmt.Fprintf(w, "Paused:\tyes: %s until `operator-manager resume %s`\n", pausedMeans, s.Name)
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, omv1.ConditionDeprecated); c != nil && c.Status == metav1.ConditionTrue {
		fmt.Fprintf(w, "Deprecated:\t%s\n", c.Message) // the catalog's words: what to move to
	}
	if bp := doc.Blueprint; bp != nil {
		fmt.Fprintf(w, "Target:\t%s (phase %s)\n", bp.Spec.ClusterServiceVersionName, bp.Status.Phase)
		if blueprint.Retryable(bp) == nil {
			fmt.Fprintf(w, "Retry:\t`operator-manager retry %s` tries %s again, once what made it fail is mended\n", bp.Name, bp.Spec.ClusterServiceVersionName)
		}
	}
	if ref := s.Status.InstallPlanRef; ref != nil {
		fmt.Fprintf(w, "InstallPlan:\t%s\n", ref.Name)
	}
	if doc.Watches != nil {
		fmt.Fprintf(w, "Watches:\t%s\n", describeWatches(doc.Watches))
	}
	if len(s.Spec.UpgradeWindows) > 0 {
		fmt.Fprintf(w, "Upgrade windows:\t%s\n", describeWindows(s.Spec.UpgradeWindows, time.Now()))
	}
	fmt.Fprintln(w, "\nCONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range s.Status.Conditions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if len(doc.CRDs) > 0 {
		converts := slices.ContainsFunc(doc.CRDs, func(c crdProviders) bool { return c.ConvertsThrough != "" })
		if converts {
			fmt.Fprintln(w, "\nCRD\tCONVERTS THROUGH\tPROVIDED BY")
		} else {
			fmt.Fprintln(w, "\nCRD\tPROVIDED BY")
		}
		for _, c := range doc.CRDs {
			by := strings.Join(c.ProvidedBy, ", ")
			if c.Error != "" {
				by = "? (" + c.Error + ")"
			}
			if converts {
				through := c.ConvertsThrough
				if through == "" {
					through = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", c.Name, through, by)
				continue
			}
			fmt.Fprintf(w, "%s\t%s\n", c.Name, by)
		}
	}
	if bp := doc.Blueprint; bp != nil && len(bp.Spec.Dependencies) > 0 {
		fmt.Fprintln(w, "\nDEPENDS ON\tCSV\tINSTALLED BY\tWHY")
		for _, d := range bp.Spec.Dependencies {
			by := d.ServedFrom
			if by == "" {
				by = "its package's Subscription in " + bp.Namespace
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", d.Package, d.CSVName, by, d.Reason)
		}
	}
	if bp := doc.Blueprint; bp != nil && len(bp.Status.History) > 0 {
		fmt.Fprintln(w, "\nREVISION\tCSV\tVERSION\tOUTCOME\tREASON\tSTARTED")
		for _, h := range bp.Status.History {
			started := ""
			if h.StartTime != nil {
				started = h.StartTime.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", h.Revision, h.CSVName, h.Version, h.Outcome, h.Reason, started)
		}
	}
	printEvents(w, doc.Events, time.Now())
}

// printEvents is the events section of `status`, as `kubectl describe` ends with one:
// the newest events, oldest of them first, so the last line is the latest.
func printEvents(w io.Writer, ev *eventsDoc, now time.Time) {
	switch {
	case ev == nil:
		return
	case ev.Error != "":
		fmt.Fprintf(w, "\nEvents:\tcannot be read: %s\n", ev.Error)
		return
	case len(ev.Newest) == 0:
		fmt.Fprintln(w, "\nEvents:\tnone kept (the API server keeps them for an hour by default)")
		return
	}
	fmt.Fprintln(w, "\nLAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for i := len(ev.Newest) - 1; i >= 0; i-- {
		e := ev.Newest[i]
		seen := duration.HumanDuration(now.Sub(e.Time)) + " ago"
		if e.Count > 1 {
			seen += fmt.Sprintf(" (x%d)", e.Count)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", seen, e.Type, e.Reason, e.Object, e.Message)
	}
	if ev.Total > len(ev.Newest) {
		fmt.Fprintf(w, "(the newest %d of %d events; --events %d shows all)\n", len(ev.Newest), ev.Total, ev.Total)
	}
}

// describeWindows lists a Subscription's upgrade windows and says whether one is open now.
func describeWindows(windows []omv1.UpgradeWindow, now time.Time) string {
	var parts []string
	for _, w := range windows {
		tz := w.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		parts = append(parts, fmt.Sprintf("%q for %s (%s)", w.Schedule, w.Duration.Duration, tz))
	}
	st, err := upgradewindow.At(windows, now)
	switch {
	case err != nil:
		return strings.Join(parts, ", ") + "; cannot be read: " + err.Error()
	case st.Open:
		return strings.Join(parts, ", ") + "; open until " + st.Closes.UTC().Format(time.RFC3339)
	}
	return strings.Join(parts, ", ") + "; closed, " + upgradewindow.Describe(st)
}

// parseWindows reads --upgrade-window values, "SCHEDULE for DURATION [in TIME-ZONE]", the
// words `status` prints them in; "none" (alone) is no windows. Each is checked as the
// manager will read it, so a typo is refused here rather than holding upgrades.
func parseWindows(values []string) ([]omv1.UpgradeWindow, error) {
	if len(values) == 1 && strings.TrimSpace(values[0]) == "none" {
		return []omv1.UpgradeWindow{}, nil
	}
	var windows []omv1.UpgradeWindow
	for _, v := range values {
		i := strings.LastIndex(v, " for ")
		if i < 0 {
			return nil, fmt.Errorf(`--upgrade-window %q: want "SCHEDULE for DURATION [in TIME-ZONE]", such as "0 2 * * 1-5 for 2h"`, v)
		}
		w := omv1.UpgradeWindow{Schedule: strings.TrimSpace(v[:i])}
		rest := strings.TrimSpace(v[i+len(" for "):])
		if d, tz, ok := strings.Cut(rest, " in "); ok {
			rest, w.TimeZone = strings.TrimSpace(d), strings.TrimSpace(tz)
		}
		d, err := time.ParseDuration(rest)
		if err != nil {
			return nil, fmt.Errorf("--upgrade-window %q: duration %q: %v", v, rest, err)
		}
		w.Duration = metav1.Duration{Duration: d}
		st, err := upgradewindow.At([]omv1.UpgradeWindow{w}, time.Now())
		if err != nil {
			return nil, fmt.Errorf("--upgrade-window %q: %v", v, strings.TrimPrefix(err.Error(), "spec.upgradeWindows[0]."))
		}
		if st.NeverOpens() {
			return nil, fmt.Errorf("--upgrade-window %q: the schedule never fires", v)
		}
		windows = append(windows, w)
	}
	return windows, nil
}
