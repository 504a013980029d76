package catalogtest

import (
	"path/filepath"
	"testing"
)

func TestCommunityPathFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvCommunityCatalog, dir)
	if got := CommunityPath(t); got != dir {
		t.Errorf("got %q, want %q", got, dir)
	}
}

func TestCommunityPathSkipsWhenAbsent(t *testing.T) {
	t.Setenv(EnvCommunityCatalog, filepath.Join(t.TempDir(), "absent"))
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		CommunityPath(t)
		t.Error("CommunityPath returned for an absent catalog")
	})
	if !skipped {
		t.Error("not skipped")
	}
}
