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
// resources at each served version) and runs them for a CRD about to be applied. It
// returns the live CRD (nil when there is none), and a Violation when the CRD must not be
// applied. The Blueprint controller and `operator-manager recommend` share it.
//
// Custom resources are listed by the resource the live CRD names (group, version,
// plural), through a dynamic client: no discovery or REST mapping is involved, so a CRD
// applied a moment ago is listed as surely as an old one.
func Preflight(ctx context.Context, r client.Reader, dyn dynamic.Interface, next *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, *Violation, error) {
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.Get(ctx, client.ObjectKey{Name: next.Name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if v := StoredVersions(live, next); v != nil {
		return live, v, nil
	}
	for _, v := range live.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: v.Name, Resource: live.Spec.Names.Plural}
		opts := metav1.ListOptions{Limit: pageSize}
		for {
			list, err := dyn.Resource(gvr).List(ctx, opts)
			if err != nil {
				return live, nil, fmt.Errorf("listing %s at %s for the CRD preflight: %w", live.Name, v.Name, err)
			}
			if viol, err := Objects(next, v.Name, list.Items); err != nil || viol != nil {
				return live, viol, err
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return live, nil, nil
}
