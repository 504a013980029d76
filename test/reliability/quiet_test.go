package reliability

import (
	"fmt"
	"testing"
	"time"

	"github.com/operator-manager/operator-manager/internal/crashpoint"
	"github.com/operator-manager/operator-manager/test/harness"
)

// TestSettledClusterCostsNoWrites: a manager restarted over settled installations (a
// fresh process: empty caches, catalogs loaded anew) writes nothing to the API server, then
// or in the steady state after. A crash-point walk depends on it, and so does a fleet.
func TestSettledClusterCostsNoWrites(t *testing.T) {
	m, err := cluster.StartManager("quiet-setup", harness.Options{SamplesAsDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	// Several namespaces, each with its own catalog: a restarted manager loads them while
	// it already reconciles the Subscriptions.
	var namespaces []string
	for i := range 8 {
		ns := fmt.Sprintf("quiet-%d", i)
		namespaces = append(namespaces, ns)
		newNamespace(t, ns, cluster.SampleDir)
		apply(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: cache-operator.1.2.0, catalog: samples}
`)
		if i%2 == 0 {
			apply(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: backup}
spec: {startingCSV: backup-operator.0.2.0, catalog: samples}
`)
		}
	}
	for i, ns := range namespaces {
		names := []string{"cache"}
		if i%2 == 0 {
			names = append(names, "backup")
		}
		for _, name := range names {
			eventually(t, m, 3*time.Minute, ns+"/"+name+" Ready", func() bool { return ready(getSub(t, ns, name)) }, describe(ns, name))
		}
	}
	time.Sleep(3 * time.Second) // the last status patches and events land
	m.Kill()

	quiet, err := cluster.StartManager("quiet", harness.Options{SamplesAsDefault: true, Env: []string{crashpoint.EnvLogWrites + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Kill()
	time.Sleep(20 * time.Second)
	if w := writesIn(quiet); len(w) > 0 {
		t.Errorf("a manager restarted over settled installations wrote %d times:\n%v", len(w), w)
	}
}
