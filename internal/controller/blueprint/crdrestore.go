package blueprint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/statuswrite"
)

// ReasonCRDRecreated: a CRD the running version owns was deleted (by hand) while its
// Subscription still asks for the operator, so it was created again from the revision
// that installed it. Its custom resources went with it and are not brought back.
const ReasonCRDRecreated = "CRDRecreated"

// ReasonCRDUpdated: a CRD the running version owns stood at an older version of the
// package's schema and was brought up to the running version's (updateOutdatedCRDs).
const ReasonCRDUpdated = "CRDUpdated"

// ReasonCRDMissing: a CRD the running version owns is gone and cannot be created again.
const ReasonCRDMissing = "CRDMissing"

// ReasonCRDOutdated: a CRD the running version owns stands at an older version of the
// package's schema, and the running version's cannot replace it yet (what stops it is
// named; checked again every preflightRecheck). An older installation of the package,
// side by side, that made a CRD deleted by hand again first leaves it so.
const ReasonCRDOutdated = "CRDOutdated"

// revisionCRD is CRD u of revision rev as that revision applies it: repaired and
// annotated with its package, version and hash. Nil, and why, when it cannot be.
func (r *Reconciler) revisionCRD(bp *omv1.Blueprint, rev *omv1.Revision, u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, string, error) {
	crd, _, err := r.contents.repair(rev.BundleDigest, u)
	if err != nil {
		return nil, fmt.Sprintf("CRD %s of %s: %v", u.GetName(), rev.CSVName, err), nil
	}
	hash, err := crdHash(crd, bp.Spec.Package, rev.Version)
	if err != nil {
		return nil, "", err
	}
	annotate(crd, bp.Spec.Package, rev.Version, hash)
	return crd, "", nil
}

// missingCRDs lists the CRDs the running CSV owns that the cluster no longer has, those
// it has at an older version of the package than version (the running revision's; ""
// when there is none to hold to), and those it has that lack this installation's
// provider record (key, value). Only with CRDs watched: the cache says a CRD is there,
// at which version and with which records, at no cost, and only one it does not hold is
// read to confirm it is gone (a CRD created a moment ago may not be cached yet). A record
// goes with its CRD: when a CRD deleted by hand is made again by another installation of
// the package before this one notices, this one never restores it, and its record would
// stay gone (found in CI: TestSideBySideCreatedAtOnce); nor its version's schema, when
// the one that made it again runs an older version (found in CI too: at 1.1.0 with 1.2.0
// beside it, the newer version's fields pruned from its custom resources).
func (r *Reconciler) missingCRDs(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, pkg, version, key, value string) (missing, outdated, unrecorded []string, err error) {
	if !r.CRDs.Watched() {
		return nil, nil, nil, nil
	}
	seen := map[string]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		if seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		if cached, ok := r.CRDs.Cached(d.Name); ok {
			if version != "" && cached.Annotations[AnnotationCRDPackage] == pkg && older(cached.Annotations[AnnotationCRDVersion], version) {
				outdated = append(outdated, d.Name)
			}
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
			return nil, nil, nil, err
		}
	}
	return missing, outdated, unrecorded, nil
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

// runningCRDs is what a settled pass needs to write the running revision's CRDs: the
// revision, its bundle, and the installing identity's client. Nil revision when nothing
// is to be written (the Subscription is going), or why it cannot be.
func (r *Reconciler) runningCRDs(ctx context.Context, s *scope) (*omv1.Revision, *catalog.BundleContent, client.Client, string, error) {
	bp := s.bp
	rev := runningRevision(bp)
	if rev == nil {
		return nil, nil, nil, "the revision that installed " + bp.Status.CurrentCSV + " is no longer in the history", nil
	}
	if s.sub == nil || !s.sub.DeletionTimestamp.IsZero() || s.sub.Spec.Option == omv1.OptionDelete {
		return nil, nil, nil, "", nil
	}
	content, why, err := r.revisionContent(ctx, bp, rev)
	if content == nil {
		return nil, nil, nil, why, err
	}
	cl, err := r.Identities.For(s.id)
	if err != nil {
		return nil, nil, nil, "", err
	}
	return rev, content, cl, "", nil
}

// restoreCRDs creates again the CRDs of the version that runs that were deleted while the
// Blueprint is settled and its Subscription still asks for the operator: an operator
// without its CRD fails every watch, and a CRD is the installation's as much as its
// Deployment is (drift is repaired). Each is the running revision's CRD, as that revision
// applied it, created as the installing identity; nothing else is touched. Nothing can be
// in the way (no custom resource outlives its CRD), so no preflight runs. It returns what
// it created, what it found made again meanwhile by another installation of the package,
// or why it could not.
func (r *Reconciler) restoreCRDs(ctx context.Context, s *scope, missing []string) (made, again []string, why string, err error) {
	bp := s.bp
	rev, content, cl, why, err := r.runningCRDs(ctx, s)
	if rev == nil {
		return nil, nil, why, err
	}
	// Held from the read below to the write: another installation of the package, side by
	// side, restores the same CRD at once (crdLocks).
	defer r.crdLocks.lock(missing)()
	key, value := ProviderKey(bp.Namespace, bp.Name), providerValue(bp, rev.CSVName)
	for _, u := range content.CRDs {
		if !slices.Contains(missing, u.GetName()) {
			continue
		}
		crd, why, err := r.revisionCRD(bp, rev, u)
		if crd == nil {
			return made, again, why, err
		}
		// Another installation of the package (side by side) may have made it again a
		// moment ago. It stands, and this installation's provider record goes on it, as an
		// install's would (the one that made it carried only its own). Made at an older
		// version, the next pass brings it up (updateOutdatedCRDs), after the preflight:
		// custom resources may be made against it from now on.
		live := &apiextensionsv1.CustomResourceDefinition{}
		switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live); {
		case err == nil:
			if live.Annotations[key] != value {
				r.recordProvider(ctx, bp, cl, crd.Name, key, value, rev.CSVName)
			}
			again = append(again, crd.Name)
			statuswrite.RequeueWithin(&s.result, time.Second)
			continue
		case !apierrors.IsNotFound(err):
			return made, again, "", err
		}
		crd.Annotations[key] = value
		crd.ResourceVersion = ""
		err = cl.Create(ctx, crd, client.FieldOwner(config.FieldOwner))
		if apierrors.IsAlreadyExists(err) {
			// Made by someone else since the read: the next pass reads again.
			again = append(again, crd.Name)
			statuswrite.RequeueWithin(&s.result, time.Second)
			continue
		}
		if err != nil {
			why, err := writeRefusal(s, "create CRD "+crd.Name+" again", crd.Name, err)
			return made, again, why, err
		}
		r.CRDs.Forget(crd.Name)
		made = append(made, crd.Name)
	}
	if len(made) > 0 {
		r.event(bp, true, ReasonCRDRecreated, "CRD %s of %s was deleted while its Subscription asks for the operator: created it again from revision %d (the custom resources deleted with it are not brought back)",
			strings.Join(made, ", "), rev.CSVName, rev.Revision)
		statuswrite.RequeueWithin(&s.result, 2*time.Second)
	}
	return made, again, "", nil
}

// updateOutdatedCRDs brings CRDs of the running version that stand at an older version of
// the package (missingCRDs) up to the running revision's, as an upgrade would: the
// preflight first (custom resources made since, against the older schema, may not be
// valid under this one; a storage version migration is carried out), then the apply,
// held to the version just read. An older version's CRD never stands over a newer one's
// (planCRDs), and when a CRD deleted by hand is made again by an older installation side
// by side, the newer ones find it so: without this, the newer version's fields would be
// pruned from its custom resources for good. It returns why one cannot be brought up
// (nothing of that CRD changed), "" when none is left outdated by this pass. The CRDs it
// brought up are told in a CRDUpdated event.
func (r *Reconciler) updateOutdatedCRDs(ctx context.Context, s *scope, outdated []string) (string, error) {
	bp := s.bp
	rev, content, cl, why, err := r.runningCRDs(ctx, s)
	if rev == nil {
		return why, err
	}
	dyn, err := r.Identities.Dynamic(s.id)
	if err != nil {
		return "", err
	}
	defer r.crdLocks.lock(outdated)()
	key, value := ProviderKey(bp.Namespace, bp.Name), providerValue(bp, rev.CSVName)
	var updated []string
	var from []string
	// Told on every way out: a later CRD's refusal in the same pass leaves the ones
	// already brought up brought up.
	defer func() {
		if len(updated) > 0 {
			r.event(bp, false, ReasonCRDUpdated, "CRD %s stood at the schema of %s %s, older than the running %s's (made again by an older installation of the package after it was deleted): brought up to %s's",
				strings.Join(updated, ", "), bp.Spec.Package, strings.Join(slices.Compact(from), ", "), rev.CSVName, rev.CSVName)
		}
	}()
	for _, u := range content.CRDs {
		if !slices.Contains(outdated, u.GetName()) {
			continue
		}
		crd, why, err := r.revisionCRD(bp, rev, u)
		if crd == nil {
			return why, err
		}
		// Read again under the lock: another installation of this version, or a newer
		// one, may have brought it up meanwhile.
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live); apierrors.IsNotFound(err) {
			continue // gone again: the next pass restores it
		} else if err != nil {
			return "", err
		}
		was := live.Annotations[AnnotationCRDVersion]
		if live.Annotations[AnnotationCRDPackage] != bp.Spec.Package || !older(was, rev.Version) {
			continue
		}
		live, m, v, err := crdsafety.PreflightLive(ctx, live, dyn, crd, bp.Spec.Package)
		var notServed *crdsafety.NotServedError
		switch {
		case errors.As(err, &notServed):
			statuswrite.RequeueWithin(&s.result, time.Second)
			continue
		case err != nil:
			if refusal := kubeapply.Classify(err); refusal.Reason == omv1.ReasonInsufficientPermissions {
				return fmt.Sprintf("%s may not read the custom resources the CRD preflight of %s must check: %v", s.id, crd.Name, err), nil
			}
			return "", err
		case v != nil:
			return v.Error(), nil
		case m != nil:
			n, err := crdsafety.Migrate(ctx, cl, dyn, live, m)
			if errors.Is(err, crdsafety.ErrStorageSwitched) {
				statuswrite.RequeueWithin(&s.result, time.Second)
				continue
			}
			if err != nil {
				if refusal := kubeapply.Classify(err); refusal.Permanent {
					return fmt.Sprintf("the storage version migration CRD %s needs (to %s) was refused: %v", crd.Name, m.StorageVersion, err), nil
				}
				return "", err
			}
			crd.Annotations[AnnotationCRDMigration] = m.Describe(n)
		}
		carryProviders(crd, live, key, value)
		r.CRDs.Forget(crd.Name)
		if _, err := kubeapply.ApplyIfUnchanged(ctx, cl, crd); apierrors.IsConflict(err) {
			statuswrite.RequeueWithin(&s.result, time.Second) // changed since the read
			continue
		} else if err != nil {
			return writeRefusal(s, "apply CRD "+crd.Name, crd.Name, err)
		}
		updated = append(updated, crd.Name)
		from = append(from, was)
	}
	return "", nil
}

// outdatedVerdict is the running version's health while CRDs it owns stand at an older
// version of the package: none (judged false) once they are brought up; Healthy=False,
// naming what stops it, while one cannot be. What stops it (custom resources made since
// that the running version's schema refuses, a missing right) is for a person to mend,
// so it is checked again every preflightRecheck (each check lists custom resources), and
// meanwhile the finding stands as told.
func (r *Reconciler) outdatedVerdict(ctx context.Context, s *scope, outdated []string) (metav1.ConditionStatus, string, string, bool, error) {
	bp := s.bp
	told, _ := r.outdated.Load(bp.UID)
	last, known := told.(outdatedFinding)
	if wait := last.at.Add(preflightRecheck).Sub(s.now); known && wait > 0 {
		statuswrite.RequeueWithin(&s.result, wait)
	} else {
		why, err := r.updateOutdatedCRDs(ctx, s, outdated)
		if err != nil || why == "" {
			r.outdated.Delete(bp.UID)
			return "", "", "", false, err
		}
		last = outdatedFinding{why: why, at: s.now}
		r.outdated.Store(bp.UID, last)
		statuswrite.RequeueWithin(&s.result, preflightRecheck)
	}
	return metav1.ConditionFalse, ReasonCRDOutdated, fmt.Sprintf("CRD %s of %s stands at an older version of %s's schema (made again by an older installation side by side after it was deleted), and cannot be brought up to %s's: %s; checked again every %s",
		strings.Join(outdated, ", "), bp.Status.CurrentCSV, bp.Spec.Package, bp.Status.CurrentCSV, last.why, preflightRecheck), true, nil
}

// outdatedFinding is why a Blueprint's outdated CRDs could not be brought up, and when
// that was found.
type outdatedFinding struct {
	why string
	at  time.Time
}

// writeRefusal is what a settled pass says of a CRD write (what, of CRD name) that the
// API server refused: the words for a refusal a person must mend (a missing right, or a
// CRD the server will not take), or err itself when a retry may do.
func writeRefusal(s *scope, what, name string, err error) (string, error) {
	switch refusal := kubeapply.Classify(err); {
	case refusal.Reason == omv1.ReasonInsufficientPermissions:
		return fmt.Sprintf("%s may not %s: %v", s.id, what, err), nil
	case refusal.Permanent:
		return fmt.Sprintf("the API server refused CRD %s: %v", name, err), nil
	}
	return "", err
}
