package kubeapply

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/refusal"
)

// Refusal is how the API server refused a write: Reason is a condition reason, Permanent
// says whether trying again without a change can help. Forbidden is counted as permanent
// too: a right granted later is picked up by the next revision or retry, but an
// installation must not wait for one forever.
type Refusal struct {
	Reason    string
	Permanent bool
}

// Classify sorts an apply error: the API server's refusals of the request itself
// (refusal.Is: Forbidden, Invalid, a bad request, too large), and what no retry changes
// (an immutable field, a kind the API server does not serve, a patch it cannot build) are
// permanent; a namespace being deleted, conflicts, timeouts, throttling and server errors
// are transient.
func Classify(err error) Refusal {
	switch {
	case err == nil:
		return Refusal{}
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Forbidden, but for a namespace being deleted: it will be gone, and then what goes
		// into it is left out (a target namespace) or nothing is left to install.
		return Refusal{Reason: "NamespaceTerminating"}
	case apierrors.IsForbidden(err):
		return Refusal{Reason: omv1.ReasonInsufficientPermissions, Permanent: true}
	case refusal.Is(err), meta.IsNoMatchError(err), isNotServed(err), strings.Contains(err.Error(), "field is immutable"),
		// Server-side apply cannot even build the patch (an object with two entries of one
		// key in a keyed list, say); the API server answers 500, but no retry changes it.
		strings.Contains(err.Error(), "failed to create typed patch object"):
		return Refusal{Reason: omv1.ReasonInstallFailed, Permanent: true}
	default:
		return Refusal{Reason: "ApplyError"}
	}
}

// isNotServed is a 404 for the resource type itself (the group/version is not served),
// not for one object.
func isNotServed(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}
