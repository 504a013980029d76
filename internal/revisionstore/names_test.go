package revisionstore

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestNamesAreValidForEveryBlueprintName checks that Secret names and label values stay
// valid for Blueprint names up to the 253 characters the API server allows, including cuts
// that fall on a '.' or '-', for every chunk an entry may have.
func TestNamesAreValidForEveryBlueprintName(t *testing.T) {
	long := func(n int, at string) string {
		s := strings.Repeat("a", n)
		cut := maxBlueprintPart - 11
		return s[:cut-1] + at + s[cut+len(at)-1:]
	}
	names := []string{
		"a", "cache-operator", strings.Repeat("b", 63), strings.Repeat("c", maxBlueprintPart),
		strings.Repeat("d", maxBlueprintPart+1), strings.Repeat("e", 253),
		long(253, "."), long(253, "-"), long(253, ".-."), long(240, "a.b"),
	}
	seen := map[string]string{}
	for _, bp := range names {
		base := SecretName(bp, testDigest)
		for _, i := range []int{0, 1, 9, maxChunks - 1} {
			if errs := validation.IsDNS1123Subdomain(chunkName(base, i)); len(errs) > 0 {
				t.Errorf("chunk %d of Blueprint %q (%d characters): %q: %v", i, bp, len(bp), chunkName(base, i), errs)
			}
		}
		if prev, ok := seen[base]; ok {
			t.Errorf("Blueprints %q and %q share the Secret name %s", prev, bp, base)
		}
		seen[base] = bp
		for k, v := range labels(bp, testDigest) {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("label %s=%q of Blueprint %q: %v", k, v, bp, errs)
			}
		}
	}
	if got, want := SecretName("cache-operator", testDigest), "operator-manager.bundle.v1.cache-operator.0123456789abcdef"; got != want {
		t.Errorf("SecretName = %s, want %s", got, want)
	}
	if got := chunkName("x", 2); got != "x.2" {
		t.Errorf("chunkName(x, 2) = %s", got)
	}
}
