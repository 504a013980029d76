package blueprint

import (
	"context"
	"maps"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestProviderKey: every installation's key is a valid annotation key, distinct from its
// neighbours', also for the longest namespace and Subscription names.
func TestProviderKey(t *testing.T) {
	long := strings.Repeat("n", 63)
	seen := map[string]bool{}
	for _, tc := range [][2]string{{"a", "cache"}, {"b", "cache"}, {"a", "cache2"}, {long, "x"}, {long, "y"}, {long, strings.Repeat("s", 253)}, {"a-", "b"}, {"a", "-b"}} {
		k := ProviderKey(tc[0], tc[1])
		if errs := validation.IsQualifiedName(strings.TrimPrefix(k, "provided-by.")); len(errs) > 0 {
			t.Errorf("ProviderKey(%q, %q) = %q: %v", tc[0], tc[1], k, errs)
		}
		if seen[k] {
			t.Errorf("ProviderKey(%q, %q) = %q, as another installation's", tc[0], tc[1], k)
		}
		seen[k] = true
	}
	if got := ProviderKey("ns-a", "cache"); got != "provided-by.operator-manager.domain/ns-a.cache" {
		t.Errorf("a short key is readable: %s", got)
	}
}

// TestCarryProviders: the CRD applied carries this installation's record and every other
// installation's record of the live CRD, and is conditional on the live resourceVersion;
// annotations that are not provider records are not taken from the live CRD.
func TestCarryProviders(t *testing.T) {
	mine, other := ProviderKey("a", "cache"), ProviderKey("b", "cache")
	tests := []struct {
		name   string
		live   *apiextensionsv1.CustomResourceDefinition
		wantRV string
		want   map[string]string
	}{
		{name: "created", want: map[string]string{"kept": "x", mine: "a/cache cache.v2"}},
		{name: "another provides it", live: crdWith("17", map[string]string{other: "b/cache cache.v1", "by-hand": "y"}), wantRV: "17",
			want: map[string]string{"kept": "x", mine: "a/cache cache.v2", other: "b/cache cache.v1"}},
		{name: "own older record replaced", live: crdWith("18", map[string]string{mine: "a/cache cache.v1"}), wantRV: "18",
			want: map[string]string{"kept": "x", mine: "a/cache cache.v2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crd := crdWith("", map[string]string{"kept": "x"})
			carryProviders(crd, tc.live, mine, "a/cache cache.v2")
			if crd.ResourceVersion != tc.wantRV {
				t.Errorf("resourceVersion %q, want %q", crd.ResourceVersion, tc.wantRV)
			}
			if !maps.Equal(crd.Annotations, tc.want) {
				t.Errorf("annotations %v, want %v", crd.Annotations, tc.want)
			}
		})
	}
}

func crdWith(rv string, annotations map[string]string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.ResourceVersion, crd.Annotations = rv, annotations
	return crd
}

// TestProvidersOfCRD: a CRD's event brings back every installation its provider records
// name, and nothing for other annotations or a malformed record.
func TestProvidersOfCRD(t *testing.T) {
	crd := crdWith("1", map[string]string{
		ProviderKey("a", "cache"):             "a/cache cache.v2",
		ProviderKey("b", "cache"):             "b/cache cache.v1",
		ProviderAnnotationPrefix + "broken":   "no-slash",
		"operator-manager.domain/crd-package": "cache",
	})
	got := map[string]bool{}
	for _, r := range providersOfCRD(context.Background(), crd) {
		got[r.String()] = true
	}
	if len(got) != 2 || !got["a/cache"] || !got["b/cache"] {
		t.Errorf("providersOfCRD = %v, want a/cache and b/cache", got)
	}
}
