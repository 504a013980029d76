package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/test/harness"
)

// TestDependencies: a dependency is installed as its own managed Subscription at the right
// version and recorded in the Blueprint; it is not uninstalled while something needs it;
// an unsatisfiable dependency leaves nothing installed and says why.
func TestDependencies(t *testing.T) {
	ns := "deps"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {package: backup-operator, version: 0.2.0, catalog: samples, targetNamespaces: [deps]}
`)
	waitRunning(t, ns, "backup", "backup-operator.v0.2.0")
	// backup-operator needs cache-operator >=1.1.0 <1.3.0: the newest in range is 1.2.0.
	waitRunning(t, ns, "cache-operator", "cache-operator.v1.2.0")
	dep := getSub(t, ns, "cache-operator")
	if dep.Labels["operator-manager.domain/dependency"] != "true" || dep.Annotations["operator-manager.domain/required-by"] != "backup" {
		t.Errorf("dependency Subscription metadata: %v %v", dep.Labels, dep.Annotations)
	}
	// It watches what backup watches, so the same pair can run side by side elsewhere.
	if strings.Join(dep.Spec.TargetNamespaces, ",") != ns {
		t.Errorf("the dependency watches %v, want what backup watches, [%s]", dep.Spec.TargetNamespaces, ns)
	}
	uninstallAtEnd(t, ns, "cache-operator")
	bp := getBlueprint(t, ns, "backup")
	if len(bp.Spec.Dependencies) != 1 || bp.Spec.Dependencies[0].Package != "cache-operator" || bp.Spec.Dependencies[0].Version != "1.2.0" ||
		!strings.Contains(bp.Spec.Dependencies[0].Reason, ">=1.1.0 <1.3.0") {
		t.Errorf("Blueprint dependencies = %+v", bp.Spec.Dependencies)
	}
	waitReady(t, ns, "backup", time.Minute)

	// Not removed while something depends on it.
	if out, err := cli("uninstall", "cache-operator", "-n", ns); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	eventually(t, 30*time.Second, "uninstall refused", func() bool {
		c := condition(getSub(t, ns, "cache-operator").Status.Conditions, omv1.ConditionInstalled)
		return c.Reason == "RequiredByOthers" && strings.Contains(c.Message, "backup")
	}, describeSub(t, ns, "cache-operator"))
	if err := deploymentAvailable(t, ns, "cache-operator"); err != nil {
		t.Errorf("the dependency was removed while needed: %v", err)
	}

	// Unsatisfiable: a catalog whose backup-operator needs a cache-operator that does not exist.
	bad := filepath.Join(work, "catalogs", "unsatisfiable")
	copyTree(t, filepath.Join(sampleDir, "cache-operator", "1.1.0"), filepath.Join(bad, "cache-operator", "1.1.0"))
	copyTree(t, filepath.Join(sampleDir, "backup-operator", "0.1.0"), filepath.Join(bad, "backup-operator", "0.1.0"))
	deps := filepath.Join(bad, "backup-operator", "0.1.0", "metadata", "dependencies.yaml")
	if err := os.WriteFile(deps, []byte("dependencies:\n- type: olm.package\n  value: {packageName: cache-operator, version: \">=5.0.0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns2 := "deps-unsat"
	newNamespace(t, ns2)
	if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns2},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: bad}}); err != nil {
		t.Fatal(err)
	}
	applyYAML(t, ns2, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {startingCSV: backup-operator.0.1.0, catalog: bad, targetNamespaces: [deps-unsat]}
`)
	eventually(t, time.Minute, "unsatisfiable", func() bool {
		return condition(getSub(t, ns2, "backup").Status.Conditions, omv1.ConditionResolved).Reason == "Unsatisfiable"
	}, describeSub(t, ns2, "backup"))
	c := condition(getSub(t, ns2, "backup").Status.Conditions, omv1.ConditionResolved)
	for _, want := range []string{"cache-operator", ">=5.0.0", "1.1.0"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Resolved message lacks %q: %s", want, c.Message)
		}
	}
	t.Logf("unsatisfiable message: %s", c.Message)
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns2, Name: "backup"}, &omv1.Blueprint{}); err == nil {
		t.Error("a Blueprint was written for an unsatisfiable Subscription")
	}
	subs := &omv1.SubscriptionList{}
	if err := k8s.List(ctx(), subs, client.InNamespace(ns2)); err != nil || len(subs.Items) != 1 {
		t.Errorf("Subscriptions in %s: %d (a dependency was created)", ns2, len(subs.Items))
	}

	// A catalog of the namespace that is not loaded may hold what is missing: the
	// resolution says it was not searched. Once it loads, the Subscription is resolved
	// again by itself, and says what it found there.
	more := filepath.Join(work, "catalogs", "unsatisfiable-more")
	if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "more", Namespace: ns2},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: more}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the catalog not loaded named", func() bool {
		c := condition(getSub(t, ns2, "backup").Status.Conditions, omv1.ConditionResolved)
		return c.Reason == "Unsatisfiable" && strings.Contains(c.Message, "not searched, since not loaded: CatalogSource deps-unsat/more (not loaded")
	}, describeSub(t, ns2, "backup"))
	copyTree(t, filepath.Join(sampleDir, "guard-operator", "1.0.0"), filepath.Join(more, "guard-operator", "1.0.0"))
	// A change of its spec reads it again.
	harness.Patch(t, k8s, client.ObjectKey{Namespace: ns2, Name: "more"}, &omv1.CatalogSource{}, func(cs *omv1.CatalogSource) { cs.Spec.Priority++ })
	eventually(t, time.Minute, "resolved again once the catalog loaded", func() bool {
		c := condition(getSub(t, ns2, "backup").Status.Conditions, omv1.ConditionResolved)
		return c.Reason == "Unsatisfiable" && !strings.Contains(c.Message, "not searched")
	}, describeSub(t, ns2, "backup"))
}

// TestDependentsHoldTheirDependency: a version of a dependency that an installation
// depending on it does not accept is refused, naming that installation and its
// requirement, and what runs stays; a version it accepts is installed; once it goes, the
// refused version is installed without anyone asking again.
func TestDependentsHoldTheirDependency(t *testing.T) {
	ns := "deps-held"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {package: backup-operator, version: 0.2.0, catalog: samples, targetNamespaces: [deps-held]}
`)
	waitRunning(t, ns, "backup", "backup-operator.v0.2.0")
	waitRunning(t, ns, "cache-operator", "cache-operator.v1.2.0")
	uninstallAtEnd(t, ns, "cache-operator")

	// backup-operator 0.2.0 needs cache-operator >=1.1.0 <1.3.0: recommend passes 1.3.0
	// over for it, and 1.0.0 is refused.
	const requirement = "backup (backup-operator.v0.2.0) requires olm.package cache-operator >=1.1.0 <1.3.0"
	out, err := cli("recommend", sampleDir, "cache-operator", "-n", ns)
	if flat := strings.Join(strings.Fields(out), " "); err != nil || strings.Contains(flat, "Recommended: cache-operator.v1.3.0") || !strings.Contains(flat, requirement) {
		t.Errorf("recommend under a dependent needing <1.3.0: %v\n%s", err, out)
	}
	out, err = cli("install", "cache-operator", "--version", "1.0.0", "-n", ns, "--wait", "--timeout", "1m")
	if code := exitCode(err); code != 3 || !strings.Contains(out, "Unsatisfiable") || !strings.Contains(out, requirement) {
		t.Errorf("install --version 1.0.0 under a dependent needing >=1.1.0: exit %d, want 3 naming %q\n%s", code, requirement, out)
	}
	c := condition(getSub(t, ns, "cache-operator").Status.Conditions, omv1.ConditionResolved)
	if c.Status != metav1.ConditionFalse || c.Reason != "Unsatisfiable" || !strings.Contains(c.Message, "cache-operator.v1.0.0 is not installed, cache-operator.v1.2.0 keeps running") {
		t.Errorf("Resolved = %+v", c)
	}
	if bp := getBlueprint(t, ns, "cache-operator"); bp.Spec.ClusterServiceVersionName != "cache-operator.v1.2.0" {
		t.Errorf("the refused version reached the Blueprint: %s", bp.Spec.ClusterServiceVersionName)
	}
	if img := containerImage(t, ns, "cache-operator"); img != "registry.example/samples/cache-operator:1.2.0" {
		t.Errorf("the dependency runs %s after a refused change, want 1.2.0", img)
	}

	// In range: installed.
	if out, err := cli("install", "cache-operator", "--version", "1.1.0", "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("install --version 1.1.0, in the dependent's range: %v\n%s", err, out)
	}
	if img := containerImage(t, ns, "cache-operator"); img != "registry.example/samples/cache-operator:1.1.0" {
		t.Errorf("the dependency runs %s, want 1.1.0", img)
	}

	// Asked for 1.0.0 again: refused while backup runs, installed once it is gone.
	if out, err := cli("install", "cache-operator", "--version", "1.0.0", "-n", ns); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	eventually(t, 30*time.Second, "refused again", func() bool {
		return condition(getSub(t, ns, "cache-operator").Status.Conditions, omv1.ConditionResolved).Reason == "Unsatisfiable"
	}, describeSub(t, ns, "cache-operator"))
	if out, err := cli("uninstall", "backup", "-n", ns, "--delete-subscription", "--wait"); err != nil {
		t.Fatalf("uninstall backup: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache-operator", "cache-operator.v1.0.0")
}

// TestDependencyInstalledAgain: a dependency uninstalled after its dependent (both kept as
// Subscriptions, spec.option: delete) is installed again when the dependent is; a
// person's own Subscription of the package, uninstalled, is not undone: the dependent's
// resolution names it until the person installs it. Before, the dependent ran Ready with
// its dependency uninstalled (found by hand).
func TestDependencyInstalledAgain(t *testing.T) {
	ns := "deps-again"
	newNamespace(t, ns)
	install := func() (string, error) {
		return cli("install", "backup", "--package", "backup-operator", "--version", "0.2.0", "--catalog", "samples",
			"--target-namespaces", ns, "-n", ns, "--wait", "--timeout", "2m")
	}
	uninstall := func(name string) {
		t.Helper()
		if out, err := cli("uninstall", name, "-n", ns, "--wait", "--timeout", "2m"); err != nil {
			t.Fatalf("uninstall %s: %v\n%s", name, err, out)
		}
	}
	if out, err := install(); err != nil {
		t.Fatalf("install backup: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache-operator", "cache-operator.v1.2.0")
	uninstallAtEnd(t, ns, "cache-operator")
	uninstallAtEnd(t, ns, "backup")
	uninstall("backup")
	uninstall("cache-operator")

	// The dependency's own Subscription (the manager made it): installed again with the
	// dependent.
	if out, err := install(); err != nil {
		t.Fatalf("install backup again: %v\n%s", err, out)
	}
	waitRunning(t, ns, "cache-operator", "cache-operator.v1.2.0")
	waitReady(t, ns, "cache-operator", time.Minute)
	eventually(t, 30*time.Second, "a DependencyInstalling event saying again", func() bool {
		return eventIn(t, ns, "Normal", "DependencyInstalling", "again (its Subscription "+ns+"/cache-operator had been uninstalled)")
	}, func() string { return "" })

	// Made a person's own (the dependency label taken off), then both uninstalled again:
	// the dependent's install is refused, naming the Subscription, and goes on by itself
	// once the person installs the package.
	uninstall("backup")
	uninstall("cache-operator")
	if err := k8s.Patch(ctx(), &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-operator"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"operator-manager.domain/dependency":null}}}`))); err != nil {
		t.Fatal(err)
	}
	out, err := install()
	if code := exitCode(err); code != 3 || !strings.Contains(out, "Subscription "+ns+"/cache-operator, which installs package cache-operator here, is uninstalled (spec.option: delete)") {
		t.Errorf("install backup with the person's cache-operator uninstalled: exit %d, want 3 naming it\n%s", code, out)
	}
	if sub := getSub(t, ns, "cache-operator"); sub.Spec.Option != omv1.OptionDelete {
		t.Errorf("the person's Subscription was changed to %q", sub.Spec.Option)
	}
	if out, err := cli("install", "cache-operator", "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("install cache-operator: %v\n%s", err, out)
	}
	waitRunning(t, ns, "backup", "backup-operator.v0.2.0")
	waitReady(t, ns, "backup", time.Minute)
}

// TestGVKDependencyFromCommunity: node-healthcheck-operator needs PoisonPillRemediation,
// which poison-pill-operator provides; both are installed and reach Succeeded.
func TestGVKDependencyFromCommunity(t *testing.T) {
	if communityDir() == "" {
		t.Skip("the shared community catalog is absent")
	}
	ns := "nhc"
	newNamespace(t, ns)
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: node-healthcheck}
spec: {package: node-healthcheck-operator}
`)
	sub := waitReady(t, ns, "node-healthcheck", 3*time.Minute)
	dep := waitReady(t, ns, "poison-pill-operator", 3*time.Minute)
	checkInstalled(t, ns, sub.Status.InstalledCSV)
	checkInstalled(t, ns, dep.Status.InstalledCSV)
	bp := getBlueprint(t, ns, "node-healthcheck")
	if len(bp.Spec.Dependencies) == 0 || !strings.Contains(bp.Spec.Dependencies[0].Reason, "PoisonPillRemediation") {
		t.Errorf("dependencies = %+v", bp.Spec.Dependencies)
	}
}

// TestDependencyServedFromAnotherNamespace: an operator installed in one namespace and
// watching all of them meets a dependency on it in any namespace, as OLM's global
// operators do. Nothing is installed a second time (a second installation would overlap
// the first, which the conflict check refuses, and the dependent waited on it forever);
// the Blueprint names the installation that meets it, and so does `recommend`. Out of
// range, the dependent is Unsatisfiable naming that installation, and nothing is created,
// until that installation is upgraded into range; its uninstall is refused while they
// depend on it.
func TestDependencyServedFromAnotherNamespace(t *testing.T) {
	shared, early, late := "deps-shared", "deps-early", "deps-late"
	for _, ns := range []string{shared, early, late} {
		newNamespace(t, ns)
	}
	// No spec.targetNamespaces: cache-operator supports AllNamespaces, so it watches all.
	applyYAML(t, shared, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: 1.0.0, catalog: samples}
`)
	waitRunning(t, shared, "cache", "cache-operator.v1.0.0")

	// backup-operator needs cache-operator >=1.1.0 <1.3.0: 1.0.0 runs for every namespace,
	// and only its own Subscription may change it.
	backup := func(ns string) {
		applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {package: backup-operator, version: 0.2.0, catalog: samples, targetNamespaces: [`+ns+`]}
`)
	}
	onlyBackup := func(ns string) {
		t.Helper()
		subs := &omv1.SubscriptionList{}
		if err := k8s.List(ctx(), subs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(subs.Items) != 1 {
			t.Errorf("%d Subscriptions in %s, want backup alone (a second cache-operator was planned)", len(subs.Items), ns)
		}
	}
	backup(early)
	eventually(t, time.Minute, "unsatisfiable", func() bool {
		return condition(getSub(t, early, "backup").Status.Conditions, omv1.ConditionResolved).Reason == "Unsatisfiable"
	}, describeSub(t, early, "backup"))
	c := condition(getSub(t, early, "backup").Status.Conditions, omv1.ConditionResolved)
	for _, want := range []string{"cache-operator.v1.0.0 is out of range", "Subscription " + shared + "/cache"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Resolved message lacks %q: %s", want, c.Message)
		}
	}
	t.Logf("unsatisfiable message: %s", c.Message)
	onlyBackup(early)

	// Upgraded where it runs, it meets the dependency of a new installation.
	sub := getSub(t, shared, "cache")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Version = "1.2.0"
	if err := k8s.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, shared, "cache", "cache-operator.v1.2.0")
	// recommend says the same before anything is created.
	out, err := cli("recommend", sampleDir, "backup-operator", "-n", late)
	if err != nil || !strings.Contains(out, "Dependency met:") || !strings.Contains(out, "installed cache-operator.v1.2.0, run for this namespace by Subscription "+shared+"/cache") ||
		strings.Contains(out, "With dependency:") {
		t.Errorf("recommend in %s: %v\n%s", late, err, out)
	}
	backup(late)
	// The one refused before is looked at again once the upgrade ends, and installs too.
	for _, ns := range []string{late, early} {
		waitRunning(t, ns, "backup", "backup-operator.v0.2.0")
		onlyBackup(ns)
		bp := getBlueprint(t, ns, "backup")
		if len(bp.Spec.Dependencies) != 1 || bp.Spec.Dependencies[0].CSVName != "cache-operator.v1.2.0" ||
			!strings.Contains(bp.Spec.Dependencies[0].Reason, "Subscription "+shared+"/cache runs for this namespace") {
			t.Errorf("%s: Blueprint dependencies = %+v", ns, bp.Spec.Dependencies)
		}
	}

	// Not uninstalled while the namespaces it runs for depend on it.
	if out, err := cli("uninstall", "cache", "-n", shared); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	eventually(t, 30*time.Second, "uninstall refused", func() bool {
		c := condition(getSub(t, shared, "cache").Status.Conditions, omv1.ConditionInstalled)
		return c.Reason == "RequiredByOthers" && strings.Contains(c.Message, early+"/backup") && strings.Contains(c.Message, late+"/backup")
	}, describeSub(t, shared, "cache"))
	if err := deploymentAvailable(t, shared, "cache-operator"); err != nil {
		t.Errorf("the dependency was removed while needed: %v", err)
	}
}

// TestDependencyOnAChangingInstallation: an installation on its way to another version
// (here a downgrade waiting for approval) counts as where it is going when another
// namespace's operator is resolved against it. Before, the dependent was installed
// against the version about to be replaced, and the approved change then took away what
// it needed.
func TestDependencyOnAChangingInstallation(t *testing.T) {
	shared, dep := "chg-shared", "chg-dep"
	for _, ns := range []string{shared, dep} {
		newNamespace(t, ns)
	}
	applyYAML(t, shared, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {package: cache-operator, version: 1.1.0, catalog: samples, approval: Manual}
`)
	waitRunning(t, shared, "cache", "cache-operator.v1.1.0")
	setVersion := func(v string) {
		t.Helper()
		sub := getSub(t, shared, "cache")
		patch := client.MergeFrom(sub.DeepCopy())
		sub.Spec.Version = v
		if err := k8s.Patch(ctx(), sub, patch); err != nil {
			t.Fatal(err)
		}
	}
	setVersion("1.0.0")
	eventually(t, time.Minute, "the downgrade waits for approval", func() bool {
		return getBlueprint(t, shared, "cache").Status.Phase == omv1.BlueprintWaitingForApproval
	}, describeSub(t, shared, "cache"))

	// backup-operator 0.2.0 needs cache-operator >=1.1.0 <1.3.0: 1.1.0 runs, 1.0.0 is next.
	applyYAML(t, dep, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {package: backup-operator, version: 0.2.0, catalog: samples, targetNamespaces: [`+dep+`]}
`)
	eventually(t, time.Minute, "unsatisfiable", func() bool {
		return condition(getSub(t, dep, "backup").Status.Conditions, omv1.ConditionResolved).Reason == "Unsatisfiable"
	}, describeSub(t, dep, "backup"))
	c := condition(getSub(t, dep, "backup").Status.Conditions, omv1.ConditionResolved)
	for _, want := range []string{"installed cache-operator.v1.0.0 (its installation is changing to it from cache-operator.v1.1.0) is out of range", "Subscription " + shared + "/cache"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Resolved message lacks %q: %s", want, c.Message)
		}
	}
	// recommend, which runs the same resolution from the command line, agrees.
	out, err := cli("recommend", sampleDir, "backup-operator", "-n", dep)
	if strings.Contains(out, "Dependency met:") || !strings.Contains(out, "changing to it from cache-operator.v1.1.0") {
		t.Errorf("recommend in %s: %v\n%s", dep, err, out)
	}
	t.Logf("recommend: %s", out)
	if bp := (&omv1.Blueprint{}); k8s.Get(ctx(), client.ObjectKey{Namespace: dep, Name: "backup"}, bp) == nil {
		t.Errorf("backup has a Blueprint (%s) while its dependency is leaving its range", bp.Spec.ClusterServiceVersionName)
	}

	// The downgrade withdrawn, what runs stays and meets it: backup installs against it.
	setVersion("1.1.0")
	waitRunning(t, dep, "backup", "backup-operator.v0.2.0")
	bp := getBlueprint(t, dep, "backup")
	if len(bp.Spec.Dependencies) != 1 || bp.Spec.Dependencies[0].CSVName != "cache-operator.v1.1.0" {
		t.Errorf("backup's dependencies = %+v, want the running cache-operator.v1.1.0", bp.Spec.Dependencies)
	}
	if got := getBlueprint(t, shared, "cache"); got.Status.CurrentCSV != "cache-operator.v1.1.0" || got.Status.Phase != omv1.BlueprintSucceeded {
		t.Errorf("cache: running %s, phase %s; want cache-operator.v1.1.0 Succeeded", got.Status.CurrentCSV, got.Status.Phase)
	}
}
