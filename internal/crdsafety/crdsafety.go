// Package crdsafety decides whether a CRD may be replaced by a bundle's newer one without
// losing anyone's data. It is pure: the caller gathers the live CRD and its custom
// resources, and gets back the first reason to refuse, naming the CRD, the version and
// the object.
package crdsafety

import (
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Violation is why a CRD update is refused.
type Violation struct {
	CRD     string
	Version string
	// Object is "namespace/name" of the first custom resource the new schema refuses, or
	// empty for a refusal about the CRD itself.
	Object  string
	Message string
}

func (v *Violation) Error() string {
	if v.Object != "" {
		return fmt.Sprintf("CRD %s version %s: custom resource %s would become invalid: %s", v.CRD, v.Version, v.Object, v.Message)
	}
	return fmt.Sprintf("CRD %s version %s: %s", v.CRD, v.Version, v.Message)
}

// StoredVersions refuses a new CRD that drops a version listed in the live CRD's
// status.storedVersions: objects stored in it could no longer be read.
func StoredVersions(live, next *apiextensionsv1.CustomResourceDefinition) *Violation {
	has := map[string]bool{}
	for _, v := range next.Spec.Versions {
		has[v.Name] = true
	}
	for _, v := range live.Status.StoredVersions {
		if !has[v] {
			return &Violation{CRD: live.Name, Version: v, Message: fmt.Sprintf(
				"the new CRD drops version %s, in which custom resources are stored (status.storedVersions %v)", v, live.Status.StoredVersions)}
		}
	}
	return nil
}

// Objects refuses a new CRD under whose schema an existing custom resource of version
// would be invalid. objects are the live custom resources read at that version.
func Objects(next *apiextensionsv1.CustomResourceDefinition, version string, objects []unstructured.Unstructured) (*Violation, error) {
	var schema *apiextensionsv1.JSONSchemaProps
	for _, v := range next.Spec.Versions {
		if v.Name == version && v.Schema != nil {
			schema = v.Schema.OpenAPIV3Schema
		}
	}
	if schema == nil {
		return nil, nil // nothing to validate against (the version-drop check covers removal)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema of CRD %s version %s: %w", next.Name, version, err)
	}
	validator, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("building a validator for CRD %s version %s: %w", next.Name, version, err)
	}
	for i := range objects {
		o := &objects[i]
		errs := validation.ValidateCustomResource(field.NewPath(""), o.UnstructuredContent(), validator)
		if len(errs) > 0 {
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, strings.TrimPrefix(e.Error(), "<nil>."))
			}
			name := o.GetName()
			if ns := o.GetNamespace(); ns != "" {
				name = ns + "/" + name
			}
			return &Violation{CRD: next.Name, Version: version, Object: name, Message: strings.Join(msgs, "; ")}, nil
		}
	}
	return nil, nil
}
