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

	// OLM's deprecation conditions of a Subscription, present (True) only while its
	// catalog deprecates what it installs: the package, its channel, or the version it
	// runs (a File-Based Catalog's olm.deprecations). Deprecated sums the three up.
	ConditionDeprecated        = "Deprecated"
	ConditionPackageDeprecated = "PackageDeprecated"
	ConditionChannelDeprecated = "ChannelDeprecated"
	ConditionBundleDeprecated  = "BundleDeprecated"
)

// Condition reasons: CamelCase words a person can act on; the message says the details.
const (
	ReasonSucceeded       = "Succeeded"
	ReasonInstalling      = "Installing"
	ReasonUpgrading       = "Upgrading"
	ReasonPackageNotFound = "PackageNotFound"
	ReasonVersionNotFound = "VersionNotFound"
	ReasonCatalogNotReady = "CatalogNotReady"
	// ReasonCatalogNotAllowed: spec.sourceNamespace names a namespace that is neither the
	// Subscription's own nor the global catalog namespace.
	ReasonCatalogNotAllowed = "CatalogNotAllowed"
	// ReasonTooManyOperatorGroups: the namespace has more than one OperatorGroup, so what
	// its Subscriptions' operators watch is ambiguous (OLM's word).
	ReasonTooManyOperatorGroups = "TooManyOperatorGroups"
	// ReasonNoTargetNamespaces: the namespace's OperatorGroup selects its target
	// namespaces by label (spec.selector) and selects none.
	ReasonNoTargetNamespaces = "NoTargetNamespaces"
	ReasonUnsatisfiable      = "Unsatisfiable"
	ReasonHealthCheckFailed  = "HealthCheckFailed"
	ReasonRolledBack         = "RolledBack"
	ReasonWaitingForApproval = "WaitingForApproval"
	// ReasonOperatorNotUpgradeable: the running operator's OperatorCondition says
	// Upgradeable=False; the message carries its reason and message.
	ReasonOperatorNotUpgradeable = "OperatorNotUpgradeable"
	// ReasonOutsideUpgradeWindow: the Subscription's upgrade windows are all closed; the
	// message says when the next opens.
	ReasonOutsideUpgradeWindow = "OutsideUpgradeWindow"
	// ReasonInvalidUpgradeWindow: an upgrade window cannot be read (a bad schedule, an
	// unknown time zone); upgrades wait until it is mended, and the message names the field.
	ReasonInvalidUpgradeWindow = "InvalidUpgradeWindow"
	// ReasonCRDPreflightFailed: the CRD preflight found the change unsafe for the custom
	// resources (a stored version dropped, one made invalid); nothing was changed, and it
	// is checked again until it is safe.
	ReasonCRDPreflightFailed = "CRDPreflightFailed"
	// ReasonCRDMigrationFailed: the API server refused the storage version migration a
	// CRD needs before the change; it waits for a person (retry, once mended).
	ReasonCRDMigrationFailed = "CRDMigrationFailed"
	ReasonUninstalled        = "Uninstalled"
	ReasonUninstalling       = "Uninstalling"
	ReasonPaused             = "Paused"
	ReasonLoaded             = "Loaded"
	ReasonLoadFailed         = "LoadFailed"
	// ReasonInsufficientPermissions: the installing identity (the Subscription's
	// ServiceAccount, or the manager) may not do something the installation needs; the
	// message names the verb, resource and namespace.
	ReasonInsufficientPermissions = "InsufficientPermissions"
	// ReasonDeadlineExceeded: a revision did not reach an outcome within its deadline.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonInstallFailed: the API server refused an object of the installation for good
	// (invalid, immutable field, unknown kind).
	ReasonInstallFailed = "InstallFailed"
	// ReasonComponentUnhealthy: a version that passed its health gate is unhealthy now.
	ReasonComponentUnhealthy = "ComponentUnhealthy"
	// ReasonHeldAfterRollback: a channel-following Subscription stays at a version a
	// person rolled back to.
	ReasonHeldAfterRollback = "HeldAfterManualRollback"
	// ReasonPointedByHand: a Subscription that names its version (startingCSV, an exact
	// version or a range it does not follow) runs another one a person pointed its
	// Blueprint at (a rollback by hand), until it asks for another version (package,
	// channel, version, startingCSV or catalog: VersionIntent).
	ReasonPointedByHand = "PointedByHand"
	// ReasonChangeWithdrawn (an event): a version change that waited (for approval, an
	// upgrade window, the operator's consent) and never started is withdrawn, since the
	// Subscription asks again for the version that runs: no revision is opened.
	ReasonChangeWithdrawn = "ChangeWithdrawn"
	// ReasonHeldForDependents: a channel-following Subscription stays at the version it
	// runs: the channel's next version would take from installations that depend on it
	// what they need (an olm.package range, an API). It moves on once they accept it.
	ReasonHeldForDependents = "HeldForDependents"
	// ReasonContentChangedInCatalog: the catalog serves the running version with other
	// content than the one installed (republished under the same name). What runs stays:
	// a version's content is fixed once it runs.
	ReasonContentChangedInCatalog = "ContentChangedInCatalog"
	// ReasonPackageChanged: the Subscription's spec now names another package than the
	// one its installation is of. Nothing is changed: another operator is another
	// installation (uninstall this one, or give it its own Subscription).
	ReasonPackageChanged = "PackageChanged"
	// ReasonNotInCatalog: the version the Subscription asks for runs, and its catalog no
	// longer offers it (pulled, or the package removed). It keeps running from its stored
	// bundle: Resolved stays True, since nothing is to be done for what is asked.
	ReasonNotInCatalog = "NotInCatalog"
	// ReasonCatalogUnavailable: the version the Subscription asks for runs, and its
	// catalog cannot be read (its CatalogSource deleted, or failing to load): it stays
	// Resolved, and version changes wait for the catalog.
	ReasonCatalogUnavailable = "CatalogUnavailable"
	// ReasonRefusedByAPIServer: the API server refused a write the installation needs (a
	// ResourceQuota, an admission policy or webhook, a validation rule, the manager's own
	// rights). The message names the object and the refusal; the write is tried again
	// every 30 s, so mending the cause is all a person does.
	ReasonRefusedByAPIServer = "RefusedByAPIServer"
	// ReasonReconcileError: the manager's reconcile of the object fails with an error it
	// retries with backoff that is no momentary failure on the way (refusal.Momentary): a
	// read or write the manager may not do, a webhook that fails, a fault in the object
	// the API server let through. The message is the error; one that stays is a fault to
	// mend or a bug to report.
	ReasonReconcileError = "ReconcileError"
)
