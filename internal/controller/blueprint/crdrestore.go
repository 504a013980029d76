package blueprint

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// ReasonCRDRecreated: a CRD the running version owns was deleted (by hand) while its
// Subscription still asks for the operator, so it was created again from the revision
// that installed it. Its custom resources went with it and are not brought back.
const ReasonCRDRecreated = "CRDRecreated"

// ReasonCRDMissing: a CRD the running version owns is gone and cannot be created again.
const ReasonCRDMissing = "CRDMissing"

// missingCRDs lists the CRDs the running CSV owns that the cluster no longer has, and
// those it has that lack this installation's provider record (key, value). Only with CRDs
// watched: the cache says a CRD is there, and with which records, at no cost, and only
// one it does not hold is read to confirm it is gone (a CRD created a moment ago may not
// be cached yet). A record goes with its CRD: when a CRD deleted by hand is made again by
// another installation of the package before this one notices, this one never restores
// it, and its record would stay gone (found in CI: TestSideBySideCreatedAtOnce).
func (r *Reconciler) missingCRDs(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, key, value string) (missing, unrecorded []string, err error) {
	if !r.CRDs.Watched() {
		return nil, nil, nil
	}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		if slices.Contains(missing, d.Name) || slices.Contains(unrecorded, d.Name) {
			continue
		}
		if cached, ok := r.CRDs.Cached(d.Name); ok {
			if cached.Annotations[key] != value {
				unrecorded = append(unrecorded, d.Name)
			}
			continue
		}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: d.Name}, &apiextensionsv1.CustomResourceDefinition{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, d.Name)
		case err != nil:
			return nil, nil, err
		}
	}
	return missing, unrecorded, nil
}

// recordOn puts this installation's provider record back on CRDs that lack it (a merge
// patch of its own key: no other installation's record is touched).
func (r *Reconciler) recordOn(ctx context.Context, s *scope, crds []string, key, value string) {
	cl, err := r.Identities.For(s.id)
	if err != nil {
		return
	}
	for _, name := range crds {
		r.recordProvider(ctx, s.bp, cl, name, key, value, s.bp.Status.CurrentCSV)
	}
}

// restoreCRDs creates again the CRDs of the version that runs that were deleted while the
// Blueprint is settled and its Subscription still asks for the operator: an operator
// without its CRD fails every watch, and a CRD is the installation's as much as its
// Deployment is (drift is repaired). Each is the running revision's CRD, as that revision
// applied it, applied as the installing identity; nothing else is touched. Nothing can be
// in the way (no custom resource outlives its CRD), so no preflight runs. It returns what
// it created, or why it could not.
func (r *Reconciler) restoreCRDs(ctx context.Context, s *scope, missing []string) ([]string, string, error) {
	bp := s.bp
	rev := runningRevision(bp)
	if rev == nil {
		return nil, "the revision that installed " + bp.Status.CurrentCSV + " is no longer in the history", nil
	}
	if s.sub == nil || !s.sub.DeletionTimestamp.IsZero() || s.sub.Spec.Option == omv1.OptionDelete {
		return nil, "", nil
	}
	content, why, err := r.revisionContent(ctx, bp, rev)
	if content == nil {
		return nil, why, err
	}
	cl, err := r.Identities.For(s.id)
	if err != nil {
		return nil, "", err
	}
	// Held from the read below to the write: another installation of the package, side by
	// side, restores the same CRD at once (crdLocks).
	defer r.crdLocks.lock(missing)()
	key, value := ProviderKey(bp.Namespace, bp.Name), providerValue(bp, rev.CSVName)
	var made []string
	for _, u := range content.CRDs {
		if !slices.Contains(missing, u.GetName()) {
			continue
		}
		crd, _, err := r.contents.repair(rev.BundleDigest, u)
		if err != nil {
			return made, fmt.Sprintf("CRD %s of %s: %v", u.GetName(), rev.CSVName, err), nil
		}
		hash, err := crdHash(crd, bp.Spec.Package, rev.Version)
		if err != nil {
			return made, "", err
		}
		annotate(crd, bp.Spec.Package, rev.Version, hash)
		// Another installation of the package (side by side) may have made it again a
		// moment ago: at a version no older than this one's, it stands; at an older one,
		// this version's replaces it, as an install's plan would (an older version's CRD
		// never stands over a newer one's), from this read, as a precondition.
		live := &apiextensionsv1.CustomResourceDefinition{}
		switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live); {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return made, "", err
		case live.Annotations[AnnotationCRDPackage] != bp.Spec.Package || !older(live.Annotations[AnnotationCRDVersion], rev.Version):
			// It stands; this installation's provider record goes on it, as an install's
			// would (the one that made it carried only its own).
			if live.Annotations[key] != value {
				r.recordProvider(ctx, bp, cl, crd.Name, key, value, rev.CSVName)
			}
			continue
		}
		carryProviders(crd, live, key, value)
		if live == nil {
			crd.ResourceVersion = ""
			err = cl.Create(ctx, crd, client.FieldOwner(config.FieldOwner))
		} else {
			_, err = kubeapply.ApplyIfUnchanged(ctx, cl, crd)
		}
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			// Made or changed by someone else since the read: the next pass reads again.
			statuswrite.RequeueWithin(&s.result, time.Second)
			continue
		}
		if err != nil {
			if refusal := kubeapply.Classify(err); refusal.Reason == omv1.ReasonInsufficientPermissions {
				return made, fmt.Sprintf("%s may not create CRD %s again: %v", s.id, crd.Name, err), nil
			} else if refusal.Permanent {
				return made, fmt.Sprintf("the API server refused CRD %s: %v", crd.Name, err), nil
			}
			return made, "", err
		}
		r.CRDs.Forget(crd.Name)
		made = append(made, crd.Name)
	}
	if len(made) > 0 {
		r.event(bp, true, ReasonCRDRecreated, "CRD %s of %s was deleted while its Subscription asks for the operator: created it again from revision %d (the custom resources deleted with it are not brought back)",
			strings.Join(made, ", "), rev.CSVName, rev.Revision)
		statuswrite.RequeueWithin(&s.result, 2*time.Second)
	}
	return made, "", nil
}
