package blueprint

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// latest returns the newest revision, or nil.
func latest(bp *omv1.Blueprint) *omv1.Revision {
	if n := len(bp.Status.History); n > 0 {
		return &bp.Status.History[n-1]
	}
	return nil
}

// startRevision opens a revision for the target CSV when the newest one is for another CSV
// (a Subscription edit, or a person editing clusterServiceVersionName by hand).
func (r *Reconciler) startRevision(s *scope) {
	bp := s.bp
	if last := latest(bp); last != nil && last.CSVName == bp.Spec.ClusterServiceVersionName {
		return
	}
	next := int64(1)
	if last := latest(bp); last != nil {
		next = last.Revision + 1
		if last.Outcome == omv1.OutcomePending {
			last.Outcome, last.Reason, last.EndTime = omv1.OutcomeSuperseded, "Superseded", timePtr(s.now)
			last.Message = "replaced by " + bp.Spec.ClusterServiceVersionName + " before it finished"
		}
	}
	bp.Status.History = append(bp.Status.History, omv1.Revision{
		Revision: next, CSVName: bp.Spec.ClusterServiceVersionName, Version: bp.Spec.Version,
		BundleDigest: bp.Spec.BundleDigest, StartTime: timePtr(s.now), Outcome: omv1.OutcomePending,
	})
	verb := "Installing"
	if bp.Status.CurrentCSV != "" {
		verb = "Changing " + bp.Status.CurrentCSV + " to"
	}
	r.event(bp, false, "RevisionStarted", "%s %s (revision %d)", verb, bp.Spec.ClusterServiceVersionName, next)
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// endRevision closes the newest revision with an outcome.
func endRevision(s *scope, outcome omv1.RevisionOutcome, reason, message string) {
	last := latest(s.bp)
	if last == nil || last.Outcome == outcome && last.Reason == reason && last.Message == message {
		return
	}
	last.Outcome, last.Reason, last.Message, last.EndTime = outcome, reason, message, timePtr(s.now)
}

func setReady(bp *omv1.Blueprint, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&bp.Status.Conditions, metav1.Condition{Type: omv1.ConditionReady, Status: status,
		Reason: reason, Message: message, ObservedGeneration: bp.Generation})
}

func (r *Reconciler) fail(s *scope, reason, message string) {
	bp := s.bp
	if bp.Status.Phase != omv1.BlueprintFailed || latest(bp).Message != message {
		r.event(bp, true, reason, "%s", message)
	}
	bp.Status.Phase = omv1.BlueprintFailed
	endRevision(s, omv1.OutcomeFailed, reason, message)
	meta.SetStatusCondition(&bp.Status.Conditions, metav1.Condition{Type: omv1.ConditionHealthy, Status: metav1.ConditionFalse,
		Reason: reason, Message: message, ObservedGeneration: bp.Generation})
	setReady(bp, metav1.ConditionFalse, reason, message)
}

func (r *Reconciler) block(s *scope, message string) {
	bp := s.bp
	if bp.Status.Phase != omv1.BlueprintBlocked {
		r.event(bp, true, omv1.ReasonCRDPreflightFailed, "%s", message)
	}
	bp.Status.Phase = omv1.BlueprintBlocked
	endRevision(s, omv1.OutcomeBlocked, omv1.ReasonCRDPreflightFailed, message)
	meta.SetStatusCondition(&bp.Status.Conditions, metav1.Condition{Type: omv1.ConditionBlocked, Status: metav1.ConditionTrue,
		Reason: omv1.ReasonCRDPreflightFailed, Message: message, ObservedGeneration: bp.Generation})
	setReady(bp, metav1.ConditionFalse, omv1.ReasonCRDPreflightFailed, message)
}

func (r *Reconciler) progress(s *scope, reason, message string) {
	bp := s.bp
	bp.Status.Phase = omv1.BlueprintInstalling
	if bp.Status.CurrentCSV != "" && bp.Status.CurrentCSV != bp.Spec.ClusterServiceVersionName {
		bp.Status.Phase = omv1.BlueprintUpgrading
	}
	meta.SetStatusCondition(&bp.Status.Conditions, metav1.Condition{Type: omv1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: bp.Generation})
	setReady(bp, metav1.ConditionFalse, reason, message)
}

// follow maps the target CSV's phase onto the Blueprint.
func (r *Reconciler) follow(ctx context.Context, s *scope) (bool, error) {
	bp := s.bp
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(s.target), csv); err != nil {
		return true, client.IgnoreNotFound(err)
	}
	meta.RemoveStatusCondition(&bp.Status.Conditions, omv1.ConditionBlocked)
	switch csv.Status.Phase {
	case omv1alpha1.CSVSucceeded:
		if bp.Status.Phase != omv1.BlueprintSucceeded || bp.Status.CurrentCSV != csv.Name {
			r.event(bp, false, omv1.ReasonSucceeded, "%s is installed and healthy", csv.Name)
		}
		bp.Status.Phase = omv1.BlueprintSucceeded
		bp.Status.CurrentCSV, bp.Status.CurrentVersion = csv.Name, csv.Spec.Version.String()
		endRevision(s, omv1.OutcomeSucceeded, omv1.ReasonSucceeded, csv.Status.Message)
		bp.Status.LastGoodRevision = latest(bp).Revision
		meta.SetStatusCondition(&bp.Status.Conditions, metav1.Condition{Type: omv1.ConditionProgressing, Status: metav1.ConditionFalse,
			Reason: omv1.ReasonSucceeded, Message: csv.Name + " is installed", ObservedGeneration: bp.Generation})
		meta.SetStatusCondition(&bp.Status.Conditions, metav1.Condition{Type: omv1.ConditionHealthy, Status: metav1.ConditionTrue,
			Reason: csv.Status.Reason, Message: csv.Status.Message, ObservedGeneration: bp.Generation})
		setReady(bp, metav1.ConditionTrue, omv1.ReasonSucceeded, fmt.Sprintf("%s is installed and healthy", csv.Name))
		return false, nil
	case omv1alpha1.CSVFailed:
		r.fail(s, omv1.ReasonHealthCheckFailed, fmt.Sprintf("%s failed: %s: %s", csv.Name, csv.Status.Reason, csv.Status.Message))
		return true, nil
	default:
		msg := fmt.Sprintf("%s is %s", csv.Name, phaseOrNew(csv.Status.Phase))
		if csv.Status.Message != "" {
			msg += ": " + csv.Status.Message
		}
		r.progress(s, omv1.ReasonInstalling, msg)
		s.result = ctrl.Result{RequeueAfter: 5 * time.Second}
		return true, nil
	}
}

func phaseOrNew(p omv1alpha1.CSVPhase) string {
	if p == "" {
		return "new"
	}
	return string(p)
}

// retire deletes the Blueprint's older CSVs once the target is Succeeded. Their
// finalizers remove only what the new CSV did not take over.
func (r *Reconciler) retire(ctx context.Context, s *scope) (bool, error) {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.bp.Namespace), client.MatchingLabels{omv1.LabelSubscription: subscriptionName(s.bp)}); err != nil {
		return true, err
	}
	for i := range list.Items {
		old := &list.Items[i]
		if old.Name == s.bp.Spec.ClusterServiceVersionName || !old.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
			return true, fmt.Errorf("retiring %s: %w", old.Name, err)
		}
		r.event(s.bp, false, "Retired", "Removed %s, replaced by %s", old.Name, s.bp.Spec.ClusterServiceVersionName)
	}
	return true, nil
}

// finalize deletes the Blueprint's CSVs (whose finalizers remove what they installed) and
// waits until they are gone. CRDs stay: custom resources outlive the operator.
func (r *Reconciler) finalize(ctx context.Context, bp *omv1.Blueprint) (ctrl.Result, error) {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(bp.Namespace), client.MatchingLabels{omv1.LabelSubscription: subscriptionName(bp)}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if len(list.Items) > 0 {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if !controllerutil.ContainsFinalizer(bp, omv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(bp.DeepCopy())
	controllerutil.RemoveFinalizer(bp, omv1.Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, bp, patch))
}
