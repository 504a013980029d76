// Package fleet is the cluster benchmark harness: it measures operator-manager installing
// a fleet of operators on the full local cluster (etcd, kube-apiserver, controller-manager,
// scheduler, kwok), each figure beside its floor and its peer measured in the same run,
// each contestant on a fresh cluster of its own:
//
//   - the floor: server-side applying the objects the manager's own render makes of each
//     bundle, with no client-side rate limit, and waiting for the same Deployments;
//   - the manager, running as its own ServiceAccount with the shipped RBAC and the whole
//     shared community catalog loaded, given one Subscription per operator;
//   - Helm (built from the Go module proxy, tools/helm), given the same objects packaged as
//     one chart per bundle: `helm install --wait`, `helm upgrade --wait`,
//     `helm rollback --wait`, `helm upgrade --rollback-on-failure`.
//
// It reports installation time, API requests per installation (from the manager's
// operator_manager_api_requests_total), writes in an idle window after everything settled,
// resident memory, and an upgrade, a rollback and an upgrade that fails its health gate.
//
//	make test            a smoke run: 3 channel heads, a 15 s idle window (checks it works;
//	                     asserts no speed)
//	make bench-cluster   OPM_FLEET_N=10,50,all, a 60 s idle window; the report goes to
//	                     fleet-report.json and the log, for BENCHMARKS.md
//
// Environment: OPM_FLEET_N (comma-separated sizes; "all" is every head that installs on
// its own), OPM_FLEET_IDLE (Go duration), OPM_FLEET_REPORT (JSON path), OPM_FLEET_CONCURRENCY
// (how many installs the floor and Helm run at once; default 16), OPM_FLEET_MANAGER_ARGS
// (extra flags of `operator-manager run`, space-separated), OPM_FLEET_CONTROLLER_MANAGER_ARGS
// (extra flags of every cluster's kube-controller-manager), OPM_FLEET_ONLY (some of
// floor,manager,helm), OPM_FLEET_PACKAGES (only these channel heads), OPM_FLEET_PAIRS,
// OPM_FLEET_ROUNDS.
package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crashpoint"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/harness"
)

// settled is how long after its fleet's last installation the manager's request
// counters are read: its last status writes and events.
const settled = 10 * time.Second

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// settings are the run's knobs, from the environment.
type settings struct {
	sizes       []int // 0: all
	idle        time.Duration
	concurrency int
	managerArgs []string
	// controllerManagerArgs are extra flags of every cluster's kube-controller-manager
	// (OPM_FLEET_CONTROLLER_MANAGER_ARGS), for finding what a step waits on there.
	controllerManagerArgs []string
	report                string
	// pprof, when set (OPM_FLEET_PPROF=DIR), saves there the CPU profiles of the manager and
	// of each contestant's API server during its install (the floor's first 30 s, the
	// manager's first 60), and the settled manager's heap profile.
	pprof string
	// packages, when set (OPM_FLEET_PACKAGES=a,b), are the only heads installed.
	packages map[string]bool
	// only runs some contestants (OPM_FLEET_ONLY=manager), for working on one of them.
	only map[string]bool
	// rounds is how many times the lifecycle operator is upgraded and rolled back by hand
	// (OPM_FLEET_ROUNDS): each step takes a few tenths of a second, in which one timing
	// is a draw of the machine's noise; the figures are the medians. The smoke run does two,
	// so the way back to a second upgrade is tested too.
	rounds int
	// pairs is how many times the floor and the manager are each run at every size
	// (OPM_FLEET_PAIRS), in alternating order. This machine's speed drifts by a quarter
	// over minutes (the same work cost the cluster 79 CPU seconds in one run and 115 in
	// another), so one run of each can land on a slow minute; the figures are the pair
	// of median ratio, and every pair is reported.
	pairs int
}

func (s settings) runs(contestant string) bool { return len(s.only) == 0 || s.only[contestant] }

func settingsFromEnv(t *testing.T) settings {
	s := settings{sizes: []int{3}, idle: 15 * time.Second, concurrency: 16, pairs: 1, rounds: 2}
	if v := os.Getenv("OPM_FLEET_N"); v != "" {
		s.sizes = nil
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "all" {
				s.sizes = append(s.sizes, 0)
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				t.Fatalf("OPM_FLEET_N=%q: want sizes like 10,50,all", v)
			}
			s.sizes = append(s.sizes, n)
		}
	}
	if v := os.Getenv("OPM_FLEET_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("OPM_FLEET_IDLE=%q: %v", v, err)
		}
		s.idle = d
	}
	if v := os.Getenv("OPM_FLEET_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("OPM_FLEET_CONCURRENCY=%q: want a positive number", v)
		}
		s.concurrency = n
	}
	if v := os.Getenv("OPM_FLEET_PAIRS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("OPM_FLEET_PAIRS=%q: want a positive number", v)
		}
		s.pairs = n
	}
	if v := os.Getenv("OPM_FLEET_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("OPM_FLEET_ROUNDS=%q: want a positive number", v)
		}
		s.rounds = n
	}
	s.managerArgs = strings.Fields(os.Getenv("OPM_FLEET_MANAGER_ARGS"))
	s.controllerManagerArgs = strings.Fields(os.Getenv("OPM_FLEET_CONTROLLER_MANAGER_ARGS"))
	s.report = os.Getenv("OPM_FLEET_REPORT")
	s.pprof = os.Getenv("OPM_FLEET_PPROF")
	if v := os.Getenv("OPM_FLEET_PACKAGES"); v != "" {
		s.packages = map[string]bool{}
		for _, p := range strings.Split(v, ",") {
			s.packages[strings.TrimSpace(p)] = true
		}
	}
	if v := os.Getenv("OPM_FLEET_ONLY"); v != "" {
		s.only = map[string]bool{}
		for _, c := range strings.Split(v, ",") {
			s.only[strings.TrimSpace(c)] = true
		}
	}
	return s
}

// fleetFigures are one size's results.
type fleetFigures struct {
	N                 int      `json:"n"`
	ObjectsPerInstall float64  `json:"objectsPerInstall"`
	ObjectsByKind     []string `json:"objectsByKind"`
	Skipped           []string `json:"skipped,omitempty"`

	FloorSeconds     float64 `json:"floorSeconds"`
	ManagerSeconds   float64 `json:"managerSeconds"`
	HelmSeconds      float64 `json:"helmSeconds"`
	ManagerOverFloor float64 `json:"managerOverFloor"`
	HelmOverFloor    float64 `json:"helmOverFloor"`
	// Completion: seconds until half and nine tenths of the fleet were done, telling a
	// slow tail (a few installations) from slow throughput (all of them).
	FloorP50   float64 `json:"floorP50Seconds"`
	FloorP90   float64 `json:"floorP90Seconds"`
	ManagerP50 float64 `json:"managerP50Seconds"`
	ManagerP90 float64 `json:"managerP90Seconds"`
	HelmP50    float64 `json:"helmP50Seconds"`
	HelmP90    float64 `json:"helmP90Seconds"`
	// CPU seconds spent while the fleet installed (from its start until the last was
	// done), by the cluster's own processes (etcd, kube-apiserver, controller-manager,
	// scheduler, kwok) and by the manager: on two shared cores, the work each contestant
	// makes the cluster do is most of its time.
	FloorClusterCPU   map[string]float64 `json:"floorClusterCPUSeconds,omitempty"`
	ManagerClusterCPU map[string]float64 `json:"managerClusterCPUSeconds,omitempty"`
	ManagerCPU        float64            `json:"managerCPUSeconds,omitempty"`
	// The same windows seen from the machine: this test process's own CPU (the floor's
	// applies, the manager's Subscriptions and waits), every process's, and the time the
	// hypervisor took from this machine (steal), which no process is charged for. They
	// tell a contestant slowed by its neighbours from one that makes more work.
	FloorMachineCPU   *machineCPU `json:"floorMachineCPUSeconds,omitempty"`
	ManagerMachineCPU *machineCPU `json:"managerMachineCPUSeconds,omitempty"`

	// Pairs are every floor and manager run's seconds (OPM_FLEET_PAIRS), in order; the
	// other figures are those of pair PairOfMedian (counted from 1), whose ratio is the
	// median.
	Pairs        []pairFigure `json:"pairs,omitempty"`
	PairOfMedian int          `json:"pairOfMedian,omitempty"`

	FloorFailures   []string `json:"floorFailures,omitempty"`
	ManagerFailures []string `json:"managerFailures,omitempty"`
	HelmFailures    []string `json:"helmFailures,omitempty"`

	// From the manager's own request counters, from the first Subscription to everything
	// settled (all Succeeded and 10 s more for the last status writes).
	WritesPerInstall  float64  `json:"writesPerInstall"`
	ReadsPerInstall   float64  `json:"readsPerInstall"`
	Watches           float64  `json:"watches"`
	WritesByResource  []string `json:"writesByResource"`
	ReadsByResource   []string `json:"readsByResource"`
	IdleWindowSeconds float64  `json:"idleWindowSeconds"`
	IdleWrites        float64  `json:"idleWrites"`
	IdleWriteDetail   []string `json:"idleWriteDetail,omitempty"`
	IdleWritePaths    []string `json:"idleWritePaths,omitempty"`

	RSSPeakMiB    float64 `json:"rssPeakMiB"`
	RSSSettledMiB float64 `json:"rssSettledMiB"`
	// RSSAnonMiB is the settled RSS less the binary's mapped pages: heap, stacks, runtime.
	RSSAnonMiB float64 `json:"rssAnonMiB"`
	// GoMemory is the Go runtime's own account of the settled manager (go_memstats_*, in
	// MiB): what of the anonymous memory is heap in use, heap free but not returned, stacks.
	GoMemory map[string]float64 `json:"goMemoryMiB,omitempty"`
}

// lifecycleFigures are one operator's install, upgrade, rollback by hand, and an upgrade
// whose health gate fails, for the floor, the manager and Helm, in seconds. The upgrade
// and the rollback are done Rounds times, one after the other; theirs are the medians.
type lifecycleFigures struct {
	Package       string             `json:"package"`
	HealthTimeout float64            `json:"healthTimeoutSeconds"`
	Rounds        int                `json:"rounds"`
	Install       map[string]float64 `json:"install"`
	Upgrade       map[string]float64 `json:"upgrade"`
	Rollback      map[string]float64 `json:"rollback"`
	// UpgradeRounds and RollbackRounds are every round's seconds, in order.
	UpgradeRounds  map[string][]float64 `json:"upgradeRounds"`
	RollbackRounds map[string][]float64 `json:"rollbackRounds"`
	// UpgradeSplit and RollbackSplit are the medians of each step's parts: before a
	// Deployment changed, its rollout, and after (rolloutTimeline), so the installer's
	// own time shows apart from its cluster's.
	UpgradeSplit  map[string]phaseSplit `json:"upgradeSplit"`
	RollbackSplit map[string]phaseSplit `json:"rollbackSplit"`
	// FailedUpgrade runs from the upgrade to a version whose pods never become ready until
	// the old version serves again. The floor's is the health timeout plus re-applying
	// the old version and waiting for its rollout; the manager's share is its time beyond
	// that.
	FailedUpgrade map[string]float64 `json:"failedUpgrade"`
	ManagerShare  float64            `json:"managerShareSeconds"`

	items   []item // 1.1.0, 1.2.0, the broken 1.3.0
	timeout time.Duration
}

type report struct {
	Date      string            `json:"date"`
	Machine   string            `json:"machine"`
	Command   string            `json:"command"`
	Settings  string            `json:"settings"`
	Fleets    []fleetFigures    `json:"fleets"`
	Lifecycle *lifecycleFigures `json:"lifecycle,omitempty"`
	Notes     []string          `json:"notes,omitempty"`
}

func TestFleet(t *testing.T) {
	s := settingsFromEnv(t)
	community := harness.CommunityDir()
	if community == "" {
		t.Skip("fleet: the shared community catalog is absent (../shared/catalogs/community-operators or $OPM_COMMUNITY_CATALOG); the fleet is its channel heads")
	}
	cat, err := catalog.Load(community, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	samples, err := catalog.Load(harness.SampleDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	helmBin, err := buildHelm(harness.ModuleRoot(), work)
	if err != nil {
		t.Fatal(err)
	}
	rep := &report{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine(),
		Command: "OPM_FLEET_N=" + os.Getenv("OPM_FLEET_N") + " go test ./test/fleet -run TestFleet -v",
		Settings: fmt.Sprintf("sizes %v (0 = all), idle window %s, floor and Helm %d installs at once, manager args %v, controller-manager args %v",
			s.sizes, s.idle, s.concurrency, s.managerArgs, s.controllerManagerArgs)}
	for i, n := range s.sizes {
		items, skipped, err := heads(cat, n, s.packages)
		if err != nil {
			t.Fatal(err)
		}
		fig := fleetFigures{N: len(items), Skipped: skipped}
		objects, kinds := 0, requests{}
		for _, it := range items {
			objects += it.objectCount()
			for _, o := range append(append([]*unstructured.Unstructured{}, it.CRDs...), it.Objects...) {
				kinds["apply "+o.GetKind()]++
			}
		}
		fig.ObjectsByKind = kinds.top(float64(len(items)), 40)
		fig.ObjectsPerInstall = float64(objects) / float64(len(items))
		var life *lifecycleFigures
		if i == 0 {
			if life, err = lifecycleItems(samples, s.rounds); err != nil {
				t.Fatal(err)
			}
			rep.Lifecycle = life
		}
		runs := make([]fleetFigures, s.pairs)
		for r := range runs {
			pairLife := life
			if r > 0 {
				pairLife = nil // the lifecycle steps are timed once
			}
			floor := func() {
				if s.runs("floor") {
					t.Logf("fleet of %d channel heads (%.1f objects each): the floor (pair %d of %d)", len(items), fig.ObjectsPerInstall, r+1, s.pairs)
					onCluster(t, s, func(c *harness.Cluster) { runFloor(t, c, s, items, &runs[r], pairLife) })
				}
			}
			manager := func() {
				if s.runs("manager") {
					t.Logf("fleet of %d: the manager (pair %d of %d)", len(items), r+1, s.pairs)
					onCluster(t, s, func(c *harness.Cluster) { runManager(t, c, s, items, &runs[r], pairLife) })
				}
			}
			// Alternated, so a drift of the machine's speed over the pairs favours neither.
			if r%2 == 0 {
				floor()
				manager()
			} else {
				manager()
				floor()
			}
		}
		fig.merge(runs)
		if s.runs("helm") {
			t.Logf("fleet of %d: Helm", len(items))
			onCluster(t, s, func(c *harness.Cluster) { runHelm(t, c, s, helmBin, work, items, &fig, life) })
		}
		if fig.FloorSeconds > 0 {
			fig.ManagerOverFloor = round2(fig.ManagerSeconds / fig.FloorSeconds)
			fig.HelmOverFloor = round2(fig.HelmSeconds / fig.FloorSeconds)
		}
		rep.Fleets = append(rep.Fleets, fig)
	}
	if l := rep.Lifecycle; l != nil {
		l.ManagerShare = round2(l.FailedUpgrade["manager"] - l.FailedUpgrade["floor"])
	}
	writeReport(t, s, rep)
	// The smoke run checks the harness works: every contestant installed every operator.
	for _, f := range rep.Fleets {
		for _, fails := range [][]string{f.FloorFailures, f.ManagerFailures, f.HelmFailures} {
			for _, msg := range fails {
				t.Errorf("fleet of %d: %s", f.N, msg)
			}
		}
	}
}

// onCluster starts a fresh full cluster, prepares it as the harness does, runs fn on it
// and stops it.
func onCluster(t *testing.T, s settings, fn func(*harness.Cluster)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := testenv.Start(ctx, testenv.Options{Flavour: testenv.Full, ControllerManagerArgs: s.controllerManagerArgs})
	if err != nil {
		t.Fatalf("starting a full cluster: %v", err)
	}
	defer e.Stop()
	c, err := harness.NewCluster(e)
	if err != nil {
		t.Fatal(err)
	}
	fn(c)
}

// runFloor installs the fleet by raw server-side apply, then the lifecycle operator.
func runFloor(t *testing.T, c *harness.Cluster, s settings, items []item, fig *fleetFigures, life *lifecycleFigures) {
	ctx := context.Background()
	f, err := newFloor(c.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	start, cpu0, m0 := time.Now(), clusterCPU(c.Env), readMachineCPU()
	if s.pprof != "" {
		apiDone := saveAPIServerProfile(t, c.Env.Config, s.pprof, "floor", 30*time.Second)
		defer func() { <-apiDone }()
	}
	errs, ends := inParallel(items, s.concurrency, func(it *item) error { return f.install(ctx, it) })
	fig.FloorClusterCPU = cpuSince(cpu0, clusterCPU(c.Env))
	fig.FloorMachineCPU = readMachineCPU().since(m0)
	fig.FloorSeconds = secs(latest(ends).Sub(start))
	fig.FloorP50, fig.FloorP90 = quantile(start, ends, 0.5), quantile(start, ends, 0.9)
	fig.FloorFailures = failures(items, errs)
	if life == nil {
		return
	}
	// As long after the fleet as the manager's lifecycle starts (its settling and idle
	// window): a cluster still busy with the fleet slows every step.
	time.Sleep(settleBeforeLifecycle(s))
	its := life.items
	step := func(what string, it *item, dst map[string]float64) {
		t0 := time.Now()
		if err := f.install(ctx, it); err != nil {
			t.Errorf("floor %s: %v", what, err)
		}
		dst["floor"] = stepSince(t0)
	}
	step("install", &its[0], life.Install)
	if err := life.rounds(ctx, "floor", c.Env.Config, nil, func(int) error { return f.install(ctx, &its[1]) },
		func(int) error { return f.install(ctx, &its[0]) }); err != nil {
		t.Errorf("floor %v", err)
	}
	// A failed upgrade at its cheapest: apply the broken version, give it the health
	// timeout, apply the old one again and wait for its rollout.
	t0 := time.Now()
	if err := applyAll(ctx, f.c, &its[2]); err != nil {
		t.Errorf("floor failed upgrade: %v", err)
	}
	time.Sleep(life.timeout)
	if err := f.install(ctx, &its[0]); err != nil {
		t.Errorf("floor failed upgrade, back to the old version: %v", err)
	}
	life.FailedUpgrade["floor"] = stepSince(t0)
}

func applyAll(ctx context.Context, c client.Client, it *item) error {
	for _, o := range append(append([]*unstructured.Unstructured{}, it.CRDs...), it.Objects...) {
		if _, err := applyRetrying(ctx, c, o.DeepCopy()); err != nil {
			return err
		}
	}
	return nil
}

// runManager installs the fleet with the manager (one Subscription each, all at once),
// measures its requests, an idle window and its memory, then the lifecycle operator.
func runManager(t *testing.T, c *harness.Cluster, s settings, items []item, fig *fleetFigures, life *lifecycleFigures) {
	ctx := context.Background()
	// Every write is logged too (method and path): the idle window's writes are reported
	// by object, so a looping installation is named.
	args := s.managerArgs
	if s.pprof != "" {
		args = append([]string{"--pprof-bind-address=127.0.0.1:16060"}, args...)
	}
	m, err := c.StartManager("manager", harness.Options{Args: args, Env: []string{crashpoint.EnvLogWrites + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Kill()
	if err := waitCatalog(ctx, c.Client); err != nil {
		t.Fatalf("%v\n%s", err, m.LogTail(4000))
	}
	f, err := newFloor(c.Env.Config) // only its Deployment informer, to wait
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	before, err := scrape(m)
	if err != nil {
		t.Fatal(err)
	}
	start, cpu0, mcpu0, m0 := time.Now(), clusterCPU(c.Env), cpuSeconds(m.Cmd.Process.Pid), readMachineCPU()
	if s.pprof != "" {
		// The CPU profile of the install itself: where the manager's share of the two
		// cores goes while the fleet installs.
		cpuDone := saveCPUProfile(t, s.pprof, 60*time.Second)
		apiDone := saveAPIServerProfile(t, c.Env.Config, s.pprof, "manager", 60*time.Second)
		defer func() { <-cpuDone; <-apiDone }()
	}
	errs, _ := inParallel(items, s.concurrency, func(it *item) error { return subscribe(ctx, c.Client, it, "", nil) })
	for _, msg := range failures(items, errs) {
		t.Fatalf("creating Subscriptions: %s", msg)
	}
	outcomes := waitFleet(ctx, c.Env.Config, items, 10*time.Minute+time.Duration(len(items))*3*time.Second)
	fig.ManagerClusterCPU = cpuSince(cpu0, clusterCPU(c.Env))
	fig.ManagerCPU = round2(cpuSeconds(m.Cmd.Process.Pid) - mcpu0)
	fig.ManagerMachineCPU = readMachineCPU().since(m0)
	var last time.Time
	var done []time.Time
	for _, it := range items {
		o := outcomes[it.Namespace]
		if !o.ok {
			fig.ManagerFailures = append(fig.ManagerFailures, it.Package+": "+o.reason)
			continue
		}
		done = append(done, o.at)
		if o.at.After(last) {
			last = o.at
		}
	}
	if !last.IsZero() {
		fig.ManagerSeconds = secs(last.Sub(start))
		fig.ManagerP50, fig.ManagerP90 = quantile(start, done, 0.5), quantile(start, done, 0.9)
	}
	time.Sleep(settled) // the last status writes and events of the fleet
	settled, err := scrape(m)
	if err != nil {
		t.Fatal(err)
	}
	writesBefore := len(loggedWrites(m))
	used := settled.minus(before)
	n := float64(len(items))
	w, r, watches := used.split()
	fig.WritesPerInstall, fig.ReadsPerInstall, fig.Watches = round2(w/n), round2(r/n), watches
	fig.WritesByResource = used.topWrites(n, 40)
	fig.ReadsByResource = used.topReads(n, 40)
	time.Sleep(s.idle)
	after, err := scrape(m)
	if err != nil {
		t.Fatal(err)
	}
	idle := after.minus(settled)
	fig.IdleWindowSeconds = s.idle.Seconds()
	fig.IdleWrites, _, _ = idle.split()
	fig.IdleWriteDetail = idle.topWrites(1, 20)
	fig.IdleWritePaths = countPaths(loggedWrites(m)[writesBefore:]).top(1, 20)
	rss, peak, anon := memory(m.Cmd.Process.Pid)
	fig.RSSSettledMiB, fig.RSSPeakMiB, fig.RSSAnonMiB = round2(rss), round2(peak), round2(anon)
	fig.GoMemory = goMemory(m)
	if s.pprof != "" {
		saveHeapProfile(t, m, s.pprof)
	}
	if life == nil {
		return
	}
	// The lifecycle operator comes from the samples, through a Directory CatalogSource.
	its := life.items
	ns := its[0].Namespace
	health := &omv1.HealthPolicy{Timeout: &metav1.Duration{Duration: life.timeout}}
	t0 := time.Now()
	if err := subscribe(ctx, c.Client, &its[0], "samples", health); err == nil {
		err = c.Client.Create(ctx, &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: "samples", Namespace: ns},
			Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: c.SampleDir}})
		if err != nil {
			t.Fatal(err)
		}
	} else {
		t.Fatal(err)
	}
	if err := waitBlueprint(ctx, c.Client, f, &its[0], omv1.BlueprintSucceeded, 3*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, m.LogTail(4000))
	}
	life.Install["manager"] = stepSince(t0)
	setVersion := func(v string) error {
		sub := &omv1.Subscription{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet"}, sub); err != nil {
			return err
		}
		patch := client.MergeFrom(sub.DeepCopy())
		sub.Spec.Version = v
		return c.Client.Patch(ctx, sub, patch)
	}
	upgrade := func(int) error {
		if err := setVersion(its[1].Version); err != nil {
			return err
		}
		return waitBlueprint(ctx, c.Client, f, &its[1], omv1.BlueprintSucceeded, 3*time.Minute)
	}
	// By hand, as a person would: the CLI, waiting, to the newest good revision before.
	rollback := func(int) error {
		cmd := exec.Command(c.ManagerBin, "rollback", "fleet", "-n", ns, "--wait", "--kubeconfig", c.Env.Kubeconfig)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("operator-manager rollback: %v\n%s", err, out)
		}
		return waitBlueprint(ctx, c.Client, f, &its[0], omv1.BlueprintSucceeded, time.Minute)
	}
	// After a rollback by hand the Subscription still asks for the newer version, and the
	// Blueprint stays where the person put it until the Subscription's spec changes: the
	// next round's upgrade is the same edit as the first's once the Subscription asks for
	// the running version again (untimed).
	again := func(round int) error {
		if round == 0 {
			return nil
		}
		if err := setVersion(its[0].Version); err != nil {
			return err
		}
		if err := waitObserved(ctx, c.Client, ns, time.Minute); err != nil {
			return err
		}
		return waitBlueprint(ctx, c.Client, f, &its[0], omv1.BlueprintSucceeded, time.Minute)
	}
	if err := life.rounds(ctx, "manager", c.Env.Config, again, upgrade, rollback); err != nil {
		t.Fatalf("manager %v\n%s", err, m.LogTail(4000))
	}
	t0 = time.Now()
	if err := setVersion(its[2].Version); err != nil {
		t.Fatal(err)
	}
	if err := waitBlueprint(ctx, c.Client, f, &its[0], omv1.BlueprintRolledBack, life.timeout+3*time.Minute); err != nil {
		t.Fatalf("manager failed upgrade: %v\n%s", err, m.LogTail(4000))
	}
	life.FailedUpgrade["manager"] = stepSince(t0)
}

// runHelm installs the fleet with Helm, one release per operator, then the lifecycle
// operator.
func runHelm(t *testing.T, c *harness.Cluster, s settings, bin, work string, items []item, fig *fleetFigures, life *lifecycleFigures) {
	ctx := context.Background()
	h := &helm{bin: bin, kubeconfig: c.Env.Kubeconfig, home: filepath.Join(c.Work, "helm")}
	charts := filepath.Join(c.Work, "charts")
	paths := map[string]string{}
	for i := range items {
		p, err := writeChart(charts, &items[i])
		if err != nil {
			t.Fatal(err)
		}
		paths[items[i].Namespace] = p
	}
	start := time.Now()
	errs, ends := inParallel(items, s.concurrency, func(it *item) error { return h.install(ctx, it, paths[it.Namespace]) })
	fig.HelmSeconds = secs(latest(ends).Sub(start))
	fig.HelmP50, fig.HelmP90 = quantile(start, ends, 0.5), quantile(start, ends, 0.9)
	fig.HelmFailures = failures(items, errs)
	if life == nil {
		return
	}
	// As long after the fleet as the manager's lifecycle starts (its settling and idle
	// window): a cluster still busy with the fleet slows every step.
	time.Sleep(settleBeforeLifecycle(s))
	f, err := newFloor(c.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	its := life.items
	var lc [3]string
	for i := range its {
		if lc[i], err = writeChart(charts, &its[i]); err != nil {
			t.Fatal(err)
		}
	}
	ns, timeout := its[0].Namespace, fmt.Sprint(life.timeout)
	timed := func(dst map[string]float64, args ...string) {
		t0 := time.Now()
		if err := h.run(ctx, args...); err != nil {
			t.Error(err)
		}
		dst["helm"] = stepSince(t0)
	}
	timed(life.Install, "install", "fleet", lc[0], "-n", ns, "--create-namespace", "--wait=watcher", "--timeout", "5m")
	// Rolled back to the release before, as the manager's rollback goes to the newest
	// good revision before.
	if err := life.rounds(ctx, "helm", c.Env.Config, nil,
		func(int) error {
			return h.run(ctx, "upgrade", "fleet", lc[1], "-n", ns, "--wait=watcher", "--timeout", "5m")
		},
		func(int) error { return h.run(ctx, "rollback", "fleet", "-n", ns, "--wait=watcher", "--timeout", "5m") }); err != nil {
		t.Errorf("helm %v", err)
	}
	// Helm's own automatic rollback: it fails the upgrade after --timeout and rolls back.
	t0 := time.Now()
	if err := h.run(ctx, "upgrade", "fleet", lc[2], "-n", ns, "--wait=watcher", "--timeout", timeout, "--rollback-on-failure"); err == nil {
		t.Errorf("helm upgrade to the broken %s succeeded", its[2].Version)
	}
	if err := f.wait(ctx, ns, its[0].Deployments); err != nil {
		t.Errorf("helm failed upgrade, back to the old version: %v", err)
	}
	life.FailedUpgrade["helm"] = stepSince(t0)
}

// settleBeforeLifecycle is how long after its fleet each contestant's lifecycle starts:
// the manager's starts after its settling (10 s) and idle window.
func settleBeforeLifecycle(s settings) time.Duration { return settled + s.idle }

// lifecycleItems render the sample cache-operator at 1.1.0, 1.2.0 and the broken 1.3.0.
func lifecycleItems(samples *catalog.Catalog, rounds int) (*lifecycleFigures, error) {
	life := &lifecycleFigures{Package: "cache-operator (samples)", timeout: 30 * time.Second, Rounds: rounds,
		Install: map[string]float64{}, Upgrade: map[string]float64{}, Rollback: map[string]float64{}, FailedUpgrade: map[string]float64{},
		UpgradeRounds: map[string][]float64{}, RollbackRounds: map[string][]float64{},
		UpgradeSplit: map[string]phaseSplit{}, RollbackSplit: map[string]phaseSplit{}}
	life.HealthTimeout = life.timeout.Seconds()
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		b, ch, err := bundleAt(samples, "cache-operator", v)
		if err != nil {
			return nil, err
		}
		it, err := render1(samples, b, ch, "fleet-lifecycle")
		if err != nil {
			return nil, err
		}
		life.items = append(life.items, it)
	}
	return life, nil
}

// stepPause is the rest before each timed upgrade and rollback of the rounds: long
// enough for the controller-manager's client limit (bursts of 30, 20 a second) to refill.
const stepPause = 2 * time.Second

// rounds upgrades the lifecycle operator and rolls it back by hand Rounds times, timing
// each step, and records every time and the medians under who. An error ends the rounds.
// before, when not nil, readies each round, untimed. The lifecycle's Deployments in cfg's
// cluster are watched meanwhile, to split each step (rolloutTimeline).
func (l *lifecycleFigures) rounds(ctx context.Context, who string, cfg *rest.Config, before, upgrade, rollback func(round int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tl, err := watchRollouts(ctx, cfg, l.items[0].Namespace)
	if err != nil {
		return fmt.Errorf("watching the Deployments: %w", err)
	}
	splits := map[string][]phaseSplit{}
	for r := range l.Rounds {
		if before != nil {
			if err := before(r); err != nil {
				return fmt.Errorf("readying round %d: %w", r+1, err)
			}
		}
		for _, step := range []struct {
			what string
			do   func(int) error
			dst  map[string][]float64
		}{{"upgrade", upgrade, l.UpgradeRounds}, {"rollback", rollback, l.RollbackRounds}} {
			// Each step starts from a cluster at rest, as a person's upgrade or rollback
			// would, minutes after the last. Back to back, the faster contestant timed its
			// cluster's throttle: the controller-manager's deployment controller makes
			// about twelve requests per rollout through its own client, limited to 20 a
			// second in bursts of 30, and one round every second drained it, so the
			// manager's rollouts took 0.25 to 0.4 s against Helm's 0.1 to 0.15 (its
			// upgrade takes half a second longer, time in which the limit refills); with
			// the limit raised (OPM_FLEET_CONTROLLER_MANAGER_ARGS) both took 0.1 to 0.15.
			time.Sleep(stepPause)
			t0 := time.Now()
			if err := step.do(r); err != nil {
				return fmt.Errorf("%s, round %d: %w", step.what, r+1, err)
			}
			end := time.Now()
			step.dst[who] = append(step.dst[who], stepSince(t0))
			// The watch's last events may trail the step's end by moments.
			time.Sleep(20 * time.Millisecond)
			if sp, ok := tl.split(t0, end); ok {
				splits[step.what] = append(splits[step.what], sp)
			}
		}
	}
	l.Upgrade[who], l.Rollback[who] = median(l.UpgradeRounds[who]), median(l.RollbackRounds[who])
	if len(splits["upgrade"]) > 0 {
		l.UpgradeSplit[who] = medianSplit(splits["upgrade"])
	}
	if len(splits["rollback"]) > 0 {
		l.RollbackSplit[who] = medianSplit(splits["rollback"])
	}
	return nil
}

// median is the middle of xs (the mean of the two middle ones for an even count), 0 for
// none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return round2((s[n/2-1] + s[n/2]) / 2)
	}
	return s[len(s)/2]
}

func latest(ts []time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// cpuSeconds is the CPU time (user and system) process pid has used, from /proc; zero
// where that cannot be read (not Linux, the process gone).
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count from after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // in USER_HZ, 100 on Linux
}

// machineCPU is CPU time seen from the machine, in seconds.
type machineCPU struct {
	// All is every process's user and system time (with interrupts), on all cores.
	All float64 `json:"all"`
	// Test is this test process's own.
	Test float64 `json:"test"`
	// Steal is the time the hypervisor ran something else while this machine wanted a core.
	Steal float64 `json:"steal"`
}

// readMachineCPU reads the machine's totals from /proc/stat and this process's own
// (cpuSeconds); nil where they cannot be read (not Linux).
func readMachineCPU() *machineCPU {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return nil
	}
	jiffies := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v / 100 }
	// user nice system idle iowait irq softirq steal: all but idle, iowait and steal.
	return &machineCPU{
		All:   jiffies(1) + jiffies(2) + jiffies(3) + jiffies(6) + jiffies(7),
		Test:  cpuSeconds(os.Getpid()),
		Steal: jiffies(8),
	}
}

// since is what was spent between an earlier reading and m.
func (m *machineCPU) since(before *machineCPU) *machineCPU {
	if m == nil || before == nil {
		return nil
	}
	return &machineCPU{All: round2(m.All - before.All), Test: round2(m.Test - before.Test), Steal: round2(m.Steal - before.Steal)}
}

func (m *machineCPU) String() string {
	if m == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f (this test process %.1f, stolen by the hypervisor %.1f)", m.All, m.Test, m.Steal)
}

// clusterCPU is the CPU time each process of the cluster has used, by name.
func clusterCPU(e *testenv.Env) map[string]float64 {
	out := map[string]float64{}
	for _, p := range e.Processes {
		out[p.Name] += cpuSeconds(p.PID)
	}
	return out
}

// cpuSince is what each process used between two clusterCPU readings, with the sum as
// "all".
func cpuSince(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name, v := range after {
		d := round2(v - before[name])
		out[name] = d
		out["all"] = round2(out["all"] + d)
	}
	return out
}

// formatCPU prints a cpuSince reading: the sum, then each process.
func formatCPU(m map[string]float64) string {
	if len(m) == 0 {
		return "-"
	}
	var names []string
	for name := range m {
		if name != "all" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, m[name]))
	}
	return fmt.Sprintf("%.1f (%s)", m["all"], strings.Join(parts, ", "))
}

// quantile is the seconds from start until the fraction q of ends had passed (zero
// times, installs that never ended, are left out).
func quantile(start time.Time, ends []time.Time, q float64) float64 {
	var ds []time.Duration
	for _, e := range ends {
		if !e.IsZero() {
			ds = append(ds, e.Sub(start))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return secs(ds[max(i, 0)])
}

func failures(items []item, errs []error) []string {
	var out []string
	for i, err := range errs {
		if err != nil {
			out = append(out, items[i].Package+": "+err.Error())
		}
	}
	return out
}

// stepSince is the seconds since t, to the hundredth: a lifecycle step takes tenths.
func stepSince(t time.Time) float64 {
	return float64(time.Since(t).Round(10*time.Millisecond)) / float64(time.Second)
}

func secs(d time.Duration) float64 {
	return float64(d.Round(100*time.Millisecond)) / float64(time.Second)
}

// pairFigure is one floor run and one manager run of a size.
type pairFigure struct {
	FloorSeconds      float64 `json:"floorSeconds"`
	ManagerSeconds    float64 `json:"managerSeconds"`
	ManagerOverFloor  float64 `json:"managerOverFloor"`
	FloorClusterCPU   float64 `json:"floorClusterCPUSeconds"`
	ManagerClusterCPU float64 `json:"managerClusterCPUSeconds"`
	ManagerCPU        float64 `json:"managerCPUSeconds"`
}

// merge makes f the figures of the run of median ratio among runs (of the manager's or
// the floor's time where only one ran), keeping f's own description of the fleet, with
// every run's seconds in f.Pairs and every run's failures.
func (f *fleetFigures) merge(runs []fleetFigures) {
	pairs := make([]pairFigure, len(runs))
	for i, r := range runs {
		pairs[i] = pairFigure{FloorSeconds: r.FloorSeconds, ManagerSeconds: r.ManagerSeconds,
			FloorClusterCPU: r.FloorClusterCPU["all"], ManagerClusterCPU: r.ManagerClusterCPU["all"], ManagerCPU: r.ManagerCPU}
		if r.FloorSeconds > 0 {
			pairs[i].ManagerOverFloor = round2(r.ManagerSeconds / r.FloorSeconds)
		}
	}
	m := medianPair(pairs)
	var floorFails, managerFails []string
	for i, r := range runs {
		if i != m {
			floorFails = append(floorFails, r.FloorFailures...)
			managerFails = append(managerFails, r.ManagerFailures...)
		}
	}
	n, objects, kinds, skipped := f.N, f.ObjectsPerInstall, f.ObjectsByKind, f.Skipped
	*f = runs[m]
	f.N, f.ObjectsPerInstall, f.ObjectsByKind, f.Skipped = n, objects, kinds, skipped
	f.FloorFailures = append(f.FloorFailures, floorFails...)
	f.ManagerFailures = append(f.ManagerFailures, managerFails...)
	if len(runs) > 1 {
		f.Pairs, f.PairOfMedian = pairs, m+1
	}
}

// medianPair is the index of the pair of median ratio (the lower of the two middle ones
// for an even count); by the manager's seconds, or the floor's, where only one ran.
func medianPair(pairs []pairFigure) int {
	key := func(p pairFigure) float64 {
		switch {
		case p.ManagerOverFloor > 0:
			return p.ManagerOverFloor
		case p.ManagerSeconds > 0:
			return p.ManagerSeconds
		}
		return p.FloorSeconds
	}
	idx := make([]int, len(pairs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return key(pairs[idx[a]]) < key(pairs[idx[b]]) })
	return idx[(len(idx)-1)/2]
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s/%s, %s", host, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// writeReport writes the JSON report and logs it as a table for BENCHMARKS.md.
func writeReport(t *testing.T, s settings, rep *report) {
	path := s.report
	if path == "" {
		path = filepath.Join(t.TempDir(), "fleet-report.json")
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Errorf("writing the report: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fleet benchmark, %s; %s\n", rep.Machine, rep.Settings)
	fmt.Fprintf(&b, "| N | objects each | floor s | manager s | Helm s | manager/floor | Helm/floor | writes/install | reads/install | idle writes (%gs) | RSS peak / settled (anon) MiB |\n", s.idle.Seconds())
	for _, f := range rep.Fleets {
		fmt.Fprintf(&b, "| %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f | %g | %.0f / %.0f (%.0f) |\n", f.N, f.ObjectsPerInstall,
			f.FloorSeconds, f.ManagerSeconds, f.HelmSeconds, f.ManagerOverFloor, f.HelmOverFloor, f.WritesPerInstall, f.ReadsPerInstall,
			f.IdleWrites, f.RSSPeakMiB, f.RSSSettledMiB, f.RSSAnonMiB)
		if len(f.Pairs) > 1 {
			var ps []string
			for _, p := range f.Pairs {
				ps = append(ps, fmt.Sprintf("%.1f / %.1f = %.2f (cluster CPU %.1f / %.1f, manager %.1f)", p.ManagerSeconds, p.FloorSeconds, p.ManagerOverFloor,
					p.ManagerClusterCPU, p.FloorClusterCPU, p.ManagerCPU))
			}
			fmt.Fprintf(&b, "  manager / floor of each pair, the row's is pair %d: %s\n", f.PairOfMedian, strings.Join(ps, "; "))
		}
		fmt.Fprintf(&b, "  half and nine tenths done after (s): floor %.1f, %.1f; manager %.1f, %.1f; Helm %.1f, %.1f\n",
			f.FloorP50, f.FloorP90, f.ManagerP50, f.ManagerP90, f.HelmP50, f.HelmP90)
		if len(f.FloorClusterCPU) > 0 || len(f.ManagerClusterCPU) > 0 {
			fmt.Fprintf(&b, "  CPU seconds while installing: floor's cluster %s; manager's cluster %s, manager %.1f\n",
				formatCPU(f.FloorClusterCPU), formatCPU(f.ManagerClusterCPU), f.ManagerCPU)
			fmt.Fprintf(&b, "  the whole machine's CPU seconds in the same windows: floor %s; manager %s\n", f.FloorMachineCPU, f.ManagerMachineCPU)
		}
		fmt.Fprintf(&b, "  objects per install by kind: %s\n", strings.Join(f.ObjectsByKind, ", "))
		fmt.Fprintf(&b, "  writes per install by resource: %s\n", strings.Join(f.WritesByResource, ", "))
		fmt.Fprintf(&b, "  reads per install by resource: %s\n", strings.Join(f.ReadsByResource, ", "))
		if len(f.GoMemory) > 0 {
			fmt.Fprintf(&b, "  settled Go memory (MiB): %s\n", formatMemory(f.GoMemory))
		}
		if len(f.IdleWriteDetail) > 0 {
			fmt.Fprintf(&b, "  idle writes: %s\n  idle writes by object: %s\n", strings.Join(f.IdleWriteDetail, ", "), strings.Join(f.IdleWritePaths, ", "))
		}
	}
	if l := rep.Lifecycle; l != nil {
		fmt.Fprintf(&b, "| %s (health timeout %gs; upgrade and rollback: median of %d) | floor s | manager s | Helm s |\n", l.Package, l.HealthTimeout, l.Rounds)
		for _, row := range []struct {
			name string
			m    map[string]float64
		}{{"install", l.Install}, {"upgrade", l.Upgrade}, {"rollback by hand", l.Rollback}, {"failed upgrade to old version serving", l.FailedUpgrade}} {
			fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f |\n", row.name, row.m["floor"], row.m["manager"], row.m["helm"])
		}
		if l.Rounds > 1 {
			for _, who := range []string{"floor", "manager", "helm"} {
				fmt.Fprintf(&b, "%s, each of %d rounds (s): upgrade %v, rollback by hand %v\n", who, l.Rounds, l.UpgradeRounds[who], l.RollbackRounds[who])
			}
		}
		for _, who := range []string{"floor", "manager", "helm"} {
			for _, st := range []struct {
				what  string
				split map[string]phaseSplit
			}{{"upgrade", l.UpgradeSplit}, {"rollback by hand", l.RollbackSplit}} {
				if sp, ok := st.split[who]; ok {
					fmt.Fprintf(&b, "%s %s, median parts (s): %.2f until the Deployment changed, %.2f its rollout, %.2f after\n", who, st.what, sp.Before, sp.Rollout, sp.After)
				}
			}
		}
		fmt.Fprintf(&b, "manager's share of the failed upgrade beyond the floor: %.1f s\n", l.ManagerShare)
	}
	t.Logf("report: %s\n%s", path, b.String())
}
