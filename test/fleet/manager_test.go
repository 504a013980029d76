package fleet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/metrics"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/test/harness"
)

// requests are the manager's API requests by "verb resource", from its
// operator_manager_api_requests_total metric.
type requests map[string]float64

// scrape reads the manager's request counters.
func scrape(m *harness.Manager) (requests, error) {
	r, err := m.APIRequests()
	return requests(r), err
}

// minus is what happened between an earlier scrape and this one.
func (r requests) minus(before requests) requests {
	out := requests{}
	for k, v := range r {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// split counts writes (what changes stored state), reads (get, list) and watches.
func (r requests) split() (writes, reads, watches float64) {
	for k, v := range r {
		verb, resource, _ := strings.Cut(k, " ")
		switch {
		case metrics.IsWrite(verb, resource):
			writes += v
		case verb == "watch":
			watches += v
		case verb == "get" || verb == "list":
			reads += v
		}
	}
	return
}

// topWrites lists the writes by resource, most first: where an installation's writes go.
func (r requests) topWrites(per float64, n int) []string {
	writes := requests{}
	for k, v := range r {
		verb, resource, _ := strings.Cut(k, " ")
		if metrics.IsWrite(verb, resource) {
			writes[k] = v
		}
	}
	return writes.top(per, n)
}

// topReads lists the reads (get, list) by resource, most first.
func (r requests) topReads(per float64, n int) []string {
	reads := requests{}
	for k, v := range r {
		if verb, _, _ := strings.Cut(k, " "); verb == "get" || verb == "list" {
			reads[k] = v
		}
	}
	return reads.top(per, n)
}

// top lists the counts, most first, each divided by per.
func (r requests) top(per float64, n int) []string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range r {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var out []string
	for i, e := range all {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%s %.1f", e.k, e.v/per))
	}
	return out
}

// memory reads a process's resident memory now and its peak, in MiB, and how much of it
// is anonymous (heap, stacks) rather than the binary's own pages.
func memory(pid int) (rss, peak, anon float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		case "RssAnon:":
			anon = kb / 1024
		}
	}
	return rss, peak, anon
}

// waitCatalog waits until the manager's default CatalogSource is Ready: the catalog is
// loaded before the clock starts, as on a cluster that has run for a while.
func waitCatalog(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		cs := &omv1.CatalogSource{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: harness.ManagerNamespace, Name: catalogsource.DefaultName}, cs); err == nil {
			if meta.IsStatusConditionTrue(cs.Status.Conditions, omv1.ConditionReady) {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the default CatalogSource was not Ready within 5m")
}

// subscribe creates the item's namespace and a Subscription pinned to its version.
func subscribe(ctx context.Context, c client.Client, it *item, catalogName string, health *omv1.HealthPolicy) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: it.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: it.Namespace},
		Spec: omv1.SubscriptionSpec{Package: it.Package, Channel: it.Channel, Version: it.Version, Catalog: catalogName, Health: health}}
	return c.Create(ctx, sub)
}

// outcome is where one installation ended.
type outcome struct {
	ok     bool
	at     time.Time
	reason string
}

// waitFleet watches the Blueprints until every item runs its version (Succeeded) or has
// ended otherwise, or the timeout passes; it returns each item's outcome, keyed by
// namespace. A watch, as the floor waits through an informer: listing 159 Blueprints
// four times a second cost the API server and this process CPU the manager's run paid for
// and the floor's did not.
func waitFleet(ctx context.Context, cfg *rest.Config, items []item, timeout time.Duration) map[string]outcome {
	want := map[string]string{}
	for _, it := range items {
		want[it.Namespace] = it.Version
	}
	out := map[string]outcome{}
	judge := func(bp *omv1.Blueprint, now time.Time) {
		v, mine := want[bp.Namespace]
		if _, seen := out[bp.Namespace]; !mine || seen || bp.Status.ObservedGeneration != bp.Generation {
			return
		}
		switch bp.Status.Phase {
		case omv1.BlueprintSucceeded:
			if bp.Status.CurrentVersion == v {
				out[bp.Namespace] = outcome{ok: true, at: now}
			}
		case omv1.BlueprintFailed, omv1.BlueprintRolledBack, omv1.BlueprintBlocked:
			reason := string(bp.Status.Phase)
			if cond := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionReady); cond != nil {
				reason += ": " + cond.Reason + ": " + cond.Message
			}
			out[bp.Namespace] = outcome{at: now, reason: reason}
		}
	}
	deadline := time.Now().Add(timeout)
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	for err == nil && len(out) < len(items) && time.Now().Before(deadline) {
		// List, then watch from the list's version; a watch the server ends is started
		// again the same way.
		list := &omv1.BlueprintList{}
		if lerr := wc.List(ctx, list); lerr != nil {
			time.Sleep(time.Second)
			continue
		}
		now := time.Now()
		for i := range list.Items {
			judge(&list.Items[i], now)
		}
		w, werr := wc.Watch(ctx, &omv1.BlueprintList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if werr != nil {
			time.Sleep(time.Second)
			continue
		}
		timer := time.NewTimer(time.Until(deadline))
	events:
		for len(out) < len(items) {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events
				}
				if bp, ok := ev.Object.(*omv1.Blueprint); ok {
					judge(bp, time.Now())
				}
			case <-timer.C:
				break events
			}
		}
		timer.Stop()
		w.Stop()
	}
	for _, it := range items {
		if _, ok := out[it.Namespace]; !ok {
			reason := fmt.Sprintf("no outcome within %s", timeout)
			if err != nil {
				reason = "watching Blueprints: " + err.Error()
			}
			out[it.Namespace] = outcome{reason: reason}
		}
	}
	return out
}

// waitBlueprint waits until the Blueprint ns/fleet is in phase at version and its
// Deployments have rolled out (the old version serving again, after a rollback).
func waitBlueprint(ctx context.Context, c client.Client, f *floor, it *item, phase omv1.BlueprintPhase, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		bp := &omv1.Blueprint{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: it.Namespace, Name: "fleet"}, bp); err == nil {
			last = fmt.Sprintf("%s at %s", bp.Status.Phase, bp.Status.CurrentVersion)
			if bp.Status.ObservedGeneration == bp.Generation && bp.Status.Phase == phase && bp.Status.CurrentVersion == it.Version {
				return f.wait(ctx, it.Namespace, it.Deployments)
			}
		}
		// Often: the floor and Helm wait on watches, and these steps take tenths of a
		// second.
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s/fleet: not %s at %s within %s (last: %s)", it.Namespace, phase, it.Version, timeout, last)
}

// waitObserved waits until the manager has seen the Subscription ns/fleet's latest spec.
func waitObserved(ctx context.Context, c client.Client, ns string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		sub := &omv1.Subscription{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet"}, sub); err == nil && sub.Status.ObservedGeneration == sub.Generation {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s/fleet: the Subscription's spec not observed within %s", ns, timeout)
}

// loggedWrites are the writes the manager logged (crashpoint.EnvLogWrites), in order, as
// "METHOD PATH".
func loggedWrites(m *harness.Manager) []string {
	data, _ := os.ReadFile(m.Log)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		// write 12: PATCH /apis/apps/v1/namespaces/a/deployments/d (200)
		if !strings.HasPrefix(line, "write ") {
			continue
		}
		if _, rest, ok := strings.Cut(line, ": "); ok {
			if i := strings.LastIndex(rest, " ("); i > 0 {
				rest = rest[:i]
			}
			out = append(out, rest)
		}
	}
	return out
}

// countPaths counts writes by "METHOD PATH", for requests.top.
func countPaths(writes []string) requests {
	out := requests{}
	for _, w := range writes {
		out[w]++
	}
	return out
}

// goMemory reads the manager's go_memstats gauges (MiB) and its count of collections.
func goMemory(m *harness.Manager) map[string]float64 {
	resp, err := http.Get("http://" + m.Metrics + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	want := map[string]string{"go_memstats_heap_inuse_bytes": "heap in use", "go_memstats_heap_idle_bytes": "heap idle",
		"go_memstats_heap_released_bytes": "heap released", "go_memstats_stack_inuse_bytes": "stacks",
		"go_memstats_sys_bytes": "from the system", "go_gc_duration_seconds_count": "collections"}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		label, wanted := want[name]
		if !ok || !wanted {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		if name != "go_gc_duration_seconds_count" {
			v = round2(v / (1 << 20))
		}
		out[label] = v
	}
	return out
}

func formatMemory(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %g", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// saveCPUProfile records the manager's CPU profile for d, in the background, into dir; the
// channel is closed when it is written.
func saveCPUProfile(t *testing.T, dir string, d time.Duration) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		saveProfile(t, dir, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), "cpu", "CPU profile of the manager during the install")
	}()
	return done
}

// saveAPIServerProfile writes a CPU profile of the cluster's API server over the next d
// into dir as <who>-apiserver-cpu-<time>.pb.gz: where the API server's share of the two
// cores goes while a contestant installs the fleet (BENCHMARKS.md, "Where the rest goes").
func saveAPIServerProfile(t *testing.T, cfg *rest.Config, dir, who string, d time.Duration) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		what := "CPU profile of the API server while the " + who + " installs"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Logf("%s: %v", what, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
		defer cancel()
		data, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(ctx)
		if err != nil {
			t.Logf("%s: %v", what, err)
			return
		}
		keepProfile(t, dir, who+"-apiserver-cpu", what, data)
	}()
	return done
}

// saveHeapProfile writes the manager's heap profile (pprof) into dir.
func saveHeapProfile(t *testing.T, _ *harness.Manager, dir string) {
	saveProfile(t, dir, "heap", "heap", "heap profile of the settled manager")
}

// saveProfile fetches one pprof profile of the manager (path under /debug/pprof/) and
// writes it into dir as manager-<kind>-<time>.pb.gz.
func saveProfile(t *testing.T, dir, path, kind, what string) {
	resp, err := http.Get("http://127.0.0.1:16060/debug/pprof/" + path)
	if err != nil {
		t.Logf("%s: %v", what, err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	keepProfile(t, dir, "manager-"+kind, what, data)
}

// keepProfile writes a fetched profile into dir as <name>-<time>.pb.gz and logs where.
func keepProfile(t *testing.T, dir, name, what string, data []byte) {
	t.Helper()
	file := filepath.Join(dir, fmt.Sprintf("%s-%d.pb.gz", name, time.Now().Unix()))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Logf("%s: %v", what, err)
		return
	}
	t.Logf("%s: %s", what, file)
}
