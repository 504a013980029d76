// Package exepages gives back the pages of the running executable that its start, or a
// burst of work now over, used: Release once, Scavenger after each quiet period.
//
// A Go binary that links client-go, controller-runtime and the API server's CRD
// validation runs the init functions of about 1,200 packages before main, one in each
// package's part of the code and with its type tables. The kernel maps file pages around
// each fault (64 KiB on most kernels, whole large folios on filesystems that use them), so
// the start alone leaves 40 to 70 MiB of the binary resident: most of its code and
// read-only data, of which a long-running manager uses a fraction again.
//
// Release unmaps the executable's read-only mappings (madvise MADV_DONTNEED). They are
// clean, private, file-backed pages: dropping them loses nothing, and a page the manager
// touches again is mapped back from the page cache on its next use (a minor fault). What
// stays resident afterwards is what the work uses. A burst of work (a fleet's installs)
// leaves as many pages mapped again; Scavenger releases them once the work has been quiet
// for a while. The pages stay in the page cache, shared and reclaimable, until the kernel
// needs the memory; a release changes what the process holds, not what was read from
// disk.
package exepages

// Mapping is one mapping of the process's address space, as /proc/self/smaps lists it.
type Mapping struct {
	Start, End uintptr
	// Perms is the mapping's permissions, such as "r-xp".
	Perms string
	// Path is the mapped file ("" for anonymous memory).
	Path string
	// RssKiB is how much of the mapping is resident.
	RssKiB int64
	// AnonymousKiB is how much of it is anonymous: pages of a file mapping that were
	// written (copy-on-write), such as relocations of a position-independent binary.
	AnonymousKiB int64
}

// Releasable reports whether a mapping is the executable's and may be dropped without
// losing anything: read-only (never written through this mapping) and holding no
// anonymous page (dropping a copy-on-write page would bring back the file's content in
// place of what was written, such as a relocated pointer).
func Releasable(m Mapping, exe string) bool {
	if exe == "" || m.Path != exe && m.Path != exe+" (deleted)" {
		return false
	}
	if len(m.Perms) < 2 || m.Perms[0] != 'r' || m.Perms[1] == 'w' {
		return false
	}
	return m.AnonymousKiB == 0 && m.End > m.Start
}
