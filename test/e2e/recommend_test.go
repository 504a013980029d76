package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestRecommend: when the newest version of a package needs a newer Kubernetes than the
// cluster runs, recommend picks the newest one that fits and says why it passed over the rest,
// and previews the RBAC it would be granted.
func TestRecommend(t *testing.T) {
	dir := filepath.Join(work, "catalogs", "recommend")
	for _, v := range []string{"1.1.0", "1.2.0"} {
		copyTree(t, filepath.Join(sampleDir, "cache-operator", v), filepath.Join(dir, "cache-operator", v))
	}
	next := filepath.Join(dir, "cache-operator", "1.4.0")
	copyTree(t, filepath.Join(sampleDir, "cache-operator", "1.2.0"), next)
	csv := filepath.Join(next, "cache-operator.v1.2.0.clusterserviceversion.yaml")
	data, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.NewReplacer("cache-operator.v1.2.0", "cache-operator.v1.4.0", "version: 1.2.0", "version: 1.4.0",
		"replaces: cache-operator.v1.1.0", "replaces: cache-operator.v1.2.0", "minKubeVersion: 1.25.0", "minKubeVersion: 99.0.0").Replace(string(data)))
	if err := os.WriteFile(csv, data, 0o644); err != nil {
		t.Fatal(err)
	}
	newNamespace(t, "recommend")
	out, err := cli("recommend", dir, "cache-operator", "-n", "recommend")
	if err != nil {
		t.Fatalf("recommend: %v\n%s", err, out)
	}
	for _, want := range []string{"Recommended:", "cache-operator.v1.2.0 (1.2.0)", "on Kubernetes 1.37.2",
		"cache-operator.v1.4.0", "needs Kubernetes 99.0.0 or newer, the cluster runs 1.37.2",
		// The permissions preview: what the recommended version would be granted here.
		"GRANTED TO", "ServiceAccount recommend/cache-operator", "namespaces"} {
		if !strings.Contains(out, want) {
			t.Errorf("recommend output lacks %q:\n%s", want, out)
		}
	}
	out, err = cli("recommend", dir, "cache-operator", "-n", "recommend", "-o", "json")
	if err != nil || !strings.Contains(out, `"recommended": "cache-operator.v1.2.0"`) || !strings.Contains(out, `"permissions": [`) {
		t.Errorf("recommend -o json: %v\n%s", err, out)
	}

	// Installed watching only its namespace: the upgrade's preview grants what it would be
	// granted then, its namespaced permissions as a Role there, not cluster-wide as for
	// an installation watching all namespaces.
	applyYAML(t, "recommend", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [recommend]}
`)
	uninstallAtEnd(t, "recommend", "cache")
	waitRunning(t, "recommend", "cache", "cache-operator.v1.1.0")
	out, err = cli("recommend", dir, "cache-operator", "-n", "recommend")
	if err != nil || !strings.Contains(out, "cache-operator.v1.2.0 (1.2.0)") {
		t.Fatalf("recommend of an upgrade: %v\n%s", err, out)
	}
	scoped := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Join(strings.Fields(line), " ")
		if strings.Contains(f, "configmaps,services,pods") {
			if !strings.Contains(f, "namespace recommend") {
				t.Errorf("the upgrade of an installation watching its namespace previews a grant beyond it: %s", f)
			}
			scoped = true
		}
	}
	if !scoped {
		t.Errorf("no grant of configmaps, services and pods in the preview:\n%s", out)
	}
}

// TestCatalogOfTheCluster: the inspecting verbs read a CatalogSource of the cluster as the
// manager reads it, with no catalog on the person's disk: recommend without DIR reads the
// installation's own catalog, --catalog names one (a bare name found in the namespace,
// else in the manager's), and a name that is nowhere says where it was looked for.
func TestCatalogOfTheCluster(t *testing.T) {
	ns := "clustercatalog"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.1.0, catalog: samples, targetNamespaces: [`+ns+`]}
`)
	uninstallAtEnd(t, ns, "cache")
	waitRunning(t, ns, "cache", "cache-operator.v1.1.0")

	// The installation came from this namespace's samples: recommend reads them, though the
	// manager's default catalog is another.
	out, err := cli("recommend", "cache-operator", "-n", ns)
	if err != nil {
		t.Fatalf("recommend without DIR: %v\n%s", err, out)
	}
	for _, want := range []string{"the directory of CatalogSource " + ns + "/samples", "Recommended:", "cache-operator.v1.3.0 (1.3.0) from channel stable"} {
		if !strings.Contains(out, want) {
			t.Errorf("recommend without DIR lacks %q:\n%s", want, out)
		}
	}

	out, err = cli("catalog", "show", "--catalog", "samples", "cache-operator", "-n", ns)
	if err != nil || !strings.Contains(out, "cache-operator.v1.2.0") || !strings.Contains(out, "CatalogSource "+ns+"/samples") {
		t.Errorf("catalog show --catalog samples: %v\n%s", err, out)
	}
	out, err = cli("catalog", "validate", "--catalog", ns+"/samples", "-n", "default")
	if err != nil || !strings.Contains(out, "0 rejected") {
		t.Errorf("catalog validate --catalog NAMESPACE/NAME: %v\n%s", err, out)
	}
	// No "default" CatalogSource in the namespace: the manager's is read.
	out, err = cli("catalog", "list", "--catalog", "default", "-n", ns)
	if err != nil || !strings.Contains(out, "CatalogSource "+managerNamespace+"/default") || !strings.Contains(out, "PACKAGE") {
		t.Errorf("catalog list --catalog default: %v\n%s", err, out)
	}
	out, err = cli("catalog", "search", "--catalog", "nowhere", "cache", "-n", ns)
	if want := "no CatalogSource nowhere in namespace " + ns + " or in the manager's namespace " + managerNamespace; err == nil || !strings.Contains(out, want) {
		t.Errorf("catalog search --catalog nowhere: %v, want an error saying %q:\n%s", err, want, out)
	}

	// install --catalog finds a catalog as the reading verbs do, and writes it as the
	// Subscription names it: the manager's "default" by OLM's sourceNamespace.
	out, err = cli("install", "cache", "--catalog", "nowhere", "-n", ns)
	if want := "no CatalogSource nowhere in namespace " + ns; exitCode(err) != 1 || !strings.Contains(out, want) {
		t.Errorf("install --catalog nowhere: %v, want exit 1 saying %q:\n%s", err, want, out)
	}
	if s := getSub(t, ns, "cache").Spec; s.Catalog != "samples" || s.SourceNamespace != "" {
		t.Errorf("install --catalog nowhere changed the Subscription: catalog %q sourceNamespace %q", s.Catalog, s.SourceNamespace)
	}
	if out, err := cli("install", "cache", "--catalog", "default", "-n", ns); err != nil {
		t.Fatalf("install --catalog default: %v\n%s", err, out)
	}
	if s := getSub(t, ns, "cache").Spec; s.Catalog != "default" || s.SourceNamespace != managerNamespace {
		t.Errorf("install --catalog default wrote catalog %q sourceNamespace %q, want default in %s", s.Catalog, s.SourceNamespace, managerNamespace)
	}
	// (The e2e manager's default catalog is the community one, without cache-operator: the
	// Subscription says so, and what runs stays.)
	eventually(t, time.Minute, "the Subscription resolving in the manager's default catalog", func() bool {
		return strings.Contains(condition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionResolved).Message, managerNamespace+"/default")
	}, describeSub(t, ns, "cache"))
	if out, err := cli("install", "cache", "--catalog", "samples", "-n", ns); err != nil {
		t.Fatalf("install --catalog samples: %v\n%s", err, out)
	}
	if s := getSub(t, ns, "cache").Spec; s.Catalog != "samples" || s.SourceNamespace != "" {
		t.Errorf("install --catalog samples wrote catalog %q sourceNamespace %q, want samples of the namespace itself", s.Catalog, s.SourceNamespace)
	}
	waitReady(t, ns, "cache", time.Minute)

	// Moved to another catalog that serves the same version with the same content: no new
	// revision, but the installation's catalog follows, so recommend (and a bundle fetched
	// again) reads the new one, not one its owner may delete next.
	mirror := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "mirror", Namespace: ns},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: sampleDir}}
	if err := k8s.Create(ctx(), mirror); err != nil {
		t.Fatal(err)
	}
	if out, err := cli("install", "cache", "--catalog", "mirror", "-n", ns); err != nil {
		t.Fatalf("install --catalog mirror: %v\n%s", err, out)
	}
	eventually(t, time.Minute, "the installation following its Subscription to the mirror", func() bool {
		return getBlueprint(t, ns, "cache").Spec.Catalog == ns+"/mirror"
	}, describeSub(t, ns, "cache"))
	if h := historyOf(getBlueprint(t, ns, "cache")); h != "1:cache-operator.v1.1.0:Install:Succeeded" {
		t.Errorf("the same version from another catalog made a revision: %s", h)
	}
	out, err = cli("recommend", "cache-operator", "-n", ns)
	if err != nil || !strings.Contains(out, "CatalogSource "+ns+"/mirror") {
		t.Errorf("recommend after the move does not read the mirror: %v\n%s", err, out)
	}
}
