//go:build !linux

package exepages

// Release does nothing where the process's mappings cannot be read (not Linux).
func Release() (int64, error) { return 0, nil }
