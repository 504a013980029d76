package crdrepair

import (
	"context"
	"sort"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validate runs the API server's create validation for a v1 CRD in-process, the way the
// server reaches it: v1 defaulting, conversion to the internal type, the registry strategy's
// PrepareForCreate (which resets status and records the storage version), then
// ValidateCustomResourceDefinition, which includes the structural-schema, default and CEL
// checks. Errors come sorted shallow paths first, so a repair of a node precedes repairs
// below it (a node's missing type is inferred before its anyOf branches are touched).
//
// It also returns obj decoded (not defaulted): when obj is valid, that is the repair's
// result, and decoding it again would cost another JSON round trip of the whole CRD.
func validate(obj map[string]any) (field.ErrorList, *apiextensionsv1.CustomResourceDefinition, error) {
	crd, err := decodeV1(obj)
	if err != nil {
		return nil, nil, err
	}
	// Defaulting changes what it is given, and the conversion may share memory with it:
	// both work on a copy, so crd stays as decoded.
	errs, err := validateTyped(crd.DeepCopy())
	if err != nil {
		return nil, nil, err
	}
	sort.SliceStable(errs, func(i, j int) bool {
		di, dj := depth(errs[i].Field), depth(errs[j].Field)
		if di != dj {
			return di < dj
		}
		if errs[i].Field != errs[j].Field {
			return errs[i].Field < errs[j].Field
		}
		return errs[i].Error() < errs[j].Error()
	})
	return errs, crd, nil
}

func depth(p string) int { return len(parseFieldPath(p)) }

// validateTyped is the API server's create validation of a typed CRD (v1, or v1beta1 for
// the benchmark's floor): defaulting (in place), conversion to the internal type,
// PrepareForCreate's status, ValidateCustomResourceDefinition.
func validateTyped(crd runtime.Object) (field.ErrorList, error) {
	var errs field.ErrorList
	err := safely(func() error {
		scheme.Default(crd)
		var in apiextensions.CustomResourceDefinition
		if err := scheme.Convert(crd, &in, nil); err != nil {
			return err
		}
		in.Status = apiextensions.CustomResourceDefinitionStatus{}
		for _, v := range in.Spec.Versions {
			if v.Storage {
				in.Status.StoredVersions = []string{v.Name}
				break
			}
		}
		errs = validation.ValidateCustomResourceDefinition(context.Background(), &in)
		return nil
	})
	return errs, err
}
