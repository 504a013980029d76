package memo

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestFIFO(t *testing.T) {
	type op struct {
		put, forget string // one of them
		max         int
	}
	for _, tc := range []struct {
		name string
		ops  []op
		kept []string // in order, oldest first
		gone []string
	}{
		{name: "under the bound keeps all", ops: []op{{put: "a", max: 3}, {put: "b", max: 3}}, kept: []string{"a", "b"}},
		{name: "over the bound forgets the oldest", ops: []op{{put: "a", max: 2}, {put: "b", max: 2}, {put: "c", max: 2}}, kept: []string{"b", "c"}, gone: []string{"a"}},
		{name: "a key put again keeps its place", ops: []op{{put: "a", max: 2}, {put: "b", max: 2}, {put: "a", max: 2}, {put: "c", max: 2}}, kept: []string{"b", "c"}, gone: []string{"a"}},
		{name: "forget frees a place", ops: []op{{put: "a", max: 2}, {put: "b", max: 2}, {forget: "a"}, {put: "c", max: 2}}, kept: []string{"b", "c"}, gone: []string{"a"}},
		{name: "forget of an absent key changes nothing", ops: []op{{put: "a", max: 2}, {forget: "z"}}, kept: []string{"a"}, gone: []string{"z"}},
		{name: "a smaller bound trims to it", ops: []op{{put: "a", max: 5}, {put: "b", max: 5}, {put: "c", max: 5}, {put: "d", max: 1}}, kept: []string{"d"}, gone: []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f FIFO[string]
			for _, o := range tc.ops {
				if o.forget != "" {
					f.Forget(o.forget)
					continue
				}
				f.Put(o.put, "value of "+o.put, o.max)
			}
			if !slices.Equal(f.order, tc.kept) || f.Len() != len(tc.kept) {
				t.Errorf("kept %v (%d entries), want %v", f.order, f.Len(), tc.kept)
			}
			for _, k := range tc.kept {
				if v, ok := f.Get(k); !ok || v != "value of "+k {
					t.Errorf("Get(%q) = %q, %v", k, v, ok)
				}
			}
			for _, k := range tc.gone {
				if _, ok := f.Get(k); ok {
					t.Errorf("Get(%q) found an entry that should be gone", k)
				}
			}
		})
	}
}

// The first value put for a key is the one kept: concurrent workers that computed the same
// thing keep one copy.
func TestFIFOFirstPutWins(t *testing.T) {
	var f FIFO[*int]
	one, two := 1, 2
	f.Put("k", &one, 4)
	f.Put("k", &two, 4)
	if got, _ := f.Get("k"); got != &one {
		t.Fatalf("kept %d, want the first value", *got)
	}
}

func TestFIFOConcurrent(t *testing.T) {
	var f FIFO[int]
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				k := fmt.Sprint((w + i) % 40)
				f.Put(k, i, 16)
				f.Get(k)
				if i%7 == 0 {
					f.Forget(k)
				}
			}
		})
	}
	wg.Wait()
	if n := f.Len(); n > 16 || n != len(f.order) {
		t.Fatalf("%d entries and %d keys in order, want equal and at most 16", n, len(f.order))
	}
}
