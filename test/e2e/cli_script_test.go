package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/testenv"
)

// scriptRun is one run of the command line as a script sees it: stdout and stderr apart,
// and the exit code.
type scriptRun struct {
	stdout, stderr string
	code           int
}

func script(t *testing.T, args ...string) scriptRun {
	t.Helper()
	return scriptOn(t, env.Kubeconfig, args...)
}

// scriptOn is script against the cluster of another kubeconfig.
func scriptOn(t *testing.T, kubeconfig string, args ...string) scriptRun {
	t.Helper()
	cmd := exec.Command(managerBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := scriptRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return r
}

// mustJSON runs a verb with -o json, expects exit code 0, and decodes stdout whole.
func mustJSON(t *testing.T, v any, args ...string) scriptRun {
	t.Helper()
	r := script(t, append(args, "-o", "json")...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("%v -o json: stdout does not parse as JSON: %v\n%s", args, err, r.stdout)
	}
	return r
}

// installationJSON is the part of `install|uninstall|rollback|approve|status -o json` read here.
type installationJSON struct {
	Subscription *struct {
		Status struct {
			InstalledVersion string `json:"installedVersion"`
		} `json:"status"`
	} `json:"subscription"`
	Blueprint *struct {
		Status struct {
			Phase      string `json:"phase"`
			CurrentCSV string `json:"currentCSV"`
		} `json:"status"`
	} `json:"blueprint"`
}

// TestCLIScripted drives every verb as a script would: -o json parses whole from stdout
// while --wait progress goes to stderr, failures exit with the documented codes and say
// why on stderr, the binary works as a kubectl plugin, and completion scripts generate.
func TestCLIScripted(t *testing.T) {
	ns := "cli-script"
	newNamespace(t, ns)
	uninstallAtEnd(t, ns, "s1")
	uninstallAtEnd(t, ns, "slow")
	n := []string{"-n", ns}

	// install --wait -o json: the installation as it ended on stdout, progress on stderr.
	var inst installationJSON
	r := mustJSON(t, &inst, append(n, "install", "s1", "--csv", "cache-operator.1.1.0", "--catalog", "samples", "--wait")...)
	if inst.Subscription == nil || inst.Subscription.Status.InstalledVersion != "1.1.0" || inst.Blueprint == nil || inst.Blueprint.Status.Phase != "Succeeded" {
		t.Errorf("install -o json: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, "subscription cli-script/s1 created") || !strings.Contains(r.stderr, "Ready=True") {
		t.Errorf("install --wait -o json: progress should go to stderr:\n%s", r.stderr)
	}

	// The listing verbs.
	var rows []map[string]any
	mustJSON(t, &rows, append(n, "list")...)
	if len(rows) != 1 || rows[0]["name"] != "s1" || rows[0]["installed"] != "1.1.0" {
		t.Errorf("list -o json: %v", rows)
	}
	mustJSON(t, &inst, append(n, "status", "s1")...)
	var hist []struct {
		Revision int64  `json:"revision"`
		CSVName  string `json:"csvName"`
		Stored   *struct {
			Secret string `json:"secret"`
			Bytes  int    `json:"bytes"`
		} `json:"stored"`
	}
	mustJSON(t, &hist, append(n, "history", "s1")...)
	if len(hist) != 1 || hist[0].CSVName != "cache-operator.v1.1.0" || hist[0].Stored == nil || hist[0].Stored.Secret == "" || hist[0].Stored.Bytes == 0 {
		t.Errorf("history -o json should show the revision and the bundle Secret the cluster keeps: %+v", hist)
	}
	if out := script(t, append(n, "history", "s1")...); !strings.Contains(out.stdout, "KEPT") || !strings.Contains(out.stdout, "secret/"+hist[0].Stored.Secret) {
		t.Errorf("history table should show what the revision keeps:\n%s", out.stdout)
	}
	var doc map[string]any
	var anyList []any
	mustJSON(t, &doc, "version")
	mustJSON(t, &doc, "crds", "install")
	if policies, _ := doc["admission"].([]any); len(policies) != 2 {
		t.Errorf("crds install -o json should name the admission policy and its binding it applied: %v", doc)
	}
	mustJSON(t, &anyList, "catalog", "list", sampleDir)
	mustJSON(t, &doc, "catalog", "show", sampleDir, "cache-operator")
	mustJSON(t, &anyList, "catalog", "search", sampleDir, "cache")
	mustJSON(t, &doc, "catalog", "validate", sampleDir)
	mustJSON(t, &doc, append(n, "recommend", sampleDir, "cache-operator")...)

	// diff: what the upgrade to 1.2.0 changes, before it is made.
	var diff struct {
		From, To string
		Changes  []struct{ Change, Kind, Name, Diff string }
	}
	mustJSON(t, &diff, append(n, "diff", "s1", sampleDir, "--csv", "cache-operator.1.2.0")...)
	changedDeployment := false
	for _, c := range diff.Changes {
		if c.Kind == "Deployment" && c.Change == "changed" && strings.Contains(c.Diff, "1.2.0") {
			changedDeployment = true
		}
	}
	if diff.From != "cache-operator.v1.1.0" || diff.To != "cache-operator.v1.2.0" || !changedDeployment {
		t.Errorf("diff 1.1.0 -> 1.2.0 should show the Deployment's change: %+v", diff)
	}
	if out := script(t, append(n, "diff", "s1", sampleDir, "--csv", "cache-operator.1.2.0")...); out.code != 0 || !strings.Contains(out.stdout, "changed") || !strings.Contains(out.stdout, "+++ target/Deployment/") {
		t.Errorf("diff table: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}

	// The manager's bundle cache: the installed bundle, used by s1. Pruned in a copy, so
	// the running manager's cache is left alone.
	cacheDir := filepath.Join(t.TempDir(), "bundles")
	if err := os.CopyFS(cacheDir, os.DirFS(filepath.Join(work, "bundles"))); err != nil {
		t.Fatal(err)
	}
	var cached []struct {
		CSV    string   `json:"csv"`
		UsedBy []string `json:"usedBy"`
	}
	mustJSON(t, &cached, "cache", "list", "--cache-dir", cacheDir)
	used := false
	for _, c := range cached {
		used = used || (c.CSV == "cache-operator.v1.1.0" && strings.Contains(strings.Join(c.UsedBy, ","), ns+"/s1"))
	}
	if !used {
		t.Errorf("cache list should show cache-operator.v1.1.0 used by %s/s1: %+v", ns, cached)
	}
	var pruned struct {
		Removed []struct{ CSV string } `json:"removed"`
	}
	mustJSON(t, &pruned, "cache", "prune", "--cache-dir", cacheDir)
	for _, p := range pruned.Removed {
		if p.CSV == "cache-operator.v1.1.0" {
			t.Errorf("cache prune removed a bundle an installation uses: %+v", pruned)
		}
	}
	mustJSON(t, &pruned, "cache", "prune", "--cache-dir", cacheDir, "--all")
	mustJSON(t, &cached, "cache", "list", "--cache-dir", cacheDir, "--offline")
	if len(cached) != 0 {
		t.Errorf("cache prune --all left %+v", cached)
	}

	// Upgrade with -o yaml, then roll back by hand with -o json.
	r = script(t, append(n, "install", "s1", "--csv", "cache-operator.1.2.0", "--catalog", "samples", "--wait", "-o", "yaml")...)
	if err := yaml.Unmarshal([]byte(r.stdout), &inst); r.code != 0 || err != nil || inst.Subscription.Status.InstalledVersion != "1.2.0" {
		t.Errorf("upgrade -o yaml: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	mustJSON(t, &inst, append(n, "rollback", "s1", "--wait")...)
	if inst.Blueprint == nil || inst.Blueprint.Status.CurrentCSV != "cache-operator.v1.1.0" {
		t.Errorf("rollback -o json: %+v", inst.Blueprint)
	}

	// Failures: each its exit code, the reason on stderr, stdout still parseable.
	r = script(t, append(n, "install", "s1", "--csv", "cache-operator.1.3.0", "--catalog", "samples", "--health-timeout", "10s", "--wait", "-o", "json")...)
	if r.code != 3 || !strings.Contains(r.stderr, "RolledBack") || !strings.Contains(r.stderr, "HealthTimeout") || json.Unmarshal([]byte(r.stdout), &inst) != nil {
		t.Errorf("an upgrade that fails its health check: want exit 3 and RolledBack, HealthTimeout on stderr; exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = script(t, append(n, "install", "slow", "--csv", "reloader-operator.0.2.0", "--catalog", "samples", "--wait", "--timeout", "1ms")...)
	if r.code != 4 || !strings.Contains(r.stderr, "timed out") {
		t.Errorf("--wait past --timeout: want exit 4; exit %d\n%s", r.code, r.stderr)
	}
	r = script(t, append(n, "approve", "s1", "-o", "json")...)
	if r.code != 1 || !strings.Contains(r.stderr, "waits for no approval") {
		t.Errorf("approve with nothing to approve: want exit 1 and the reason; exit %d\n%s", r.code, r.stderr)
	}
	r = script(t, append(n, "status", "nosuch")...)
	if r.code != 1 || !strings.Contains(r.stderr, "no installation nosuch in namespace cli-script: there is no Subscription of that name") {
		t.Errorf("status of a missing installation: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"catalog", "mirrors", "a", "b"}, {"bogus"}, {"dev", "upp"}, {"list", "extra"}, {"list", "--bogus"}, {"list", "-o", "xml"}, {"install", "x", "--csv", "x.1.0.0", "--package", "x"}} {
		r = script(t, args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "Error: ") {
			t.Errorf("%v: want exit 2, nothing on stdout and the reason on stderr; exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
		}
	}

	// The kubectl plugin: kubectl finds kubectl-operator_manager on the PATH.
	pluginDir := t.TempDir()
	if err := os.Symlink(managerBin, filepath.Join(pluginDir, "kubectl-operator_manager")); err != nil {
		t.Fatal(err)
	}
	bins, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	kc := exec.Command(filepath.Join(bins, testenv.BinKubectl), "operator-manager", "list", "-n", ns)
	kc.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+env.Kubeconfig)
	if out, err := kc.CombinedOutput(); err != nil || !strings.Contains(string(out), "s1") || !strings.Contains(string(out), "INSTALLED") {
		t.Errorf("kubectl operator-manager list: %v\n%s", err, out)
	}
	kc = exec.Command(filepath.Join(bins, testenv.BinKubectl), "operator-manager", "--help")
	kc.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := kc.CombinedOutput(); err != nil || !strings.Contains(string(out), "kubectl operator-manager [command]") {
		t.Errorf("kubectl operator-manager --help should name the plugin: %v\n%s", err, out)
	}

	// Completion: scripts for each shell, and Subscription names from the cluster.
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if r = script(t, "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "operator-manager") {
			t.Errorf("completion %s: exit %d, %d bytes\n%s", shell, r.code, len(r.stdout), r.stderr)
		}
	}
	if r = script(t, "__complete", "history", "-n", ns, ""); !strings.Contains(r.stdout, "s1\n") || !strings.Contains(r.stdout, "slow\n") {
		t.Errorf("completing history NAME should offer the namespace's Subscriptions:\n%s", r.stdout)
	}

	// uninstall -o json: the Subscription is gone (null).
	for _, name := range []string{"s1", "slow"} {
		var gone installationJSON
		mustJSON(t, &gone, append(n, "uninstall", name, "--delete-subscription", "--wait")...)
		if gone.Subscription != nil {
			t.Errorf("uninstall %s --delete-subscription -o json: the Subscription should be null", name)
		}
	}
}
