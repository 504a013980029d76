package csv

import (
	"context"
	"os"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.APIOnly, &env)) }

// TestApplyConversionHoldsToTheRead, on a real API server: a conversion decided from a
// read of the CRD that another write has changed since (another installation setting its
// own webhook) is refused as a Conflict and writes nothing; from a fresh read it goes
// through.
func TestApplyConversionHoldsToTheRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.conversion.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "conversion.test", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	webhook := func(ns string) map[string]any {
		return map[string]any{"strategy": "Webhook", "webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig":             map[string]any{"service": map[string]any{"namespace": ns, "name": "converter", "path": "/convert", "port": int64(443)}},
		}}
	}
	// Read once Established: the API server's own status writes come before.
	read := &apiextensionsv1.CustomResourceDefinition{}
	for established := false; !established; time.Sleep(50 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, read); err != nil {
			t.Fatal(err)
		}
		for _, cond := range read.Status.Conditions {
			established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	// Another installation takes the conversion between this one's read and its write.
	theirs := read.DeepCopy()
	theirs.ResourceVersion = "" // whatever the CRD is now
	if err := applyConversion(ctx, c, theirs, webhook("theirs")); err != nil {
		t.Fatal(err)
	}
	if err := applyConversion(ctx, c, read, webhook("mine")); !apierrors.IsConflict(err) {
		t.Fatalf("a conversion applied from a stale read: %v, want a Conflict", err)
	}
	now := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, now); err != nil {
		t.Fatal(err)
	}
	if got := now.Spec.Conversion.Webhook.ClientConfig.Service.Namespace; got != "theirs" {
		t.Errorf("the CRD converts through %q after the refused write, want theirs", got)
	}
	if err := applyConversion(ctx, c, now, map[string]any{"strategy": "None"}); err != nil {
		t.Fatalf("from a fresh read: %v", err)
	}
}
