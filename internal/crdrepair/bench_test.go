package crdrepair

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

// Repairing a bundle's CRDs is part of every install and upgrade (a fifth of the manager's
// CPU in a fleet of installs before repairs were kept per bundle). Its floor is what any
// client-side check of a CRD must do and what the API server does again on create: decode
// the document once into its typed form, default it, convert it to the internal form and
// run the API server's validation (CEL included). The ratio of the two says what the
// repair adds to that.
// Run: go test -run=^$ -bench=Community -benchmem -count=3 ./internal/crdrepair/

func communityCRDs(b *testing.B) []*unstructured.Unstructured {
	_, docs := catalogtest.CRDDocuments(b, catalogtest.CommunityPath(b))
	if len(docs) == 0 {
		b.Fatal("no CRDs in the community catalog")
	}
	out := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		out[i] = d.Object
	}
	return out
}

func BenchmarkRepairCommunity(b *testing.B) {
	crds := communityCRDs(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, u := range crds {
			_, _, _ = RepairChanges(u.DeepCopy()) // refusals cost what they cost; the test suite checks outcomes
		}
	}
	b.ReportMetric(float64(len(crds)), "CRDs")
}

func BenchmarkRepairFloorCommunity(b *testing.B) {
	crds := communityCRDs(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, u := range crds {
			_ = validateOnce(u.DeepCopy())
		}
	}
	b.ReportMetric(float64(len(crds)), "CRDs")
}

// validateOnce is the floor for one CRD: one decode into its typed form (v1 or v1beta1),
// then the same validation a repair round runs (validateTyped).
func validateOnce(u *unstructured.Unstructured) error {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	var typed runtime.Object = &apiextensionsv1.CustomResourceDefinition{}
	if u.GetAPIVersion() == groupVersionV1beta1 {
		typed = &apiextensionsv1beta1.CustomResourceDefinition{}
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, typed); err != nil {
		return err
	}
	_, err = validateTyped(typed)
	return err
}
