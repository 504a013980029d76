package blueprint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/blang/semver/v4"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdrepair"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/kubeapply"
)

// Reasons of Blueprint conditions.
const (
	ReasonBundleUnavailable = "BundleUnavailable"
	ReasonCRDRefused        = "CRDRefused"
	ReasonWaitingForCRDs    = "WaitingForCRDs"
)

// bundleFiles reads the target bundle from the local cache, or from its catalog into the
// cache first, so that any version installed once can be installed again offline.
func (r *Reconciler) bundleFiles(bp *omv1.Blueprint, csvName, digest string) ([]catalog.File, error) {
	if digest != "" {
		files, err := r.Cache.Get(digest)
		if err == nil {
			return files, nil
		}
		if !errors.Is(err, bundlecache.ErrNotCached) {
			return nil, err
		}
	}
	key := catalogKey(bp)
	cat := r.Catalogs.Get(key)
	if cat == nil {
		return nil, fmt.Errorf("bundle %s of %s is not in the local cache and catalog %s is not loaded", digest, csvName, key)
	}
	var b *catalog.Bundle
	if digest != "" {
		b = cat.BundleByDigest(digest)
	} else {
		b = cat.BundleByCSV(csvName)
	}
	if b == nil {
		return nil, fmt.Errorf("catalog %s has no bundle %s (digest %s) and the local cache does not hold it", key, csvName, digest)
	}
	files, err := cat.Files(b)
	if err != nil {
		return nil, err
	}
	if err := r.Cache.Put(b.Digest, files); err != nil {
		return nil, err
	}
	return files, nil
}

// catalogKey parses spec.catalog, "namespace/name" (or a name in the Blueprint's namespace).
func catalogKey(bp *omv1.Blueprint) types.NamespacedName {
	if ns, name, ok := strings.Cut(bp.Spec.Catalog, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Namespace: bp.Namespace, Name: bp.Spec.Catalog}
}

// carryOut moves the pending revision on: the bundle comes from the local cache (or the
// catalog into the cache), its CRDs pass the preflight and are applied, other CSVs of the
// Blueprint are frozen (phase Replacing) so they stop applying the Deployments they share,
// the CSV is applied (or revived), and its phase becomes the revision's outcome.
func (r *Reconciler) carryOut(ctx context.Context, s *scope) error {
	w := s.work
	r.progress(s, string(w.Trigger), fmt.Sprintf("revision %d: %s %s", w.Revision, strings.ToLower(string(w.Trigger)), w.CSVName))
	files, err := r.bundleFiles(s.bp, w.CSVName, w.BundleDigest)
	if err != nil {
		r.fail(s, ReasonBundleUnavailable, err.Error())
		s.result = ctrl.Result{RequeueAfter: 10 * time.Second}
		return nil
	}
	content, err := catalog.ContentFromFiles(files)
	if err != nil {
		r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("bundle %s: %v", w.BundleDigest, err))
		return nil
	}
	if content.CSV.Name != w.CSVName {
		r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("bundle %s holds CSV %s, not %s", w.BundleDigest, content.CSV.Name, w.CSVName))
		return nil
	}
	repairs, stop, err := r.applyCRDs(ctx, s, content)
	if err != nil || stop {
		return err
	}
	// Only now, past the preflight, does the running version stop applying its objects:
	// a blocked change leaves the cluster exactly as it was.
	if err := r.freezeOthers(ctx, s, w.CSVName); err != nil {
		return err
	}
	if err := r.applyCSV(ctx, s, content, repairs); err != nil {
		return err
	}
	return r.follow(ctx, s)
}

// downgrade reports whether the revision goes to an older version than runs now: then the
// cluster's CRDs, a superset, are kept.
func downgrade(s *scope) bool {
	if s.work.Trigger == omv1.TriggerRollback || s.work.Trigger == omv1.TriggerDowngrade {
		return true
	}
	cur, err1 := semver.ParseTolerant(s.bp.Status.CurrentVersion)
	next, err2 := semver.ParseTolerant(s.work.Version)
	return err1 == nil && err2 == nil && next.LT(cur)
}

// applyCRDs converts and repairs every CRD of the bundle, runs the preflight on all of
// them before changing any (stored versions kept, existing custom resources still valid),
// applies them and waits until each is Established. A CRD is never deleted here; on a
// downgrade an existing CRD is kept as it is.
func (r *Reconciler) applyCRDs(ctx context.Context, s *scope, content *catalog.BundleContent) ([]omv1alpha1.CRDRepair, bool, error) {
	var repairs []omv1alpha1.CRDRepair
	var apply []*apiextensionsv1.CustomResourceDefinition
	for _, u := range content.CRDs {
		crd, changes, err := crdrepair.Repair(u)
		if err != nil {
			r.fail(s, ReasonCRDRefused, fmt.Sprintf("CRD %s of %s cannot be installed: %v", u.GetName(), content.CSV.Name, err))
			return nil, true, nil
		}
		keep := false
		if live := (&apiextensionsv1.CustomResourceDefinition{}); r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live) == nil {
			if keep = downgrade(s) || newerLive(live, s.bp.Spec.Package, s.work.Version); keep {
				changes = append(changes, fmt.Sprintf("kept the cluster's CRD, which a newer version (%s) installed: not replaced by this older version's",
					live.Annotations[AnnotationCRDVersion]))
				r.event(s.bp, false, "CRDKept", "Kept CRD %s from the newer version while changing to %s", crd.Name, content.CSV.Name)
			}
		}
		if !keep {
			_, v, err := crdsafety.Preflight(ctx, r.APIReader, crd)
			if err != nil {
				return nil, false, err
			}
			if v != nil {
				r.block(s, v.Error()+"; nothing was changed")
				return nil, true, nil
			}
			apply = append(apply, crd)
		}
		if len(changes) > 0 {
			repairs = append(repairs, omv1alpha1.CRDRepair{Name: crd.Name, Changes: changes})
		}
	}
	for _, crd := range apply {
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Annotations[AnnotationCRDPackage], crd.Annotations[AnnotationCRDVersion] = s.bp.Spec.Package, s.work.Version
		if err := kubeapply.Apply(ctx, r.Client, crd); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				r.fail(s, ReasonCRDRefused, fmt.Sprintf("the API server refused CRD %s of %s: %v", crd.Name, content.CSV.Name, err))
				return nil, true, nil
			}
			return nil, false, err
		}
	}
	for _, crd := range apply {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil || !established(live) {
			r.progress(s, ReasonWaitingForCRDs, "waiting for CRD "+crd.Name+" to be Established")
			s.result = ctrl.Result{RequeueAfter: time.Second}
			return nil, true, client.IgnoreNotFound(err)
		}
	}
	sort.Slice(repairs, func(i, j int) bool { return repairs[i].Name < repairs[j].Name })
	return repairs, false, nil
}

// Annotations on applied CRDs: which package and version wrote them, so that an older
// version of the same package, in any namespace, never replaces a newer CRD.
const (
	AnnotationCRDPackage = "operator-manager.domain/crd-package"
	AnnotationCRDVersion = "operator-manager.domain/crd-version"
)

// newerLive reports whether the live CRD was written by a newer version of the package.
func newerLive(live *apiextensionsv1.CustomResourceDefinition, pkg, version string) bool {
	if live.Annotations[AnnotationCRDPackage] != pkg {
		return false
	}
	return older(version, live.Annotations[AnnotationCRDVersion])
}

// freezeOthers sets every other CSV of the Blueprint to Replacing, so that only the
// revision's CSV applies the Deployments they share.
func (r *Reconciler) freezeOthers(ctx context.Context, s *scope, keep string) error {
	list := &omv1alpha1.ClusterServiceVersionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.bp.Namespace), client.MatchingLabels{omv1.LabelSubscription: subscriptionName(s.bp)}); err != nil {
		return err
	}
	for i := range list.Items {
		csv := &list.Items[i]
		if csv.Name == keep || !csv.DeletionTimestamp.IsZero() || csv.Status.Phase == omv1alpha1.CSVReplacing {
			continue
		}
		patch := client.MergeFrom(csv.DeepCopy())
		now := metav1.NewTime(s.now)
		csv.Status.Phase, csv.Status.Reason, csv.Status.LastTransitionTime = omv1alpha1.CSVReplacing, "BeingReplaced", &now
		csv.Status.Message = "being replaced by " + keep
		if err := r.Client.Status().Patch(ctx, csv, patch); err != nil {
			return fmt.Errorf("marking %s as Replacing: %w", csv.Name, err)
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// applyCSV creates or updates the target CSV: the bundle's CSV under this group, owned by
// the Blueprint, labelled for its Subscription and package.
func (r *Reconciler) applyCSV(ctx context.Context, s *scope, content *catalog.BundleContent, repairs []omv1alpha1.CRDRepair) error {
	bp := s.bp
	src := content.CSV
	w := s.work
	csv := &omv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: omv1alpha1.GroupVersion.String(), Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{
			Name: src.Name, Namespace: bp.Namespace,
			Labels:      mergeMaps(src.Labels, map[string]string{omv1.LabelSubscription: subscriptionName(bp), omv1.LabelPackage: bp.Spec.Package}),
			Annotations: mergeMaps(src.Annotations, map[string]string{omv1.AnnotationBundleDigest: w.BundleDigest}),
		},
		Spec: src.Spec,
	}
	if s.sub != nil && s.sub.Spec.Health != nil && s.sub.Spec.Health.Timeout != nil {
		csv.Annotations[omv1.AnnotationHealthTimeout] = s.sub.Spec.Health.Timeout.Duration.String()
	}
	if len(repairs) > 0 {
		data, _ := json.Marshal(repairs)
		csv.Annotations[omv1.AnnotationCRDRepairs] = string(data)
	}
	if err := controllerutil.SetControllerReference(bp, csv, r.Client.Scheme()); err != nil {
		return err
	}
	if err := kubeapply.Apply(ctx, r.Client, csv); err != nil {
		return err
	}
	return r.revive(ctx, s, csv)
}

// revive restarts the CSV of a revision when it is left over from an earlier one: frozen
// as Replacing (a rollback to it) or Failed before this revision began (a retry).
func (r *Reconciler) revive(ctx context.Context, s *scope, applied *omv1alpha1.ClusterServiceVersion) error {
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(applied), csv); err != nil {
		return client.IgnoreNotFound(err)
	}
	start := s.work.StartTime
	stale := csv.Status.Phase == omv1alpha1.CSVReplacing ||
		(csv.Status.Phase == omv1alpha1.CSVFailed && start != nil && csv.Status.LastTransitionTime != nil && csv.Status.LastTransitionTime.Before(start))
	if !stale {
		return nil
	}
	patch := client.MergeFrom(csv.DeepCopy())
	csv.Status.Phase, csv.Status.Reason = "", ""
	csv.Status.Message = fmt.Sprintf("restarted for revision %d (%s)", s.work.Revision, s.work.Trigger)
	csv.Status.LastTransitionTime = nil
	if err := r.Client.Status().Patch(ctx, csv, patch); err != nil {
		return fmt.Errorf("restarting %s: %w", csv.Name, err)
	}
	return nil
}

func subscriptionName(bp *omv1.Blueprint) string {
	if name := bp.Labels[omv1.LabelSubscription]; name != "" {
		return name
	}
	return bp.Name
}

func mergeMaps(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
