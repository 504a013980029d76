package v1

// Labels, annotations and finalizers operator-manager sets on the objects it manages.
// They are part of the API: scripts may select by them.
const (
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

	// Finalizer makes deletion wait for the manager's cleanup, even when the manager was
	// down when the object was deleted.
	Finalizer = "operator-manager.domain/cleanup"
)
