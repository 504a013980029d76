// Package crdrepair turns a CustomResourceDefinition shipped in an operator bundle
// (apiextensions.k8s.io/v1beta1 or v1) into an apiextensions.k8s.io/v1 CRD that the
// Kubernetes 1.37 API server accepts.
//
// Bundles in the wild carry CRDs written for API servers that were far more lenient:
// v1beta1 had no structural-schema requirement, defaulted the scope and disabled pruning.
// Repair does what a careful administrator does by hand: convert with the API server's own
// conversion functions, add what is missing, keep every part of a schema that validates,
// and only where a subtree cannot be made structural replace that subtree (never more) by a
// schema that keeps its data (x-kubernetes-preserve-unknown-fields). Every change is
// recorded in words, so the install controller can show the user what it altered.
//
// The result is checked with the API server's own validation in-process
// (ValidateCustomResourceDefinition, structural schema checks, default and CEL checks);
// the reported field paths drive the repairs, so a CRD that cannot be repaired is refused
// with the API server's own reasons.
package crdrepair

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kind names a kind of repair, for summaries and tests.
type Kind string

// The kinds of change Repair makes.
const (
	KindConverted            Kind = "converted from v1beta1"
	KindMovedToVersions      Kind = "top-level field moved per version"
	KindPruning              Kind = "kept v1beta1 no-pruning"
	KindNoSchema             Kind = "schema added"
	KindRootType             Kind = "root type added"
	KindScope                Kind = "scope added"
	KindConversion           Kind = "webhook conversion settings fixed"
	KindAPIApproval          Kind = "api-approved annotation added"
	KindMissingType          Kind = "missing type added"
	KindMetadata             Kind = "metadata schema restricted"
	KindAdditionalProperties Kind = "additionalProperties fixed"
	KindValueValidation      Kind = "anyOf/allOf/oneOf/not made structural"
	KindIntOrString          Kind = "x-kubernetes-int-or-string added"
	KindExtension            Kind = "x-kubernetes-* misuse fixed"
	KindDefault              Kind = "invalid default removed"
	KindUnsupported          Kind = "unsupported keyword removed"
	KindInvalidType          Kind = "invalid type fixed"
	KindPattern              Kind = "invalid pattern removed"
	KindValidationRule       Kind = "invalid x-kubernetes-validations rule removed"
	KindMalformed            Kind = "malformed schema value fixed"
	KindUnknownKeyword       Kind = "unknown schema keyword removed"
	KindStatusRoot           Kind = "root schema fields removed"
	KindPrinterColumn        Kind = "printer column fixed"
	KindNames                Kind = "names fixed"
	KindServerFields         Kind = "server-set metadata removed"
	KindPreservedSubtree     Kind = "subtree kept unvalidated"
)

// Change is one change Repair made.
type Change struct {
	Kind Kind
	// Where is the field path in the v1 CRD, e.g. spec.versions[v1].schema.
	Where string
	// What says what was done and, where it is not obvious, why.
	What string
}

// String renders the change for a person: `spec.versions[v1].schema: added "type: object" at the root`.
func (c Change) String() string { return c.Where + ": " + c.What }

// Repair converts and repairs one CRD manifest (apiextensions.k8s.io/v1beta1 or v1, as
// decoded from the bundle file) and returns the v1 CRD plus each change made, in words a
// person understands, e.g. `spec.versions[v1].schema: added "type: object" at the root`.
func Repair(u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, []string, error) {
	crd, changes, err := RepairChanges(u)
	var out []string
	for _, c := range changes {
		out = append(out, c.String())
	}
	return crd, out, err
}

// RepairChanges is Repair with the changes as structured values, for callers that summarise
// or report them by kind.
func RepairChanges(u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, []Change, error) {
	if u == nil {
		return nil, nil, fmt.Errorf("repairing CRD: no object")
	}
	r := &repairer{}
	obj, err := r.toV1(u.Object)
	if err != nil {
		return nil, nil, fmt.Errorf("repairing CRD %s: %w", describe(u.Object), err)
	}
	r.obj = obj
	r.prepare()
	if err := r.fixUntilValid(); err != nil {
		return nil, nil, fmt.Errorf("repairing CRD %s: %w", describe(u.Object), err)
	}
	if r.keepNoPruning() {
		// Marking object schemas can itself need repairs (rarely); validate again.
		if err := r.fixUntilValid(); err != nil {
			return nil, nil, fmt.Errorf("repairing CRD %s: %w", describe(u.Object), err)
		}
	}
	// The last validation decoded r.obj as it is now (nothing changes it after a
	// validation that passes).
	return r.valid, r.changes, nil
}

// repairer holds one CRD being repaired, in its v1 form as unstructured JSON, and the
// changes made so far.
type repairer struct {
	obj     map[string]any
	changes []Change
	// noPruning is set when the source asked for unknown fields to be kept
	// (v1beta1's default preserveUnknownFields: true), which v1 expresses in the schema.
	noPruning bool
	// fromV1beta1 and explicitPreserve describe the source, for the change messages.
	fromV1beta1, explicitPreserve bool
	// marked counts, per version, object schemas given x-kubernetes-preserve-unknown-fields
	// to keep noPruning.
	marked map[string]int
	// dirty holds error paths rewritten in the current round; pendingRules says rules were
	// marked for removal in it.
	dirty        []string
	pendingRules bool
	// valid is r.obj decoded by the validation that passed.
	valid *apiextensionsv1.CustomResourceDefinition
}

func (r *repairer) record(kind Kind, where, format string, args ...any) {
	r.changes = append(r.changes, Change{Kind: kind, Where: where, What: fmt.Sprintf(format, args...)})
}

// describe names a CRD in errors: its metadata.name, else its kind and group.
func describe(obj map[string]any) string {
	if md, ok := obj["metadata"].(map[string]any); ok {
		if n, ok := md["name"].(string); ok && n != "" {
			return fmt.Sprintf("%q", n)
		}
	}
	var parts []string
	if spec, ok := obj["spec"].(map[string]any); ok {
		if names, ok := spec["names"].(map[string]any); ok {
			if k, ok := names["kind"].(string); ok {
				parts = append(parts, k)
			}
		}
		if g, ok := spec["group"].(string); ok {
			parts = append(parts, g)
		}
	}
	if len(parts) == 0 {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", strings.Join(parts, "."))
}
