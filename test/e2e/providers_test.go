package e2e

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
)

// TestProviderRecordsFollowVersions: an upgrade to a version that no longer owns a CRD
// takes the installation's provider record off that CRD (the CRD itself stays, with its
// data), and puts it on the CRD the new version owns.
func TestProviderRecordsFollowVersions(t *testing.T) {
	files := map[string]string{}
	gadget(files, "old.providers.example", "1.0.0", "", nil, nil)
	gadget(files, "new.providers.example", "1.1.0", "gadget-operator.v1.0.0", nil, nil)
	ns := "providers"
	newNamespaceWithCatalog(t, ns, writeCatalog(t, "providers", files))
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: gadgets}
spec: {startingCSV: gadget-operator.1.0.0, catalog: test}
`)
	waitRunning(t, ns, "gadgets", "gadget-operator.v1.0.0")
	key := blueprint.ProviderKey(ns, "gadgets")
	record := func(crd string) (string, bool) { return providerRecord(crd, key) }
	eventually(t, 30*time.Second, "1.0.0 recorded on its CRD", func() bool {
		v, _ := record("gadgets.old.providers.example")
		return v == ns+"/gadgets gadget-operator.v1.0.0"
	}, func() string { v, _ := record("gadgets.old.providers.example"); return "record: " + v })

	setStartingCSV(t, ns, "gadgets", "gadget-operator.1.1.0")
	waitRunning(t, ns, "gadgets", "gadget-operator.v1.1.0")
	eventually(t, 30*time.Second, "the record moved to the CRD 1.1.0 owns", func() bool {
		newRec, _ := record("gadgets.new.providers.example")
		_, oldHas := record("gadgets.old.providers.example")
		return newRec == ns+"/gadgets gadget-operator.v1.1.0" && !oldHas
	}, func() string {
		o, _ := record("gadgets.old.providers.example")
		n, _ := record("gadgets.new.providers.example")
		return "old: " + o + "; new: " + n
	})
	if err := k8s.Get(ctx(), client.ObjectKey{Name: "gadgets.old.providers.example"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("the CRD 1.1.0 no longer owns is gone: %v", err)
	}

	// A record of an installation that is gone, as earlier versions of the manager left
	// them (their uninstall took records only off the last good bundle's CRDs), goes;
	// the living installation's stays.
	gone := blueprint.ProviderKey("providers-gone", "gadgets")
	kubectl(t, "annotate", "crd", "gadgets.new.providers.example", gone+"=providers-gone/gadgets gadget-operator.v0.9.0")
	eventually(t, 30*time.Second, "the record of an installation that is gone removed", func() bool {
		_, has := record("gadgets.new.providers.example")
		_, hasGone := providerRecord("gadgets.new.providers.example", gone)
		return has && !hasGone
	}, func() string {
		c := &apiextensionsv1.CustomResourceDefinition{}
		_ = k8s.Get(ctx(), client.ObjectKey{Name: "gadgets.new.providers.example"}, c)
		return fmt.Sprintf("annotations: %v", c.Annotations)
	})
}

// TestFailedInstallLeavesNoProviderRecord: a first install that failed (its pods never
// scheduled) applied its CRD with its provider record; uninstalled, it takes the record
// off, though it never had a good revision. Before, the record outlived the installation
// and its namespace, naming a provider that was gone.
func TestFailedInstallLeavesNoProviderRecord(t *testing.T) {
	files := map[string]string{}
	gadget(files, "failed.providers.example", "1.0.0", "", nil, nil)
	ns := "providers-failed"
	newNamespaceWithCatalog(t, ns, writeCatalog(t, "providers-failed", files))
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: gadgets}
spec:
  startingCSV: gadget-operator.1.0.0
  catalog: test
  health: {timeout: 10s}
  rollback: {automatic: false}
  config: {nodeSelector: {no-such-node: "true"}}
`)
	eventually(t, 2*time.Minute, "the first install failed", func() bool {
		bp := &omv1.Blueprint{}
		return k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "gadgets"}, bp) == nil && bp.Status.Phase == omv1.BlueprintFailed
	}, describeSub(t, ns, "gadgets"))
	crd := "gadgets.failed.providers.example"
	key := blueprint.ProviderKey(ns, "gadgets")
	if err := k8s.Get(ctx(), client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Fatalf("the CRD of the failed install: %v", err)
	}
	record := func() (string, bool) { return providerRecord(crd, key) }
	if v, ok := record(); !ok {
		t.Fatalf("the failed install's CRD carries no record of it (%q): nothing to check", v)
	}
	if out, err := cli("uninstall", "gadgets", "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Fatalf("the CRD of the failed install after its uninstall: %v", err)
	}
	if v, ok := record(); ok {
		t.Errorf("the uninstalled failed install is still recorded as a provider of %s: %q", crd, v)
	}
}

// providerRecord is the provider record key on CRD crd, and whether it is there (false
// too when the CRD cannot be read).
func providerRecord(crd, key string) (string, bool) {
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(), client.ObjectKey{Name: crd}, c); err != nil {
		return "", false
	}
	v, ok := c.Annotations[key]
	return v, ok
}
