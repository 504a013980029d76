// Package compat is the compatibility suite: it installs the packages of a catalog on the
// full local cluster, with the manager running as its own ServiceAccount, and reports per
// package whether each reached Succeeded, or why not.
//
//	make compat        every package's default-channel head, one namespace each
//	make compat-walk   every package's default channel from its oldest version to its
//	                   head, one version at a time, each through the health gate
//
// `make test` runs a bounded subset (OPM_COMPAT_PACKAGES unset): a handful of packages
// chosen for what they exercise, each of which must succeed. With
// OPM_COMPAT_PACKAGES=all the suite only reports: the report (JSON, path in
// OPM_COMPAT_REPORT, default compat-report.json in the test's work directory) and a summary
// table, and it fails only when the cluster or the manager breaks.
package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/test/harness"
)

var cluster *harness.Cluster

func TestMain(m *testing.M) {
	if harness.CommunityDir() == "" {
		fmt.Println("compat: the shared community catalog is absent (../shared/catalogs/community-operators or $OPM_COMMUNITY_CATALOG); skipping")
		os.Exit(0)
	}
	os.Exit(harness.Main(m, &cluster, func(c *harness.Cluster) error {
		_, err := c.StartManager("manager", harness.Options{})
		return err
	}))
}

// subset is what `make test` runs: packages that each exercise something a real catalog
// throws at the manager (v1beta1 CRDs, webhooks, removed API versions, bundle objects
// written for another namespace, long channels).
var subset = []string{"etcd", "prometheus", "cloud-native-postgresql", "integrity-shield-operator", "pystol", "elastic-phenix-operator"}

// result is one package's line of the report.
type result struct {
	Package string `json:"package"`
	Channel string `json:"channel"`
	// Steps are the versions installed, in order (one for the head mode).
	Steps   []string `json:"steps"`
	Outcome string   `json:"outcome"` // Succeeded, or the reason it stopped
	Message string   `json:"message,omitempty"`
	Seconds float64  `json:"seconds"`
}

// concurrency is how many packages are installed at once.
const concurrency = 16

func TestCompatibility(t *testing.T) {
	cat, err := catalog.Load(harness.CommunityDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	walk := os.Getenv("OPM_COMPAT_MODE") == "walk"
	var pkgs []*catalog.Package
	switch names := os.Getenv("OPM_COMPAT_PACKAGES"); names {
	case "all":
		pkgs = cat.Packages()
	default:
		list := subset
		if names != "" {
			list = strings.Split(names, ",")
		}
		for _, n := range list {
			p := cat.Package(strings.TrimSpace(n))
			if p == nil {
				t.Fatalf("package %q is not in the catalog", n)
			}
			pkgs = append(pkgs, p)
		}
	}
	results := make([]result, len(pkgs))
	// The packages others depend on are installed (walked) first, each to its end, then
	// the rest: an installation watching all namespaces meets its dependents in every
	// namespace, and the order of a run no longer decides whether a provider's own
	// Subscription comes before the dependency Subscription a dependent would make for it
	// (which its own is then refused next to, as a second installation watching all
	// namespaces).
	first := providers(cat, pkgs, walk)
	if len(first) > 0 {
		t.Logf("installed first, since others depend on them: %s", strings.Join(slices.Sorted(maps.Keys(first)), ", "))
	}
	for _, phase := range []bool{true, false} {
		sem := make(chan struct{}, concurrency)
		var wg sync.WaitGroup
		for i, p := range pkgs {
			if first[p.Name] != phase {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				results[i] = run(t, cat, p, walk)
			}()
		}
		wg.Wait()
	}
	report(t, results, walk)
	if os.Getenv("OPM_COMPAT_PACKAGES") != "all" {
		for _, r := range results {
			if r.Outcome != "Succeeded" {
				t.Errorf("%s: %s: %s", r.Package, r.Outcome, r.Message)
			}
		}
	}
}

// providers are the packages of pkgs that another package of pkgs depends on, by package
// (olm.package) or by API (olm.gvk, a required CRD), in the versions the run installs (the
// head, or every version of the default channel when walking).
func providers(cat *catalog.Catalog, pkgs []*catalog.Package, walk bool) map[string]bool {
	in := map[string]bool{}
	for _, p := range pkgs {
		in[p.Name] = true
	}
	out := map[string]bool{}
	need := func(pkg, by string) {
		if pkg != by && in[pkg] {
			out[pkg] = true
		}
	}
	byAPI := func(g catalog.GVK, by string) {
		for _, b := range cat.ProvidersOf(g) {
			need(b.Package, by)
		}
	}
	for _, p := range pkgs {
		ch := p.Channel(p.DefaultChannel)
		if ch == nil {
			continue
		}
		for i, e := range ch.Entries {
			if i > 0 && !walk {
				break
			}
			for _, d := range e.Bundle.Dependencies {
				if d.Type == catalog.DependencyPackage {
					need(d.Package, p.Name)
				} else {
					byAPI(d.GVK, p.Name)
				}
			}
			for _, r := range e.Bundle.RequiredCRDs {
				byAPI(r.GVK(), p.Name)
			}
		}
	}
	return out
}

// run installs one package in its own namespace: its head, or each version of its
// default channel from the oldest, and says how far it got.
func run(t *testing.T, cat *catalog.Catalog, p *catalog.Package, walk bool) (res result) {
	res = result{Package: p.Name, Channel: p.DefaultChannel}
	start := time.Now()
	defer func() { res.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds() }()
	ch := p.Channel(p.DefaultChannel)
	if ch == nil || len(ch.Entries) == 0 {
		res.Outcome, res.Message = "NotLoadable", "the package has no default channel"
		for _, r := range cat.Rejections {
			if strings.HasPrefix(r.Path, p.RelPath+"/") || r.Path == p.RelPath {
				res.Message = "the catalog rejected it: " + r.Path + ": " + r.Reason
				break
			}
		}
		return res
	}
	versions := []string{ch.Entries[0].Bundle.Version.String()} // the head
	if walk {
		versions = nil
		for i := len(ch.Entries) - 1; i >= 0; i-- { // entries are by descending version
			versions = append(versions, ch.Entries[i].Bundle.Version.String())
		}
	}
	ns := harness.PackageNamespace("compat", p.Name)
	if err := cluster.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		res.Outcome, res.Message = "TestError", err.Error()
		return res
	}
	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: "compat", Namespace: ns},
		Spec: omv1.SubscriptionSpec{Package: p.Name, Channel: p.DefaultChannel, Version: versions[0]}}
	if err := cluster.Client.Create(ctx(), sub); err != nil {
		res.Outcome, res.Message = "TestError", err.Error()
		return res
	}
	for i, v := range versions {
		if i > 0 {
			patch := client.MergeFrom(sub.DeepCopy())
			sub.Spec.Version = v
			if err := cluster.Client.Patch(ctx(), sub, patch); err != nil {
				res.Outcome, res.Message = "TestError", err.Error()
				return res
			}
		}
		res.Steps = append(res.Steps, v)
		outcome, msg := waitOutcome(ns, v)
		if outcome != "Succeeded" {
			res.Outcome, res.Message = outcome, fmt.Sprintf("at %s: %s", v, msg)
			return res
		}
	}
	res.Outcome = "Succeeded"
	return res
}

// waitOutcome waits until the installation runs version healthy, or ends otherwise
// (Failed, RolledBack, Blocked, not resolvable), for at most four minutes.
func waitOutcome(ns, version string) (string, string) {
	deadline := time.Now().Add(4 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		sub := &omv1.Subscription{}
		bp := &omv1.Blueprint{}
		if cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "compat"}, sub) == nil {
			if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved); c != nil && c.Status == metav1.ConditionFalse &&
				c.Reason != omv1.ReasonCatalogNotReady && c.ObservedGeneration == sub.Generation {
				return c.Reason, c.Message
			}
			if c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionReady); c != nil {
				last = c.Reason + ": " + c.Message
			}
		}
		if cluster.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "compat"}, bp) == nil && bp.Status.ObservedGeneration == bp.Generation {
			switch bp.Status.Phase {
			case omv1.BlueprintSucceeded:
				if bp.Status.CurrentVersion == version {
					return "Succeeded", ""
				}
			case omv1.BlueprintFailed, omv1.BlueprintRolledBack, omv1.BlueprintBlocked:
				msg := last
				if c := meta.FindStatusCondition(bp.Status.Conditions, omv1.ConditionReady); c != nil {
					msg = c.Reason + ": " + c.Message
				}
				return string(bp.Status.Phase), msg
			}
		}
		time.Sleep(time.Second)
	}
	return "Timeout", "no outcome within 4m; last: " + last
}

// report writes the JSON report and logs a summary table: each package that did not
// succeed with its reason, and the counts.
func report(t *testing.T, results []result, walk bool) {
	path := os.Getenv("OPM_COMPAT_REPORT")
	if path == "" {
		path = filepath.Join(cluster.Work, "compat-report.json")
	}
	data, _ := json.MarshalIndent(results, "", "  ")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Errorf("writing the report: %v", err)
	}
	byOutcome := map[string]int{}
	var lines []string
	steps := 0
	for _, r := range results {
		byOutcome[r.Outcome]++
		steps += len(r.Steps)
		if r.Outcome != "Succeeded" {
			msg := r.Message
			if len(msg) > 160 {
				msg = msg[:160] + "..."
			}
			lines = append(lines, fmt.Sprintf("  %-40s %-14s %s", r.Package, r.Outcome, msg))
		}
	}
	sort.Strings(lines)
	var counts []string
	for o, n := range byOutcome {
		counts = append(counts, fmt.Sprintf("%s %d", o, n))
	}
	sort.Strings(counts)
	mode := "default-channel heads"
	if walk {
		mode = "default channels walked from the oldest version"
	}
	t.Logf("compatibility, %s: %d packages, %d versions installed: %s (report: %s)\n%s", mode, len(results), steps,
		strings.Join(counts, ", "), path, strings.Join(lines, "\n"))
}

func ctx() context.Context { return context.Background() }
