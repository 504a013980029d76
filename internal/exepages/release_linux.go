package exepages

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Release drops the executable's releasable mappings from the process's resident set
// and returns how much of them was resident (KiB). Nothing is lost: see the package
// documentation.
func Release() (releasedKiB int64, err error) {
	exe, maps, err := selfMappings()
	if err != nil {
		return 0, err
	}
	for _, m := range maps {
		if !Releasable(m, exe) {
			continue
		}
		// The raw system call takes the range as numbers: the pages are the executable's,
		// not memory Go manages, so no Go pointer to them is ever made.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.Start, m.End-m.Start, unix.MADV_DONTNEED); errno != 0 {
			return releasedKiB, fmt.Errorf("releasing %s %x-%x: %w", m.Perms, m.Start, m.End, errno)
		}
		releasedKiB += m.RssKiB
	}
	return releasedKiB, nil
}

// selfMappings returns the running executable's path and the process's mappings.
func selfMappings() (exe string, maps []Mapping, err error) {
	exe, err = os.Readlink("/proc/self/exe")
	if err != nil {
		return "", nil, fmt.Errorf("finding the executable: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	maps, err = ParseSmaps(f)
	return exe, maps, err
}
