package crdsafety

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrStorageSwitched says Migrate switched the live CRD's storage version and stopped
// there: call Preflight again once the new version is served (it then plans the rest).
var ErrStorageSwitched = errors.New("storage version switched; the migration continues once it is served")

// NotServedError is a version of a live CRD the API server does not serve yet (a CRD
// changed a moment ago): wait and look again.
type NotServedError struct {
	CRD, Version string
	Err          error
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("CRD %s version %s is not served yet: %v", e.CRD, e.Version, e.Err)
}

func (e *NotServedError) Unwrap() error { return e.Err }

// maxListRestarts bounds how often a migration lists its custom resources from the start
// again when a continue token expires (etcd compacted under a long walk).
const maxListRestarts = 3

// StepError is a step of a storage version migration the API server refused: the verb,
// the resource and, for one custom resource, its "namespace/name".
type StepError struct {
	Verb     string
	Resource string
	Object   string
	Err      error
}

func (e *StepError) Error() string {
	if e.Object != "" {
		return fmt.Sprintf("%s %s %s: %v", e.Verb, e.Resource, e.Object, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Verb, e.Resource, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Migrate carries out m on the cluster, as kube-storage-version-migrator does: every
// custom resource of the CRD is listed at the live storage version (page by page) and
// updated unchanged, with its resourceVersion, so the API server writes it again encoded
// in the storage version; then the dropped versions are removed from the live CRD's
// status.storedVersions, with live's resourceVersion as precondition (a CRD changed in
// between is a Conflict, returned). c and dyn act as the installing identity. A custom
// resource someone else rewrote (Conflict) or deleted (NotFound) meanwhile counts as
// migrated: any write since the storage version became current was encoded in it. It
// returns how many custom resources it rewrote; any other refusal stops it, as a
// *StepError. Once done, live carries the resourceVersion and status written.
func Migrate(ctx context.Context, c client.Client, dyn dynamic.Interface, live *apiextensionsv1.CustomResourceDefinition, m *Migration) (int, error) {
	if m.SwitchFrom != "" {
		// The storage version moves first (Preflight found no custom resource): from here
		// on the API server writes in the new one. Anything written at the old one in
		// between is rewritten below.
		switched := m.Intermediate(live)
		if err := c.Update(ctx, switched); err != nil {
			return 0, &StepError{Verb: "update", Resource: "customresourcedefinitions", Object: live.Name, Err: err}
		}
		// The API server serves the new storage version a moment later; the rewrite and
		// the removal of the old version follow in a later pass, as an ordinary migration.
		return 0, ErrStorageSwitched
	}
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: m.StorageVersion, Resource: live.Spec.Names.Plural}
	resource := gvr.Resource + "." + gvr.Group
	rewritten, restarts := 0, 0
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := dyn.Resource(gvr).List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" && restarts < maxListRestarts {
			restarts++
			opts.Continue = "" // rewriting an object twice writes nothing the second time
			continue
		}
		if err != nil {
			return rewritten, &StepError{Verb: "list", Resource: resource, Err: err}
		}
		for i := range list.Items {
			o := &list.Items[i]
			var ri dynamic.ResourceInterface = dyn.Resource(gvr)
			name := o.GetName()
			if ns := o.GetNamespace(); ns != "" {
				ri, name = dyn.Resource(gvr).Namespace(ns), ns+"/"+name
			}
			_, err := ri.Update(ctx, o, metav1.UpdateOptions{})
			switch {
			case err == nil:
				rewritten++
			case apierrors.IsConflict(err), apierrors.IsNotFound(err):
				// rewritten or deleted by someone else since the list: nothing left in a dropped version
			default:
				return rewritten, &StepError{Verb: "update", Resource: resource, Object: name, Err: err}
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	updated := live.DeepCopy() // with live's resourceVersion: the update's precondition
	updated.Status.StoredVersions = m.StoredVersions
	if err := c.Status().Update(ctx, updated); err != nil {
		return rewritten, &StepError{Verb: "update", Resource: "customresourcedefinitions/status", Object: live.Name, Err: err}
	}
	// live is now the CRD as written: a caller applying the new CRD on top of it, with
	// live's resourceVersion as the precondition, does so without a needless conflict.
	live.ResourceVersion, live.Status = updated.ResourceVersion, updated.Status
	return rewritten, nil
}
