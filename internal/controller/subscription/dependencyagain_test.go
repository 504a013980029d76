package subscription

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
	"github.com/operator-manager/operator-manager/internal/resolve"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// TestEnsureDependencyUninstalled: a dependency whose Subscription is there but
// uninstalled (spec.option: delete). The manager's own dependency Subscription installs
// again; a person's own is not undone, and the dependent's resolution names it; one being
// deleted is waited for. Before, each only got the required-by annotation, and the
// dependent ran Ready without its dependency (found by hand).
func TestEnsureDependencyUninstalled(t *testing.T) {
	dependent := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "backup"}}
	step := resolve.Step{Package: "cache-operator", CSVName: "cache-operator.v1.2.0", Version: semver.MustParse("1.2.0"),
		Reason: "required by backup-operator.v0.2.0: olm.package cache-operator >=1.1.0 <1.3.0"}
	dep := func(option omv1.Option, labels map[string]string, deleting bool) *omv1.Subscription {
		s := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "cache-operator", Labels: labels},
			Spec: omv1.SubscriptionSpec{Package: "cache-operator", Option: option}}
		if deleting {
			s.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			s.Finalizers = []string{"test/hold"}
		}
		return s
	}
	managers := map[string]string{LabelDependency: "true"}
	for _, tc := range []struct {
		name       string
		existing   *omv1.Subscription
		wantOption omv1.Option
		wantErr    string // in the resolution's words; "" for none
	}{
		{"the manager's dependency Subscription, uninstalled: installs again", dep(omv1.OptionDelete, managers, false), omv1.OptionCreate, ""},
		{"installed already: only recorded", dep(omv1.OptionCreate, managers, false), omv1.OptionCreate, ""},
		{"a person's own, uninstalled: not undone, and named", dep(omv1.OptionDelete, nil, false), omv1.OptionDelete,
			"Subscription c/cache-operator, which installs package cache-operator here, is uninstalled (spec.option: delete)"},
		{"being deleted: waited for", dep(omv1.OptionCreate, managers, true), omv1.OptionCreate, "is being deleted, and is made again once it is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tc.existing.DeepCopy()).Build()
			r := &Reconciler{Client: cl, Recorder: events.NewFakeRecorder(10)}
			err := r.ensureDependency(context.Background(), dependent, step)
			var re *resolve.Error
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (!errors.As(err, &re) || re.Reason != resolve.ReasonUnsatisfiable || !strings.Contains(re.Message, tc.wantErr)):
				t.Fatalf("error %v, want an Unsatisfiable resolution saying %q", err, tc.wantErr)
			}
			got := &omv1.Subscription{}
			if err := cl.Get(context.Background(), client.ObjectKeyFromObject(tc.existing), got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Option != tc.wantOption {
				t.Errorf("spec.option %q, want %q", got.Spec.Option, tc.wantOption)
			}
			if recorded := listHas(got.Annotations[AnnotationRequiredBy], "backup"); recorded != (tc.wantErr == "") {
				t.Errorf("required-by %q: recorded %v, want %v", got.Annotations[AnnotationRequiredBy], recorded, tc.wantErr == "")
			}
		})
	}
}

// TestApprovedDependencyRefused: a Manual change approved after the Subscription of its
// dependency was uninstalled by a person. The refusal is said in Resolved, with one
// warning, as on the first install's path; before, it came back as a reconcile error,
// retried with backoff and said only in Ready.
func TestApprovedDependencyRefused(t *testing.T) {
	sub := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "backup"},
		Spec: omv1.SubscriptionSpec{Package: "backup-operator"}}
	setCondition(sub, omv1.ConditionResolved, true, "Resolved", "backup-operator.v0.2.0 from catalog samples")
	bp := &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "backup"}}
	bp.Spec.ClusterServiceVersionName = "backup-operator.v0.2.0"
	bp.Spec.Generation = 2
	bp.Spec.Dependencies = []omv1.ResolvedDependency{{Package: "cache-operator", Version: "1.2.0",
		CSVName: "cache-operator.v1.2.0", Catalog: "samples", BundleDigest: "sha256:abc"}}
	bp.Status.History = []omv1.Revision{{CSVName: "backup-operator.v0.2.0", Generation: 2}} // approved: its revision opened
	persons := &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "cache-operator"},
		Spec: omv1.SubscriptionSpec{Package: "cache-operator", Option: omv1.OptionDelete}}
	cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(persons).Build()
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: cl, Recorder: rec, Catalogs: catalogsource.NewStore()}

	for pass := 1; pass <= 2; pass++ {
		orig := sub.DeepCopy()
		err := r.approvedDependencies(context.Background(), sub, bp)
		if err == nil {
			t.Fatalf("pass %d: the uninstalled dependency was not refused", pass)
		}
		if err := r.dependencyRefused(sub, orig, err); err != nil {
			t.Fatalf("pass %d: returned as a reconcile error: %v", pass, err)
		}
		c := meta.FindStatusCondition(sub.Status.Conditions, omv1.ConditionResolved)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != resolve.ReasonUnsatisfiable ||
			!strings.Contains(c.Message, "Subscription c/cache-operator") {
			t.Fatalf("pass %d: Resolved %+v, want False Unsatisfiable naming c/cache-operator", pass, c)
		}
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d warnings over two passes with the same words, want 1", n)
	}
	if err := (&Reconciler{}).dependencyRefused(sub, sub, errors.New("etcd is down")); err == nil {
		t.Error("an error that is not a resolution's was swallowed")
	}
}
