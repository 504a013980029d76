package kubeapply

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, tc := range []struct {
		name      string
		err       error
		reason    string
		permanent bool
	}{
		{"forbidden", apierrors.NewForbidden(gr, "a", errors.New("no")), omv1.ReasonInsufficientPermissions, true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "a", nil), omv1.ReasonInstallFailed, true},
		{"immutable", errors.New(`Deployment "a" is invalid: spec.selector: field is immutable`), omv1.ReasonInstallFailed, true},
		// eclipse-che 7.26.0: an env variable given twice; the API server answers 500.
		{"no typed patch", fmt.Errorf("applying apps/v1 Deployment ns/a: %w", apierrors.NewInternalError(errors.New(
			`failed to create typed patch object (ns/a; apps/v1, Kind=Deployment): errors: .spec.template.spec.containers[name="x"].env: duplicate entries for key [name="A"]`))),
			omv1.ReasonInstallFailed, true},
		// The API server's answer to a write into a namespace being deleted (its admission's
		// NewForbidden with the NamespaceTerminating cause): retried, not a refusal for good.
		{"namespace terminating", namespaceTerminating(), "NamespaceTerminating", false},
		// An object over the API server's request limit: no retry makes it smaller.
		{"too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), omv1.ReasonInstallFailed, true},
		{"server timeout", apierrors.NewServerTimeout(gr, "apply", 1), "ApplyError", false},
		{"conflict-free internal error", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), "ApplyError", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Classify(tc.err)
			if r.Reason != tc.reason || r.Permanent != tc.permanent {
				t.Errorf("Classify = %+v, want %s permanent=%v", r, tc.reason, tc.permanent)
			}
		})
	}
}

// namespaceTerminating is the error the API server's NamespaceLifecycle admission gives a
// write into a namespace being deleted.
func namespaceTerminating() error {
	err := apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "r",
		errors.New("unable to create new content in namespace w because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace w is being terminated", Field: "metadata.namespace"})
	return fmt.Errorf("applying rbac.authorization.k8s.io/v1 Role w/r: %w", err)
}
