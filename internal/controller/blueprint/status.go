package blueprint

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/controller/finalizer"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/installplan"
	"github.com/operator-manager/operator-manager/internal/metrics"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/refusal"
)

// latest returns the newest revision, or nil.
func latest(bp *omv1.Blueprint) *omv1.Revision {
	if n := len(bp.Status.History); n > 0 {
		return &bp.Status.History[n-1]
	}
	return nil
}

// open appends a revision Plan decided on; a still pending older one is superseded.
func (r *Reconciler) open(s *scope, rev *omv1.Revision) {
	bp := s.bp
	for i := range bp.Status.History {
		if h := &bp.Status.History[i]; h.Outcome == omv1.OutcomePending {
			h.Outcome, h.Reason, h.EndTime = omv1.OutcomeSuperseded, "Superseded", timePtr(s.now)
			h.Message = fmt.Sprintf("replaced by revision %d (%s) before it finished", rev.Revision, rev.CSVName)
		}
	}
	rev.StartTime = timePtr(s.now)
	recordPlan(s, rev)
	bp.Status.History = append(bp.Status.History, *rev)
	meta.RemoveStatusCondition(&bp.Status.Conditions, omv1.ConditionUpgradePending)
	switch rev.Trigger {
	case omv1.TriggerRollback:
		failed := failedRevision(bp)
		r.event(bp, true, omv1.ReasonRolledBack, "Rolling back to %s (revision %d): %s", rev.CSVName, rev.Revision, failed)
		metrics.Rollbacks.WithLabelValues(bp.Spec.Package, "automatic").Inc()
	case omv1.TriggerUpgrade, omv1.TriggerDowngrade:
		r.event(bp, false, string(rev.Trigger)+"Started", "Changing %s to %s (revision %d)%s", bp.Status.CurrentCSV, rev.CSVName, rev.Revision, fromCatalog(bp))
		if rev.Trigger == omv1.TriggerUpgrade {
			metrics.Upgrades.WithLabelValues(bp.Spec.Package).Inc()
		} else {
			metrics.Rollbacks.WithLabelValues(bp.Spec.Package, "manual").Inc()
		}
	case omv1.TriggerInstall:
		// No event: a first install is told once, by its outcome (Succeeded, or why it
		// failed), which names the catalog; its start is in the revision history. A fleet
		// of installs costs the API server one event each, not two.
	default:
		r.event(bp, false, string(rev.Trigger)+"Started", "%s %s (revision %d)%s", rev.Trigger, rev.CSVName, rev.Revision, fromCatalog(bp))
	}
}

// fromCatalog names the catalog of the Blueprint's target in an event, when it has one.
func fromCatalog(bp *omv1.Blueprint) string {
	if bp.Spec.Catalog == "" {
		return ""
	}
	return " from catalog " + bp.Spec.Catalog
}

// failedRevision describes the newest failed revision, for rollback messages.
func failedRevision(bp *omv1.Blueprint) string {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if h := bp.Status.History[i]; h.Outcome == omv1.OutcomeFailed {
			return fmt.Sprintf("%s (revision %d) failed: %s", h.CSVName, h.Revision, h.Message)
		}
	}
	return "the new version failed"
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// endWork closes the revision being carried out with an outcome.
func endWork(s *scope, outcome omv1.RevisionOutcome, reason, message string) {
	w := s.work
	if w == nil || (w.Outcome == outcome && w.Reason == reason && w.Message == message) {
		return
	}
	w.Outcome, w.Reason, w.Message, w.EndTime = outcome, reason, message, timePtr(s.now)
}

func setCondition(bp *omv1.Blueprint, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&bp.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: message, ObservedGeneration: bp.Generation})
}

func setReady(bp *omv1.Blueprint, status metav1.ConditionStatus, reason, message string) {
	setCondition(bp, omv1.ConditionReady, status, reason, message)
}

// fail ends the revision as Failed; the next reconcile plans a retry or a rollback.
func (r *Reconciler) fail(s *scope, reason, message string) {
	bp := s.bp
	if !s.probe {
		r.event(bp, true, reason, "%s", message)
	}
	bp.Status.Phase = omv1.BlueprintFailed
	endWork(s, omv1.OutcomeFailed, reason, message)
	setCondition(bp, omv1.ConditionHealthy, metav1.ConditionFalse, reason, message)
	setReady(bp, metav1.ConditionFalse, reason, message)
	// Plan decides at once what follows: a retry, a rollback, or the failed state.
	s.result = ctrl.Result{RequeueAfter: 100 * time.Millisecond}
}

// block ends the revision as Blocked: a check before any change refused it (the CRD
// preflight, or the installing identity's permissions), so nothing was changed and the
// running version, if any, runs on.
func (r *Reconciler) block(s *scope, reason, message string) {
	bp := s.bp
	r.event(bp, true, reason, "%s", message)
	metrics.Blocked.WithLabelValues(bp.Spec.Package).Inc()
	bp.Status.Phase = omv1.BlueprintBlocked
	endWork(s, omv1.OutcomeBlocked, reason, message)
	setCondition(bp, omv1.ConditionBlocked, metav1.ConditionTrue, reason, message)
	setReady(bp, metav1.ConditionFalse, reason, message)
	s.result = ctrl.Result{}
}

// progressWork marks the pending revision under way with its standard message.
func (r *Reconciler) progressWork(s *scope) {
	w := s.work
	r.progress(s, string(w.Trigger), fmt.Sprintf("revision %d: %s %s", w.Revision, strings.ToLower(string(w.Trigger)), w.CSVName))
}

// progress marks the revision under way.
func (r *Reconciler) progress(s *scope, reason, message string) {
	bp := s.bp
	switch {
	case s.work != nil && s.work.Trigger == omv1.TriggerRollback:
		bp.Status.Phase = omv1.BlueprintRollingBack
	case bp.Status.CurrentCSV != "":
		bp.Status.Phase = omv1.BlueprintUpgrading
	default:
		bp.Status.Phase = omv1.BlueprintInstalling
	}
	setCondition(bp, omv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	setReady(bp, metav1.ConditionFalse, reason, message)
}

// settle writes the phase and conditions of a Blueprint with nothing in progress, keeps
// the running CSV asked for what the Subscription says now, reports its live health, and
// retires the CSVs that no longer run.
func (r *Reconciler) settle(ctx context.Context, s *scope, phase omv1.BlueprintPhase) error {
	bp := s.bp
	if bp.Status.Phase != phase && phase == omv1.BlueprintRolledBack {
		r.event(bp, true, omv1.ReasonRolledBack, "Rolled back to %s: %s", bp.Status.CurrentCSV, failedRevision(bp))
	}
	bp.Status.Phase = phase
	setCondition(bp, omv1.ConditionProgressing, metav1.ConditionFalse, string(phase), "nothing in progress")
	if phase != omv1.BlueprintWaitingForApproval && phase != omv1.BlueprintUpgradeHeld {
		meta.RemoveStatusCondition(&bp.Status.Conditions, omv1.ConditionUpgradePending)
	}
	runs := bp.Status.CurrentCSV != ""
	switch phase {
	case omv1.BlueprintSucceeded:
		meta.RemoveStatusCondition(&bp.Status.Conditions, omv1.ConditionRolledBack)
		meta.RemoveStatusCondition(&bp.Status.Conditions, omv1.ConditionBlocked)
	case omv1.BlueprintRolledBack:
		msg := fmt.Sprintf("%s; %s runs again", failedRevision(bp), bp.Status.CurrentCSV)
		setCondition(bp, omv1.ConditionRolledBack, metav1.ConditionTrue, failedReason(bp), msg)
		setReady(bp, metav1.ConditionFalse, omv1.ReasonRolledBack, fmt.Sprintf("wanted %s, rolled back: %s", bp.Spec.ClusterServiceVersionName, msg))
	case omv1.BlueprintFailed:
		if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionReady); c == nil || c.Status == metav1.ConditionTrue {
			setReady(bp, metav1.ConditionFalse, failedReason(bp), failedRevision(bp))
		}
		if !runs {
			return r.removeFailedInstall(ctx, s)
		}
		return nil // the failed state stays visible for a person; nothing is retired
	case omv1.BlueprintBlocked:
		if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionBlocked); c != nil {
			setReady(bp, metav1.ConditionFalse, c.Reason, c.Message)
		}
	case omv1.BlueprintWaitingForApproval:
		msg := installplan.WaitMessage(bp)
		if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionUpgradePending); c == nil || c.Message != msg {
			r.event(bp, false, omv1.ReasonWaitingForApproval, "%s", msg)
		}
		setCondition(bp, omv1.ConditionUpgradePending, metav1.ConditionTrue, omv1.ReasonWaitingForApproval, msg)
		setReady(bp, metav1.ConditionFalse, omv1.ReasonWaitingForApproval, msg)
	case omv1.BlueprintUpgradeHeld:
		msg, reason := holdMessage(bp, s.hold), omv1.ReasonOperatorNotUpgradeable
		switch {
		case s.hold.Invalid:
			reason = omv1.ReasonInvalidUpgradeWindow
		case s.hold.Window:
			reason = omv1.ReasonOutsideUpgradeWindow
		}
		if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionUpgradePending); c == nil || c.Message != msg {
			r.event(bp, false, reason, "%s", msg)
		}
		setCondition(bp, omv1.ConditionUpgradePending, metav1.ConditionTrue, reason, msg)
		setReady(bp, metav1.ConditionFalse, reason, msg)
	}
	if !runs {
		return nil
	}
	if err := r.refreshCurrent(ctx, s); err != nil {
		return err
	}
	if err := r.liveHealth(ctx, s); err != nil {
		return err
	}
	if phase == omv1.BlueprintSucceeded || phase == omv1.BlueprintRolledBack {
		return r.retire(ctx, s)
	}
	return nil
}

// holdMessage says who holds the upgrade, why, and what releases it. Plan settles as
// UpgradeHeld only with a Hold, so h is never nil here.
func holdMessage(bp *omv1.Blueprint, h *Hold) string {
	if h.Window {
		return fmt.Sprintf("%s waits for an upgrade window (spec.upgradeWindows of Subscription %s): %s",
			bp.Spec.ClusterServiceVersionName, bp.SubscriptionName(), h.Message)
	}
	who := fmt.Sprintf("%s says it may not be upgraded now", bp.Status.CurrentCSV)
	field := "spec.conditions"
	if h.Override {
		who = fmt.Sprintf("an administrator's override says %s may not be upgraded now", bp.Status.CurrentCSV)
		field = "spec.overrides"
	}
	why := h.Reason
	if h.Message != "" {
		why += ": " + h.Message
	}
	return fmt.Sprintf("%s (OperatorCondition %s %s Upgradeable=False, %s); %s waits until it turns True",
		who, h.OperatorCondition, field, why, bp.Spec.ClusterServiceVersionName)
}

// failedReason is the reason of the newest failed revision.
func failedReason(bp *omv1.Blueprint) string {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if h := bp.Status.History[i]; h.Outcome == omv1.OutcomeFailed && h.Reason != "" {
			return h.Reason
		}
	}
	return omv1.ReasonHealthCheckFailed
}

// refreshCurrent keeps the running CSV asked for what the Subscription says now (its
// service account and health timeout): a change re-renders it through the health gate,
// without a new revision.
func (r *Reconciler) refreshCurrent(ctx context.Context, s *scope) error {
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.bp.Namespace, Name: s.bp.Status.CurrentCSV}, csv); err != nil {
		return client.IgnoreNotFound(err)
	}
	want := map[string]string{
		omv1.AnnotationServiceAccount: s.id.Name,
		omv1.AnnotationHealthTimeout:  healthTimeout(s.sub).String(),
		omv1.AnnotationDesiredPhase:   omv1.DesiredPhaseActive,
	}
	stale := false
	for k, v := range want {
		if csv.Annotations[k] != v {
			stale = true
		}
	}
	if !stale || !csv.DeletionTimestamp.IsZero() {
		return nil
	}
	patch := client.MergeFromWithOptions(csv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	for k, v := range want {
		metav1.SetMetaDataAnnotation(&csv.ObjectMeta, k, v)
	}
	if err := r.Client.Patch(ctx, csv, patch); err != nil {
		return fmt.Errorf("updating what %s is asked to do: %w", csv.Name, err)
	}
	return nil
}

// liveHealth reports the running CSV's health as the Blueprint's Healthy condition, and,
// in phase Succeeded, Ready: a version that passed its gate and degrades later is reported
// (with an event and a metric), not rolled back.
func (r *Reconciler) liveHealth(ctx context.Context, s *scope) error {
	bp := s.bp
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: bp.Status.CurrentCSV}, csv); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		csv = nil
	}
	status, reason, msg := liveVerdict(bp.Status.CurrentCSV, csv, s.now)
	if csv != nil {
		r.seen(bp, csv.ResourceVersion, s.now)
		key, value := ProviderKey(bp.Namespace, bp.Name), providerValue(bp, bp.Status.CurrentCSV)
		version := ""
		if rev := runningRevision(bp); rev != nil {
			version = rev.Version
		}
		missing, outdated, unrecorded, err := r.missingCRDs(ctx, csv, bp.Spec.Package, version, key, value)
		if err != nil {
			return err
		}
		r.recordOn(ctx, s, unrecorded, key, value)
		if len(missing) == 0 && len(outdated) > 0 {
			// An operator unhealthy in itself is told first: that is what a person mends first.
			if st, rs, m, judged, err := r.outdatedVerdict(ctx, s, outdated); err != nil {
				return err
			} else if judged && status == metav1.ConditionTrue {
				status, reason, msg = st, rs, m
			}
		}
		if len(missing) > 0 {
			made, again, why, err := r.restoreCRDs(ctx, s, missing)
			switch {
			case err != nil:
				return err
			case len(made) == 0 && len(again) == len(missing):
				// Another installation of the package made each again first: nothing is
				// missing for this one (it told CRDRecreated on its own), so the operator's
				// own health stands (before, this one said CRDMissing "is gone" of a CRD
				// that was back, then Recovered a second later: found by hand).
			case len(made) > 0:
				// Established within moments; the operator's watches recover with it.
				status, reason, msg = metav1.ConditionUnknown, ReasonCRDRecreated,
					fmt.Sprintf("CRD %s of %s was deleted and is being created again", strings.Join(made, ", "), bp.Status.CurrentCSV)
			default:
				status, reason, msg = metav1.ConditionFalse, ReasonCRDMissing,
					fmt.Sprintf("CRD %s of %s is gone", strings.Join(missing, ", "), bp.Status.CurrentCSV)
				if why != "" {
					msg += ", and cannot be created again: " + why
				}
			}
		}
	} else {
		recreated, why, err := r.recreateCurrent(ctx, s)
		switch {
		case err != nil:
			return err
		case recreated:
			// Its objects are being applied again: not yet judged.
			status, reason, msg = metav1.ConditionUnknown, ReasonCSVRecreated, bp.Status.CurrentCSV+" was deleted and is being created again"
		case why != "":
			msg += ", and cannot be created again: " + why
		}
	}
	switch healthChange(meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionHealthy), status) {
	case "healthy":
		r.event(bp, false, "Recovered", "%s", msg)
		metrics.HealthChanges.WithLabelValues(bp.Spec.Package, "healthy").Inc()
	case "unhealthy":
		r.event(bp, true, reason, "%s", msg)
		metrics.HealthChanges.WithLabelValues(bp.Spec.Package, "unhealthy").Inc()
	}
	setCondition(bp, omv1.ConditionHealthy, status, reason, msg)
	if status != metav1.ConditionUnknown {
		value := 0.0
		if status == metav1.ConditionTrue {
			value = 1
		}
		metrics.Healthy.WithLabelValues(bp.Namespace, bp.Name, bp.Spec.Package).Set(value)
	}
	if bp.Status.Phase == omv1.BlueprintSucceeded {
		switch status {
		case metav1.ConditionTrue:
			setReady(bp, status, omv1.ReasonSucceeded, bp.Status.CurrentCSV+" is installed and healthy")
		default:
			setReady(bp, metav1.ConditionFalse, reason, msg)
		}
	}
	if status != metav1.ConditionTrue {
		// Pods are not watched: look again while it is unhealthy.
		s.result = ctrl.Result{RequeueAfter: 30 * time.Second}
	}
	return nil
}

// ReasonHealthGateRunning: the running version passes its health gate again, after a
// change of its configuration (spec.config, targetNamespaces, serviceAccountName) or
// after its CSV, deleted, was created again.
const ReasonHealthGateRunning = "HealthGateRunning"

// liveVerdict is the Healthy condition of an installation running current, whose CSV is
// csv (nil when it does not exist): True when the CSV is Succeeded, False when it failed
// or is gone, and Unknown while it passes its health gate again after a configuration
// change: not yet judged, which is no fault (before, it read as unhealthy, with a Warning).
func liveVerdict(current string, csv *omv1alpha1.ClusterServiceVersion, now time.Time) (metav1.ConditionStatus, string, string) {
	switch {
	case csv == nil:
		return metav1.ConditionFalse, "CSVMissing", current + " does not exist"
	case csv.Status.Phase == omv1alpha1.CSVSucceeded:
		return metav1.ConditionTrue, omv1.ReasonSucceeded, current + " is healthy: " + csv.Status.Message
	case csv.Status.Phase == omv1alpha1.CSVFailed && csv.Status.Reason == "UnsupportedOperatorGroup":
		// Its configuration cannot be applied; the operator runs on as it was deployed
		// (the CSV's words say so). Still False: what a person asked for is not what runs.
		return metav1.ConditionFalse, csv.Status.Reason, fmt.Sprintf("%s: its configuration cannot be applied: %s", csv.Name, csv.Status.Message)
	case csv.Status.Phase == omv1alpha1.CSVFailed && csv.Status.Reason == omv1.ReasonInstallFailed:
		// An object the API server refused (a config whose requests exceed its limits, a
		// policy): the refused object, and what depends on it, stay as they were.
		return metav1.ConditionFalse, csv.Status.Reason, fmt.Sprintf("%s: its configuration cannot be applied, and the operator runs on as it was deployed: %s", csv.Name, csv.Status.Message)
	case csv.Status.Phase == omv1alpha1.CSVFailed && csv.Status.Reason == omv1.ReasonReconcileError:
		// Its objects cannot be kept as installed (a repair fails, say, under a policy
		// webhook that is down): nothing is known to be wrong with its pods.
		return metav1.ConditionFalse, csv.Status.Reason, fmt.Sprintf("%s cannot be kept as installed (retried every %s): %s", csv.Name, refusal.RetryAfter, csv.Status.Message)
	case csv.Status.Phase == omv1alpha1.CSVFailed:
		return metav1.ConditionFalse, csv.Status.Reason, fmt.Sprintf("%s is unhealthy: %s", csv.Name, csv.Status.Message)
	}
	if timeout, over := gateOver(csv, now); over && csv.Status.Reason == omv1.ReasonReconcileError {
		// A configuration change whose objects could not be applied for its whole health
		// timeout (a policy webhook down on Deployments): its CSV's gate never reaches a
		// verdict, since nothing it applied can be judged. Without this the installation
		// said "in its health gate again" for as long as the fault lasted, Unknown, which
		// no alert fires on.
		return metav1.ConditionFalse, csv.Status.Reason, fmt.Sprintf("%s: its configuration change could not be applied within its health timeout of %s (retried with backoff): %s", csv.Name, timeout, csv.Status.Message)
	}
	return metav1.ConditionUnknown, ReasonHealthGateRunning, fmt.Sprintf("%s is in its health gate again (its configuration changed, or it was created again): %s", csv.Name, csv.Status.Message)
}

// gateOver says whether the health gate csv runs began longer ago than its timeout (as
// its gate reads it), and gives the timeout.
func gateOver(csv *omv1alpha1.ClusterServiceVersion, now time.Time) (time.Duration, bool) {
	timeout := csv.HealthTimeout(DefaultHealthTimeout)
	started := csv.Status.GateStartTime
	return timeout, started != nil && now.Sub(started.Time) > timeout
}

// healthChange names the change of live health that before (the Healthy condition as it
// was, nil at first) to status is: "unhealthy" into False, "healthy" from False into True,
// "" otherwise. A gate run again (Unknown) is no change; the verdict that ends it is one
// when it is False, and not when it confirms the health the installation had.
func healthChange(before *metav1.Condition, status metav1.ConditionStatus) string {
	if before == nil || before.Reason == "" || before.Status == status {
		return ""
	}
	switch {
	case status == metav1.ConditionFalse:
		return "unhealthy"
	case status == metav1.ConditionTrue && before.Status == metav1.ConditionFalse:
		return "healthy"
	}
	return ""
}

// removeFailedInstall removes what a failed first install left, when it failed because
// the API server refused it (permissions, an invalid object), or because its CSV could
// never apply what it renders (its last word an error it retried, such as a policy
// webhook that is down): an installation that never ran leaves nothing half-installed
// behind, and its CSV stops retrying. A health failure keeps its objects, for a person to
// look at its pods.
func (r *Reconciler) removeFailedInstall(ctx context.Context, s *scope) error {
	reason := failedReason(s.bp)
	refused := reason == omv1.ReasonInsufficientPermissions || reason == omv1.ReasonInstallFailed || reason == ReasonCRDRefused
	if !refused && reason != omv1.ReasonHealthCheckFailed && reason != omv1.ReasonDeadlineExceeded {
		return nil
	}
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.bp.Namespace), client.MatchingLabels{omv1.LabelSubscription: s.bp.SubscriptionName()}); err != nil {
		return err
	}
	for i := range list.Items {
		csv := &list.Items[i]
		if !csv.DeletionTimestamp.IsZero() || !refused && csv.Status.Reason != omv1.ReasonReconcileError {
			continue
		}
		if !refused {
			reason = csv.Status.Reason + ": " + csv.Status.Message
		}
		if err := r.Client.Delete(ctx, csv); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing %s after its failed install: %w", csv.Name, err)
		}
		r.event(s.bp, true, "FailedInstallRemoved", "Removed what the failed install of %s had applied (%s)", csv.Name, reason)
	}
	return nil
}

// retire deletes the Blueprint's CSVs other than the one running. Their finalizers remove
// only what the running CSV did not take over.
func (r *Reconciler) retire(ctx context.Context, s *scope) error {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.bp.Namespace), client.MatchingLabels{omv1.LabelSubscription: s.bp.SubscriptionName()}); err != nil {
		return err
	}
	for i := range list.Items {
		old := &list.Items[i]
		if old.Name == s.bp.Status.CurrentCSV || !old.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("retiring %s: %w", old.Name, err)
		}
		r.event(s.bp, false, "Retired", "Removed %s; %s runs", old.Name, s.bp.Status.CurrentCSV)
	}
	return nil
}

// prune applies the Subscription's historyLimit and removes the cached bundles of pruned
// revisions that no kept revision uses.
func (r *Reconciler) prune(ctx context.Context, s *scope) error {
	limit := 10
	if s.sub != nil && s.sub.Spec.HistoryLimit != nil {
		limit = int(*s.sub.Spec.HistoryLimit)
	}
	kept, dropped := Prune(s.bp.Status.History, limit, s.bp.Status.CurrentCSV)
	if len(dropped) == 0 {
		return nil
	}
	s.bp.Status.History = kept
	inUse := map[string]bool{s.bp.Spec.BundleDigest: true}
	for _, k := range kept {
		inUse[k.BundleDigest] = true
	}
	var names []string
	for _, d := range dropped {
		names = append(names, fmt.Sprint(d.Revision))
		if !inUse[d.BundleDigest] && d.BundleDigest != "" {
			if err := r.Bundles.Forget(ctx, s.bp, d.BundleDigest); err != nil {
				return err
			}
		}
	}
	r.event(s.bp, false, "HistoryPruned", "Pruned revisions %s (historyLimit %d)", strings.Join(names, ", "), limit)
	return nil
}

// ReasonBlueprintDeleted: a Blueprint was deleted while its Subscription still asks for
// the operator (not an uninstall); told on the Subscription.
const ReasonBlueprintDeleted = "BlueprintDeleted"

// finalize deletes the Blueprint's CSVs (whose finalizers remove what they installed) and
// waits until they are gone. CRDs stay: custom resources outlive the operator.
func (r *Reconciler) finalize(ctx context.Context, bp *omv1.Blueprint) (ctrl.Result, error) {
	if left, err := r.deleteCSVs(ctx, r.Client, bp); err != nil {
		return ctrl.Result{}, err
	} else if left {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if !controllerutil.ContainsFinalizer(bp, omv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	// The cache may not hold yet a CSV this Blueprint created a moment ago: an uninstall
	// asked for while the install starts. Let go of the Blueprint on the cache's word and
	// that CSV outlives it, its operator running, until the garbage collector gets to it,
	// while the Subscription already says Uninstalled (crash walk scenario abandon). The
	// server has the last word, once per uninstall.
	if r.APIReader != nil {
		if left, err := r.deleteCSVs(ctx, r.APIReader, bp); err != nil {
			return ctrl.Result{}, err
		} else if left {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
	}
	sub := &omv1.Subscription{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: bp.Namespace, Name: bp.SubscriptionName()}, sub); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		sub = nil
	} else {
		// Deleted as who installed, the OperatorGroup's ServiceAccount included. Several
		// OperatorGroups do not hold a deletion up: the Subscription's own words count.
		_ = operatorgroup.ApplyFrom(ctx, r.Client, sub)
	}
	r.forgetProviders(ctx, bp, sub)
	if err := r.deleteCRDs(ctx, bp, sub); err != nil {
		return ctrl.Result{}, err
	}
	handedBack := sub != nil && sub.DeletionTimestamp.IsZero() && sub.Spec.Option != omv1.OptionDelete && bp.Status.CurrentCSV != ""
	if removed, err := finalizer.Remove(ctx, r.Client, bp); err != nil {
		return ctrl.Result{}, err
	} else if !removed {
		// A pass from a cache that still held the finalizer, after the pass that removed
		// it (and told the Subscription) let the Blueprint go; or one from a copy older
		// than the Blueprint, looked at again in a moment.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if handedBack {
		// Not an uninstall: the Blueprint itself was deleted (by hand). Its operator went
		// with it and the Subscription installs it again; the person is told so where
		// they look, since the Blueprint and its history are gone. Told once, by the pass
		// that let the Blueprint go.
		r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, ReasonBlueprintDeleted, "Uninstall",
			"Blueprint %s was deleted while this Subscription asks for the operator: %s was uninstalled with it (custom resources and CRDs kept) and is installed again as this Subscription asks; its revision history is gone. To uninstall, delete the Subscription or set spec.option: delete",
			bp.Name, bp.Status.CurrentCSV)
	}
	return ctrl.Result{}, nil
}

// deleteCSVs deletes the Blueprint's CSVs that reader lists, and says whether any were
// left (being deleted: their finalizers remove what they installed). A CSV another
// Blueprint controls is not this one's: a Blueprint deleted by hand is made again under
// its name, with CSVs of the same names and labels, and a pass on a cache that still
// shows the old one must not uninstall the new one's. Each delete holds to the UID listed.
func (r *Reconciler) deleteCSVs(ctx context.Context, reader client.Reader, bp *omv1.Blueprint) (bool, error) {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := reader.List(ctx, list, client.InNamespace(bp.Namespace), client.MatchingLabels{omv1.LabelSubscription: bp.SubscriptionName()}); err != nil {
		return false, err
	}
	left := false
	for i := range list.Items {
		csv := &list.Items[i]
		if owner := metav1.GetControllerOf(csv); owner != nil && owner.UID != bp.UID {
			continue
		}
		left = true
		if csv.DeletionTimestamp.IsZero() {
			err := r.Client.Delete(ctx, csv, client.Preconditions{UID: &csv.UID})
			if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return false, err
			}
		}
	}
	return left, nil
}

// deleteCRDs is the explicit opt-in of a Subscription's spec.uninstall.deleteCRDs: once the
// operator is gone, the CRDs its running bundle owns are deleted (and with them every
// custom resource of those kinds), except a CRD that a CSV of another installation still
// owns. Without the opt-in, CRDs always stay.
func (r *Reconciler) deleteCRDs(ctx context.Context, bp *omv1.Blueprint, sub *omv1.Subscription) error {
	if sub == nil || sub.Spec.Uninstall == nil || !sub.Spec.Uninstall.DeleteCRDs {
		return nil
	}
	good := LastGood(bp)
	if good == nil {
		return nil
	}
	files, err := r.Bundles.Get(ctx, bp.Namespace, bp.Name, good.BundleDigest)
	if err != nil {
		r.event(bp, true, "CRDsKept", "spec.uninstall.deleteCRDs is set, but the bundle of %s is not in the cache to name its CRDs: %v", good.CSVName, err)
		return nil
	}
	content, err := catalog.ContentFromFiles(files)
	if err != nil {
		return err
	}
	others := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, others); err != nil {
		return err
	}
	// Deleted as the installation's identity, like everything else it wrote.
	cl, err := r.Identities.For(identity.Effective(bp.Namespace, sub.Spec.ServiceAccountName, r.DefaultServiceAccount))
	if err != nil {
		return err
	}
	for _, u := range content.CRDs {
		name := u.GetName()
		if user := providerOf(others.Items, name, bp); user != "" {
			r.event(bp, false, "CRDKept", "Kept CRD %s: %s still provides it", name, user)
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Name = name
		if err := cl.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting CRD %s (spec.uninstall.deleteCRDs): %w", name, err)
		}
		r.event(bp, true, "CRDDeleted", "Deleted CRD %s and its custom resources, as spec.uninstall.deleteCRDs asks", name)
	}
	return nil
}

// providerOf names a CSV of another installation that owns the CRD, or "".
func providerOf(csvs []omv1alpha1.ClusterServiceVersion, crd string, bp *omv1.Blueprint) string {
	for _, c := range csvs {
		if !c.DeletionTimestamp.IsZero() || (c.Namespace == bp.Namespace && c.Labels[omv1.LabelSubscription] == bp.SubscriptionName()) {
			continue
		}
		for _, o := range c.Spec.CustomResourceDefinitions.Owned {
			if o.Name == crd {
				return c.Namespace + "/" + c.Name
			}
		}
	}
	return ""
}
