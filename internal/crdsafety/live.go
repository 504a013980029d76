package crdsafety

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pageSize bounds one LIST of custom resources: a CRD with many thousands of objects is
// checked page by page, never held whole.
const pageSize = 500

// Preflight gathers what the checks need from the cluster (the live CRD and its custom
// resources at each served version the new CRD keeps) and runs them for a CRD about to be
// applied. It returns the live CRD (nil when there is none), the storage version
// migration that must be carried out (Migrate) before the CRD is applied, if any, and a
// Violation when the CRD must not be applied. It writes nothing. The Blueprint controller
// and `operator-manager recommend` share it.
//
// Custom resources are listed by the resource the live CRD names (group, version,
// plural), through a dynamic client: no discovery or REST mapping is involved, so a CRD
// applied a moment ago is listed as surely as an old one.
//
// pkg is the package installing next: a storage version migration is carried out only on
// a CRD that package installed (PackageAnnotation). Another package's operator, or
// whoever made the CRD, may still use the versions a migration drops, so such a change is
// refused as a dropped stored version is.
func Preflight(ctx context.Context, r client.Reader, dyn dynamic.Interface, next *apiextensionsv1.CustomResourceDefinition, pkg string) (*apiextensionsv1.CustomResourceDefinition, *Migration, *Violation, error) {
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.Get(ctx, client.ObjectKey{Name: next.Name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, err
	}
	return PreflightLive(ctx, live, dyn, next, pkg)
}

// PreflightLive is Preflight for a caller that has just read the live CRD (nil: there is
// none) and need not read it again: the Blueprint controller reads every CRD of a bundle
// once per pass to plan it, and a second GET of a large CRD is what a fleet's
// installations would pay for nothing.
func PreflightLive(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, dyn dynamic.Interface, next *apiextensionsv1.CustomResourceDefinition, pkg string) (*apiextensionsv1.CustomResourceDefinition, *Migration, *Violation, error) {
	if live == nil {
		return nil, nil, nil, nil
	}
	migration, v := Plan(live, next)
	if v != nil {
		return live, nil, v, nil
	}
	if owner := live.Annotations[PackageAnnotation]; migration != nil && owner != pkg {
		refusal := StoredVersions(live, next)
		if owner == "" {
			refusal.Message += "; the CRD was not installed by operator-manager, so it is not migrated"
		} else {
			refusal.Message += fmt.Sprintf("; the CRD was installed by package %s, whose operator may still use it: only the package that installed a CRD migrates it", owner)
		}
		return live, nil, refusal, nil
	}
	if migration != nil && migration.SwitchFrom != "" {
		// Moving off the storage version loses nothing only while nothing is stored.
		gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: migration.SwitchFrom, Resource: live.Spec.Names.Plural}
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return live, nil, nil, fmt.Errorf("listing %s at %s for the CRD preflight: %w", live.Name, migration.SwitchFrom, err)
		}
		if len(list.Items) > 0 {
			o := list.Items[0]
			name := o.GetName()
			if ns := o.GetNamespace(); ns != "" {
				name = ns + "/" + name
			}
			refusal := StoredVersions(live, next)
			refusal.Object = ""
			refusal.Message += fmt.Sprintf(", and custom resources exist (%s among them): they would have to be converted to %s first, as the operator's upgrade notes say",
				name, migration.StorageVersion)
			return live, nil, refusal, nil
		}
	}
	kept := map[string]bool{}
	for _, v := range next.Spec.Versions {
		kept[v.Name] = true
	}
	for _, v := range live.Spec.Versions {
		if !v.Served || !kept[v.Name] {
			continue // a version the new CRD drops has no schema to check against
		}
		gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: v.Name, Resource: live.Spec.Names.Plural}
		opts := metav1.ListOptions{Limit: pageSize}
		for {
			list, err := dyn.Resource(gvr).List(ctx, opts)
			if apierrors.IsNotFound(err) {
				return live, nil, nil, &NotServedError{CRD: live.Name, Version: v.Name, Err: err}
			}
			if err != nil {
				return live, nil, nil, fmt.Errorf("listing %s at %s for the CRD preflight: %w", live.Name, v.Name, err)
			}
			if viol, err := Objects(next, v.Name, list.Items); err != nil || viol != nil {
				return live, nil, viol, err
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return live, migration, nil, nil
}
