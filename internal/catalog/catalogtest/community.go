// Package catalogtest finds the shared community catalog for tests and benchmarks.
package catalogtest

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvCommunityCatalog points at a copy of the community-operators catalog.
const EnvCommunityCatalog = "OPM_COMMUNITY_CATALOG"

// CommunityPath returns the shared community catalog: $OPM_COMMUNITY_CATALOG, or
// ../shared/catalogs/community-operators beside the checkout (the directory holding go.mod).
// It skips the test with a clear message when the catalog is absent; it is test data read
// in place and never copied into the project.
func CommunityPath(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(EnvCommunityCatalog); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("community catalog not found at $%s=%s: %v", EnvCommunityCatalog, dir, err)
		}
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "tools")); err == nil { // the main module, not a tools module
				cat := filepath.Join(filepath.Dir(dir), "shared", "catalogs", "community-operators")
				if _, err := os.Stat(cat); err != nil {
					t.Skipf("community catalog not found at %s (set $%s to use another copy)", cat, EnvCommunityCatalog)
				}
				return cat
			}
		}
		if filepath.Dir(dir) == dir {
			t.Skipf("community catalog not found: no operator-manager checkout above %s (set $%s)", wd, EnvCommunityCatalog)
			return ""
		}
	}
}
