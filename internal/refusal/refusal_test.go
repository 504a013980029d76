package refusal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestIs(t *testing.T) {
	gr := schema.GroupResource{Group: "operators.coreos.com.operator-manager.domain", Resource: "blueprints"}
	gk := schema.GroupKind{Group: gr.Group, Kind: "Blueprint"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a quota", apierrors.NewForbidden(gr, "cache", errors.New("exceeded quota: bpq, requested: count/blueprints=1")), true},
		{"a quota, wrapped", fmt.Errorf("creating Blueprint q1/cache: %w", apierrors.NewForbidden(gr, "cache", errors.New("exceeded quota"))), true},
		{"a validation rule or a policy", apierrors.NewInvalid(gk, "cache", field.ErrorList{field.Required(field.NewPath("metadata", "labels", "team"), "")}), true},
		{"a bad request", apierrors.NewBadRequest("no"), true},
		{"too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true},
		{"a conflict: read again", apierrors.NewConflict(gr, "cache", errors.New("modified")), false},
		{"not found: the caller's to judge", apierrors.NewNotFound(gr, "cache"), false},
		{"a namespace being deleted: nothing to mend", namespaceTerminating(gr), false},
		{"a timeout on the way", apierrors.NewTimeoutError("slow", 1), false},
		{"a server error", apierrors.NewInternalError(errors.New("etcd")), false},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), false},
		{"not the API server's", errors.New("dial tcp: connection refused"), false},
	} {
		if got := Is(tc.err); got != tc.want {
			t.Errorf("%s: Is(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// namespaceTerminating is the error the API server's NamespaceLifecycle admission gives a
// write into a namespace being deleted: Forbidden, with the NamespaceTerminating cause.
func namespaceTerminating(gr schema.GroupResource) error {
	err := apierrors.NewForbidden(gr, "cache", errors.New("unable to create new content in namespace q1 because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace q1 is being terminated", Field: "metadata.namespace"})
	return fmt.Errorf("creating Blueprint q1/cache: %w", err)
}

func TestMomentary(t *testing.T) {
	gr := schema.GroupResource{Group: "operators.coreos.com.operator-manager.domain", Resource: "blueprints"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a conflict: read again", fmt.Errorf("patching: %w", apierrors.NewConflict(gr, "cache", errors.New("modified"))), true},
		{"a timeout", apierrors.NewTimeoutError("slow", 1), true},
		{"a server timeout", apierrors.NewServerTimeout(gr, "get", 1), true},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), true},
		{"unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"a namespace being deleted", namespaceTerminating(gr), true},
		{"the connection refused", fmt.Errorf("listing: %w", refused), true},
		{"a context ended", fmt.Errorf("waiting: %w", context.DeadlineExceeded), true},
		{"forbidden: the manager's rights", apierrors.NewForbidden(gr, "cache", errors.New("cannot get")), false},
		{"a server error (a webhook that fails): said", apierrors.NewInternalError(errors.New("failed calling webhook")), false},
		{"not found", apierrors.NewNotFound(gr, "cache"), false},
		{"the manager's own error", errors.New(`invalid resource name "a/b/c": [may not contain '/']`), false},
	} {
		if got := Momentary(tc.err); got != tc.want {
			t.Errorf("%s: Momentary(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
