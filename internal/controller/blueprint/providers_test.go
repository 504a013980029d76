package blueprint

import (
	"strings"
	"testing"

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
