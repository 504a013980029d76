package subscription

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// catalogWait is what a Subscription shows while this process holds no loaded catalog of
// the name it names. Its CatalogSource decides which of four it is: a missing
// CatalogSource and a failed load are failures a person must act on; a load under way
// (the manager just started, or the CatalogSource is new) is only a wait, the ordinary
// state for the first seconds of `make run`, and is not a failure to warn about; and a
// CatalogSource loaded by another process (this one restarted, or just became leader)
// is not even news: the Subscription is left as it is until this process has loaded it.
type catalogWait struct {
	// quiet: loaded and ready, only not in this process yet. Nothing to report.
	quiet bool
	// loading: a load is under way; a wait, not a failure.
	loading bool
	// message is the Resolved condition's message (not for quiet).
	message string
}

// opstatusWaitingForCatalog is the Subscription's status while its catalog loads.
const opstatusWaitingForCatalog = "waiting for catalog"

// judgeCatalog decides a catalogWait from the CatalogSource (nil: it does not exist) of
// the Subscription's catalog key, which the field namedBy names ("spec.catalog",
// "spec.source"; "" for the manager's default catalog).
func judgeCatalog(key types.NamespacedName, namedBy string, cs *omv1.CatalogSource) catalogWait {
	if cs == nil && namedBy == "" {
		return catalogWait{message: fmt.Sprintf("CatalogSource %s, the default catalog, does not exist: a manager started with --catalog creates it (again, once deleted) within moments; or name another CatalogSource in spec.catalog", key)}
	}
	if cs == nil {
		return catalogWait{message: fmt.Sprintf("CatalogSource %s does not exist (%s names a CatalogSource of namespace %s)", key, namedBy, key.Namespace)}
	}
	c := meta.FindStatusCondition(cs.Status.Conditions, omv1.ConditionReady)
	current := c != nil && c.ObservedGeneration == cs.Generation && cs.Status.ObservedGeneration == cs.Generation
	switch {
	case current && c.Status == metav1.ConditionTrue:
		return catalogWait{quiet: true}
	case current && c.Status == metav1.ConditionFalse && c.Reason == omv1.ReasonLoadFailed:
		return catalogWait{message: fmt.Sprintf("catalog %s is not loaded: its CatalogSource failed to load it: %s", key, c.Message)}
	default:
		return catalogWait{loading: true,
			message: fmt.Sprintf("catalog %s is not loaded yet: its CatalogSource is loading it (see `kubectl get catalogsource -n %s %s`)", key, key.Namespace, key.Name)}
	}
}
