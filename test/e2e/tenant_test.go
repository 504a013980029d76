package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/test/harness"
)

// tenantNamespace creates a namespace with a CatalogSource of the samples and a
// ServiceAccount "installer" that may do only namespaced things in that namespace: manage
// service accounts, roles, role bindings, Deployments, ConfigMaps, Leases and
// OperatorConditions there. It cannot create a CRD or anything cluster-wide.
func tenantNamespace(t *testing.T, ns string) {
	t.Helper()
	newNamespace(t, ns)
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts", "configmaps", "services"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: all},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: all},
			// The OperatorCondition of each installed CSV, and the Role granting its operator
			// get, update and patch on it (RBAC lets one grant only what one holds).
			{APIGroups: []string{omv1.Group}, Resources: []string{"operatorconditions"}, Verbs: all},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "installer", Namespace: ns}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "installer"}},
	}
	for _, o := range objs {
		if err := k8s.Create(ctx(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// nothingInstalled asserts that an installation refused for its permissions left nothing:
// no CSV, and no object labelled as installed in ns, in any namespace or cluster-wide.
func nothingInstalled(t *testing.T, ns string) {
	t.Helper()
	csvs := &omv1alpha1.ClusterServiceVersionList{}
	if err := k8s.List(ctx(), csvs, client.InNamespace(ns)); err != nil || len(csvs.Items) > 0 {
		t.Errorf("CSVs left in %s: %d (%v)", ns, len(csvs.Items), err)
	}
	sel := client.MatchingLabels{render.LabelOwnerNamespace: ns}
	for kind, list := range map[string]client.ObjectList{"Deployment": &appsv1.DeploymentList{}, "ServiceAccount": &corev1.ServiceAccountList{},
		"Role": &rbacv1.RoleList{}, "RoleBinding": &rbacv1.RoleBindingList{}, "ClusterRole": &rbacv1.ClusterRoleList{},
		"ClusterRoleBinding": &rbacv1.ClusterRoleBindingList{}} {
		if err := k8s.List(ctx(), list, sel); err != nil {
			t.Fatal(err)
		}
		if n := len(itemsOf(list)); n > 0 {
			t.Errorf("%d %s objects left for the refused installation in %s", n, kind, ns)
		}
	}
}

func itemsOf(list client.ObjectList) []any {
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		return toAny(l.Items)
	case *corev1.ServiceAccountList:
		return toAny(l.Items)
	case *rbacv1.RoleList:
		return toAny(l.Items)
	case *rbacv1.RoleBindingList:
		return toAny(l.Items)
	case *rbacv1.ClusterRoleList:
		return toAny(l.Items)
	case *rbacv1.ClusterRoleBindingList:
		return toAny(l.Items)
	}
	return nil
}

func toAny[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out
}

// TestTenantInstallsThroughServiceAccount: a Subscription naming a ServiceAccount installs
// as that ServiceAccount. In team-a it may only act in its own namespace: an operator
// (watching that namespace) with clusterPermissions and a CRD is refused with InsufficientPermissions
// naming the missing right, and nothing stays; an OwnNamespace operator that needs nothing
// more installs. With --default-service-account, a Subscription naming none is refused the
// same way.
func TestTenantInstallsThroughServiceAccount(t *testing.T) {
	ns := "team-a"
	tenantNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, serviceAccountName: installer, targetNamespaces: [team-a]}
`)
	eventually(t, time.Minute, "cache refused with InsufficientPermissions", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionInstalled)
		return c.Status == metav1.ConditionFalse && c.Reason == omv1.ReasonInsufficientPermissions
	}, describeSub(t, ns, "cache"))
	msg := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionInstalled).Message
	for _, want := range []string{"ServiceAccount team-a/installer may not", "(cluster-scoped)", "nothing was changed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("InsufficientPermissions message lacks %q: %s", want, msg)
		}
	}
	// The CRD is asked for only where it must be written: another test of this package may
	// have installed the same CRD already, identical, and then no right to write it is
	// needed. The cluster roles of clusterPermissions are always needed.
	if !strings.Contains(msg, "clusterroles.rbac.authorization.k8s.io") {
		t.Errorf("the message does not name the cluster roles clusterPermissions need: %s", msg)
	}
	nothingInstalled(t, ns)

	// An OwnNamespace operator that needs only what the ServiceAccount may do installs, and
	// its objects were written by the ServiceAccount (the API server records the field
	// manager and the managed fields, not the user; the impersonated user is what RBAC saw,
	// so success here is the proof).
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: reloader}
spec: {startingCSV: reloader-operator.0.2.0, catalog: samples, serviceAccountName: installer}
`)
	waitReady(t, ns, "reloader", 2*time.Minute)
	roles := &rbacv1.RoleList{}
	// Its permissions' Role, and the Role on its own OperatorCondition.
	if err := k8s.List(ctx(), roles, client.InNamespace(ns), client.MatchingLabels{render.LabelOwnerName: "reloader-operator.v0.2.0"}); err != nil || len(roles.Items) != 2 {
		t.Errorf("roles of the reloader: %d (%v)", len(roles.Items), err)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "reloader-operator.v0.2.0"}, &omv1.OperatorCondition{}); err != nil {
		t.Errorf("the tenant's installation has no OperatorCondition: %v", err)
	}
	if out, err := cli("uninstall", "reloader", "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("uninstall as the tenant: %v\n%s", err, out)
	}

	// The manager locked down: --default-service-account makes a Subscription naming no
	// ServiceAccount install as "installer" of its namespace, so the same refusal follows.
	killManager(t)
	if err := startManagerWith(harness.Options{Args: []string{"--default-service-account=installer"}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		killManager(t)
		if err := startManager(); err != nil {
			t.Fatal(err)
		}
	}()
	ns = "team-b"
	tenantNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [team-b]}
`)
	eventually(t, time.Minute, "cache refused with InsufficientPermissions under the default ServiceAccount", func() bool {
		c := condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionInstalled)
		return c.Status == metav1.ConditionFalse && c.Reason == omv1.ReasonInsufficientPermissions &&
			strings.Contains(c.Message, "ServiceAccount team-b/installer may not")
	}, describeSub(t, ns, "cache"))
	nothingInstalled(t, ns)
}

// TestBlockedInstallGoesOnOnceGranted: an install blocked for its installer's rights goes on
// by itself once they are there, with no one editing the Subscription: the ServiceAccount
// it names is made (the next attempt says which rights it still lacks), then granted them
// (it installs). Nothing is written while nothing changes.
func TestBlockedInstallGoesOnOnceGranted(t *testing.T) {
	ns := "team-c"
	tenantNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, serviceAccountName: latecomer, targetNamespaces: [team-c]}
`)
	blocked := func(what string) func() bool {
		return func() bool {
			bp := &omv1.Blueprint{}
			if k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp) != nil {
				return false
			}
			c := condition(bp.Status.Conditions, omv1.ConditionBlocked)
			return c.Status == metav1.ConditionTrue && c.Reason == omv1.ReasonInsufficientPermissions && strings.Contains(c.Message, what)
		}
	}
	eventually(t, time.Minute, "blocked: the ServiceAccount does not exist", blocked("ServiceAccount team-c/latecomer does not exist"), describeSub(t, ns, "cache"))
	// Measured from a quiet moment: the block's own writes (its status, then what follows
	// it within moments on a loaded machine) are not the recheck's.
	before := quietBlueprint(t, ns, "cache")
	time.Sleep(35 * time.Second) // past a recheck: nothing changed, nothing is written
	if after := getBlueprint(t, ns, "cache").ResourceVersion; after != before {
		t.Errorf("the Blueprint was written while nothing changed: %s\n%s", historyOf(getBlueprint(t, ns, "cache")), describeSub(t, ns, "cache")())
	}

	// Made, with the namespace's rights only: the next attempt names what it still lacks.
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "latecomer", Namespace: ns}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "latecomer", Namespace: ns},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "latecomer", Namespace: ns}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "installer"}},
	} {
		if err := k8s.Create(ctx(), o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 90*time.Second, "blocked: the ServiceAccount lacks cluster rights", blocked("ServiceAccount team-c/latecomer may not"), describeSub(t, ns, "cache"))
	nothingInstalled(t, ns)

	// Granted: it installs.
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "team-c-latecomer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "latecomer", Namespace: ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}
	if err := k8s.Create(ctx(), crb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx(), crb) })
	waitReady(t, ns, "cache", 2*time.Minute)
	if got := historyOf(getBlueprint(t, ns, "cache")); got != "1:cache-operator.v1.1.0:Install:Blocked 2:cache-operator.v1.1.0:Retry:Blocked 3:cache-operator.v1.1.0:Retry:Succeeded" {
		t.Errorf("history = %s", got)
	}
}

// quietBlueprint waits until the Blueprint has not been written for 5 s (at most a
// minute) and returns its resourceVersion.
func quietBlueprint(t *testing.T, ns, name string) string {
	t.Helper()
	rv := getBlueprint(t, ns, name).ResourceVersion
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(5 * time.Second)
		now := getBlueprint(t, ns, name).ResourceVersion
		if now == rv {
			return rv
		}
		rv = now
	}
	t.Fatalf("Blueprint %s/%s written again and again for a minute while blocked", ns, name)
	return ""
}

// TestLostRightsAreSaid: an installation whose installing ServiceAccount lost its rights
// (its RoleBinding deleted) says so, where before the manager only logged it: a
// Deployment deleted by hand that cannot be restored turns the Subscription Ready False
// InsufficientPermissions naming the restore (before, it said "healthy: 1 deployment
// available" with no Deployment), and an uninstall that cannot remove what was installed
// says that it waits and why (before: "removing ...", for good). Both go on once the
// rights are back, with no one touching the Subscription.
func TestLostRightsAreSaid(t *testing.T) {
	ns := "lost-rights"
	tenantNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: reloader}
spec: {startingCSV: reloader-operator.0.2.0, catalog: samples, serviceAccountName: installer}
`)
	waitReady(t, ns, "reloader", 2*time.Minute)
	binding := &rbacv1.RoleBinding{}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "installer"}, binding); err != nil {
		t.Fatal(err)
	}
	revoke := func() {
		t.Helper()
		if err := k8s.Delete(ctx(), binding.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	grant := func() {
		t.Helper()
		again := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "installer"}, Subjects: binding.Subjects, RoleRef: binding.RoleRef}
		if err := k8s.Create(ctx(), again); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(says string) func() bool {
		return func() bool {
			ready := condition(getSub(t, ns, "reloader").Status.Conditions, omv1.ConditionReady)
			return ready.Status == metav1.ConditionFalse && ready.Reason == omv1.ReasonInsufficientPermissions &&
				strings.Contains(ready.Message, says) && strings.Contains(ready.Message, `User "system:serviceaccount:`+ns+`:installer"`)
		}
	}

	revoke()
	if err := k8s.Delete(ctx(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reloader-operator"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "Ready False InsufficientPermissions naming the restore", refused("restoring Deployment "+ns+"/reloader-operator (deleted)"), describeSub(t, ns, "reloader"))
	grant()
	waitReady(t, ns, "reloader", 2*time.Minute)
	if err := deploymentAvailable(t, ns, "reloader-operator"); err != nil {
		t.Errorf("the Deployment once the rights are back: %v", err)
	}

	revoke()
	if err := k8s.Delete(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reloader"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the uninstall saying it waits for the rights", refused("the uninstall waits: ServiceAccount "+ns+"/installer may not delete what it installed"), describeSub(t, ns, "reloader"))
	grant()
	eventually(t, 2*time.Minute, "the uninstall done once the rights are back", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "reloader"}, &omv1.Subscription{}))
	}, describeSub(t, ns, "reloader"))
	nothingInstalled(t, ns)
}

// TestTenantNamespaceDeleted: a tenant's namespace deleted with an installation in it
// goes away. The namespace controller removes the tenant's RoleBinding along with the
// objects it installed, so the uninstall may no longer read them as the tenant: before,
// it waited forever for rights to delete what was already gone, and the namespace stayed
// Terminating (found by hand).
func TestTenantNamespaceDeleted(t *testing.T) {
	ns := "team-gone"
	tenantNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: reloader}
spec: {startingCSV: reloader-operator.0.2.0, catalog: samples, serviceAccountName: installer}
`)
	waitReady(t, ns, "reloader", 2*time.Minute)
	// With the manager down, the namespace controller removes all it can first (the
	// tenant's RoleBinding and what it installed), as it may at any time: only the
	// manager's records, held by their finalizers, are left for the manager.
	killManager(t)
	started := false
	defer func() {
		if !started {
			if err := startManager(); err != nil {
				t.Fatal(err)
			}
		}
	}()
	if err := k8s.Delete(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the namespace controller removed the tenant's RoleBinding and the operator", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "installer"}, &rbacv1.RoleBinding{})) &&
			apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "reloader-operator"}, &appsv1.Deployment{}))
	}, func() string { return "" })
	started = true
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the tenant's namespace gone", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}, func() string {
		n := &corev1.Namespace{}
		_ = k8s.Get(ctx(), client.ObjectKey{Name: ns}, n)
		return fmt.Sprintf("namespace conditions: %+v\n%s", n.Status.Conditions, describeSub(t, ns, "reloader")())
	})
	sel := client.MatchingLabels{render.LabelOwnerNamespace: ns}
	for kind, list := range map[string]client.ObjectList{"ClusterRole": &rbacv1.ClusterRoleList{}, "ClusterRoleBinding": &rbacv1.ClusterRoleBindingList{}} {
		if err := k8s.List(ctx(), list, sel); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n > 0 {
			t.Errorf("%d %s of the deleted namespace's installation left", n, kind)
		}
	}
}
