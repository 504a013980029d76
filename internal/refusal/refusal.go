// Package refusal tells a write the API server refused for what was asked (a
// ResourceQuota, an admission policy or webhook, a validation rule, the manager's own
// rights) from one that failed on the way (a conflict, a timeout, a server error). A
// refusal stands until a person changes something the manager does not watch (the quota,
// the policy, a role), so it is said where a person looks (a condition with reason
// RefusedByAPIServer, a Warning event) and tried again at a steady pace; a failure on the
// way is retried with the controller's backoff, as any reconcile error.
package refusal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// RetryAfter is how often a refused write is tried again: a quota raised or a policy
// mended goes on by itself within this long.
const RetryAfter = 30 * time.Second

// Is says whether err, or an error it wraps, is the API server's refusal of the request
// itself. A conflict is not one (the object changed: read it again), nor is NotFound (the
// caller decides what a missing object means), nor a write into a namespace being deleted
// (Forbidden, but nothing for a person to mend: the namespace and what was to go into it
// are on their way out).
func Is(err error) bool {
	// Each test unwraps err itself, and is false for nil and for what is not the API
	// server's answer.
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return false
	}
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsMethodNotSupported(err)
}

// Message is what a condition and a Warning event say of a refused write err: the
// refusal, quoted, and when it is tried again.
func Message(err error) string {
	return fmt.Sprintf("the API server refused a write this change needs (tried again every %s): %v", RetryAfter, err)
}

// Momentary says whether err is a failure on the way that the controller's backoff mends
// by itself, with nothing for a person to see: a conflict (read again), the API server
// busy, timing out or unavailable, a connection that broke, a context that ended, a write
// into a namespace being deleted. Any other error a reconcile returns is said where a
// person looks (a condition with reason ReconcileError) while it is retried: one that
// stays is a fault to mend or a bug to report, never a silent loop.
func Momentary(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err),
		apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause),
		utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
