package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Option is the original operator-manager's verb: create installs, delete uninstalls and
// keeps the Subscription.
// +kubebuilder:validation:Enum=create;delete
type Option string

const (
	OptionCreate Option = "create"
	OptionDelete Option = "delete"
)

// SubscriptionState is OLM's summary of a Subscription (status.state).
type SubscriptionState string

const (
	SubscriptionStateUpgradePending   SubscriptionState = "UpgradePending"
	SubscriptionStateAtLatest         SubscriptionState = "AtLatestKnown"
	SubscriptionStateUpgradeAvailable SubscriptionState = "UpgradeAvailable"
)

// Approval says whether a version change waits for a person.
// +kubebuilder:validation:Enum=Automatic;Manual
type Approval string

const (
	ApprovalAutomatic Approval = "Automatic"
	ApprovalManual    Approval = "Manual"
)

// SubscriptionSpec is the administrator's intent: which operator, at which version, and how
// its version changes are allowed to happen.
//
// The version is named either the original way, by startingCSV, or by package with an
// optional channel and version (exact or a semver range).
//
// OLM's Subscription fields are accepted too, so an OLM Subscription works with only its
// apiVersion changed: name (the package), source and sourceNamespace (the CatalogSource)
// and installPlanApproval. Each is another name for a field above; where both are set
// they must agree. With name, startingCSV keeps OLM's meaning (see StartingCSV).
// +kubebuilder:validation:XValidation:rule="self.option == 'delete' || has(self.startingCSV) || has(self.__package__) || has(self.name)",message="spec.startingCSV or spec.package is required to install an operator (OLM's spec.name names the package too)"
// +kubebuilder:validation:XValidation:rule="!(has(self.startingCSV) && has(self.version))",message="spec.startingCSV already names a version: set spec.version only together with spec.package"
// +kubebuilder:validation:XValidation:rule="!(has(self.startingCSV) && has(self.channel) && !has(self.__package__) && !has(self.name))",message="spec.channel needs spec.package"
// +kubebuilder:validation:XValidation:rule="!(has(self.__package__) && has(self.name)) || self.__package__ == self.name",message="spec.name is OLM's name for spec.package: set one of them, or both to the same package"
// +kubebuilder:validation:XValidation:rule="!(has(self.catalog) && has(self.source)) || self.catalog == self.source",message="spec.source is OLM's name for spec.catalog: set one of them, or both to the same CatalogSource"
// +kubebuilder:validation:XValidation:rule="!has(self.sourceNamespace) || has(self.source) || has(self.catalog)",message="spec.sourceNamespace needs spec.source (or spec.catalog): the CatalogSource's name"
// +kubebuilder:validation:XValidation:rule="!(has(self.approval) && has(self.installPlanApproval)) || self.approval == self.installPlanApproval",message="spec.installPlanApproval is OLM's name for spec.approval: set one of them, or both to the same value"
type SubscriptionSpec struct {
	// StartingCSV names the version to run as `<package>.<version>` (prometheus.0.22.2),
	// `<package>.v<version>` (etcd.v0.9.4) or the CSV's own name (etcdoperator.v0.9.4).
	// Editing it upgrades or rolls back.
	//
	// In an OLM Subscription (one that names its package by spec.name) it means what OLM
	// means by it: the version the first install takes; from there the channel is followed,
	// one upgrade edge at a time, as for a Subscription with a package and no version.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StartingCSV string `json:"startingCSV,omitempty"`

	// Option is create (install and keep installed) or delete (uninstall, keep this object).
	// +kubebuilder:default=create
	// +optional
	Option Option `json:"option,omitempty"`

	// Package is the catalog package to install, the richer alternative to startingCSV.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Package string `json:"package,omitempty"`

	// Channel is the package channel to follow; empty means the package's default channel.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Channel string `json:"channel,omitempty"`

	// Version is an exact version (1.2.3) or a semver range (">=1.2.0 <2.0.0") that limits how
	// far a channel is followed.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Version string `json:"version,omitempty"`

	// Catalog is the name of a CatalogSource in this namespace; empty means the manager's
	// default catalog.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Catalog string `json:"catalog,omitempty"`

	// Approval Manual makes version changes of the running operator wait in the Blueprint
	// until approved (`operator-manager approve`, or the InstallPlan each one makes); a
	// first install does not wait. Empty means Automatic (or installPlanApproval's value).
	// It has no default written into the object, so that an OLM Subscription's
	// installPlanApproval: Manual is not contradicted.
	// +optional
	Approval Approval `json:"approval,omitempty"`

	// Name is OLM's field for the package: the same as spec.package. With it,
	// spec.startingCSV takes OLM's meaning.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// Source is OLM's field for the CatalogSource's name: the same as spec.catalog.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Source string `json:"source,omitempty"`

	// SourceNamespace is the CatalogSource's namespace, as in OLM: this Subscription's
	// namespace, or the manager's global catalog namespace (--global-catalog-namespace,
	// default the namespace of its default catalog), where catalogs shared by every
	// namespace live. Empty means this Subscription's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	SourceNamespace string `json:"sourceNamespace,omitempty"`

	// InstallPlanApproval is OLM's field for spec.approval, with OLM's meaning: Manual
	// makes every version change wait for approval, the first install included (and the
	// dependencies it brings, which are installed once it is approved).
	// +optional
	InstallPlanApproval Approval `json:"installPlanApproval,omitempty"`

	// UpgradeWindows, when set, are the only times an upgrade may start: each opens on its
	// cron schedule and stays open for its duration. Outside them an upgrade (and the
	// dependencies it brings) waits, with Ready=False OutsideUpgradeWindow saying when the
	// next window opens. A first install, a downgrade or rollback a person asks for, and
	// an automatic rollback never wait; an upgrade started in a window finishes after it
	// closes. Remove the windows to upgrade at once.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	UpgradeWindows []UpgradeWindow `json:"upgradeWindows,omitempty"`

	// Health bounds how long a new version may take to become healthy.
	// +optional
	Health *HealthPolicy `json:"health,omitempty"`

	// Rollback says what happens when a new version fails its health check.
	// +optional
	Rollback *RollbackPolicy `json:"rollback,omitempty"`

	// HistoryLimit is how many revisions the Blueprint remembers (0: unlimited). The current
	// and the last good revision are never pruned.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	HistoryLimit *int32 `json:"historyLimit,omitempty"`

	// TargetNamespaces are the namespaces the operator watches; empty means as its install
	// modes allow (this namespace for OwnNamespace, all namespaces for AllNamespaces).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	TargetNamespaces []string `json:"targetNamespaces,omitempty"`

	// Config overrides parts of the operator's Deployments.
	// +optional
	Config *SubscriptionConfig `json:"config,omitempty"`

	// Paused stops all version changes of this Subscription (and only this one).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Uninstall says what an uninstall removes beyond the operator itself.
	// +optional
	Uninstall *UninstallPolicy `json:"uninstall,omitempty"`
	// ServiceAccountName is a ServiceAccount of this namespace that the manager
	// impersonates for every object the installation creates, changes or deletes (CRDs and
	// RBAC included), so the API server's own permission and escalation rules apply to it,
	// as Flux's serviceAccountName and OLM's OperatorGroup service account do. Empty means
	// the manager's --default-service-account, or the manager itself when that is unset.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// UpgradeWindow is a recurring time in which upgrades may start (a maintenance window).
// +kubebuilder:validation:XValidation:rule="duration(self.duration) > duration('0s')",message="duration: a window must stay open for some time",fieldPath=".duration"
type UpgradeWindow struct {
	// Schedule is when the window opens, a cron expression of five fields (minute, hour,
	// day of month, month, day of week: "0 2 * * 1-5" is 02:00 on weekdays) or a
	// descriptor (@daily, @weekly, @monthly).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`
	// Duration is how long the window stays open once opened ("2h", "30m").
	Duration metav1.Duration `json:"duration"`
	// TimeZone is the IANA time zone the schedule is read in ("Europe/Berlin"); default UTC.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// HealthPolicy bounds the health gate of an install or upgrade.
type HealthPolicy struct {
	// Timeout is how long a new version may take to reach Succeeded, as a Go duration
	// ("40s", "5m"). It is also the deadline of the whole revision. The API server refuses
	// anything else: a value the manager cannot decode would stop it from reading every
	// Subscription.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// RollbackPolicy controls automatic rollback after a failed health gate.
type RollbackPolicy struct {
	// Automatic rolls back to the last good revision when a new version fails; when false,
	// the failed state stays for a person to act on.
	// +kubebuilder:default=true
	// +optional
	Automatic *bool `json:"automatic,omitempty"`

	// Retries is how many more times a failed version is tried before it is given up until
	// the spec changes.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Retries *int32 `json:"retries,omitempty"`
}

// UninstallPolicy is the explicit opt-in to remove more than the operator on uninstall.
type UninstallPolicy struct {
	// DeleteCRDs removes the CRDs the operator owns, and with them every custom resource of
	// those kinds; never while another installation provides them.
	// +optional
	DeleteCRDs bool `json:"deleteCRDs,omitempty"`
}

// SubscriptionConfig overrides the operator's Deployments, as OLM's does.
type SubscriptionConfig struct {
	// Selector limits the overrides to the Deployments whose pod template labels it
	// selects; without it they apply to every Deployment of the operator. OLM accepts
	// this field and ignores it (operator-framework/operator-lifecycle-manager#1794);
	// here it is honoured.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Env is added to (or replaces by name in) every container.
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources replaces every container's resource requirements.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector replaces the pods' node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are added to the pods' tolerations.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// EnvFrom is added to every container's envFrom, as OLM does (a source already there
	// is not repeated).
	// +listType=atomic
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// Volumes are added to the pods' volumes, or replace the bundle's of the same name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// VolumeMounts are added to every container's volume mounts, or replace its mount of
	// the same name.
	// +listType=atomic
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// Affinity replaces each part of the pods' affinity it sets (node affinity, pod
	// affinity, pod anti-affinity), as OLM does; the parts it leaves unset stay the bundle's.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Annotations are added to the Deployments and their pod templates; an annotation the
	// bundle sets is kept, as OLM keeps it.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// SubscriptionStatus says what runs and why.
type SubscriptionStatus struct {
	// ObservedGeneration is the generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Package is the resolved package.
	// +optional
	Package string `json:"package,omitempty"`

	// CurrentCSV is the CSV the Subscription resolves to: the version it wants to run. It
	// differs from installedCSV while a change is under way, after one failed and was
	// rolled back, and while a rollback by hand holds the installation. In an OLM
	// Subscription (spec.name) it has OLM's meaning: the CSV of the newest change, under
	// way, waiting for approval or done, which moves one channel edge at a time.
	// +optional
	CurrentCSV string `json:"currentCSV,omitempty"`

	// InstalledCSV is the CSV that runs now.
	// +optional
	InstalledCSV string `json:"installedCSV,omitempty"`

	// InstalledVersion is the version that runs now.
	// +optional
	InstalledVersion string `json:"installedVersion,omitempty"`

	// CurrentRevision is the Blueprint revision that runs now.
	// +optional
	CurrentRevision int64 `json:"currentRevision,omitempty"`

	// State is OLM's word for where the Subscription stands: UpgradePending while a
	// version change is under way or waits for approval, AtLatestKnown once the CSV it
	// resolves to runs, UpgradeAvailable when it resolves to another CSV than the one that
	// runs and nothing is under way (the change failed, was rolled back, or is held).
	// +optional
	State SubscriptionState `json:"state,omitempty"`

	// InstallPlanRef names the InstallPlan of the newest version change that waited for
	// approval (a Manual Subscription's), as OLM's does.
	// +optional
	InstallPlanRef *corev1.ObjectReference `json:"installPlanRef,omitempty"`

	// Opstatus is the original operator-manager's one-word status, kept for old scripts.
	// +optional
	Opstatus string `json:"opstatus,omitempty"`

	// Conditions: Resolved, Installed, Healthy, UpgradePending, RolledBack and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subscription declares "I want operator P at version V".
//
// Its name is at most 63 characters, as a Job's is, and for the same reason: it is the
// value of the label that ties the Blueprint, the CSVs and their objects to it. OLM takes
// longer names; here one is refused when it is made, rather than never installing.
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name: a Subscription's name is at most 63 characters, since it labels the Blueprint, CSVs and objects it installs"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sub;subs,categories=operator-manager
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.status.package`
// +kubebuilder:printcolumn:name="Wanted",type=string,JSONPath=`.status.currentCSV`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Option",type=string,JSONPath=`.spec.option`,priority=1
// +kubebuilder:printcolumn:name="Channel",type=string,JSONPath=`.spec.channel`,priority=1
// +kubebuilder:printcolumn:name="Catalog",type=string,JSONPath=`.spec.catalog`,priority=1
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.currentRevision`,priority=1
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Subscription struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SubscriptionSpec   `json:"spec,omitempty"`
	Status SubscriptionStatus `json:"status,omitempty"`
}

// SubscriptionList is a list of Subscriptions.
// +kubebuilder:object:root=true
type SubscriptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Subscription `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Subscription{}, &SubscriptionList{})
}
