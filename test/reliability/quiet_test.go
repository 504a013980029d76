package reliability

import (
	"fmt"
	"sort"
	"strings"
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

	// With an empty bundle cache, as a manager rescheduled to another node starts (the
	// cache is an emptyDir): each bundle comes from its stored Secret.
	quiet, err := cluster.StartManager("quiet", harness.Options{SamplesAsDefault: true, Env: []string{crashpoint.EnvLogWrites + "=1"},
		Args: []string{"--cache-dir=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Kill()
	time.Sleep(20 * time.Second)
	if w := writesIn(quiet); len(w) > 0 {
		t.Errorf("a manager restarted over settled installations wrote %d times:\n%v", len(w), w)
	}
	// Nor does it read much: the kinds it installs are watched (its own objects only), so
	// what a restart reads directly is what is not, once per installation: its stored
	// bundle (with the cache empty) and the metadata of its OperatorCondition (the drift
	// check's first look). A restart of a fleet's manager, or a takeover by its second
	// replica, must not read every installation's objects or CRDs again.
	reqs, err := quiet.APIRequests()
	if err != nil {
		t.Fatal(err)
	}
	const installations = 12
	var lines []string
	reads := 0.0
	for k, v := range reqs {
		verb, resource, _ := strings.Cut(k, " ")
		if (verb == "get" || verb == "list") && resource != "" { // "" is discovery
			lines = append(lines, fmt.Sprintf("%s %.0f", k, v))
			reads += v
		}
	}
	sort.Strings(lines)
	t.Logf("reads of the restarted manager over %d settled installations: %.0f\n%s", installations, reads, strings.Join(lines, "\n"))
	if reads > 2*installations {
		t.Errorf("a manager restarted over %d settled installations read %.0f objects directly (at most %d expected):\n%s",
			installations, reads, 2*installations, strings.Join(lines, "\n"))
	}
}
