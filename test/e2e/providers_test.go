package e2e

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	record := func(crd string) (string, bool) {
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx(), client.ObjectKey{Name: crd}, c); err != nil {
			return "", false
		}
		v, ok := c.Annotations[key]
		return v, ok
	}
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
}
