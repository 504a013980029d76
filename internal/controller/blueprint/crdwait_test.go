package blueprint

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/crdready"
)

// TestAfterCRDsApplied: the pass that finds the CRDs this process applied for a revision
// all Established goes on from what the applying pass kept (no bundle parsed, no CRD
// repaired again); while one is not Established the revision waits; anything it cannot
// vouch for (no entry, a CRD the cache does not hold, another CSV, CRDs not watched)
// takes the full way.
func TestAfterCRDsApplied(t *testing.T) {
	crd := func(name string, established bool) client.Object {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if established {
			c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
		}
		return c
	}
	csv := func(name string) *v1alpha1.ClusterServiceVersion {
		return &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	kept := func(csvName, digest string, crds ...string) *afterCRDs {
		return &afterCRDs{digest: digest, csv: csv(csvName), crds: crds}
	}
	cases := []struct {
		name        string
		cached      []client.Object
		unwatched   bool
		entry       bool
		next        *afterCRDs
		wantNext    bool
		wantWaiting bool
		wantForgot  bool
	}{
		{"all Established: the kept steps", []client.Object{crd("a.x", true), crd("b.x", true)}, false, true,
			kept("op.v2", "sha256:b", "a.x", "b.x"), true, false, true},
		{"one not Established: wait", []client.Object{crd("a.x", true), crd("b.x", false)}, false, true,
			kept("op.v2", "sha256:b"), false, true, false},
		{"one not in the cache: the full way", []client.Object{crd("a.x", true)}, false, true,
			kept("op.v2", "sha256:b"), false, false, false},
		{"kept for another CSV: the full way", []client.Object{crd("a.x", true), crd("b.x", true)}, false, true,
			kept("op.v1", "sha256:b"), false, false, true},
		{"kept for another bundle: the full way", []client.Object{crd("a.x", true), crd("b.x", true)}, false, true,
			kept("op.v2", "sha256:other"), false, false, true},
		{"the digest unknown to the pass: the full way", []client.Object{crd("a.x", true), crd("b.x", true)}, false, true,
			kept("op.v2", ""), false, false, true},
		{"nothing kept: the full way", []client.Object{crd("a.x", true), crd("b.x", true)}, false, true,
			nil, false, false, true},
		{"no entry: the full way", []client.Object{crd("a.x", true), crd("b.x", true)}, false, false,
			nil, false, false, true},
		{"CRDs not watched: the full way", nil, true, true,
			kept("op.v2", "sha256:b"), false, false, false},
	}
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = apiextensionsv1.AddToScheme(scheme)
			memo := &crdready.Memo{Now: func() time.Time { return now }}
			r := &Reconciler{CRDs: memo}
			if !tc.unwatched {
				memo.Cache = fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.cached...).Build()
			}
			s := &scope{bp: &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{UID: "uid"}},
				work: &omv1.Revision{Revision: 2, CSVName: "op.v2", BundleDigest: "sha256:b"}, now: now}
			if tc.entry {
				r.crdWaits.set(crdWaitKey(s), []string{"a.x", "b.x"}, tc.next, now)
			}
			next, waiting := r.afterCRDsApplied(s)
			if (next != nil) != tc.wantNext || (tc.wantNext && next != tc.next) {
				t.Errorf("next = %+v, want kept: %v", next, tc.wantNext)
			}
			if waiting != tc.wantWaiting {
				t.Errorf("waiting = %v, want %v", waiting, tc.wantWaiting)
			}
			if waiting && s.result.RequeueAfter != crdWatchedRequeue {
				t.Errorf("a wait requeues after %s, want %s", s.result.RequeueAfter, crdWatchedRequeue)
			}
			if _, kept := r.crdWaits.get(crdWaitKey(s), now); kept == tc.wantForgot {
				t.Errorf("entry kept = %v, want forgotten: %v", kept, tc.wantForgot)
			}
		})
	}
}

// TestStepsOf: the steps after a revision's CRDs see each CRD as the cache has it (its
// provider records), and one the cache lost as unknown (its record written again).
func TestStepsOf(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = apiextensionsv1.AddToScheme(scheme)
	cached := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "a.x", Annotations: map[string]string{"k": "v"}}}
	r := &Reconciler{CRDs: &crdready.Memo{Cache: fake.NewClientBuilder().WithScheme(scheme).WithObjects(cached).Build()}}
	plan := r.stepsOf([]string{"a.x", "gone.x"})
	if len(plan) != 2 || plan[0].crd.Name != "a.x" || plan[1].crd.Name != "gone.x" {
		t.Fatalf("plan = %+v", plan)
	}
	if plan[0].live == nil || plan[0].live.Annotations["k"] != "v" || plan[1].live != nil {
		t.Errorf("live copies: %+v, %+v", plan[0].live, plan[1].live)
	}
	if plan[0].write || plan[1].write {
		t.Error("a step after the CRDs writes a CRD")
	}
}

// TestMissingCRDs: of the CRDs the running CSV owns, one the cluster no longer has is
// missing, and one it has without this installation's provider record is unrecorded (a
// CRD deleted by hand and made again by another installation of the package, before this
// one noticed, carries only that one's record).
func TestMissingCRDs(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = apiextensionsv1.AddToScheme(scheme)
	crd := func(name string, annotations ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
		for i := 0; i < len(annotations); i += 2 {
			c.Annotations[annotations[i]] = annotations[i+1]
		}
		return c
	}
	const pkgKey, verKey = AnnotationCRDPackage, AnnotationCRDVersion
	cluster := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		crd("a.x", "k", "ns/x v1", pkgKey, "p", verKey, "1.2.0"),
		crd("b.x", "k2", "ns2/x v2"),
		crd("c.x", "k", "ns/x v0"),
		// made again by an older installation of the package, which carries its record only
		crd("older.x", "k2", "ns2/x v1", pkgKey, "p", verKey, "1.1.0"),
		// as old, but another package's: not this installation's to bring up
		crd("theirs.x", "k", "ns/x v1", pkgKey, "q", verKey, "1.0.0"),
		crd("newer.x", "k", "ns/x v1", pkgKey, "p", verKey, "1.3.0"),
	).Build()
	r := &Reconciler{CRDs: &crdready.Memo{Cache: cluster}, APIReader: cluster}
	csv := &omv1alpha1.ClusterServiceVersion{}
	for _, n := range []string{"a.x", "b.x", "c.x", "gone.x", "b.x", "older.x", "theirs.x", "newer.x"} {
		csv.Spec.CustomResourceDefinitions.Owned = append(csv.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: n})
	}
	for _, c := range []struct {
		version                       string
		missing, outdated, unrecorded []string
	}{
		{"1.2.0", []string{"gone.x"}, []string{"older.x"}, []string{"b.x", "c.x", "older.x"}},
		// an installation without a running revision to hold to (imported) brings none up
		{"", []string{"gone.x"}, nil, []string{"b.x", "c.x", "older.x"}},
		{"1.0.0", []string{"gone.x"}, nil, []string{"b.x", "c.x", "older.x"}},
	} {
		missing, outdated, unrecorded, err := r.missingCRDs(context.Background(), csv, "p", c.version, "k", "ns/x v1")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(missing, c.missing) || !slices.Equal(outdated, c.outdated) || !slices.Equal(unrecorded, c.unrecorded) {
			t.Errorf("at %q: missing %v, outdated %v, unrecorded %v; want %v, %v, %v", c.version, missing, outdated, unrecorded, c.missing, c.outdated, c.unrecorded)
		}
	}
}
