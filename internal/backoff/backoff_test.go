package backoff

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRateLimiterCapsTheBackoff(t *testing.T) {
	item := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "cache"}}
	for _, tc := range []struct {
		name string
		max  time.Duration
		want time.Duration
	}{
		{"the default: a minute", 0, time.Minute},
		{"as configured", 30 * time.Second, 30 * time.Second},
	} {
		rl := RateLimiter(tc.max)
		if first := rl.When(item); first > 10*time.Millisecond {
			t.Errorf("%s: the first retry waits %s, want at once", tc.name, first)
		}
		var last time.Duration
		for range 40 { // 5 ms doubled 40 times is far past any ceiling
			last = rl.When(item)
		}
		if last != tc.want {
			t.Errorf("%s: after 40 failures the retry waits %s, want the ceiling %s", tc.name, last, tc.want)
		}
		rl.Forget(item)
		if again := rl.When(item); again > 10*time.Millisecond {
			t.Errorf("%s: after a success the next failure waits %s, want at once again", tc.name, again)
		}
	}
	if o := Options(0, 0); o.MaxConcurrentReconciles != 1 || o.RateLimiter == nil {
		t.Errorf("Options(0, 0) = %d workers, limiter %v: want one worker and the capped limiter", o.MaxConcurrentReconciles, o.RateLimiter)
	}
}
