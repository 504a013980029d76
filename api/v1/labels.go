package v1

// Labels, annotations and finalizers operator-manager sets on the objects it manages.
// They are part of the API: scripts may select by them.
const (
	// DesiredPhaseActive and DesiredPhaseReplacing are the values of AnnotationDesiredPhase.
	DesiredPhaseActive    = "Active"
	DesiredPhaseReplacing = "Replacing"
	// LabelSubscription names the Subscription a Blueprint or CSV belongs to.
	LabelSubscription = "operator-manager.domain/subscription"
	// LabelPackage names the package of a Blueprint or CSV.
	LabelPackage = "operator-manager.domain/package"

	// AnnotationBundleDigest on a CSV is the digest of the bundle it came from, the key of
	// the local bundle cache.
	AnnotationBundleDigest = "operator-manager.domain/bundle-digest"
	// AnnotationHealthTimeout on a CSV bounds how long it may take to become Succeeded.
	AnnotationHealthTimeout = "operator-manager.domain/health-timeout"
	// AnnotationCRDRepairs on a CSV lists, as JSON, what was changed in its CRDs.
	AnnotationCRDRepairs = "operator-manager.domain/crd-repairs"

	// AnnotationSubscriptionGeneration on a Blueprint is the Subscription generation its
	// target was last written for: the Subscription controller changes the target only
	// for a newer generation, so a person's edit of the Blueprint stands.
	AnnotationSubscriptionGeneration = "operator-manager.domain/subscription-generation"

	// AnnotationSubscriptionIntent on a Blueprint is the Subscription's VersionIntent when
	// it last wrote the Blueprint: a newer generation that asks for the same version (a
	// pause, a config edit) records itself without moving a target a person chose.
	AnnotationSubscriptionIntent = "operator-manager.domain/subscription-intent"

	// AnnotationImportedHistory on a Blueprint that `operator-manager import` made is the
	// JSON list of the revisions the installation retained on the cluster it was exported
	// from (each Imported, its bundle stored here): the Blueprint controller starts the
	// Blueprint's history with them, so `history` and `rollback --to-revision` reach them
	// on this cluster too. Read once, while the history is empty.
	AnnotationImportedHistory = "operator-manager.domain/imported-history"

	// AnnotationInstallShape on a Blueprint is a digest of how its Subscription asks the
	// operator to be installed (config, target namespaces, ServiceAccount, health): a
	// person changing it after the change ended Failed is mending it, and the change is
	// tried again.
	AnnotationInstallShape = "operator-manager.domain/install-shape"

	// AnnotationRevision on a CSV is the Blueprint revision it is asked to carry out; the
	// CSV controller restarts the health gate when it changes. The Blueprint controller
	// writes it, the CSV controller alone writes the CSV's status.
	AnnotationRevision = "operator-manager.domain/revision"
	// AnnotationDesiredPhase on a CSV is "Active" or "Replacing": the Blueprint asks an
	// older CSV to stop applying its objects while a newer one takes over.
	AnnotationDesiredPhase = "operator-manager.domain/desired-phase"
	// AnnotationServiceAccount on a CSV names the ServiceAccount (of the CSV's namespace)
	// the manager impersonates to install it; absent means the manager itself.
	AnnotationServiceAccount = "operator-manager.domain/service-account"
	// AnnotationCRDHash on a CRD is the digest of the definition operator-manager last
	// applied, so an unchanged CRD is not applied again.
	AnnotationCRDHash = "operator-manager.domain/crd-hash"
	// AnnotationProviderPrefix starts the annotation with which each installation that
	// provides a CRD records itself on it, valued "<namespace>/<subscription> <csv>": a
	// CRD is shared by every installation whose bundle owns it (internal/controller/blueprint
	// ProviderKey names the key).
	AnnotationProviderPrefix = "provided-by.operator-manager.domain/"
	// Finalizer makes deletion wait for the manager's cleanup, even when the manager was
	// down when the object was deleted.
	Finalizer = "operator-manager.domain/cleanup"
)
