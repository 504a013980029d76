package fleet

import (
	"testing"
	"time"
)

func TestSplitStep(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	seen := func(ms int, name string, gen int64, done bool) deploymentSeen {
		return deploymentSeen{at: at(ms), name: name, generation: gen, rolledOut: done}
	}
	tests := []struct {
		name   string
		seen   []deploymentSeen
		end    int
		want   phaseSplit
		wantOK bool
	}{
		{
			name: "one Deployment: changed at 160 ms, rolled out at 460, the step returned at 530",
			seen: []deploymentSeen{
				seen(-500, "op", 8, true), // the round before
				seen(160, "op", 9, false), seen(180, "op", 9, false), seen(400, "op", 9, false), seen(460, "op", 9, true),
			},
			end: 530, want: phaseSplit{Before: 0.16, Rollout: 0.3, After: 0.07}, wantOK: true,
		},
		{
			name: "two Deployments: from the first change to the last rollout",
			seen: []deploymentSeen{
				seen(-100, "a", 3, true), seen(-100, "b", 5, true),
				seen(100, "a", 4, false), seen(150, "b", 6, false), seen(300, "a", 4, true), seen(350, "b", 6, true),
			},
			end: 400, want: phaseSplit{Before: 0.1, Rollout: 0.25, After: 0.05}, wantOK: true,
		},
		{
			name: "a status change of the generation before is no change",
			seen: []deploymentSeen{seen(-100, "op", 8, false), seen(50, "op", 8, true)},
			end:  100,
		},
		{
			name: "not rolled out within the step: no split",
			seen: []deploymentSeen{seen(100, "op", 9, false), seen(600, "op", 9, true)},
			end:  500,
		},
		{
			name: "rolled out at an older generation than it was changed to: not this step's rollout",
			seen: []deploymentSeen{seen(-100, "op", 8, true), seen(100, "op", 9, false), seen(120, "op", 10, false), seen(200, "op", 9, true)},
			end:  300,
		},
		{name: "nothing seen", end: 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := splitStep(tt.seen, t0, at(tt.end))
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("splitStep = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestMedianSplit(t *testing.T) {
	got := medianSplit([]phaseSplit{{0.2, 0.3, 0.07}, {0.1, 0.5, 0.05}, {0.3, 0.1, 0.09}})
	if want := (phaseSplit{Before: 0.2, Rollout: 0.3, After: 0.07}); got != want {
		t.Errorf("medianSplit = %+v, want %+v", got, want)
	}
}
