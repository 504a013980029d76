package blueprint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
func (r *Reconciler) bundleFiles(bp *omv1.Blueprint) ([]catalog.File, error) {
	digest := bp.Spec.BundleDigest
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
		return nil, fmt.Errorf("bundle %s of %s is not in the local cache and catalog %s is not loaded", digest, bp.Spec.ClusterServiceVersionName, key)
	}
	var b *catalog.Bundle
	if digest != "" {
		b = cat.BundleByDigest(digest)
	} else {
		b = cat.BundleByCSV(bp.Spec.ClusterServiceVersionName)
	}
	if b == nil {
		return nil, fmt.Errorf("catalog %s has no bundle %s (digest %s) and the local cache does not hold it", key, bp.Spec.ClusterServiceVersionName, digest)
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

// deploy fetches the bundle, applies its CRDs and the CSV.
func (r *Reconciler) deploy(ctx context.Context, s *scope) (bool, error) {
	bp := s.bp
	r.startRevision(s)
	files, err := r.bundleFiles(bp)
	if err != nil {
		r.fail(s, ReasonBundleUnavailable, err.Error())
		s.result = ctrl.Result{RequeueAfter: 10 * time.Second}
		return true, nil
	}
	content, err := catalog.ContentFromFiles(files)
	if err != nil {
		r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("bundle %s: %v", bp.Spec.BundleDigest, err))
		return true, nil
	}
	if content.CSV.Name != bp.Spec.ClusterServiceVersionName {
		r.fail(s, ReasonBundleUnavailable, fmt.Sprintf("bundle %s holds CSV %s, not %s", bp.Spec.BundleDigest, content.CSV.Name, bp.Spec.ClusterServiceVersionName))
		return true, nil
	}
	repairs, waiting, err := r.applyCRDs(ctx, s, content)
	if err != nil || waiting {
		return true, err
	}
	return false, r.applyCSV(ctx, s, content, repairs)
}

// applyCRDs converts, repairs and applies every CRD of the bundle, and waits until each is
// Established. A CRD is never deleted here, and never updated in a way that drops a
// version its custom resources are stored in.
func (r *Reconciler) applyCRDs(ctx context.Context, s *scope, content *catalog.BundleContent) ([]omv1alpha1.CRDRepair, bool, error) {
	var repairs []omv1alpha1.CRDRepair
	var pending []string
	for _, u := range content.CRDs {
		crd, changes, err := crdrepair.Repair(u)
		if err != nil {
			r.fail(s, ReasonCRDRefused, fmt.Sprintf("CRD %s of %s cannot be installed: %v", u.GetName(), content.CSV.Name, err))
			return nil, true, nil
		}
		if len(changes) > 0 {
			repairs = append(repairs, omv1alpha1.CRDRepair{Name: crd.Name, Changes: changes})
		}
		live := &apiextensionsv1.CustomResourceDefinition{}
		err = r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, false, err
		default:
			if dropped := droppedStoredVersions(live, crd); len(dropped) > 0 {
				r.block(s, fmt.Sprintf("CRD %s: the new version drops %s, in which custom resources are stored (status.storedVersions %v); nothing was changed",
					crd.Name, strings.Join(dropped, ", "), live.Status.StoredVersions))
				return nil, true, nil
			}
			if !established(live) {
				pending = append(pending, crd.Name)
			}
		}
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		if err := kubeapply.Apply(ctx, r.Client, crd); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				r.fail(s, ReasonCRDRefused, fmt.Sprintf("the API server refused CRD %s of %s: %v", crd.Name, content.CSV.Name, err))
				return nil, true, nil
			}
			return nil, false, err
		}
		if live.Name == "" {
			pending = append(pending, crd.Name)
		}
	}
	if len(pending) > 0 {
		// Look again shortly: a new CRD is Established within a second or two.
		for _, name := range pending {
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, live); err == nil && established(live) {
				continue
			}
			r.progress(s, ReasonWaitingForCRDs, "waiting for CRD "+name+" to be Established")
			s.result = ctrl.Result{RequeueAfter: time.Second}
			return nil, true, nil
		}
	}
	sort.Slice(repairs, func(i, j int) bool { return repairs[i].Name < repairs[j].Name })
	return repairs, false, nil
}

// droppedStoredVersions lists the versions custom resources are stored in that the new
// CRD no longer has: applying it would make those objects unreadable.
func droppedStoredVersions(live, next *apiextensionsv1.CustomResourceDefinition) []string {
	has := map[string]bool{}
	for _, v := range next.Spec.Versions {
		has[v.Name] = true
	}
	var out []string
	for _, v := range live.Status.StoredVersions {
		if !has[v] {
			out = append(out, v)
		}
	}
	return out
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
	csv := &omv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: omv1alpha1.GroupVersion.String(), Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{
			Name: src.Name, Namespace: bp.Namespace,
			Labels:      mergeMaps(src.Labels, map[string]string{omv1.LabelSubscription: subscriptionName(bp), omv1.LabelPackage: bp.Spec.Package}),
			Annotations: mergeMaps(src.Annotations, map[string]string{omv1.AnnotationBundleDigest: bp.Spec.BundleDigest}),
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
	s.target = csv
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
