// Package crdsafety decides whether a CRD may be replaced by a bundle's newer one without
// losing anyone's data. Its checks are pure: the caller gathers the live CRD and its
// custom resources, and gets back the first reason to refuse, naming the CRD, the version
// and the object, or the storage version migration the change needs first. live.go and
// migrate.go do the gathering and the migration against the cluster.
package crdsafety

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PackageAnnotation on a CRD names the package that last applied it (the Blueprint
// controller sets it).
const PackageAnnotation = "operator-manager.domain/crd-package"

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

// Migration is what must happen before a new CRD that drops versions listed in the live
// CRD's status.storedVersions may be applied, when none of them is the live storage
// version: every custom resource is rewritten unchanged, which the API server encodes in
// the current storage version, and the dropped versions are then removed from
// status.storedVersions (as kube-storage-version-migrator does). The API server itself
// refuses a CRD whose spec.versions lacks a stored version, so without this the upgrade
// could not be applied at all.
type Migration struct {
	CRD string
	// StorageVersion is the live CRD's storage version, which the new CRD keeps: custom
	// resources are read and rewritten at it.
	StorageVersion string
	// Drop are the stored versions the new CRD drops, in status.storedVersions order.
	Drop []string
	// StoredVersions is status.storedVersions once the custom resources are rewritten.
	StoredVersions []string
	// SwitchFrom, when set, is the live storage version, which the new CRD drops. It is
	// moved off only while no custom resource exists (Preflight checks; nothing is lost
	// then): the live CRD is first updated to store in StorageVersion, defined as the new
	// CRD defines it (Switch), with SwitchFrom still served.
	SwitchFrom string
	Switch     *apiextensionsv1.CustomResourceDefinitionVersion
}

// Describe says in words what the migration did, for n custom resources rewritten.
func (m *Migration) Describe(n int) string {
	it := "it"
	if len(m.Drop) > 1 {
		it = "them"
	}
	resources := "custom resources"
	if n == 1 {
		resources = "custom resource"
	}
	return fmt.Sprintf("migrated %d %s to storage version %s and removed %s from status.storedVersions (the new CRD drops %s)",
		n, resources, m.StorageVersion, strings.Join(m.Drop, ", "), it)
}

// Intermediate is the live CRD changed to store in m.StorageVersion (as the new CRD
// defines it), every other version kept as it is: the step between a live CRD and a new
// one that drops the live storage version.
func (m *Migration) Intermediate(live *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := live.DeepCopy()
	found := false
	for i := range out.Spec.Versions {
		v := &out.Spec.Versions[i]
		v.Storage = v.Name == m.StorageVersion
		if v.Storage {
			found, v.Served = true, true
		}
	}
	if !found && m.Switch != nil {
		v := *m.Switch.DeepCopy()
		v.Storage, v.Served = true, true
		out.Spec.Versions = append(out.Spec.Versions, v)
	}
	return out
}

// Plan says what a new CRD's stored versions need before it replaces live: nothing (both
// nil), a storage version migration, or a refusal. The dropped stored versions are
// migrated away only when none of them is the live storage version, the live CRD serves
// that version and the new CRD keeps it: the custom resources stored in a dropped version
// can then be rewritten in the storage version first. A new CRD that drops the live
// storage version itself gets a migration that switches the storage version first
// (SwitchFrom), which Preflight allows only while no custom resource exists: existing
// objects would have to be converted, which only the operator knows how to do.
func Plan(live, next *apiextensionsv1.CustomResourceDefinition) (*Migration, *Violation) {
	refusal := StoredVersions(live, next)
	if refusal == nil {
		return nil, nil
	}
	storage := ""
	for _, v := range live.Spec.Versions {
		if v.Storage && v.Served { // custom resources are read and rewritten at it
			storage = v.Name
		}
	}
	kept := map[string]bool{}
	for _, v := range next.Spec.Versions {
		kept[v.Name] = true
	}
	m := &Migration{CRD: live.Name, StorageVersion: storage}
	if storage == "" || !kept[storage] {
		for i := range next.Spec.Versions {
			if v := &next.Spec.Versions[i]; v.Storage {
				m.StorageVersion, m.Switch = v.Name, v.DeepCopy()
			}
		}
		if storage == "" || m.Switch == nil {
			return nil, refusal
		}
		m.SwitchFrom = storage
	}
	for _, v := range live.Status.StoredVersions {
		if kept[v] {
			m.StoredVersions = append(m.StoredVersions, v)
		} else {
			m.Drop = append(m.Drop, v)
		}
	}
	if !slices.Contains(m.StoredVersions, m.StorageVersion) {
		// The API server lists the storage version once anything is written in it.
		m.StoredVersions = append(m.StoredVersions, m.StorageVersion)
	}
	return m, nil
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
		// A nil root, as the API server validates a custom resource: the fields then read
		// "spec.size", where a root named "" printed "[].spec.size".
		errs := validation.ValidateCustomResource(nil, o.UnstructuredContent(), validator)
		if len(errs) > 0 {
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
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
