package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

func ctx() context.Context { return context.Background() }

// newNamespace creates a namespace with a CatalogSource "samples" for the project's own
// sample catalog.
func newNamespace(t *testing.T, name string) {
	t.Helper()
	if err := k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	cs := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "samples", Namespace: name},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: sampleDir}}
	if err := k8s.Create(ctx(), cs); err != nil {
		t.Fatal(err)
	}
}

// applyYAML creates an object from YAML as a person would write it.
func applyYAML(t *testing.T, namespace, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(namespace)
	if err := k8s.Create(ctx(), u); err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	if u.GetKind() == "Subscription" {
		uninstallAtEnd(t, namespace, u.GetName())
	}
}

// uninstallAtEnd deletes a test's Subscription when the test ends, without waiting: the
// next test may install the same package in another namespace, which a live installation
// watching all namespaces would refuse (TargetNamespacesOverlap), and one being deleted
// does not.
func uninstallAtEnd(t *testing.T, namespace, name string) {
	t.Cleanup(func() {
		_ = k8s.Delete(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	})
}

func getSub(t *testing.T, ns, name string) *omv1.Subscription {
	t.Helper()
	sub := &omv1.Subscription{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ, Status: "Absent"}
}

func describeSub(t *testing.T, ns, name string) func() string {
	return func() string {
		sub := &omv1.Subscription{}
		_ = k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, sub)
		bp := &omv1.Blueprint{}
		_ = k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, bp)
		s, _ := yaml.Marshal(map[string]any{"subscription": sub.Status, "blueprint": map[string]any{"spec": bp.Spec, "status": bp.Status}})
		return string(s)
	}
}

// waitUninstalled waits for a deleted Subscription to be gone, and checks that nothing its
// CSV installed is left behind.
func waitUninstalled(t *testing.T, ns, name, csvName string) {
	t.Helper()
	eventually(t, time.Minute, "Subscription "+ns+"/"+name+" gone", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, &omv1.Subscription{}))
	}, describeSub(t, ns, name))
	if left := ownedObjects(t, ns, csvName); len(left) > 0 {
		t.Errorf("objects left behind: %v", left)
	}
}

// waitReady waits for a Subscription's Ready condition to be True.
func waitReady(t *testing.T, ns, name string, timeout time.Duration) *omv1.Subscription {
	t.Helper()
	eventually(t, timeout, "Subscription "+ns+"/"+name+" Ready", func() bool {
		return condition(getSub(t, ns, name).Status.Conditions, omv1.ConditionReady).Status == metav1.ConditionTrue
	}, describeSub(t, ns, name))
	return getSub(t, ns, name)
}

// kubectl runs the kubectl built with the control plane against the cluster.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	bins, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bins, testenv.BinKubectl), append([]string{"--kubeconfig", env.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ownedObjects counts, per kind, the objects labelled as installed by a CSV, in every namespace.
func ownedObjects(t *testing.T, ns, csvName string) map[string]int {
	t.Helper()
	sel := client.MatchingLabels{render.LabelOwnerName: render.LabelValue(csvName), render.LabelOwnerNamespace: ns}
	counts := map[string]int{}
	for kind, list := range map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "ServiceAccount": &corev1.ServiceAccountList{}, "Service": &corev1.ServiceList{},
		"Role": &rbacv1.RoleList{}, "RoleBinding": &rbacv1.RoleBindingList{},
		"ClusterRole": &rbacv1.ClusterRoleList{}, "ClusterRoleBinding": &rbacv1.ClusterRoleBindingList{},
		"OperatorCondition": &omv1.OperatorConditionList{},
	} {
		if err := k8s.List(ctx(), list, sel); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n > 0 {
			counts[kind] = n
		}
	}
	return counts
}

// deploymentAvailable reports a Deployment Available with all replicas updated.
func deploymentAvailable(t *testing.T, ns, name string) error {
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want {
			return nil
		}
	}
	return fmt.Errorf("deployment %s/%s not available: %+v", ns, name, d.Status)
}

// ownedClusterRoles are the ClusterRoles installed for the installation in ns.
func ownedClusterRoles(t *testing.T, ns string) []rbacv1.ClusterRole {
	t.Helper()
	list := &rbacv1.ClusterRoleList{}
	if err := k8s.List(ctx(), list, client.MatchingLabels{render.LabelOwnerNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatalf("no ClusterRole installed for %s", ns)
	}
	return list.Items
}

func getCSV(t *testing.T, ns, name string) *omv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, csv); err != nil {
		t.Fatal(err)
	}
	return csv
}

// patchSub changes a Subscription as a person would, with a merge patch.
func patchSub(t *testing.T, ns, name string, change func(*omv1.Subscription)) {
	t.Helper()
	harness.Patch(t, k8s, client.ObjectKey{Namespace: ns, Name: name}, &omv1.Subscription{}, change)
}

// patchOperatorGroup changes an OperatorGroup as a person would (a merge patch).
func patchOperatorGroup(t *testing.T, ns, name string, change func(*omv1.OperatorGroup)) {
	t.Helper()
	harness.Patch(t, k8s, client.ObjectKey{Namespace: ns, Name: name}, &omv1.OperatorGroup{}, change)
}

// exitCode is the exit code of a command run by cli: 0 without an error, -1 when it did
// not exit (it could not start).
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// readySince is when the Subscription last turned Ready, for stayedReady.
func readySince(t *testing.T, ns, name string) metav1.Time {
	t.Helper()
	return condition(getSub(t, ns, name).Status.Conditions, omv1.ConditionReady).LastTransitionTime
}

// stayedReady fails the test when the Subscription is not Ready, or turned Ready again
// after since: a blip of Ready=False in between moves the condition's transition time,
// so it is seen however short it was.
func stayedReady(t *testing.T, ns, name string, since metav1.Time, when string) {
	t.Helper()
	c := condition(getSub(t, ns, name).Status.Conditions, omv1.ConditionReady)
	if c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Equal(&since) {
		t.Errorf("%s: the Subscription left Ready: %+v (Ready since %s)", when, c, since)
	}
}
