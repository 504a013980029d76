// Package installplan decides the InstallPlans of a Blueprint: OLM's record of a version
// change that waits for a person. operator-manager makes one only where a Manual
// Subscription's change waits for approval; it is approved by setting spec.approved (as
// in OLM) or by `operator-manager approve`, and afterwards says how its change went. The
// decisions here are pure: the Blueprint controller reads and writes the objects.
package installplan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// Name is the InstallPlan of a Blueprint's version change (its target CSV and
// spec.generation): "install-" and a hash of the three, in OLM's shape. Being a function of
// the change, the Subscription controller names it without reading it, and a create
// retried after a lost answer finds the plan made before instead of making a second.
func Name(blueprint, csv string, generation int64) string {
	sum := sha256.Sum256([]byte(blueprint + "\x00" + csv + "\x00" + strconv.FormatInt(generation, 10)))
	return "install-" + hex.EncodeToString(sum[:])[:10]
}

// Pending is the InstallPlan of the Blueprint's current change: the one an approval of
// it is read from and that a revision opened for it records.
func Pending(bp *omv1.Blueprint) string {
	return Name(bp.Name, bp.Spec.ClusterServiceVersionName, bp.Spec.Generation)
}

// CSVs are the CSVs the Blueprint's current change installs: its target, then the
// dependencies the change installs with it (those the Subscription controller chose from
// a catalog; the ones an installed operator meets already run).
func CSVs(bp *omv1.Blueprint) []string {
	out := []string{bp.Spec.ClusterServiceVersionName}
	for _, d := range bp.Spec.Dependencies {
		if d.BundleDigest != "" && d.CSVName != "" {
			out = append(out, d.CSVName)
		}
	}
	return out
}

// Latest is the InstallPlan a Subscription points at (status.installPlanRef): the one its
// change waits on (for approval; for a Manual Subscription, also approved and held by an
// upgrade window or the operator), else the newest one a remembered revision carried out;
// "" for none.
func Latest(bp *omv1.Blueprint, manual bool) string {
	if bp.Status.Phase == omv1.BlueprintWaitingForApproval || (manual && bp.Status.Phase == omv1.BlueprintUpgradeHeld) {
		return Pending(bp) // waits for a person, or approved and held before it starts
	}
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		if p := bp.Status.History[i].InstallPlan; p != "" {
			return p
		}
	}
	return ""
}

// Decision is what one InstallPlan of a Blueprint should be.
type Decision struct {
	// Delete: the plan asks for a change no longer wanted (the Subscription moved on
	// before it was approved), or its revision has left the Blueprint's history.
	Delete bool
	// Approved: spec.approved should be true, the change having been approved another way
	// (`operator-manager approve`, the Blueprint's spec.approved).
	Approved bool
	Status   omv1alpha1.InstallPlanStatus
}

// Decide says what an InstallPlan of the Blueprint should be, from the Blueprint alone:
// the plan of a change that waits is RequiresApproval; a plan a revision carried out
// follows that revision's outcome (a retry of the same change included); any other is
// deleted.
func Decide(bp *omv1.Blueprint, ip *omv1alpha1.InstallPlan) Decision {
	for i := len(bp.Status.History) - 1; i >= 0; i-- {
		h := bp.Status.History[i]
		if h.InstallPlan != ip.Name {
			continue
		}
		st := omv1alpha1.InstallPlanStatus{Revision: h.Revision}
		switch h.Outcome {
		case omv1.OutcomePending:
			st.Phase, st.Message = omv1alpha1.InstallPlanInstalling, fmt.Sprintf("revision %d installs %s", h.Revision, h.CSVName)
		case omv1.OutcomeSucceeded:
			st.Phase, st.Message = omv1alpha1.InstallPlanComplete, fmt.Sprintf("revision %d installed %s", h.Revision, h.CSVName)
		default:
			st.Phase, st.Message = omv1alpha1.InstallPlanFailed, fmt.Sprintf("revision %d did not install %s: %s", h.Revision, h.CSVName, h.Reason)
			if h.Message != "" {
				st.Message += ": " + h.Message
			}
		}
		return Decision{Approved: true, Status: st}
	}
	if bp.Status.Phase == omv1.BlueprintWaitingForApproval && ip.Name == Pending(bp) {
		return Decision{Approved: ip.Spec.Approved, Status: omv1alpha1.InstallPlanStatus{
			Phase: omv1alpha1.InstallPlanRequiresApproval, Message: WaitMessage(bp)}}
	}
	if bp.Status.Phase == omv1.BlueprintUpgradeHeld && ip.Name == Pending(bp) && (ip.Spec.Approved || bp.Spec.Approved) {
		// Approved, and held before it starts (an upgrade window, the operator's "not
		// now"): kept, since its spec.approved is the approval; Installing, as OLM says of
		// an approved plan not yet done, with what it waits for.
		msg := "approved; waits to start"
		if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionUpgradePending); c != nil {
			msg = "approved; " + c.Message
		}
		return Decision{Approved: true, Status: omv1alpha1.InstallPlanStatus{Phase: omv1alpha1.InstallPlanInstalling, Message: msg}}
	}
	return Decision{Delete: true}
}

// WaitMessage says what a change waiting for approval would do and how to approve it.
func WaitMessage(bp *omv1.Blueprint) string {
	what := bp.Spec.ClusterServiceVersionName + " waits for approval to be installed"
	if bp.Status.CurrentCSV != "" {
		what = fmt.Sprintf("%s waits for approval to replace %s", bp.Spec.ClusterServiceVersionName, bp.Status.CurrentCSV)
	}
	if csvs := CSVs(bp); len(csvs) > 1 {
		what += " (with its dependencies " + strings.Join(csvs[1:], ", ") + ")"
	}
	return fmt.Sprintf("%s: run `operator-manager approve %s -n %s`, or set spec.approved to true in InstallPlan %s",
		what, bp.SubscriptionName(), bp.Namespace, Pending(bp))
}

// Reasons of the Installed condition (OLM's words where it has them).
const (
	ReasonInstallSucceeded       = "InstallSucceeded"
	ReasonInstallComponentFailed = "InstallComponentFailed"
)

// WithConditions returns the status d decided for ip, with OLM's Installed condition set
// from its phase on the conditions ip already has: True when Complete, False when Failed,
// none before. A condition that stays keeps its transition time, so an unchanged plan
// compares equal and is not written.
func WithConditions(ip *omv1alpha1.InstallPlan, st omv1alpha1.InstallPlanStatus, now metav1.Time) omv1alpha1.InstallPlanStatus {
	st.Conditions = slices.Clone(ip.Status.Conditions)
	c := metav1.Condition{Type: omv1alpha1.InstallPlanInstalled, Message: st.Message, LastTransitionTime: now}
	switch st.Phase {
	case omv1alpha1.InstallPlanComplete:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonInstallSucceeded
	case omv1alpha1.InstallPlanFailed:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInstallComponentFailed
	default:
		meta.RemoveStatusCondition(&st.Conditions, omv1alpha1.InstallPlanInstalled)
		return st
	}
	meta.SetStatusCondition(&st.Conditions, c)
	return st
}
