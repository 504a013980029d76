package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPeopleWithShippedRoles: the people of a namespace run operators with the roles
// config/rbac ships for them, not as cluster administrators. Alice, bound in her namespace
// to operator-manager-edit, asks what to install from the cluster's default catalog
// (which lives in the manager's namespace, readable by everyone signed in), installs,
// upgrades, reads the history and status, rolls back and uninstalls with the CLI; Bob,
// with the built-in view role (operator-manager-view is aggregated into it), reads all of
// it and may change none of it.
func TestPeopleWithShippedRoles(t *testing.T) {
	ns := "people"
	newNamespace(t, ns)
	person := func(name, clusterRole string) string {
		t.Helper()
		for _, o := range []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}},
		} {
			if err := k8s.Create(ctx(), o); err != nil {
				t.Fatal(err)
			}
		}
		kubeconfig := filepath.Join(t.TempDir(), name+".kubeconfig")
		if err := env.TokenKubeconfig(ctx(), ns, name, kubeconfig); err != nil {
			t.Fatal(err)
		}
		return kubeconfig
	}
	alice, bob := person("alice", "operator-manager-edit"), person("bob", "view")
	as := func(kubeconfig string, args ...string) scriptRun {
		t.Helper()
		return scriptOn(t, kubeconfig, append(args, "-n", ns)...)
	}

	// What to install, from the default catalog, as Alice: she may not read CRDs, so the
	// CRD preflight is said not to have run, and the version is not passed over for it.
	pkg := "cache-operator" // the default catalog is the samples', or the community's
	if communityDir() != "" {
		pkg = "etcd"
	}
	r := as(alice, "recommend", pkg)
	if r.code != 0 || !strings.Contains(r.stdout, "Recommended:") || !strings.Contains(r.stderr+r.stdout, "was not run here, as you may not read what it reads") {
		t.Errorf("recommend as Alice: exit %d, want a recommendation with the preflight she may not run named\n%s%s", r.code, r.stdout, r.stderr)
	}

	for _, step := range [][]string{
		{"install", "cache", "--csv", "cache-operator.1.1.0", "--catalog", "samples", "--target-namespaces", ns, "--wait", "--timeout", "3m"},
		{"install", "cache", "--csv", "cache-operator.1.2.0", "--wait", "--timeout", "3m"},
	} {
		if r := as(alice, step...); r.code != 0 {
			t.Fatalf("%s as Alice: exit %d\n%s%s", strings.Join(step, " "), r.code, r.stdout, r.stderr)
		}
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.2.0")

	// Bob reads what Alice did.
	for _, step := range [][]string{{"list"}, {"status", "cache"}, {"history", "cache"}} {
		if r := as(bob, step...); r.code != 0 || !strings.Contains(r.stdout, "1.2.0") {
			t.Errorf("%s as Bob: exit %d, want what runs (1.2.0)\n%s%s", strings.Join(step, " "), r.code, r.stdout, r.stderr)
		}
	}
	// What his namespace role may not read (CRDs, Secrets) is said plainly, once, not as
	// the API server's refusal in every row.
	if r := as(bob, "status", "cache"); !strings.Contains(r.stdout, "? (your role may not read CRDs, which are cluster-scoped)") || strings.Contains(r.stdout, "is forbidden") {
		t.Errorf("status as Bob: the CRDs he may not read are not said plainly\n%s", r.stdout)
	}
	if r := as(bob, "history", "cache"); strings.Count(r.stdout, "KEPT ?: your role may not read the Secrets") != 1 {
		t.Errorf("history as Bob: the bundle Secrets he may not read are not said once under the table\n%s", r.stdout)
	}
	// And may change none of it: refused by the API server, named, nothing changed.
	for _, step := range [][]string{{"install", "cache", "--csv", "cache-operator.1.1.0"}, {"rollback", "cache"}, {"uninstall", "cache"}} {
		if r := as(bob, step...); r.code != 1 || !strings.Contains(r.stderr, "forbidden") {
			t.Errorf("%s as Bob: exit %d, want 1 with the API server's refusal\n%s%s", strings.Join(step, " "), r.code, r.stdout, r.stderr)
		}
	}
	if bp := getBlueprint(t, ns, "cache"); bp.Status.CurrentCSV != "cache-operator.v1.2.0" || bp.Spec.ClusterServiceVersionName != "cache-operator.v1.2.0" {
		t.Errorf("Bob's refused changes changed the installation: running %s, target %s", bp.Status.CurrentCSV, bp.Spec.ClusterServiceVersionName)
	}

	if r := as(alice, "rollback", "cache", "--wait", "--timeout", "3m"); r.code != 0 {
		t.Fatalf("rollback as Alice: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")
	if r := as(alice, "status", "cache"); r.code != 0 || !strings.Contains(r.stdout, "PointedByHand") {
		t.Errorf("status as Alice after her rollback: exit %d, want the hold named\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := as(alice, "uninstall", "cache", "--wait", "--timeout", "3m"); r.code != 0 {
		t.Fatalf("uninstall as Alice: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	nothingInstalled(t, ns)
}
