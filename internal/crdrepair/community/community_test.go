// Package community_test checks crdrepair against a real kube-apiserver with every CRD of
// the shared community catalog. It is a package of its own so that crdrepair's unit and
// fuzz tests run without a control plane.
package community_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
	"github.com/operator-manager/operator-manager/internal/crdrepair"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.APIOnly, &env)) }

// minAccepted is the share of the catalog's CRDs the API server must accept after repair.
const minAccepted = 0.99

// doc is one CustomResourceDefinition document of a catalog file.
type doc = catalogtest.CRDDocument

// outcome is what happened to one document.
type outcome struct {
	doc
	converted bool
	changes   []crdrepair.Change
	repairErr error
	createErr error
	warnings  []string
	// baselineErr is the API server's answer to the plain conversion, without repairs.
	baselineErr error
}

type warningsKey struct{}

// warningCollector keeps the API server's warnings for a request in the slice its context
// carries, so each CRD's warnings stay with it although requests run in parallel.
type warningCollector struct{}

func (warningCollector) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, text string) {
	if w, ok := ctx.Value(warningsKey{}).(*[]string); ok {
		*w = append(*w, text)
	}
}

func TestCommunityCRDsAreAccepted(t *testing.T) {
	root := catalogtest.CommunityPath(t)
	files, docs := catalogtest.CRDDocuments(t, root)
	if len(docs) == 0 {
		t.Fatalf("no CustomResourceDefinition documents under %s", root)
	}

	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000 // the client's default 5 per second would take minutes
	cfg.WarningHandlerWithContext = warningCollector{}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	out := submitAll(t.Context(), c, docs, 4)
	elapsed := time.Since(start)

	var converted, repaired, accepted, baseline int
	kinds := map[crdrepair.Kind]int{}
	warnings := map[string]int{}
	baselineCauses := map[string]int{}
	var most outcome
	for _, o := range out {
		if len(o.changes) > len(most.changes) {
			most = o
		}
		if o.baselineErr == nil {
			baseline++
		}
		for _, c := range causes(o.baselineErr) {
			baselineCauses[c]++
		}
		seenWarning := map[string]bool{}
		for _, w := range o.warnings {
			if w = warningKind(w); !seenWarning[w] {
				seenWarning[w] = true
				warnings[w]++
			}
		}
		if o.converted {
			converted++
		}
		seen := map[crdrepair.Kind]bool{}
		for _, ch := range o.changes {
			seen[ch.Kind] = true
		}
		for k := range seen {
			kinds[k]++
		}
		if beyondVersionSwap(seen) {
			repaired++
		}
		switch {
		case o.repairErr != nil:
			t.Logf("REFUSED by Repair: %s: %v", rel(root, o.File), o.repairErr)
		case o.createErr != nil:
			t.Logf("REFUSED by the API server: %s: %v", rel(root, o.File), o.createErr)
		default:
			accepted++
		}
	}

	share := float64(accepted) / float64(len(out))
	t.Logf("community catalog: %d files, %d CRDs, %d converted from v1beta1, %d repaired beyond the version swap, "+
		"%d accepted by a dry-run create (%.2f%%), in %s", files, len(out), converted, repaired, accepted, 100*share, elapsed.Round(time.Second))
	t.Logf("without Repair (conversion only, preserveUnknownFields cleared): %d of %d accepted (%.2f%%); CRDs per refusal cause:\n%s",
		baseline, len(out), 100*float64(baseline)/float64(len(out)), countTable(baselineCauses))
	t.Logf("CRDs per kind of repair (most changes for one CRD: %d, %s):\n%s", len(most.changes), rel(root, most.File), kindTable(kinds))
	if len(warnings) > 0 {
		t.Logf("CRDs per API server warning (accepted, but worth knowing):\n%s", countTable(warnings))
	}
	if share < minAccepted {
		t.Errorf("the API server accepted %.2f%% of the catalog's CRDs after repair, want at least %.0f%%", 100*share, 100*minAccepted)
	}
}

// submitAll repairs and dry-run creates every document with a few workers.
func submitAll(ctx context.Context, c client.Client, docs []doc, workers int) []outcome {
	out := make([]outcome, len(docs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				d := docs[i]
				o := outcome{doc: d, converted: d.Object.GetAPIVersion() == "apiextensions.k8s.io/v1beta1"}
				crd, changes, err := crdrepair.RepairChanges(d.Object)
				o.changes, o.repairErr = changes, err
				if err == nil {
					o.createErr = c.Create(context.WithValue(ctx, warningsKey{}, &o.warnings), crd, client.DryRunAll)
				}
				if plain, err := plainConversion(d.Object); err != nil {
					o.baselineErr = err
				} else {
					o.baselineErr = c.Create(ctx, plain, client.DryRunAll)
				}
				out[i] = o
			}
		})
	}
	for i := range docs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// plainConversion is the version swap alone: the API server's v1beta1 defaulting and
// conversion functions, no repairs, except that preserveUnknownFields is cleared (v1
// refuses the true that v1beta1 defaults to, which would hide every other cause).
func plainConversion(u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if u.GetAPIVersion() == "apiextensions.k8s.io/v1" {
		return &v1, json.Unmarshal(raw, &v1)
	}
	var beta apiextensionsv1beta1.CustomResourceDefinition
	if err := json.Unmarshal(raw, &beta); err != nil {
		return nil, err
	}
	var internal apiextensions.CustomResourceDefinition
	convScheme.Default(&beta)
	if err := convScheme.Convert(&beta, &internal, nil); err != nil {
		return nil, err
	}
	if err := convScheme.Convert(&internal, &v1, nil); err != nil {
		return nil, err
	}
	v1.APIVersion, v1.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	v1.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	v1.Spec.PreserveUnknownFields = false
	return &v1, nil
}

var convScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// causes names the kinds of field error in an API server refusal, without their paths:
// `Required value: must not be empty at the root`.
func causes(err error) []string {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return []string{"not decodable: " + firstLine(err.Error(), 80)}
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range status.Status().Details.Causes {
		msg := string(c.Type) + ": " + firstLine(c.Message, 100)
		if i := strings.LastIndex(msg, "): "); i > 0 && strings.Contains(msg[:i], "Invalid value") {
			msg = string(c.Type) + ": " + msg[i+3:] // drop the bad value, often a whole schema
		}
		if !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
	}
	return out
}

func firstLine(s string, most int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > most {
		s = s[:most] + "..."
	}
	return s
}

// beyondVersionSwap says whether a CRD needed more than the plain v1beta1 -> v1 conversion.
func beyondVersionSwap(kinds map[crdrepair.Kind]bool) bool {
	for k := range kinds {
		if k != crdrepair.KindConverted && k != crdrepair.KindMovedToVersions {
			return true
		}
	}
	return false
}

func kindTable(kinds map[crdrepair.Kind]int) string {
	m := map[string]int{}
	for k, n := range kinds {
		m[string(k)] = n
	}
	return countTable(m)
}

// warningKind strips a warning of its field path, so that like warnings count together.
func warningKind(w string) string {
	if i := strings.Index(w, ": "); i > 0 && strings.Contains(w[:i], ".") {
		return w[i+2:]
	}
	return w
}

func countTable(counts map[string]int) string {
	type row struct {
		kind string
		n    int
	}
	var rows []row
	for k, n := range counts {
		rows = append(rows, row{k, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return rows[i].kind < rows[j].kind
	})
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %6d  %s\n", r.n, r.kind)
	}
	return b.String()
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
