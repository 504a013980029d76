package kubeapply_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/kubeapply"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.APIOnly, &env)) }

// TestApplyIfUnchanged, on a real API server: an apply holding to the version it read is
// refused once someone else wrote the object since (a Conflict, nothing written), and goes
// through at the current version; ApplyAndGet drops a version its object carries and
// applies whatever the object is now; with no version, ApplyIfUnchanged creates.
func TestApplyIfUnchanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(rv string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "default", ResourceVersion: rv}, Data: data}
	}
	if _, err := kubeapply.ApplyIfUnchanged(ctx, c, cm("", map[string]string{"mine": "1"})); err != nil {
		t.Fatalf("create with no version: %v", err)
	}
	read := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "held"}, read); err != nil {
		t.Fatal(err)
	}
	// Someone else's write, between the read and the apply.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"data":{"theirs":"1"}}`))
	if err := c.Patch(ctx, read.DeepCopy(), patch); err != nil {
		t.Fatal(err)
	}
	_, err = kubeapply.ApplyIfUnchanged(ctx, c, cm(read.ResourceVersion, map[string]string{"mine": "2"}))
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply at the version read before another write: %v, want a Conflict", err)
	}
	now := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "held"}, now); err != nil {
		t.Fatal(err)
	}
	if now.Data["mine"] != "1" || now.Data["theirs"] != "1" {
		t.Errorf("data %v after the refused apply, want it as the other write left it", now.Data)
	}
	if _, err := kubeapply.ApplyIfUnchanged(ctx, c, cm(now.ResourceVersion, map[string]string{"mine": "2"})); err != nil {
		t.Fatalf("apply at the current version: %v", err)
	}
	if _, err := kubeapply.ApplyAndGet(ctx, c, cm(read.ResourceVersion, map[string]string{"mine": "3"})); err != nil {
		t.Fatalf("ApplyAndGet with a stale version: %v, want the version dropped", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "held"}, now); err != nil {
		t.Fatal(err)
	}
	if now.Data["mine"] != "3" {
		t.Errorf("data %v, want mine=3", now.Data)
	}
}
