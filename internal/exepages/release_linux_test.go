package exepages

import (
	"sort"
	"testing"
)

// dataWord lives in the executable's writable data segment (an initialised variable).
var dataWord = 1

// exeResident sums the resident KiB of the executable's releasable mappings and of its
// writable ones.
func exeResident(t *testing.T) (readOnly, writable int64) {
	t.Helper()
	exe, maps, err := selfMappings()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		switch {
		case Releasable(m, exe):
			readOnly += m.RssKiB
		case m.Path == exe:
			writable += m.RssKiB
		}
	}
	return readOnly, writable
}

// The test binary's own start (init of testing, os, fmt and the rest) leaves its code and
// read-only data resident; Release gives them back, and the process goes on running code
// and reading data from those pages, and keeps what it wrote.
func TestReleaseDropsTheExecutablesReadOnlyPages(t *testing.T) {
	dataWord = 7 // was 1 in the binary's data segment: releasing that would bring the 1 back
	before, writableBefore := exeResident(t)
	if before == 0 {
		t.Fatal("no resident read-only page of the executable before Release: nothing to test")
	}
	released, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if released < before/2 {
		t.Errorf("Release reported %d KiB released of %d KiB resident", released, before)
	}
	after, writableAfter := exeResident(t)
	t.Logf("read-only pages of the executable: %d KiB resident before, %d KiB after (Release reported %d); writable: %d and %d KiB",
		before, after, released, writableBefore, writableAfter)
	if after >= before {
		t.Errorf("resident read-only pages of the executable did not fall: %d KiB before, %d KiB after", before, after)
	}
	// Code and data from the released pages still work: they come back on use.
	s := []string{"c", "a", "b"}
	sort.Strings(s)
	if s[0] != "a" {
		t.Errorf("sorting after Release gave %v", s)
	}
	if dataWord != 7 {
		t.Errorf("a variable of the writable data segment is %d after Release, was set to 7", dataWord)
	}
	if writableAfter == 0 {
		t.Error("the writable segment was released too")
	}
}
