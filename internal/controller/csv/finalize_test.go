package csv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// TestRenderedEntries: what an uninstall deletes besides the inventory is what the CSV
// renders to, by name, webhook certificate Secrets and configurations included (their
// certificates are stand-ins), CRDs never; a CSV that never rendered names nothing.
func TestRenderedEntries(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "samples", "catalog", "guard-operator", "1.1.0", "manifests", "guard-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	csv := &omv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(data, csv); err != nil {
		t.Fatal(err)
	}
	csv.Namespace = "guards"
	csv.Labels = map[string]string{omv1.LabelPackage: "guard-operator", omv1.LabelSubscription: "guard"}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()} // the Subscription is gone
	entries, err := r.renderedEntries(context.Background(), csv)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	names := map[string]bool{}
	for _, e := range entries {
		kinds[e.Kind]++
		names[e.Kind+"/"+e.Namespace+"/"+e.Name] = true
		if e.APIVersion == "" {
			t.Errorf("entry %+v has no apiVersion: it could not be read back", e)
		}
	}
	for _, want := range []string{"Deployment", "ServiceAccount", "Secret", "Service", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "OperatorCondition"} {
		if kinds[want] == 0 {
			t.Errorf("no %s among the rendered entries %v", want, kinds)
		}
	}
	if kinds["CustomResourceDefinition"] > 0 {
		t.Errorf("a CRD is among the entries an uninstall deletes: %v", kinds)
	}
	if !names["Deployment/guards/guard-operator"] {
		t.Errorf("the Deployment is not named as installed in the CSV's namespace: %v", names)
	}

	inventory := []omv1alpha1.InventoryEntry{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guards", Name: "guard-operator", Fingerprint: "7"}}
	all := union(entries, inventory) // as finalize adds them up
	deployments := 0
	for _, e := range all {
		if e.Kind == "Deployment" && e.Name == "guard-operator" {
			deployments++
			if e.Fingerprint != "7" {
				t.Errorf("the Deployment is not as the inventory recorded it: %+v", e)
			}
		}
	}
	if len(all) != len(entries) || deployments != 1 {
		t.Errorf("union: %d entries (want %d, the inventory's Deployment once, as recorded), the Deployment %d times", len(all), len(entries), deployments)
	}
	if len(inventory) != 1 {
		t.Error("union changed the inventory it was given")
	}
	for _, e := range entries {
		if e.Fingerprint != "" {
			t.Errorf("union changed the rendered entries it was given: %+v", e)
		}
	}

	csv.Spec.DecodeError = "spec.install: cannot decode"
	if entries, err := r.renderedEntries(context.Background(), csv); err != nil || len(entries) != 0 {
		t.Errorf("a CSV that never rendered names %v (%v)", entries, err)
	}
}
