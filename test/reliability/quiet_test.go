package reliability

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
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
	// Nor does it read what it watches: the kinds it installs are cached (its own objects
	// only), so a restart reads directly only what is not: each installation's stored
	// bundle (with the cache empty) and the metadata of its OperatorCondition (the drift
	// check's first look). A restart of a fleet's manager, or a takeover by its second
	// replica, must not read every installation's CRDs, Deployments, pods or catalogs again.
	// Their number is logged, not asserted: 20 for the 12 installations here on a quiet
	// machine, 46 in one loaded CI run (36 of them OperatorConditions); with each answer's
	// code, so a count grown by the API server turning requests away (429, then client-go
	// asks again) shows as such.
	reqs, err := quiet.APIRequestsWithCodes()
	if err != nil {
		t.Fatal(err)
	}
	expected := map[string]bool{"secrets": true, "operatorconditions." + omv1.Group: true}
	var lines, unexpected []string
	for k, v := range reqs {
		verb, rest, _ := strings.Cut(k, " ")
		resource, _, _ := strings.Cut(rest, " ")
		if (verb != "get" && verb != "list") || resource == "" { // "" is discovery
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %.0f", k, v))
		if !expected[resource] {
			unexpected = append(unexpected, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	sort.Strings(lines)
	t.Logf("reads of the restarted manager over 12 settled installations:\n%s", strings.Join(lines, "\n"))
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		t.Errorf("a manager restarted over settled installations read what it watches, or more than their bundles and OperatorConditions:\n%s", strings.Join(unexpected, "\n"))
	}
}
