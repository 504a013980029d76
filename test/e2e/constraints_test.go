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

// TestConstraintDependencies: a bundle's olm.constraint (OLM's compound constraints and
// CEL rules) is resolved by the manager under its own ServiceAccount as OLM resolves it.
// backup-operator 0.1.0 needs the Cache API but not cache-operator 1.2.0, so the newest
// cache-operator, 1.2.0, is passed over for 1.1.0, installed as its dependency, and the
// Blueprint records why in the author's words. backup-operator 0.2.0 needs a cache
// operator the catalog calls certified, which none is: the change to it is refused with
// that failureMessage and the constraint written out, and 0.1.0 keeps running.
func TestConstraintDependencies(t *testing.T) {
	dir := filepath.Join(work, "catalogs", "constraints")
	for _, v := range []string{"cache-operator/1.1.0", "cache-operator/1.2.0", "backup-operator/0.1.0", "backup-operator/0.2.0"} {
		copyTree(t, filepath.Join(sampleDir, v), filepath.Join(dir, v))
	}
	write := func(version, deps string) {
		if err := os.WriteFile(filepath.Join(dir, "backup-operator", version, "metadata", "dependencies.yaml"), []byte(deps), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0.1.0", `dependencies:
- type: olm.constraint
  value:
    failureMessage: backup needs the Cache API, and not cache-operator 1.2.0
    all:
      constraints:
      - gvk: {group: cache.samples.operator-manager.domain, version: v1, kind: Cache}
      - not: {constraints: [{package: {packageName: cache-operator, versionRange: "1.2.0"}}]}
`)
	write("0.2.0", `dependencies:
- type: olm.constraint
  value:
    failureMessage: backup 0.2.0 needs a certified cache operator
    cel: {rule: "properties.exists(p, p.type == 'certified' && p.value == true)"}
`)
	ns := "constraints"
	newNamespace(t, ns)
	if err := k8s.Create(ctx(), &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "constraints", Namespace: ns},
		Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: dir}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the catalog loaded", catalogLoaded(t, ns, "constraints", 2, 4), catalogStatus(t, ns, "constraints"))
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {package: backup-operator, version: 0.1.0, catalog: constraints, targetNamespaces: [constraints]}
`)
	waitRunning(t, ns, "backup", "backup-operator.v0.1.0")
	waitRunning(t, ns, "cache-operator", "cache-operator.v1.1.0")
	uninstallAtEnd(t, ns, "cache-operator")
	bp := getBlueprint(t, ns, "backup")
	if len(bp.Spec.Dependencies) != 1 || bp.Spec.Dependencies[0].Version != "1.1.0" ||
		!strings.Contains(bp.Spec.Dependencies[0].Reason, "backup needs the Cache API, and not cache-operator 1.2.0") {
		t.Errorf("Blueprint dependencies = %+v, want cache-operator 1.1.0 with the constraint's words", bp.Spec.Dependencies)
	}
	waitReady(t, ns, "backup", time.Minute)

	patchSub(t, ns, "backup", func(s *omv1.Subscription) { s.Spec.Version = "0.2.0" })
	eventually(t, time.Minute, "the change refused as unsatisfiable", func() bool {
		return condition(getSub(t, ns, "backup").Status.Conditions, omv1.ConditionResolved).Reason == "Unsatisfiable"
	}, describeSub(t, ns, "backup"))
	c := condition(getSub(t, ns, "backup").Status.Conditions, omv1.ConditionResolved)
	for _, want := range []string{"backup 0.2.0 needs a certified cache operator", `cel "properties.exists(p, p.type == 'certified' && p.value == true)"`, "no bundle in the catalogs meets it"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Resolved message lacks %q: %s", want, c.Message)
		}
	}
	t.Logf("unsatisfiable message: %s", c.Message)
	if bp := getBlueprint(t, ns, "backup"); bp.Status.CurrentCSV != "backup-operator.v0.1.0" || bp.Status.Phase != omv1.BlueprintSucceeded {
		t.Errorf("backup after the refused change: %s %s, want 0.1.0 still Succeeded", bp.Status.CurrentCSV, bp.Status.Phase)
	}
	if err := deploymentAvailable(t, ns, "backup-operator"); err != nil {
		t.Errorf("backup-operator 0.1.0 stopped running: %v", err)
	}
}
