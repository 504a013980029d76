package fleet

import "testing"

func TestMedianPair(t *testing.T) {
	cases := []struct {
		name  string
		pairs []pairFigure
		want  int
	}{
		{"one", []pairFigure{{ManagerOverFloor: 1.9}}, 0},
		{"three: the middle ratio", []pairFigure{{ManagerOverFloor: 1.9}, {ManagerOverFloor: 1.4}, {ManagerOverFloor: 1.6}}, 2},
		{"four: the lower middle", []pairFigure{{ManagerOverFloor: 2}, {ManagerOverFloor: 1}, {ManagerOverFloor: 4}, {ManagerOverFloor: 3}}, 0},
		{"manager only: by its seconds", []pairFigure{{ManagerSeconds: 70}, {ManagerSeconds: 60}, {ManagerSeconds: 65}}, 2},
		{"floor only: by its seconds", []pairFigure{{FloorSeconds: 40}, {FloorSeconds: 38}, {FloorSeconds: 45}}, 0},
	}
	for _, c := range cases {
		if got := medianPair(c.pairs); got != c.want {
			t.Errorf("%s: got pair %d, want %d", c.name, got, c.want)
		}
	}
}

func TestMerge(t *testing.T) {
	f := fleetFigures{N: 3, ObjectsPerInstall: 12, Skipped: []string{"x"}}
	runs := []fleetFigures{
		{N: 99, FloorSeconds: 10, ManagerSeconds: 20, ManagerFailures: []string{"a failed"}},
		{FloorSeconds: 10, ManagerSeconds: 14, WritesPerInstall: 25},
		{FloorSeconds: 10, ManagerSeconds: 16, WritesPerInstall: 26},
	}
	f.merge(runs)
	if f.N != 3 || f.ObjectsPerInstall != 12 || len(f.Skipped) != 1 {
		t.Errorf("the fleet's description changed: %+v", f)
	}
	if f.PairOfMedian != 3 || f.ManagerSeconds != 16 || f.WritesPerInstall != 26 {
		t.Errorf("want the figures of pair 3 (ratio 1.6), got pair %d, %v s, %v writes", f.PairOfMedian, f.ManagerSeconds, f.WritesPerInstall)
	}
	if len(f.Pairs) != 3 || f.Pairs[0].ManagerOverFloor != 2 {
		t.Errorf("pairs: %+v", f.Pairs)
	}
	if len(f.ManagerFailures) != 1 {
		t.Errorf("a failure of another pair was lost: %v", f.ManagerFailures)
	}
	one := fleetFigures{N: 3}
	one.merge([]fleetFigures{{FloorSeconds: 10, ManagerSeconds: 15}})
	if one.Pairs != nil || one.PairOfMedian != 0 || one.ManagerSeconds != 15 {
		t.Errorf("a single run: %+v", one)
	}
}

func TestMedian(t *testing.T) {
	cases := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0.7}, 0.7},
		{[]float64{0.9, 0.3, 0.5}, 0.5},
		{[]float64{0.4, 0.1, 0.8, 0.6}, 0.5},
	}
	for _, c := range cases {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
