package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/crashpoint"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

// scenario is one version change walked over every crash point: prepare brings a fresh
// namespace to the starting state (with a manager that does not crash), trigger makes the
// change, done says the end state is reached, and check asserts what must hold then.
type scenario struct {
	name    string
	catalog string // the directory of the namespace's CatalogSource "samples"
	prepare []step
	trigger func(t *testing.T, ns string)
	done    func(t *testing.T, ns string) bool
	check   func(t *testing.T, ns string)
	// then, if set, is a second change, made after the crashing manager stopped and
	// before the converging one starts (while no manager runs); crashDone is then what
	// the crashing manager's run ends at, the first change done.
	then      func(t *testing.T, ns string)
	crashDone func(t *testing.T, ns string) bool
	// stride > 1 walks every stride-th crash point only, unless OPM_CRASH_FULL=1 (make
	// crash-walk): the second-change scenarios cost 5 to 8 s a point, and make test
	// walks a sample of theirs beside the full walks of the others.
	stride int
}

// EnvCrashFull, set to 1, walks every crash point of every scenario.
const EnvCrashFull = "OPM_CRASH_FULL"

// step is one step of preparing a namespace: do, then wait until it holds. Steps run for
// a batch of namespaces at once, so preparing ten costs little more than one.
type step struct {
	do    func(t *testing.T, ns string)
	until func(t *testing.T, ns string) bool
}

// installed is the preparation step of a settled installation of csv.
func installed(csv, timeout string) step {
	name := "cache-operator.v" + strings.TrimPrefix(csv, "cache-operator.")
	return step{do: func(t *testing.T, ns string) { subscribe(t, ns, csv, timeout) },
		until: func(t *testing.T, ns string) bool { return settled(t, ns, name, omv1.BlueprintSucceeded) }}
}

// upgraded is the preparation step of a settled upgrade to csv.
func upgraded(csv string) step {
	name := "cache-operator.v" + strings.TrimPrefix(csv, "cache-operator.")
	return step{do: func(t *testing.T, ns string) { setStartingCSV(t, ns, csv) },
		until: func(t *testing.T, ns string) bool { return settled(t, ns, name, omv1.BlueprintSucceeded) }}
}

// withCache is the preparation step that creates the custom resource to keep.
var withCache = step{do: newCache, until: func(*testing.T, string) bool { return true }}

// crashPoint is one walked write: the scenario, N, and the write the manager exited after.
type crashPoint struct {
	scenario string
	n        int
	write    string
}

var crashLine = regexp.MustCompile(`crash point: exiting after write \d+: (\S+ \S+) \((\d+)\)`)

// TestCrashPoints walks N over every API write of an install, an upgrade, a failed
// upgrade with its automatic rollback, a manual rollback and an uninstall: for each N, a
// fresh namespace in the scenario's starting state, the change, a manager that exits right
// after its Nth write, then a manager that does not: every sequence must converge to the
// scenario's end state, with each object once, nothing of a replaced version left, the
// custom resource unchanged and no revision recorded twice. The walk of a scenario ends
// when a manager finishes it with fewer than N writes.
func TestCrashPoints(t *testing.T) {
	failing := writeCrashFastCatalog(t)
	scenarios := []scenario{
		{name: "install", catalog: cluster.SampleDir,
			trigger: func(t *testing.T, ns string) { subscribe(t, ns, "cache-operator.1.1.0", "") },
			done: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.1.0", omv1.BlueprintSucceeded)
			},
			check: func(t *testing.T, ns string) {
				checkObjects(t, ns, "cache-operator.v1.1.0")
				checkHistory(t, ns, "Install:Succeeded")
			}},
		// An install cut short, then given up while no manager runs: whatever the crash
		// left half recorded (objects applied, their inventory not yet written) is removed.
		{name: "abandon", catalog: cluster.SampleDir,
			trigger: func(t *testing.T, ns string) { subscribe(t, ns, "cache-operator.1.1.0", "") },
			crashDone: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.1.0", omv1.BlueprintSucceeded)
			},
			then:  uninstall,
			done:  uninstalled,
			check: checkUninstalled},
		// An install cut short, then its Subscription deleted (kubectl delete) while no
		// manager runs: its finalizer holds it until whatever the crash left is removed.
		{name: "delete", catalog: cluster.SampleDir,
			trigger: func(t *testing.T, ns string) { subscribe(t, ns, "cache-operator.1.1.0", "") },
			crashDone: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.1.0", omv1.BlueprintSucceeded)
			},
			then:   deleteSubscription,
			done:   subscriptionGone,
			stride: 3,
			check: func(t *testing.T, ns string) {
				checkUninstalled(t, ns)
				bps := &omv1.BlueprintList{}
				if err := cluster.Client.List(ctx(), bps, client.InNamespace(ns)); err != nil || len(bps.Items) > 0 {
					t.Errorf("%s: %d Blueprints left after the Subscription's deletion (%v)", ns, len(bps.Items), err)
				}
			}},
		// An upgrade cut short, then given up the same way: neither version's objects stay.
		{name: "abandon-upgrade", catalog: cluster.SampleDir,
			prepare: []step{installed("cache-operator.1.1.0", ""), withCache},
			trigger: func(t *testing.T, ns string) { setStartingCSV(t, ns, "cache-operator.1.2.0") },
			crashDone: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.2.0", omv1.BlueprintSucceeded)
			},
			then:   uninstall,
			done:   uninstalled,
			stride: 3,
			check: func(t *testing.T, ns string) {
				checkUninstalled(t, ns)
				checkCache(t, ns)
			}},
		// An upgrade cut short, then retargeted to another version while no manager runs:
		// the last version asked for runs alone, the one between leaves nothing behind.
		{name: "retarget", catalog: cluster.SampleDir,
			prepare: []step{installed("cache-operator.1.0.0", ""), withCache},
			trigger: func(t *testing.T, ns string) { setStartingCSV(t, ns, "cache-operator.1.1.0") },
			crashDone: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.1.0", omv1.BlueprintSucceeded)
			},
			then:   func(t *testing.T, ns string) { setStartingCSV(t, ns, "cache-operator.1.2.0") },
			stride: 3,
			done: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.2.0", omv1.BlueprintSucceeded)
			},
			check: func(t *testing.T, ns string) {
				checkObjects(t, ns, "cache-operator.v1.2.0")
				checkCache(t, ns)
				// The upgrade to 1.1.0 is a revision of its own if the crashing manager
				// opened it: finished, or given up for 1.2.0.
				var got []string
				for _, h := range getBlueprint(t, ns, "cache").Status.History {
					got = append(got, h.Version+":"+string(h.Trigger)+":"+string(h.Outcome))
				}
				switch strings.Join(got, " ") {
				case "1.0.0:Install:Succeeded 1.2.0:Upgrade:Succeeded",
					"1.0.0:Install:Succeeded 1.1.0:Upgrade:Succeeded 1.2.0:Upgrade:Succeeded",
					"1.0.0:Install:Succeeded 1.1.0:Upgrade:Superseded 1.2.0:Upgrade:Succeeded":
				default:
					t.Errorf("%s: history %v", ns, got)
				}
			}},
		{name: "upgrade", catalog: cluster.SampleDir,
			prepare: []step{installed("cache-operator.1.1.0", ""), withCache},
			trigger: func(t *testing.T, ns string) { setStartingCSV(t, ns, "cache-operator.1.2.0") },
			done: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.2.0", omv1.BlueprintSucceeded)
			},
			check: func(t *testing.T, ns string) {
				checkObjects(t, ns, "cache-operator.v1.2.0")
				checkCache(t, ns)
				checkHistory(t, ns, "Install:Succeeded Upgrade:Succeeded")
			}},
		{name: "rollback", catalog: failing,
			prepare: []step{installed("cache-operator.1.2.0", "30s"), withCache},
			trigger: func(t *testing.T, ns string) { setStartingCSV(t, ns, "cache-operator.1.3.0") },
			done: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.2.0", omv1.BlueprintRolledBack)
			},
			check: func(t *testing.T, ns string) {
				checkObjects(t, ns, "cache-operator.v1.2.0")
				checkCache(t, ns)
				checkHistory(t, ns, "Install:Succeeded Upgrade:Failed Rollback:Succeeded")
			}},
		{name: "manual", catalog: cluster.SampleDir,
			prepare: []step{installed("cache-operator.1.1.0", ""), upgraded("cache-operator.1.2.0"), withCache},
			trigger: func(t *testing.T, ns string) { rollbackByHand(t, ns, 1) },
			done: func(t *testing.T, ns string) bool {
				return settled(t, ns, "cache-operator.v1.1.0", omv1.BlueprintSucceeded)
			},
			check: func(t *testing.T, ns string) {
				checkObjects(t, ns, "cache-operator.v1.1.0")
				checkCache(t, ns)
				checkHistory(t, ns, "Install:Succeeded Upgrade:Succeeded Downgrade:Succeeded")
			}},
		{name: "uninstall", catalog: cluster.SampleDir,
			prepare: []step{installed("cache-operator.1.1.0", ""), withCache},
			trigger: uninstall,
			done:    uninstalled,
			check: func(t *testing.T, ns string) {
				checkUninstalled(t, ns)
				checkCache(t, ns) // custom resources outlive the operator
			}},
	}
	var walked []crashPoint
	ran := 0
	for _, sc := range scenarios {
		// Subtests, so one scenario can be walked alone (-run TestCrashPoints/abandon).
		t.Run(sc.name, func(t *testing.T) {
			ran++
			walked = append(walked, walk(t, sc)...)
		})
		if t.Failed() {
			break
		}
	}
	report := filepath.Join(cluster.Work, "crash-points.txt")
	var lines []string
	for _, c := range walked {
		lines = append(lines, fmt.Sprintf("%-15s %3d  %s", c.scenario, c.n, c.write))
	}
	_ = os.WriteFile(report, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	t.Logf("%d crash points walked (list in %s):\n%s", len(walked), report, strings.Join(lines, "\n"))
	if !t.Failed() && ran == len(scenarios) && len(walked) < 50 {
		t.Errorf("only %d crash points walked; want at least 50", len(walked))
	}
}

// uninstall asks for the Subscription's operator to be removed (option: delete).
func uninstall(t *testing.T, ns string) {
	sub := getSub(t, ns, "cache")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Option = omv1.OptionDelete
	if err := cluster.Client.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
}

// deleteSubscription deletes the Subscription, as kubectl delete does.
func deleteSubscription(t *testing.T, ns string) {
	if err := cluster.Client.Delete(ctx(), getSub(t, ns, "cache")); err != nil {
		t.Fatal(err)
	}
}

// subscriptionGone says whether the Subscription no longer exists: its finalizer, the
// manager's, was removed once everything it installed was.
func subscriptionGone(t *testing.T, ns string) bool {
	err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, &omv1.Subscription{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("%s: reading the Subscription: %v", ns, err)
	}
	return apierrors.IsNotFound(err)
}

// uninstalled says whether the Subscription reports its operator removed.
func uninstalled(t *testing.T, ns string) bool {
	c := meta.FindStatusCondition(getSub(t, ns, "cache").Status.Conditions, omv1.ConditionInstalled)
	return c != nil && c.Reason == omv1.ReasonUninstalled
}

// checkUninstalled asserts that nothing installed for ns is left, nor any CSV.
func checkUninstalled(t *testing.T, ns string) {
	t.Helper()
	if left := owned(t, ns, ""); len(left) > 0 {
		t.Errorf("%s: objects left after the uninstall: %v", ns, left)
	}
	csvs := &omv1alpha1.ClusterServiceVersionList{}
	if err := cluster.Client.List(ctx(), csvs, client.InNamespace(ns)); err != nil || len(csvs.Items) > 0 {
		t.Errorf("%s: %d CSVs left (%v)", ns, len(csvs.Items), err)
	}
}

// prepareBatch is how many namespaces are brought to a scenario's starting state at once.
const prepareBatch = 12

// walk runs one scenario for N = 1, 2, ... until a manager finishes it before its Nth
// write. Namespaces are prepared in batches, settled before any crashing manager starts:
// a settled installation costs no write (TestSettledClusterCostsNoWrites), so each
// crashing manager's writes all belong to the scenario.
func walk(t *testing.T, sc scenario) []crashPoint {
	var out []crashPoint
	ns := func(n int) string { return fmt.Sprintf("crash-%s-%d", sc.name, n) }
	prepared := 0
	prepare := func(m *harness.Manager, upTo int) {
		var batch []string
		for ; prepared < upTo; prepared++ {
			batch = append(batch, ns(prepared+1))
			newNamespace(t, ns(prepared+1), sc.catalog)
		}
		// The CatalogSource's first status is a write of its own: it must be made here,
		// not by the crashing manager of a later N. So is the manager's own default
		// CatalogSource, created at its first start: a prepare that loads its namespaces'
		// catalogs first must not end before it.
		eventually(t, m, time.Minute, "the default catalog loaded", func() bool {
			cs := &omv1.CatalogSource{}
			return cluster.Client.Get(ctx(), client.ObjectKey{Namespace: harness.ManagerNamespace, Name: catalogsource.DefaultName}, cs) == nil &&
				cs.Status.Digest != "" && cs.Status.ObservedGeneration == cs.Generation
		}, func() string { return "CatalogSource " + harness.ManagerNamespace + "/" + catalogsource.DefaultName })
		for _, name := range batch {
			eventually(t, m, time.Minute, "catalog of "+name+" loaded", func() bool {
				cs := &omv1.CatalogSource{}
				return cluster.Client.Get(ctx(), client.ObjectKey{Namespace: name, Name: "samples"}, cs) == nil &&
					cs.Status.Digest != "" && cs.Status.ObservedGeneration == cs.Generation
			}, func() string { return "CatalogSource " + name + "/samples" })
		}
		for _, st := range sc.prepare {
			for _, name := range batch {
				st.do(t, name)
			}
			for _, name := range batch {
				eventually(t, m, 3*time.Minute, "preparing "+name, func() bool { return st.until(t, name) }, describe(name, "cache"))
			}
		}
	}
	m, err := cluster.StartManager("crash-"+sc.name+"-prepare", harness.Options{SamplesAsDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	prepare(m, prepareBatch)
	m.Kill()
	crashDone := sc.done
	if sc.crashDone != nil {
		crashDone = sc.crashDone
	}
	stride := max(1, sc.stride)
	if os.Getenv(EnvCrashFull) == "1" {
		stride = 1
	}
	// The i-th namespace takes crash point n.
	for i, n := 1, 1; n <= 150; i, n = i+1, n+stride {
		sc.trigger(t, ns(i))
		crashing, err := cluster.StartManager("crash-"+sc.name, harness.Options{SamplesAsDefault: true, Env: []string{fmt.Sprintf("%s=%d", crashpoint.EnvVar, n)}})
		if err != nil {
			t.Fatal(err)
		}
		finished := false
		reached, stopWaiting := waitFor(func() bool { return crashDone(t, ns(i)) }, 3*time.Minute)
		select {
		case <-crashing.Done():
		case <-reached:
			// Done before its Nth write: give late writes (events) a moment to show a
			// crash; a manager still running then finished the scenario within N-1 writes.
			select {
			case <-crashing.Done():
			case <-time.After(3 * time.Second):
				finished = true
				crashing.Kill()
			}
		case <-time.After(3*time.Minute + 5*time.Second):
			stopWaiting()
			crashing.Kill()
			t.Fatalf("%s N=%d: the manager neither reached a crash point nor finished within 3 minutes\n%s\n--- manager log (end) ---\n%s",
				sc.name, n, describe(ns(i), "cache")(), crashing.LogTail(4000))
		}
		stopWaiting()
		if !finished {
			if code := crashing.ExitCode(); code != crashpoint.ExitCode {
				t.Fatalf("%s N=%d: the manager exited with %d, not at a crash point:\n%s", sc.name, n, code, crashing.LogTail(4000))
			}
			// The whole of this run's log: controllers still at work when the crash
			// point exits (catalogs loading at start) may log after its line.
			match := crashLine.FindStringSubmatch(crashing.LogSinceStart())
			if match == nil {
				t.Fatalf("%s N=%d: no crash point in the log:\n%s", sc.name, n, crashing.LogTail(2000))
			}
			out = append(out, crashPoint{scenario: sc.name, n: n, write: match[1] + " " + match[2]})
			if !ofNamespace(match[1], ns(i)) {
				t.Errorf("%s N=%d: the crash point %s is not the scenario's (a settled namespace was written to)", sc.name, n, match[1])
			}
		}
		if sc.then != nil {
			sc.then(t, ns(i))
		}
		// Converge this N with a manager that does not crash (and prepare more).
		normal, err := cluster.StartManager("crash-"+sc.name+"-converge", harness.Options{SamplesAsDefault: true})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, normal, 3*time.Minute, fmt.Sprintf("%s after a crash after write %d", ns(i), n),
			func() bool { return sc.done(t, ns(i)) }, describe(ns(i), "cache"))
		sc.check(t, ns(i))
		checkNoDuplicateRevisions(t, ns(i))
		if !finished && prepared == i {
			prepare(normal, i+prepareBatch)
		}
		normal.Kill()
		if finished || t.Failed() {
			break
		}
	}
	return out
}

// ofNamespace reports whether a written path belongs to the scenario in ns: an object in
// ns, a cluster-scoped object named for it, or a CRD (shared by every installation).
func ofNamespace(path, ns string) bool {
	return strings.Contains(path, "/namespaces/"+ns+"/") || strings.Contains(path, "/"+ns+"-") || strings.Contains(path, "/customresourcedefinitions/")
}

// waitFor closes the returned channel once cond holds (looked at every 100 ms), or never;
// stop ends the looking. Each look is a few uncached reads, which a waiter left looking
// (as one did, every 50 ms, for up to 3 minutes after each crash point) sends the API
// server to no purpose; stopping it did not change the walk's time measurably (the
// rollback scenario: 263.7 s before, 265.4 s after).
func waitFor(cond func() bool, timeout time.Duration) (reached <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(timeout)
		for {
			if cond() {
				close(ch)
				return
			}
			select {
			case <-quit:
				return
			case <-deadline:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return ch, func() { once.Do(func() { close(quit) }) }
}

// writeCrashFastCatalog copies the samples with cache-operator 1.3.0 crashing at once
// (kwok's crash-loop stage) instead of never becoming ready, so its health gate fails at
// once, not after a timeout.
func writeCrashFastCatalog(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(cluster.Work, "catalogs", "crash-fast")
	err := filepath.Walk(cluster.SampleDir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cluster.SampleDir, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := strings.ReplaceAll(string(data), testenv.StageLabel+": "+testenv.StageNeverReady, testenv.StageLabel+": "+testenv.StageCrashLoop)
		return os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func subscribe(t *testing.T, ns, csv, timeout string) {
	t.Helper()
	health := ""
	if timeout != "" {
		health = ", health: {timeout: " + timeout + "}"
	}
	apply(t, ns, fmt.Sprintf(`
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache}
spec: {startingCSV: %s, catalog: samples%s}
`, csv, health))
}

func setStartingCSV(t *testing.T, ns, csv string) {
	t.Helper()
	sub := getSub(t, ns, "cache")
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.StartingCSV = csv
	if err := cluster.Client.Patch(ctx(), sub, patch); err != nil {
		t.Fatal(err)
	}
}

// rollbackByHand points the Blueprint at an earlier revision, as `operator-manager
// rollback --to-revision` does.
func rollbackByHand(t *testing.T, ns string, revision int64) {
	t.Helper()
	bp := getBlueprint(t, ns, "cache")
	patch := client.MergeFrom(bp.DeepCopy())
	for _, h := range bp.Status.History {
		if h.Revision == revision {
			bp.Spec.OldVersion = bp.Status.CurrentCSV
			bp.Spec.ClusterServiceVersionName, bp.Spec.Version, bp.Spec.BundleDigest = h.CSVName, h.Version, h.BundleDigest
			bp.Spec.Generation++
			bp.Spec.Approved = true
		}
	}
	if err := cluster.Client.Patch(ctx(), bp, patch); err != nil {
		t.Fatal(err)
	}
}

// settled reports the Blueprint running csv in phase, the CSV alone and its Deployment
// available, and the Subscription's status caught up.
func settled(t *testing.T, ns, csv string, phase omv1.BlueprintPhase) bool {
	bp := &omv1.Blueprint{}
	if cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp) != nil ||
		bp.Status.CurrentCSV != csv || bp.Status.Phase != phase || bp.Status.ObservedGeneration != bp.Generation {
		return false
	}
	csvs := &omv1alpha1.ClusterServiceVersionList{}
	if cluster.Client.List(ctx(), csvs, client.InNamespace(ns)) != nil || len(csvs.Items) != 1 || csvs.Items[0].Status.Phase != omv1alpha1.CSVSucceeded {
		return false
	}
	d := &appsv1.Deployment{}
	if cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache-operator"}, d) != nil ||
		d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas != 1 || d.Status.UpdatedReplicas != 1 || d.Status.Replicas != 1 {
		return false
	}
	// The Subscription has caught up too: its last status write is part of the scenario.
	sub := getSub(t, ns, "cache")
	readyC := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionReady)
	if sub.Status.ObservedGeneration != sub.Generation || sub.Status.InstalledCSV != csv || readyC == nil {
		return false
	}
	if phase == omv1.BlueprintRolledBack {
		rb := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionRolledBack)
		return rb != nil && rb.Status == metav1.ConditionTrue && readyC.Reason == omv1.ConditionRolledBack
	}
	return readyC.Status == metav1.ConditionTrue
}

func waitSettled(t *testing.T, m *harness.Manager, ns, csv string, phase omv1.BlueprintPhase) {
	t.Helper()
	eventually(t, m, 3*time.Minute, ns+" settled on "+csv, func() bool { return settled(t, ns, csv, phase) }, describe(ns, "cache"))
}

var cacheGVK = schema.GroupVersionKind{Group: "cache.samples.operator-manager.domain", Version: "v1", Kind: "Cache"}

// newCache creates the custom resource whose survival the scenarios check.
func newCache(t *testing.T, ns string) {
	t.Helper()
	cr := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(3)}}}
	cr.SetGroupVersionKind(cacheGVK)
	cr.SetNamespace(ns)
	cr.SetName("example")
	if err := cluster.Client.Create(ctx(), cr); err != nil {
		t.Fatal(err)
	}
}

// checkCache asserts the custom resource is there, unchanged.
func checkCache(t *testing.T, ns string) {
	t.Helper()
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(cacheGVK)
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "example"}, cr); err != nil {
		t.Errorf("%s: the custom resource is gone: %v", ns, err)
		return
	}
	if spec, _, _ := unstructured.NestedMap(cr.Object, "spec"); !equality.Semantic.DeepEqual(spec, map[string]any{"size": int64(3)}) {
		t.Errorf("%s: the custom resource changed: %v", ns, spec)
	}
}

// owned counts, per kind, the objects installed for ns, of csv (or of any CSV when empty).
func owned(t *testing.T, ns, csv string) map[string]int {
	t.Helper()
	sel := client.MatchingLabels{render.LabelOwnerNamespace: ns}
	if csv != "" {
		sel[render.LabelOwnerName] = render.LabelValue(csv)
	}
	counts := map[string]int{}
	for kind, list := range map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "ServiceAccount": &corev1.ServiceAccountList{}, "Service": &corev1.ServiceList{},
		"Role": &rbacv1.RoleList{}, "RoleBinding": &rbacv1.RoleBindingList{},
		"ClusterRole": &rbacv1.ClusterRoleList{}, "ClusterRoleBinding": &rbacv1.ClusterRoleBindingList{},
		"OperatorCondition": &omv1.OperatorConditionList{},
	} {
		if err := cluster.Client.List(ctx(), list, sel); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n > 0 {
			counts[kind] = n
		}
	}
	return counts
}

// checkObjects asserts exactly the objects the running sample version owns, once each,
// and none of another version.
func checkObjects(t *testing.T, ns, csv string) {
	t.Helper()
	// Each installation watches its own namespace (harness.WatchOwnNamespace): its
	// permissions are a Role, beside the Role of the version's OperatorCondition, and its
	// clusterPermissions the one ClusterRole.
	want := map[string]int{"Deployment": 1, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Role": 2, "RoleBinding": 2, "OperatorCondition": 1}
	if csv != "cache-operator.v1.1.0" {
		want["Service"] = 1
	}
	if got := owned(t, ns, csv); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: objects of %s = %v, want %v", ns, csv, got, want)
	}
	if all := owned(t, ns, ""); fmt.Sprint(all) != fmt.Sprint(want) {
		t.Errorf("%s: objects of any version = %v, want only %s's %v", ns, all, csv, want)
	}
}

// checkHistory asserts the revisions' triggers and outcomes, in order.
func checkHistory(t *testing.T, ns, want string) {
	t.Helper()
	var got []string
	for _, h := range getBlueprint(t, ns, "cache").Status.History {
		got = append(got, string(h.Trigger)+":"+string(h.Outcome))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("%s: history %s, want %s", ns, strings.Join(got, " "), want)
	}
}

// checkNoDuplicateRevisions asserts revision numbers are unique and increasing.
func checkNoDuplicateRevisions(t *testing.T, ns string) {
	t.Helper()
	bp := &omv1.Blueprint{}
	if err := cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cache"}, bp); err != nil {
		return // uninstalled
	}
	var nums []int
	for _, h := range bp.Status.History {
		nums = append(nums, int(h.Revision))
	}
	if !sort.IntsAreSorted(nums) {
		t.Errorf("%s: revisions out of order: %v", ns, nums)
	}
	for i := 1; i < len(nums); i++ {
		if nums[i] == nums[i-1] {
			t.Errorf("%s: revision %d recorded twice", ns, nums[i])
		}
	}
}
