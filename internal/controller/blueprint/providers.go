package blueprint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/identity"
)

// A CRD is shared by every installation whose bundle owns it: versions of one package side
// by side in several namespaces, or several packages. Each installation records itself on
// the CRD under an annotation of its own, ProviderAnnotationPrefix + its key, valued
// "<namespace>/<name> <csv>", so `kubectl describe crd` and `operator-manager status` show
// who provides it and at which version. One key per installation, written by a merge patch
// of that key alone, so installations never overwrite each other's records (the CRD's
// server-side apply, under the manager's one field owner, does not own them either). The
// CSVs remain the truth the manager acts on (an uninstall keeps a CRD another CSV owns);
// the records are for people.
const ProviderAnnotationPrefix = omv1.AnnotationProviderPrefix

// ProviderKey is the annotation key of one installation: its namespace and name, or, when
// that is longer than an annotation name may be, a prefix of it and a digest.
func ProviderKey(namespace, name string) string {
	n := namespace + "." + name
	if len(n) > 63 {
		sum := sha256.Sum256([]byte(n))
		n = strings.TrimRight(n[:46], ".-") + "-" + hex.EncodeToString(sum[:])[:16]
	}
	return ProviderAnnotationPrefix + n
}

// providerValue is what an installation records on the CRDs it provides.
func providerValue(bp *omv1.Blueprint, csv string) string {
	return bp.Namespace + "/" + bp.Name + " " + csv
}

// providersOfCRD maps a CRD to the Blueprints its provider records name.
func providersOfCRD(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition) []reconcile.Request {
	var out []reconcile.Request
	for k, v := range crd.Annotations {
		if !strings.HasPrefix(k, ProviderAnnotationPrefix) {
			continue
		}
		who, _, _ := strings.Cut(v, " ")
		ns, name, ok := strings.Cut(who, "/")
		if ok && ns != "" && name != "" {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
	}
	return out
}

// carryProviders puts the installation's provider record into a CRD about to be applied,
// with every other installation's record the live CRD carries, so the one apply writes
// the record too (no second write per CRD). The apply is made conditional on the live
// resourceVersion (kubeapply.ApplyIfUnchanged): records of others are owned by this apply
// from then on, and an apply from a stale read would undo a record written or removed
// meanwhile (found by hand: an installation's record of its upgrade, a merge patch made
// between another installation's read and apply, was set back to its old version, since
// the apply had dropped the resourceVersion); a conflict is retried from a fresh read.
// A CRD read as absent has no version to hold to: crdLocks keeps two installations of
// this process from both creating it.
func carryProviders(crd, live *apiextensionsv1.CustomResourceDefinition, key, value string) {
	if live != nil {
		crd.ResourceVersion = live.ResourceVersion
		for k, v := range live.Annotations {
			if strings.HasPrefix(k, ProviderAnnotationPrefix) {
				crd.Annotations[k] = v
			}
		}
	}
	crd.Annotations[key] = value
}

// recordProviders records the installation on each CRD of its bundle, once per version:
// a CRD whose live copy already carries the record (as every CRD this pass applied does)
// is not written.
func (r *Reconciler) recordProviders(ctx context.Context, s *scope, plan []crdStep, csv string) {
	cl, err := r.Identities.For(s.id)
	if err != nil {
		return
	}
	key, value := ProviderKey(s.bp.Namespace, s.bp.Name), providerValue(s.bp, csv)
	provides := map[string]bool{}
	for _, st := range plan {
		provides[st.crd.Name] = true
		if st.live != nil && st.live.Annotations[key] == value {
			continue
		}
		r.recordProvider(ctx, s.bp, cl, st.crd.Name, key, value, csv)
	}
	if good := LastGood(s.bp); good != nil && good.CSVName != csv {
		// Off the CRDs the new version no longer provides (the CRDs themselves stay: an
		// upgrade never deletes one), once per version change.
		r.dropRecords(ctx, s.bp, cl, key, provides, ", which its new version does not provide")
	}
}

// recordProvider writes the installation's record (key, value) on one CRD, as csv's
// provider. A record for people: the installation goes on without it, told in an event.
func (r *Reconciler) recordProvider(ctx context.Context, bp *omv1.Blueprint, cl client.Client, crd, key, value, csv string) {
	if err := patchProvider(ctx, cl, crd, key, &value, ""); err != nil {
		r.event(bp, true, "CRDProviderNotRecorded", "Could not record %s as a provider on CRD %s: %v", csv, crd, err)
	}
}

// forgetProviders removes the installation's record from every CRD that carries it, as
// it is uninstalled. Every CRD's metadata is listed (once per uninstall), not only the
// CRDs of the last good bundle: a first install that failed has none, yet its CRDs were
// applied with its record, which then outlived the installation (and its namespace).
func (r *Reconciler) forgetProviders(ctx context.Context, bp *omv1.Blueprint, sub *omv1.Subscription) {
	if len(bp.Status.History) == 0 {
		return // nothing was ever applied, so nothing recorded
	}
	sa := ""
	if sub != nil {
		sa = sub.Spec.ServiceAccountName
	}
	cl, err := r.Identities.For(identity.Effective(bp.Namespace, sa, r.DefaultServiceAccount))
	if err != nil {
		return
	}
	r.dropRecords(ctx, bp, cl, ProviderKey(bp.Namespace, bp.Name), nil, "")
}

// dropRecords removes the provider record key from every CRD that carries it but those
// in keep, listing only CRDs' metadata; a patch that fails is told with why appended.
func (r *Reconciler) dropRecords(ctx context.Context, bp *omv1.Blueprint, cl client.Client, key string, keep map[string]bool, why string) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.APIReader.List(ctx, list); err != nil {
		return
	}
	for _, m := range list.Items {
		if _, ok := m.Annotations[key]; !ok || keep[m.Name] {
			continue
		}
		if err := patchProvider(ctx, cl, m.Name, key, nil, ""); err != nil {
			r.event(bp, true, "CRDProviderNotRecorded", "Could not remove this installation's provider record from CRD %s%s: %v", m.Name, why, err)
		}
	}
}

// sweepRecords takes off the CRDs the provider records of an installation that is gone:
// left by earlier versions of the manager (whose uninstall removed records only from the
// last good bundle's CRDs), or by an uninstall whose patch failed. The CRD cache's watch
// names the installation of every record (providersOfCRD), so each such record brings its
// installation here once as the manager starts, and again when its CRD changes. The
// Blueprint's absence is confirmed by a live read before anything is written (a cache
// behind its creation must not cost a new installation its record), and each removal
// holds to the CRD's resourceVersion as cached: a record written since is a conflict,
// looked at again. The patch is made as the default identity, the Blueprint's own being
// unknown; one refused is logged, not retried.
func (r *Reconciler) sweepRecords(ctx context.Context, key types.NamespacedName) (ctrl.Result, error) {
	if r.CRDCache == nil {
		return ctrl.Result{}, nil
	}
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := r.CRDCache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil { // read only
		return ctrl.Result{}, err
	}
	record := ProviderKey(key.Namespace, key.Name)
	var stale []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		if v, ok := crd.Annotations[record]; ok && strings.HasPrefix(v, key.Namespace+"/"+key.Name+" ") {
			stale = append(stale, crd)
		}
	}
	if len(stale) == 0 {
		return ctrl.Result{}, nil
	}
	if err := r.APIReader.Get(ctx, key, &omv1.Blueprint{}); !apierrors.IsNotFound(err) {
		return ctrl.Result{}, client.IgnoreNotFound(err) // there after all: its own passes keep its records
	}
	cl, err := r.Identities.For(identity.Effective(key.Namespace, "", r.DefaultServiceAccount))
	if err != nil {
		return ctrl.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx)
	var again bool
	for _, crd := range stale {
		switch err := patchProvider(ctx, cl, crd.Name, record, nil, crd.ResourceVersion); {
		case err == nil:
			r.CRDs.Forget(crd.Name)
			log.Info("removed the provider record of an installation that is gone", "crd", crd.Name, "record", crd.Annotations[record])
		case apierrors.IsConflict(err):
			again = true
		default:
			log.Error(err, "could not remove the provider record of an installation that is gone", "crd", crd.Name, "record", crd.Annotations[record])
		}
	}
	if again {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// patchProvider sets (value) or removes (nil) one provider annotation of a CRD; with
// resourceVersion, only on the CRD as read (a Conflict otherwise). A CRD that is gone is
// no error.
func patchProvider(ctx context.Context, cl client.Client, crd, key string, value *string, resourceVersion string) error {
	md := map[string]any{"annotations": map[string]*string{key: value}}
	if resourceVersion != "" {
		md["resourceVersion"] = resourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	obj := &apiextensionsv1.CustomResourceDefinition{}
	obj.Name = crd
	err = cl.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching CRD %s: %w", crd, err)
	}
	return nil
}
