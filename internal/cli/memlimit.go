package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// setGoMemoryLimit sets Go's soft memory limit (GOMEMLIMIT) to ratio of the memory the
// container may use (limit, read from the process's cgroup in a cluster), and says what
// it did. Without it, Go collects by GOGC alone: a burst of installations grows the heap
// by half its live size before each collection, and a fleet larger than any measured
// could take the process past its container's limit, where the kernel kills it. With it,
// Go collects harder as the heap nears the limit, spending CPU instead. Below the limit
// nothing changes: the shipped Deployment's 256 MiB gives 230, far above the 160 MiB a
// fleet of 159 installing at once peaks at (BENCHMARKS.md).
//
// GOMEMLIMIT (a limit of its own) and AUTOMEMLIMIT (another ratio, or "off") rule when
// set, as the library reads them. A ratio of 0 turns it off; no cgroup or no limit (a
// local run) leaves Go's limit as it is.
func setGoMemoryLimit(ratio float64, limit memlimit.Provider) (string, error) {
	if math.IsNaN(ratio) || ratio < 0 || ratio > 1 {
		return "", fmt.Errorf("--memory-limit-ratio %v: a share of the container's memory limit, from 0 (off) to 1", ratio)
	}
	if ratio == 0 {
		return "", nil
	}
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return "Go memory limit from GOMEMLIMIT: " + v, nil
	}
	if v, ok := os.LookupEnv("AUTOMEMLIMIT"); ok {
		if v == "off" {
			return "", nil
		}
		if r, err := strconv.ParseFloat(v, 64); err != nil || math.IsNaN(r) || r <= 0 || r > 1 {
			return "", fmt.Errorf("AUTOMEMLIMIT=%q: a share of the container's memory limit, above 0 and at most 1, or \"off\"", v)
		}
	}
	set, err := memlimit.Set(memlimit.WithRatio(ratio), memlimit.WithProvider(limit))
	switch {
	case errors.Is(err, memlimit.ErrNoCgroup):
		return "", nil
	case err != nil:
		// Not a reason to stop: the manager runs as before, by GOGC alone.
		return fmt.Sprintf("Go memory limit left unset: %v", err), nil
	case set == math.MaxInt64:
		return "", nil // the cgroup sets no limit (the library's ErrNoLimit, taken as no limit)
	}
	return fmt.Sprintf("Go memory limit %d MiB: a share of the container's memory limit (--memory-limit-ratio, AUTOMEMLIMIT)", set>>20), nil
}
