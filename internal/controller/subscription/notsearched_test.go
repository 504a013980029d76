package subscription

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// TestNotSearched: an unsatisfiable dependency names the namespace's catalogs that could
// not be searched, by their Ready reason (stable from one load attempt to the next);
// other outcomes are left as they are.
func TestNotSearched(t *testing.T) {
	failed := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "more"}}
	failed.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "LoadFailed", Message: "attempt 7: no such directory"}}
	loading := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}
	unread := []string{unreadCatalog(failed), unreadCatalog(loading)}
	unsat := &resolve.Error{Reason: resolve.ReasonUnsatisfiable, Message: "backup needs cache-operator >=5.0.0"}

	var re *resolve.Error
	if err := notSearched(unsat, unread); !errors.As(err, &re) || re.Reason != resolve.ReasonUnsatisfiable ||
		re.Message != "backup needs cache-operator >=5.0.0; not searched, since not loaded: CatalogSource ns/more (not loaded: LoadFailed), CatalogSource ns/new (not loaded yet)" {
		t.Errorf("unsatisfiable with catalogs unread: %v", err)
	}
	if err := notSearched(unsat, nil); err != unsat {
		t.Errorf("every catalog read: %v, want the resolution's own words", err)
	}
	other := &resolve.Error{Reason: resolve.ReasonPackageNotFound, Message: "no package"}
	if err := notSearched(other, unread); err != other {
		t.Errorf("not a dependency's failure: %v, want it as it is", err)
	}
	if err := notSearched(nil, unread); err != nil {
		t.Errorf("resolved: %v", err)
	}
}
