package v1

// Condition types shared by the kinds of this group. Ready summarises the others and is
// derived in one place by each controller, never set ad hoc.
const (
	ConditionReady          = "Ready"
	ConditionResolved       = "Resolved"
	ConditionInstalled      = "Installed"
	ConditionHealthy        = "Healthy"
	ConditionProgressing    = "Progressing"
	ConditionUpgradePending = "UpgradePending"
	ConditionRolledBack     = "RolledBack"
	ConditionBlocked        = "Blocked"
)

// Condition reasons: CamelCase words a person can act on; the message says the details.
const (
	ReasonSucceeded          = "Succeeded"
	ReasonInstalling         = "Installing"
	ReasonUpgrading          = "Upgrading"
	ReasonPackageNotFound    = "PackageNotFound"
	ReasonVersionNotFound    = "VersionNotFound"
	ReasonCatalogNotReady    = "CatalogNotReady"
	ReasonUnsatisfiable      = "Unsatisfiable"
	ReasonHealthCheckFailed  = "HealthCheckFailed"
	ReasonRolledBack         = "RolledBack"
	ReasonWaitingForApproval = "WaitingForApproval"
	ReasonCRDPreflightFailed = "CRDPreflightFailed"
	ReasonUninstalled        = "Uninstalled"
	ReasonUninstalling       = "Uninstalling"
	ReasonPaused             = "Paused"
	ReasonLoaded             = "Loaded"
	ReasonLoadFailed         = "LoadFailed"
)
