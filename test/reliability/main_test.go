// Package reliability proves that operator-manager never gets stuck and never acts twice:
// killed after every single API write of an install, an upgrade, a failed upgrade and its
// automatic rollback, a manual rollback and an uninstall, it always converges; it survives
// an API server restart mid-upgrade; two replicas never act at once, and the standby
// finishes what the leader started; and a settled cluster costs no writes. Its tests share
// one full local cluster, apart from test/e2e's, and start their own manager processes.
package reliability

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/test/harness"
)

var cluster *harness.Cluster

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &cluster)) }

func ctx() context.Context { return context.Background() }

// newNamespace creates a namespace with a Directory CatalogSource "samples" of dir.
func newNamespace(t *testing.T, name, dir string) {
	t.Helper()
	if err := cluster.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	cs := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "samples", Namespace: name},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}
	if err := cluster.Client.Create(ctx(), cs); err != nil {
		t.Fatal(err)
	}
}

// apply creates an object from YAML in namespace.
func apply(t *testing.T, namespace, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(namespace)
	// The cases install cache-operator in many namespaces, some at once.
	harness.WatchOwnNamespace(u)
	// After TestAPIServerRestartMidUpgrade restarts the API server, it answers a create of a
	// Subscription with 503 "Resource kind ... not found. There can be a delay between when
	// CustomResourceDefinitions are created and when they are available" for a while: its
	// MutatingAdmissionPolicy dispatcher (the shipped policy that adds the finalizer) has
	// not learnt the kind's schema yet, and returns that error whatever the policy's
	// failurePolicy (Ignore). The next test's first create failed so. A 503 asks to be
	// tried again, as a kind discovery lists a moment late does.
	var err error
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		err = cluster.Client.Create(ctx(), u)
		if !(meta.IsNoMatchError(err) || apierrors.IsServiceUnavailable(err)) || time.Now().After(deadline) {
			break
		}
		t.Logf("creating %s %s, tried again: %v", u.GetKind(), u.GetName(), err)
	}
	if err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func getSub(t *testing.T, ns, name string) *omv1.Subscription {
	t.Helper()
	sub := &omv1.Subscription{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

func getBlueprint(t *testing.T, ns, name string) *omv1.Blueprint {
	t.Helper()
	bp := &omv1.Blueprint{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp); err != nil {
		t.Fatal(err)
	}
	return bp
}

func ready(sub *omv1.Subscription) bool {
	c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue
}

func describe(ns, name string) func() string {
	return func() string {
		sub := &omv1.Subscription{}
		_ = cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, sub)
		bp := &omv1.Blueprint{}
		_ = cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp)
		s, _ := yaml.Marshal(map[string]any{"subscription": sub.Status, "blueprint": map[string]any{"spec": bp.Spec, "status": bp.Status}})
		return string(s)
	}
}

// eventually waits for cond, failing with describe() and the end of m's log.
func eventually(t *testing.T, m *harness.Manager, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	harness.Eventually(t, timeout, 200*time.Millisecond, what, cond, describe, func() string {
		if m == nil {
			return "(no manager)"
		}
		return m.LogTail(4000)
	})
}

// writesIn returns the API writes a manager logged (OPM_LOG_WRITES=1).
func writesIn(m *harness.Manager) []string {
	var out []string
	for _, line := range strings.Split(m.LogTail(1<<20), "\n") {
		if strings.HasPrefix(line, "write ") {
			out = append(out, line)
		}
	}
	return out
}
