package cli

import (
	"errors"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestSetGoMemoryLimit: Go's soft memory limit becomes the ratio of the container's limit;
// GOMEMLIMIT and AUTOMEMLIMIT rule when set; no limit, no cgroup or a ratio of 0 leave
// it as it was; a ratio out of range is refused by name.
func TestSetGoMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	const mib = 1 << 20
	noCgroup := func() (uint64, error) { return 0, memlimit.ErrNoCgroup }
	noLimit := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	for _, tc := range []struct {
		name      string
		env       map[string]string
		ratio     float64
		limit     memlimit.Provider
		want      int64 // Go's limit after; 0: unchanged
		wantSaid  string
		wantError string
	}{
		{name: "a share of the container's limit", ratio: 0.9, limit: memlimit.Limit(256 * mib), want: 241591910, wantSaid: "230 MiB"},
		{name: "another share", ratio: 0.5, limit: memlimit.Limit(200 * mib), want: 100 * mib, wantSaid: "100 MiB"},
		{name: "off", ratio: 0, limit: memlimit.Limit(256 * mib)},
		{name: "no cgroup", ratio: 0.9, limit: noCgroup},
		{name: "no limit", ratio: 0.9, limit: noLimit},
		{name: "GOMEMLIMIT rules", ratio: 0.9, limit: memlimit.Limit(256 * mib), env: map[string]string{"GOMEMLIMIT": "64MiB"}, wantSaid: "GOMEMLIMIT: 64MiB"},
		{name: "AUTOMEMLIMIT's ratio rules", ratio: 0.9, limit: memlimit.Limit(200 * mib), env: map[string]string{"AUTOMEMLIMIT": "0.5"}, want: 100 * mib, wantSaid: "100 MiB"},
		{name: "AUTOMEMLIMIT off", ratio: 0.9, limit: memlimit.Limit(256 * mib), env: map[string]string{"AUTOMEMLIMIT": "off"}},
		{name: "a ratio out of range", ratio: 1.5, limit: memlimit.Limit(256 * mib), wantError: "--memory-limit-ratio 1.5"},
		{name: "AUTOMEMLIMIT not a share", ratio: 0.9, limit: memlimit.Limit(256 * mib), env: map[string]string{"AUTOMEMLIMIT": "90%"}, wantError: `AUTOMEMLIMIT="90%"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if _, ok := tc.env["AUTOMEMLIMIT"]; !ok {
				// The library reads AUTOMEMLIMIT when it is present at all, even empty.
				unsetenv(t, "AUTOMEMLIMIT")
			}
			debug.SetMemoryLimit(math.MaxInt64)
			said, err := setGoMemoryLimit(tc.ratio, tc.limit)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := debug.SetMemoryLimit(-1)
			want := tc.want
			if want == 0 {
				want = math.MaxInt64
			}
			if got != want {
				t.Errorf("Go's memory limit %d MiB, want %d MiB", got/mib, want/mib)
			}
			if !strings.Contains(said, tc.wantSaid) || (tc.wantSaid == "" && said != "") {
				t.Errorf("said %q, want it to say %q", said, tc.wantSaid)
			}
		})
	}
	// A limit that cannot be read is said, and the manager runs on by GOGC alone.
	unsetenv(t, "AUTOMEMLIMIT")
	debug.SetMemoryLimit(math.MaxInt64)
	said, err := setGoMemoryLimit(0.9, func() (uint64, error) { return 0, errors.New("memory.max unreadable") })
	if err != nil || !strings.Contains(said, "memory.max unreadable") || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("an unreadable limit: said %q, error %v, Go's limit %d; want it said, no error, the limit unchanged", said, err, debug.SetMemoryLimit(-1))
	}
}

// unsetenv removes an environment variable for the rest of the test (t.Setenv restores it).
func unsetenv(t *testing.T, key string) {
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
