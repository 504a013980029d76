// Package backoff is how the controllers retry a reconcile that returned an error: at
// once, then twice as long each time, up to a ceiling. client-go's default ceiling is
// 1000 s, so a fault a person mends after twenty minutes (a policy webhook back up, a
// role granted) would wait up to another seventeen before the manager looked again:
// nothing watched tells it the cause is gone. The ceiling here is the manager's
// --max-retry-delay (a minute by default), so a mended fault goes on within it.
package backoff

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultMaxDelay is the ceiling when none is given.
const DefaultMaxDelay = time.Minute

// Options are a controller's options: workers reconciles at once (at least one), and
// failed reconciles retried from 5 ms, doubling, up to maxDelay (zero: DefaultMaxDelay),
// all retries together at most 10 a second in bursts of 100, as client-go's default.
func Options(workers int, maxDelay time.Duration) controller.Options {
	return controller.Options{MaxConcurrentReconciles: max(1, workers), RateLimiter: RateLimiter(maxDelay)}
}

// RateLimiter is Options' retry limiter.
func RateLimiter(maxDelay time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, maxDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
