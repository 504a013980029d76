package crdsafety

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Preflight gathers what the checks need from the cluster (the live CRD and its custom
// resources at each served version) and runs them for a CRD about to be applied. It
// returns the live CRD (nil when there is none), and a Violation when the CRD must not be
// applied. The Blueprint controller and `operator-manager recommend` share it.
func Preflight(ctx context.Context, r client.Reader, next *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, *Violation, error) {
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
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: live.Spec.Group, Version: v.Name, Kind: live.Spec.Names.ListKind})
		if err := r.List(ctx, list); err != nil {
			return live, nil, fmt.Errorf("listing %s at %s for the CRD preflight: %w", live.Name, v.Name, err)
		}
		if viol, err := Objects(next, v.Name, list.Items); err != nil || viol != nil {
			return live, viol, err
		}
	}
	return live, nil, nil
}
