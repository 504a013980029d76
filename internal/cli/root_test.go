package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/controller/blueprint"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
)

// TestUnknownVerbsAtEveryLevel walks the whole command tree: every command group refuses
// an unknown verb with ExitUsage and "unknown command", instead of printing its help and
// exiting 0 (which a script takes for success).
func TestUnknownVerbsAtEveryLevel(t *testing.T) {
	var groups []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			groups = append(groups, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRoot())
	if len(groups) < 5 { // root, catalog, dev, crds, cache, completion
		t.Fatalf("found only %d command groups", len(groups))
	}
	for _, g := range groups {
		path := strings.Fields(g.CommandPath())[1:]
		_, err := runCLI(t, append(path, "no-such-verb", "x")...)
		if exitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), `unknown command "no-such-verb"`) {
			t.Errorf("%s no-such-verb: exit %d, %v", g.CommandPath(), exitCode(err), err)
		}
		// The bare group still prints its help and succeeds, as kubectl's do.
		if out, err := runCLI(t, path...); err != nil || !strings.Contains(out, "Available Commands") {
			t.Errorf("%s: %v\n%s", g.CommandPath(), err, out)
		}
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"version"}, ExitOK, ""},
		{[]string{"version", "extra"}, ExitUsage, "unknown command"},
		{[]string{"list", "--no-such-flag"}, ExitUsage, "unknown flag"},
		{[]string{"version", "-o", "xml"}, ExitUsage, `unknown output format "xml"`},
		{[]string{"history"}, ExitUsage, "accepts 1 arg(s)"},
		{[]string{"install", "x", "--csv", "x.1.0.0", "--package", "x"}, ExitUsage, "give at most one of --csv and --package"},
		{[]string{"install", "x", "--approval", "sometimes"}, ExitUsage, `--approval "sometimes": give Automatic or Manual`},
		// Refused before any cluster is asked, in the manager's own words.
		{[]string{"install", "x", "--package", "x", "--version", "latest"}, ExitUsage, `--version "latest": neither a version nor a semver range`},
		{[]string{"catalog", "show", "--url", "http://x", "a", "b"}, ExitUsage, "with --url"},
		{[]string{"cache", "prune", "--offline", "--cache-dir", "/nonexistent"}, ExitUsage, "--all"},
		{[]string{"catalog", "list", "/nonexistent"}, ExitError, "/nonexistent"},
		{[]string{"catalog", "show", sampleDir, "cache-operatr"}, ExitError, `package "cache-operatr" is not in catalog ../../samples/catalog; similar: cache-operator; it has:`},
		{[]string{"export", "-n", "x"}, ExitUsage, "-f FILE"},
		{[]string{"import"}, ExitUsage, "-f FILE"},
		{[]string{"import", "-f", "/nonexistent.tgz"}, ExitError, "/nonexistent.tgz"},
	} {
		_, err := runCLI(t, tc.args...)
		if exitCode(err) != tc.code || (tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg))) {
			t.Errorf("%v: exit %d (%v), want %d with %q", tc.args, exitCode(err), err, tc.code, tc.msg)
		}
	}
	// The innermost verdict stands through wrapping.
	err := fmt.Errorf("installing: %w", withCode(ExitTimeout, errors.New("timed out")))
	if got := exitCode(withCode(ExitFailed, err)); got != ExitTimeout {
		t.Errorf("wrapped timeout: exit %d", got)
	}
}

func TestInstallDoneExitCodes(t *testing.T) {
	sub := &omv1.Subscription{}
	bp := &omv1.Blueprint{Spec: omv1.BlueprintSpec{ClusterServiceVersionName: "a.v2"}}
	bp.Status.History = []omv1.Revision{{CSVName: "a.v2"}}
	for phase, code := range map[omv1.BlueprintPhase]int{
		omv1.BlueprintRolledBack: ExitFailed, omv1.BlueprintFailed: ExitFailed, omv1.BlueprintBlocked: ExitFailed,
		omv1.BlueprintWaitingForApproval: ExitHeld, omv1.BlueprintUpgradeHeld: ExitHeld,
	} {
		bp.Status.Phase = phase
		done, err := installDone(sub, bp, false)
		if !done || exitCode(err) != code {
			t.Errorf("%s: done %v, exit %d, want %d", phase, done, exitCode(err), code)
		}
	}
	if _, err := installDone(sub, nil, true); exitCode(err) != ExitFailed {
		t.Errorf("a deleted Subscription: exit %d", exitCode(err))
	}
}

func obj(kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "ns"}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

func TestDiffObjects(t *testing.T) {
	index := func(objs ...*unstructured.Unstructured) map[string]*unstructured.Unstructured {
		m := map[string]*unstructured.Unstructured{}
		for _, o := range objs {
			m[diffKey(o)] = o
		}
		return m
	}
	before := index(obj("Deployment", "op", map[string]any{"spec": map[string]any{"image": "op:1"}}), obj("Role", "old", nil),
		obj("CustomResourceDefinition", "c", map[string]any{"spec": "v1"}), obj("ConfigMap", "same", nil))
	after := index(obj("Deployment", "op", map[string]any{"spec": map[string]any{"image": "op:2"}}), obj("Role", "new", nil),
		obj("CustomResourceDefinition", "c", map[string]any{"spec": "v2"}), obj("ConfigMap", "same", nil))
	changes, err := diffObjects(before, after, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Change+" "+c.Kind+"/"+c.Name)
	}
	want := "changed CustomResourceDefinition/c,changed Deployment/op,added Role/new,removed Role/old"
	if strings.Join(got, ",") != want {
		t.Errorf("changes = %v, want %s", got, want)
	}
	if d := changes[1].Diff; !strings.Contains(d, "-  image: op:1") || !strings.Contains(d, "+  image: op:2") || !strings.Contains(d, "--- running/Deployment/ns/op") {
		t.Errorf("Deployment diff:\n%s", d)
	}
	if none, _ := diffObjects(before, before, "", ""); len(none) != 0 {
		t.Errorf("no change reported %v", none)
	}
}

// TestHistoryRowJSON keeps `history -o json` a superset of what it printed before: each
// revision's own fields at the top level, plus what the cluster stores of it.
func TestHistoryRowJSON(t *testing.T) {
	row := historyRow{Revision: omv1.Revision{Revision: 2, CSVName: "a.v2"}, Stored: &revisionstore.Stored{Secret: "s", Chunks: 1, Bytes: 10}}
	data, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"revision":2,"csvName":"a.v2","stored":{"secret":"s","chunks":1,"bytes":10}}`; string(data) != want {
		t.Errorf("history row JSON = %s, want %s", data, want)
	}
}

// TestFlagValueNames walks every flag of every command: help shows a flag's value by the
// first back-quoted word of its usage (pflag.UnquoteUsage), so a quoted command there
// printed "--address opm serve" and "--configmap kubectl get configmap NAME -o yaml". A
// value name is one placeholder word.
func TestFlagValueNames(t *testing.T) {
	var walk func(*cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			n++
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " `") {
				t.Errorf("%s --%s: its value shows as %q in help: back-quote only its placeholder (`FILE`)", c.CommandPath(), f.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRoot())
	if n < 50 {
		t.Fatalf("checked only %d flags", n)
	}
}

// TestEmptyListsAreLists: a program reading -o json|yaml gets [] for nothing, not null.
func TestEmptyListsAreLists(t *testing.T) {
	var rows []subscriptionRow
	for format, want := range map[string]string{"json": "[]\n", "yaml": "[]\n"} {
		var buf bytes.Buffer
		if err := (&output{format: format}).print(&buf, rows, nil); err != nil {
			t.Fatal(err)
		}
		if buf.String() != want {
			t.Errorf("-o %s of no rows: %q, want %q", format, buf.String(), want)
		}
	}
}

// TestCRDAsApplied: what diff says an upgrade does to a CRD, as the manager decides it.
// The CRD is shared by every installation of the package, so the running version's
// rendering is not what the upgrade changes: before, diff showed a change to a CRD that
// another installation had already brought to the target's schema (found by hand), and a
// removal the manager never makes.
func TestCRDAsApplied(t *testing.T) {
	changed := objectChange{Change: "changed", Kind: "CustomResourceDefinition", Name: "caches.x", Diff: "+ ttlSeconds"}
	at := func(pkg, version string) map[string]string {
		return map[string]string{crdsafety.PackageAnnotation: pkg, blueprint.AnnotationCRDVersion: version}
	}
	for _, tc := range []struct {
		name            string
		ch              objectChange
		live            map[string]string
		running, target string
		want            string // change, and whether a diff is shown
	}{
		{"absent from the cluster: as rendered", changed, nil, "1.1.0", "1.2.0", "changed diff"},
		{"at the running version: as rendered", changed, at("cache", "1.1.0"), "1.1.0", "1.2.0", "changed diff"},
		{"at the target's already (side by side)", changed, at("cache", "1.2.0"), "1.1.0", "1.2.0", "unchanged"},
		{"newer than the target: kept", changed, at("cache", "1.3.0"), "1.1.0", "1.2.0", "kept"},
		{"a downgrade keeps it", changed, at("cache", "1.2.0"), "1.2.0", "1.1.0", "kept"},
		{"another package's: as rendered", changed, at("other", "9.0.0"), "1.1.0", "1.2.0", "changed diff"},
		{"no version recorded: as rendered", changed, map[string]string{}, "1.1.0", "1.2.0", "changed diff"},
		{"dropped by the target: never deleted", objectChange{Change: "removed", Kind: "CustomResourceDefinition", Name: "old.x", Diff: "-"},
			nil, "1.1.0", "1.2.0", "kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := crdAsApplied(tc.ch, tc.live, "cache", tc.running, tc.target)
			say := got.Change
			if got.Diff != "" {
				say += " diff"
			}
			if say != tc.want {
				t.Errorf("%s, want %s", say, tc.want)
			}
			if (got.Change == changeKept || got.Change == changeUnchanged) && got.Note == "" {
				t.Error("kept or unchanged without a note saying why")
			}
		})
	}
}

// TestEndedMessage: a change that ended badly is said with its phase once.
func TestEndedMessage(t *testing.T) {
	bp := func(phase omv1.BlueprintPhase, reason string) *omv1.Blueprint {
		b := &omv1.Blueprint{}
		b.Status.Phase = phase
		if reason != "" {
			b.Status.Conditions = []metav1.Condition{{Type: omv1.ConditionReady, Reason: reason, Message: "x failed"}}
		}
		return b
	}
	for _, tc := range []struct {
		bp   *omv1.Blueprint
		want string
	}{
		{bp(omv1.BlueprintRolledBack, "RolledBack"), "RolledBack: x failed"},
		{bp(omv1.BlueprintFailed, "HealthCheckFailed"), "Failed: HealthCheckFailed: x failed"},
		{bp(omv1.BlueprintBlocked, ""), "Blocked: no Ready condition"},
	} {
		if got := endedMessage(tc.bp); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// TestHistoryNotReadable: a KEPT cell a person's role may not read is "?", said why once
// under the table.
func TestHistoryNotReadable(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "b", errors.New("no"))
	why := notReadable(forbidden, "the Secrets")
	if why != "your role may not read the Secrets" {
		t.Fatalf("notReadable(forbidden) = %q", why)
	}
	if got := notReadable(errors.New("connection refused"), "the Secrets"); got != "connection refused" {
		t.Errorf("another error is said as it is: %q", got)
	}
	bp := &omv1.Blueprint{}
	rows := []historyRow{{Revision: omv1.Revision{Revision: 1, CSVName: "a.v1"}, StoredError: why},
		{Revision: omv1.Revision{Revision: 2, CSVName: "a.v2"}, StoredError: why}}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 3, ' ', 0)
	printHistory(tw, bp, rows)
	_ = tw.Flush()
	if out := buf.String(); strings.Count(out, "KEPT ?: your role may not read the Secrets") != 1 || strings.Count(out, " ?  ") != 2 {
		t.Errorf("history:\n%s", out)
	}
}
