package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// cli runs the operator-manager command line against the cluster.
func cli(args ...string) (string, error) {
	out, err := exec.Command(managerBin, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// TestCLI drives an install, a failing install, the listings and an uninstall through the
// command line, as a person would, with --wait showing progress.
func TestCLI(t *testing.T) {
	ns := "cli"
	newNamespace(t, ns)
	// Each watches only its namespace: two installations of the package run at once here.
	out, err := cli("install", "cache", "--csv", "cache-operator.1.2.0", "--catalog", "samples", "-n", ns, "--target-namespaces", ns, "--wait")
	if err != nil {
		t.Fatalf("install --wait: %v\n%s", err, out)
	}
	for _, want := range []string{"subscription cli/cache created", "Ready=True (Succeeded): cache-operator.v1.2.0 is installed and healthy"} {
		if !strings.Contains(out, want) {
			t.Errorf("install --wait output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n[") < 1 {
		t.Errorf("install --wait printed no progress lines:\n%s", out)
	}

	// A version alone cannot change a Subscription that names its version by startingCSV:
	// refused before anything is written, rather than guessed into a package.
	out, err = cli("install", "cache", "--version", "1.1.0", "-n", ns)
	if err == nil || !strings.Contains(out, "names its version by startingCSV (cache-operator.1.2.0)") {
		t.Errorf("install --version of a startingCSV Subscription: %v\n%s", err, out)
	}

	// A second Subscription of the same package in the namespace (here the package of its
	// name: no --csv or --package) is refused before it is created, naming the first and
	// the command that changes it. It was created, refused by the manager, and left
	// behind, failed, for a person who meant the one there under another name.
	out, err = cli("install", "cache-operator", "--catalog", "samples", "-n", ns, "--wait", "--timeout", "30s")
	if exitCode(err) != 1 || !strings.Contains(out, `Error: subscription cli/cache already installs package "cache-operator", and a namespace runs one version of a package: change that one (operator-manager install cache --catalog samples --timeout 30s --wait)`) ||
		!strings.Contains(out, "nothing was created") {
		t.Errorf("second install: exit %d\n%s", exitCode(err), out)
	}
	if err := k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, &omv1.Subscription{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused install left a Subscription cli/cache-operator behind (%v)", err)
	}
	// One made all the same (applied as YAML) is refused by the manager, naming the first.
	applyYAML(t, ns, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache-operator}
spec: {package: cache-operator, catalog: samples}
`)
	eventually(t, time.Minute, "the second Subscription of a package refused", func() bool {
		c := condition(getSub(t, ns, "cache-operator").Status.Conditions, "Resolved")
		return c.Reason == "PackageAlreadySubscribed" && strings.Contains(c.Message, "Subscription cache")
	}, describeSub(t, ns, "cache-operator"))
	// The verbs of an installation say, of one with nothing installed, why; of a name
	// with no Subscription, that there is none (not "blueprints ... not found").
	out, err = cli("history", "cache-operator", "-n", ns)
	if exitCode(err) != 1 || !strings.Contains(out, "cli/cache-operator has installed nothing yet (PackageAlreadySubscribed: ") {
		t.Errorf("history of a refused Subscription: exit %d\n%s", exitCode(err), out)
	}
	for _, verb := range [][]string{{"rollback", "nope"}, {"status", "nope"}, {"uninstall", "nope"}, {"pause", "nope"}, {"diff", "nope", "--version", "1.1.0"}} {
		out, err = cli(append(verb, "-n", ns)...)
		if exitCode(err) != 1 || !strings.Contains(out, "no installation nope in namespace cli: there is no Subscription of that name") {
			t.Errorf("%s of no installation: exit %d\n%s", verb[0], exitCode(err), out)
		}
	}
	// An export of a namespace with nothing in it writes no archive.
	archive := filepath.Join(t.TempDir(), "nothing.tgz")
	out, err = cli("export", "-n", "cli-nothing-here", "-f", archive)
	if _, statErr := os.Stat(archive); exitCode(err) != 1 || !strings.Contains(out, "nothing to export: namespace cli-nothing-here has no installation") || statErr == nil {
		t.Errorf("export of an empty namespace: exit %d, archive written: %v\n%s", exitCode(err), statErr == nil, out)
	}

	newNamespace(t, "cli-broken")
	out, err = cli("install", "broken", "--csv", "cache-operator.1.3.0", "--catalog", "samples", "--health-timeout", "10s", "-n", "cli-broken", "--target-namespaces", "cli-broken", "--wait")
	if err == nil || !strings.Contains(out, "HealthCheckFailed") || !strings.Contains(out, "deployment cache-operator") {
		t.Errorf("install --wait of a broken version: err %v\n%s", err, out)
	}
	// status ends with the manager's events about it, the failure's among them, as
	// `kubectl describe` would show them.
	out, err = cli("status", "broken", "-n", "cli-broken")
	if flat := strings.Join(strings.Fields(out), " "); err != nil || !strings.Contains(flat, "LAST SEEN TYPE REASON OBJECT MESSAGE") ||
		!regexp.MustCompile(`ago Warning HealthCheckFailed Blueprint/broken [^\n]*deployment cache-operator`).MatchString(flat) {
		t.Errorf("status of the failed install shows no HealthCheckFailed event: %v\n%s", err, out)
	}
	out, err = cli("status", "broken", "-n", "cli-broken", "--events", "1", "-o", "json")
	var st struct {
		Events struct {
			Newest []struct{ Type, Reason, Object string }
			Total  int
		}
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || len(st.Events.Newest) != 1 || st.Events.Total < 2 {
		t.Errorf("status --events 1 -o json: want the newest event of several: %v\n%s", err, out)
	}

	// WANTED is the version resolved to, beside INSTALLED; an unresolved Subscription's
	// PACKAGE is the one it asks for.
	out, err = cli("list", "-A")
	if err != nil || !regexp.MustCompile(`cli\s+cache\s+cache-operator\s+1\.2\.0\s+1\.2\.0\s+succeeded`).MatchString(out) ||
		!regexp.MustCompile(`cli\s+cache-operator\s+cache-operator\s+default channel\s+resolve failed`).MatchString(out) || !strings.Contains(out, "failed") {
		t.Errorf("list: %v\n%s", err, out)
	}
	out, err = cli("status", "cache", "-n", ns)
	if err != nil || !strings.Contains(out, "REVISION") || !strings.Contains(out, "cache-operator.v1.2.0") {
		t.Errorf("status: %v\n%s", err, out)
	}
	// The samples are a Directory CatalogSource on the manager's disk, which here is this
	// machine's: diff reads it there and says so.
	out, err = cli("diff", "cache", "-n", ns, "--version", "1.3.0")
	if err != nil || !strings.Contains(out, "the directory of CatalogSource") || !strings.Contains(out, "cache-operator.v1.3.0") {
		t.Errorf("diff without a catalog, from a Directory CatalogSource: %v\n%s", err, out)
	}
	out, err = cli("list", "-n", ns, "-o", "json")
	if err != nil || !strings.Contains(out, `"installed": "1.2.0"`) {
		t.Errorf("list -o json: %v\n%s", err, out)
	}
	// -o wide, as kubectl's: the CSVs, the revision and the catalog too.
	out, err = cli("list", "-n", ns, "-o", "wide")
	if err != nil || !strings.Contains(out, "TARGET CSV") || !regexp.MustCompile(`cache-operator\.v1\.2\.0\s+cache-operator\.v1\.2\.0\s+1\s+`+ns+`/samples`).MatchString(out) {
		t.Errorf("list -o wide: %v\n%s", err, out)
	}
	if out, err = cli("status", "cache", "-n", ns, "-o", "wide"); exitCode(err) != 2 || !strings.Contains(out, `unknown output format "wide": use table, json or yaml`) {
		t.Errorf("status -o wide: exit %d, want 2 and the formats it takes\n%s", exitCode(err), out)
	}

	newNamespace(t, "cli-nope") // its own: a namespace runs one Subscription of a package
	out, err = cli("install", "nope", "--csv", "cache-operator.9.9.9", "--catalog", "samples", "-n", "cli-nope", "--wait")
	if err == nil || !strings.Contains(out, "VersionNotFound") || !strings.Contains(out, "1.0.0, 1.1.0, 1.2.0, 1.3.0") {
		t.Errorf("install of an unknown version: %v\n%s", err, out)
	}

	for _, name := range []string{"cli/cache", "cli-broken/broken", "cli-nope/nope", "cli/cache-operator"} {
		namespace, name, _ := strings.Cut(name, "/")
		out, err = cli("uninstall", name, "-n", namespace, "--delete-subscription", "--wait")
		if err != nil || !strings.Contains(out, "subscription is gone") {
			t.Errorf("uninstall %s --wait: %v\n%s", name, err, out)
		}
	}
	if left := ownedObjects(t, ns, "cache-operator.v1.2.0"); len(left) > 0 {
		t.Errorf("objects left after uninstall: %v", left)
	}
}
