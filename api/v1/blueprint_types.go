package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BlueprintPhase is where a Blueprint's version change stands.
// +kubebuilder:validation:Enum=Pending;WaitingForApproval;UpgradeHeld;Installing;Upgrading;Succeeded;Failed;RollingBack;RolledBack;Blocked;Deleting
type BlueprintPhase string

const (
	BlueprintPending            BlueprintPhase = "Pending"
	BlueprintWaitingForApproval BlueprintPhase = "WaitingForApproval"
	// BlueprintUpgradeHeld: the running operator says it may not be upgraded now (its
	// OperatorCondition Upgradeable=False); the upgrade starts when that turns True.
	BlueprintUpgradeHeld BlueprintPhase = "UpgradeHeld"
	BlueprintInstalling  BlueprintPhase = "Installing"
	BlueprintUpgrading   BlueprintPhase = "Upgrading"
	BlueprintSucceeded   BlueprintPhase = "Succeeded"
	BlueprintFailed      BlueprintPhase = "Failed"
	BlueprintRollingBack BlueprintPhase = "RollingBack"
	BlueprintRolledBack  BlueprintPhase = "RolledBack"
	// BlueprintBlocked means the CRD preflight refused the change and nothing was changed.
	BlueprintBlocked  BlueprintPhase = "Blocked"
	BlueprintDeleting BlueprintPhase = "Deleting"
)

// RevisionOutcome is how one revision ended.
// +kubebuilder:validation:Enum=Pending;Succeeded;Failed;RolledBack;Superseded;Blocked
type RevisionOutcome string

const (
	OutcomePending    RevisionOutcome = "Pending"
	OutcomeSucceeded  RevisionOutcome = "Succeeded"
	OutcomeFailed     RevisionOutcome = "Failed"
	OutcomeRolledBack RevisionOutcome = "RolledBack"
	OutcomeSuperseded RevisionOutcome = "Superseded"
	OutcomeBlocked    RevisionOutcome = "Blocked"
)

// BlueprintSpec is the plan of one Subscription: the CSV that should run and where it
// comes from. The Subscription controller writes it; a person may edit
// clusterServiceVersionName to roll back, as in the original operator-manager.
type BlueprintSpec struct {
	// ClusterServiceVersionName is the CSV that should run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClusterServiceVersionName string `json:"clusterServiceVersionName"`

	// OldVersion is the CSV this one replaces.
	// +optional
	OldVersion string `json:"oldVersion,omitempty"`

	// Generation is bumped on each version change.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Generation int64 `json:"generation,omitempty"`

	// Package is the catalog package of the CSV.
	// +optional
	Package string `json:"package,omitempty"`

	// Version is the semantic version of the CSV.
	// +optional
	Version string `json:"version,omitempty"`

	// Catalog is the CatalogSource the bundle came from.
	// +optional
	Catalog string `json:"catalog,omitempty"`

	// BundleDigest is the content digest of the bundle, the key of the local bundle cache.
	// +optional
	BundleDigest string `json:"bundleDigest,omitempty"`

	// Approved lets a pending version change of a Manual Subscription proceed.
	// +optional
	Approved bool `json:"approved,omitempty"`

	// Dependencies are the operators this one needs, as resolved.
	// +listType=map
	// +listMapKey=package
	// +optional
	Dependencies []ResolvedDependency `json:"dependencies,omitempty"`
}

// ResolvedDependency is one operator installed because another needs it.
type ResolvedDependency struct {
	// Package is the dependency's package.
	Package string `json:"package"`
	// Version is the chosen version.
	// +optional
	Version string `json:"version,omitempty"`
	// CSVName is the chosen CSV.
	// +optional
	CSVName string `json:"csvName,omitempty"`
	// Catalog is the CatalogSource it comes from.
	// +optional
	Catalog string `json:"catalog,omitempty"`
	// BundleDigest is the content digest of its bundle.
	// +optional
	BundleDigest string `json:"bundleDigest,omitempty"`
	// Reason says which constraint chose it, for example `requires kind PoisonPillRemediation`.
	// +optional
	Reason string `json:"reason,omitempty"`
	// ServedFrom is the Subscription ("namespace/name") of the installation in another
	// namespace that meets it, watching this namespace too; its uninstall is refused
	// while this Blueprint lists it.
	// +optional
	ServedFrom string `json:"servedFrom,omitempty"`
}

// SubscriptionName is the Subscription the Blueprint belongs to: the one its label
// names, else the one of its own name (a Blueprint made by hand, without the label).
func (bp *Blueprint) SubscriptionName() string {
	if name := bp.Labels[LabelSubscription]; name != "" {
		return name
	}
	return bp.Name
}

// DependsOn says whether the Blueprint records the installation of Subscription
// namespace/name, which runs package pkg, as one of its dependencies: by package when the
// Blueprint is of the same namespace (and no other namespace's installation met it), by
// ServedFrom otherwise. Its uninstall is refused while one does.
func (bp *Blueprint) DependsOn(namespace, name, pkg string) bool {
	for _, d := range bp.Spec.Dependencies {
		switch {
		case d.ServedFrom == namespace+"/"+name:
			return true
		case bp.Namespace == namespace && d.ServedFrom == "" && pkg != "" && d.Package == pkg:
			return true
		}
	}
	return false
}

// Changing says whether the installation is on its way from the version that runs to its
// spec's: a first install, a revision to it under way or waiting (for approval, an upgrade
// window or the operator), or a new spec not yet acted on. A change that settled without
// taking (Failed, RolledBack, Blocked) or is being rolled back leaves what runs as what
// counts.
func (bp *Blueprint) Changing() bool {
	if bp.Spec.ClusterServiceVersionName == "" || bp.Spec.ClusterServiceVersionName == bp.Status.CurrentCSV || !bp.DeletionTimestamp.IsZero() {
		return false
	}
	if bp.Status.CurrentCSV == "" || bp.Status.ObservedGeneration < bp.Generation {
		return true
	}
	switch bp.Status.Phase {
	case BlueprintPending, BlueprintInstalling, BlueprintUpgrading, BlueprintWaitingForApproval, BlueprintUpgradeHeld:
		return true
	}
	return false
}

// Heading is the version the installation counts as for the operators resolved against
// it: its spec's while it is Changing (from is then what runs, "" on a first install),
// else what runs.
func (bp *Blueprint) Heading() (csv, version, from string) {
	if bp.Changing() {
		return bp.Spec.ClusterServiceVersionName, bp.Spec.Version, bp.Status.CurrentCSV
	}
	return bp.Status.CurrentCSV, bp.Status.CurrentVersion, ""
}

// Trigger says why a revision was started.
// +kubebuilder:validation:Enum=Install;Upgrade;Downgrade;Retry;Rollback
type Trigger string

const (
	TriggerInstall Trigger = "Install"
	TriggerUpgrade Trigger = "Upgrade"
	// TriggerDowngrade is a spec change to an older version, or back to the version
	// still running after a newer one failed: a manual rollback.
	TriggerDowngrade Trigger = "Downgrade"
	TriggerRetry     Trigger = "Retry"
	TriggerRollback  Trigger = "Rollback"
)

// Revision is one remembered version of a Blueprint, as in `helm history`.
type Revision struct {
	// Revision counts up from 1.
	Revision int64 `json:"revision"`
	// Trigger says why it started: a first install, a spec change to a newer or an older
	// version (a manual rollback, as is a return to the version a failed upgrade left
	// running), a retry after a failed health check, or an automatic rollback.
	// +optional
	Trigger Trigger `json:"trigger,omitempty"`
	// Generation is the Blueprint's spec.generation (the count of version changes asked
	// for) the revision carries out. A revision opens only when the target CSV or this
	// count changes, so an edit of anything else (approval, dependencies) never retries a
	// version that failed.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// FromVersion is the version that ran when the revision opened, if any.
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// CSVName is the CSV of this revision.
	CSVName string `json:"csvName"`
	// Version is its semantic version.
	// +optional
	Version string `json:"version,omitempty"`
	// BundleDigest is the cache key of its bundle.
	// +optional
	BundleDigest string `json:"bundleDigest,omitempty"`
	// InstallPlan names the InstallPlan whose approval the revision waited for (a Manual
	// Subscription's version change), if any.
	// +optional
	InstallPlan string `json:"installPlan,omitempty"`
	// StartTime is when the revision began to roll out.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime is when it reached its outcome.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Outcome is how it ended.
	// +optional
	Outcome RevisionOutcome `json:"outcome,omitempty"`
	// Reason is a CamelCase word for the outcome.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says why, for a person.
	// +optional
	Message string `json:"message,omitempty"`
	// Imported marks a revision that ran on another cluster and came with an export
	// archive (`operator-manager import`): its bundle is stored here, so a rollback by hand
	// may return to it, but it never ran on this cluster, so it is no automatic rollback
	// target and counts for no plan of this Blueprint's own changes.
	// +optional
	Imported bool `json:"imported,omitempty"`
}

// BlueprintStatus is where the plan stands, and its memory.
type BlueprintStatus struct {
	// ObservedGeneration is the generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is where the current version change stands.
	// +optional
	Phase BlueprintPhase `json:"phase,omitempty"`

	// CurrentCSV is the CSV that runs now.
	// +optional
	CurrentCSV string `json:"currentCSV,omitempty"`

	// CurrentVersion is the version that runs now.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// LastGoodRevision is the newest revision that reached Succeeded, the rollback target.
	// +optional
	LastGoodRevision int64 `json:"lastGoodRevision,omitempty"`

	// History is the remembered revisions, oldest first.
	// +listType=map
	// +listMapKey=revision
	// +optional
	History []Revision `json:"history,omitempty"`

	// Conditions: Progressing, Healthy, UpgradePending, RolledBack, Blocked and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Blueprint is the plan and the memory of one Subscription (same name, owned by it).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bp,categories=operator-manager
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.package`
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Old",type=string,JSONPath=`.spec.oldVersion`,priority=1
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.clusterServiceVersionName`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.spec.generation`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Blueprint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BlueprintSpec   `json:"spec,omitempty"`
	Status BlueprintStatus `json:"status,omitempty"`
}

// BlueprintList is a list of Blueprints.
// +kubebuilder:object:root=true
type BlueprintList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Blueprint `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Blueprint{}, &BlueprintList{})
}
