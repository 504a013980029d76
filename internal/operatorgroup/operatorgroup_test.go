package operatorgroup

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

func og(name string, targets []string, sa string, deleting bool) omv1.OperatorGroup {
	o := omv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: omv1.OperatorGroupSpec{TargetNamespaces: targets, ServiceAccountName: sa}}
	if deleting {
		now := metav1.Now()
		o.DeletionTimestamp = &now
	}
	return o
}

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []omv1.OperatorGroup
		want  string
		many  []string
	}{
		{"none", nil, "", nil},
		{"one", []omv1.OperatorGroup{og("a", nil, "", false)}, "a", nil},
		{"one live, one being deleted", []omv1.OperatorGroup{og("old", nil, "", true), og("new", nil, "", false)}, "new", nil},
		{"two", []omv1.OperatorGroup{og("b", nil, "", false), og("a", nil, "", false)}, "", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pick("ns", tc.items)
			var many *TooManyError
			switch {
			case tc.many != nil:
				if !errors.As(err, &many) || !slices.Equal(many.Names, tc.many) {
					t.Fatalf("err = %v, want too many naming %v", err, tc.many)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "" && got != nil, tc.want != "" && (got == nil || got.Name != tc.want):
				t.Errorf("picked %v, want %q", got, tc.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	group := og("g", []string{"ns", "apps"}, "installer", false)
	for _, tc := range []struct {
		name        string
		spec        omv1.SubscriptionSpec
		og          *omv1.OperatorGroup
		wantTargets []string
		wantSA      string
		changed     bool
	}{
		{"no group", omv1.SubscriptionSpec{}, nil, nil, "", false},
		{"the group's, where the Subscription says nothing", omv1.SubscriptionSpec{}, &group, []string{"ns", "apps"}, "installer", true},
		{"the Subscription's own win", omv1.SubscriptionSpec{TargetNamespaces: []string{"ns"}, ServiceAccountName: "mine"}, &group, []string{"ns"}, "mine", false},
		{"a group with nothing to give", omv1.SubscriptionSpec{}, &omv1.OperatorGroup{}, nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &omv1.Subscription{Spec: tc.spec}
			changed := Apply(sub, tc.og)
			if changed != tc.changed || !slices.Equal(sub.Spec.TargetNamespaces, tc.wantTargets) || sub.Spec.ServiceAccountName != tc.wantSA {
				t.Errorf("changed %v targets %v sa %q", changed, sub.Spec.TargetNamespaces, sub.Spec.ServiceAccountName)
			}
		})
	}
	// The group's list is copied, not shared.
	sub := &omv1.Subscription{}
	Apply(sub, &group)
	sub.Spec.TargetNamespaces[0] = "changed"
	if group.Spec.TargetNamespaces[0] != "ns" {
		t.Error("Apply shares the OperatorGroup's list")
	}
}

// TestInNamespace: an OperatorGroup brings back the objects of its namespace that read it,
// and no other namespace's.
func TestInNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := omv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sub := func(ns, name string, labels map[string]string) *omv1.Subscription {
		return &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		sub("ns", "a", map[string]string{"pick": "yes"}), sub("ns", "b", nil), sub("other", "c", map[string]string{"pick": "yes"})).Build()
	group := og("g", nil, "", false)
	newList := func() client.ObjectList { return &omv1.SubscriptionList{} }
	names := func(reqs []reconcile.Request) []string {
		var out []string
		for _, r := range reqs {
			out = append(out, r.String())
		}
		slices.Sort(out)
		return out
	}
	if got := names(InNamespace(c, newList)(context.Background(), &group)); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Errorf("requests = %v", got)
	}
	if got := names(InNamespace(c, newList, client.HasLabels{"pick"})(context.Background(), &group)); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("requests with a label filter = %v", got)
	}
}

func namespace(name string, labels map[string]string, deleting bool) metav1.PartialObjectMetadata {
	o := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if deleting {
		now := metav1.Now()
		o.DeletionTimestamp = &now
	}
	return o
}

func withSelector(name string, sel *metav1.LabelSelector, targets ...string) omv1.OperatorGroup {
	o := og(name, targets, "installer", false)
	o.Spec.Selector = sel
	return o
}

// TestResolve: a selector names the namespaces it selects now, sorted, leaving out those
// being deleted; one that selects none is an error naming the OperatorGroup and its
// selector; targetNamespaces and an empty selector are not read as selecting.
func TestResolve(t *testing.T) {
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	nss := []metav1.PartialObjectMetadata{
		namespace("zeta", map[string]string{"team": "a"}, false),
		namespace("alpha", map[string]string{"team": "a", "env": "prod"}, false),
		namespace("beta", map[string]string{"team": "b"}, false),
		namespace("gone", map[string]string{"team": "a"}, true),
		namespace("bare", nil, false),
	}
	for _, tc := range []struct {
		name    string
		og      omv1.OperatorGroup
		selects bool
		want    []string
		none    string // the selector a NoTargetsError names
	}{
		{"match labels", withSelector("g", team), true, []string{"alpha", "zeta"}, ""},
		{"match expressions", withSelector("g", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
			{Key: "env", Operator: metav1.LabelSelectorOpDoesNotExist}}}), true, []string{"beta", "zeta"}, ""},
		{"selects none", withSelector("g", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "c"}}), true, nil, "team=c"},
		{"only one being deleted", withSelector("g", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a", "env": "gone"}}), true, nil, "env=gone,team=a"},
		{"targetNamespaces win over a selector", withSelector("g", team, "named"), false, nil, ""},
		{"an empty selector is all namespaces, as none is", withSelector("g", &metav1.LabelSelector{}), false, nil, ""},
		{"no selector", withSelector("g", nil), false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := selects(&tc.og); got != tc.selects {
				t.Fatalf("selects = %v, want %v", got, tc.selects)
			}
			if !tc.selects {
				return
			}
			before := tc.og.DeepCopy()
			got, err := resolve(&tc.og, nss)
			if tc.none != "" {
				var none *NoTargetsError
				if !errors.As(err, &none) || none.Selector != tc.none || none.Name != "g" || none.Namespace != "ns" {
					t.Fatalf("err = %v, want selecting none with %q", err, tc.none)
				}
				if reason, ok := Unusable(err); !ok || reason != omv1.ReasonNoTargetNamespaces {
					t.Errorf("Unusable = %q, %v", reason, ok)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Spec.TargetNamespaces, tc.want) || got.Spec.Selector != nil || got.Spec.ServiceAccountName != "installer" {
				t.Errorf("resolved to targets %v selector %v sa %q, want %v", got.Spec.TargetNamespaces, got.Spec.Selector, got.Spec.ServiceAccountName, tc.want)
			}
			if !reflect.DeepEqual(before, &tc.og) {
				t.Error("resolve changed the OperatorGroup it was given (a cached object)")
			}
		})
	}
}

// TestSelecting: a namespace's labels, before or after an event, name the namespaces of
// the OperatorGroups whose selector selects it, and no other.
func TestSelecting(t *testing.T) {
	in := func(ns string, o omv1.OperatorGroup) omv1.OperatorGroup { o.Namespace = ns; return o }
	deleting := in("d", withSelector("g", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}))
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	groups := []omv1.OperatorGroup{
		in("one", withSelector("g", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}})),
		in("two", withSelector("g", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}})),
		in("three", withSelector("g", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, "named")),
		in("four", withSelector("g", nil)),
		in("five", withSelector("g", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists}}})),
		deleting,
	}
	for _, tc := range []struct {
		name string
		sets []labels.Set
		want []string
	}{
		{"labelled a", []labels.Set{{"team": "a"}}, []string{"five", "one"}},
		{"relabelled a to b", []labels.Set{{"team": "a"}, {"team": "b"}}, []string{"five", "one", "two"}},
		{"no labels", []labels.Set{nil}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := selecting(groups, tc.sets...); !slices.Equal(got, tc.want) {
				t.Errorf("selecting = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNaming: a namespace's name brings back the namespaces whose Subscriptions or
// OperatorGroup name it as a target, each once, and no other.
func TestNaming(t *testing.T) {
	group := func(ns string, targets ...string) omv1.OperatorGroup {
		return omv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}, Spec: omv1.OperatorGroupSpec{TargetNamespaces: targets}}
	}
	sub := func(ns string, targets ...string) omv1.Subscription {
		return omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}, Spec: omv1.SubscriptionSpec{TargetNamespaces: targets}}
	}
	groups := []omv1.OperatorGroup{group("og-a", "w"), group("og-b", "x", "y"), group("og-c")}
	subs := []omv1.Subscription{sub("sub-a", "w", "z"), sub("og-a", "w"), sub("sub-b"), sub("sub-c", "x")}
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"w", []string{"og-a", "sub-a"}},
		{"x", []string{"og-b", "sub-c"}},
		{"z", []string{"sub-a"}},
		{"nobody", nil},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			if got := naming(groups, subs, tc.ns); !slices.Equal(got, tc.want) {
				t.Errorf("naming(%s) = %v, want %v", tc.ns, got, tc.want)
			}
		})
	}
}

// TestUnusable: several OperatorGroups and a selector of no namespace hold Subscriptions,
// each with its reason; any other error is not an unusable OperatorGroup.
func TestUnusable(t *testing.T) {
	if r, ok := Unusable(fmt.Errorf("wrapped: %w", &TooManyError{Namespace: "ns", Names: []string{"a", "b"}})); !ok || r != omv1.ReasonTooManyOperatorGroups {
		t.Errorf("too many: %q %v", r, ok)
	}
	if r, ok := Unusable(errors.New("listing: forbidden")); ok {
		t.Errorf("another error read as unusable: %q", r)
	}
}

// TestOfAndNamespaces: through a client, Of resolves a selecting OperatorGroup from the
// namespaces listed as metadata, and the Namespaces handler brings back the Subscriptions
// of that OperatorGroup's namespace when a namespace it selects is labelled, and not for a
// change of anything else.
func TestOfAndNamespaces(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := omv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	group := withSelector("g", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}})
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&group,
		&omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sub"}},
		&omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "other"}},
		ns("apps", map[string]string{"team": "a"}), ns("web", map[string]string{"team": "a"}), ns("db", nil)).Build()
	got, err := Of(context.Background(), c, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Spec.TargetNamespaces, []string{"apps", "web"}) {
		t.Errorf("Of resolved targets %v, want [apps web]", got.Spec.TargetNamespaces)
	}

	h := Namespaces(c, func() client.ObjectList { return &omv1.SubscriptionList{} })
	queued := func(fire func(q workqueue.TypedRateLimitingInterface[reconcile.Request])) []string {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		fire(q)
		var out []string
		for q.Len() > 0 {
			r, _ := q.Get()
			out = append(out, r.String())
			q.Done(r)
		}
		return out
	}
	db, dbLabelled := ns("db", nil), ns("db", map[string]string{"team": "a"})
	if got := queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: db, ObjectNew: dbLabelled}, q)
	}); !slices.Equal(got, []string{"ns/sub"}) {
		t.Errorf("labelling a namespace in brought back %v, want [ns/sub]", got)
	}
	if got := queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: dbLabelled, ObjectNew: db}, q)
	}); !slices.Equal(got, []string{"ns/sub"}) {
		t.Errorf("labelling a namespace out brought back %v, want [ns/sub]", got)
	}
	annotated := dbLabelled.DeepCopy()
	annotated.Annotations = map[string]string{"note": "x"}
	if got := queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: dbLabelled, ObjectNew: annotated}, q)
	}); len(got) != 0 {
		t.Errorf("an annotation brought back %v", got)
	}
	if got := queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Create(context.Background(), event.CreateEvent{Object: ns("new", map[string]string{"team": "b"})}, q)
	}); len(got) != 0 {
		t.Errorf("a namespace no selector selects brought back %v", got)
	}
	if got := queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Delete(context.Background(), event.DeleteEvent{Object: dbLabelled}, q)
	}); !slices.Equal(got, []string{"ns/sub"}) {
		t.Errorf("deleting a selected namespace brought back %v, want [ns/sub]", got)
	}
}

// TestReaderListsOnce: a Reader answers as Of does, listing each namespace's
// OperatorGroups once and the cluster's namespaces once, however many Subscriptions ask.
func TestReaderListsOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := omv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	a := withSelector("a", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}})
	b := withSelector("b", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}})
	b.Namespace = "other"
	lists := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&a, &b,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{"team": "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "b"}}}).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			kind := fmt.Sprintf("%T", list)
			if m, ok := list.(*metav1.PartialObjectMetadataList); ok {
				kind = m.GetObjectKind().GroupVersionKind().Kind
			}
			lists[kind]++
			return c.List(ctx, list, opts...)
		}}).Build()
	m := NewReader(c)
	for range 3 {
		for ns, want := range map[string][]string{"ns": {"apps"}, "other": {"web"}} {
			got, err := m.Of(context.Background(), ns)
			if err != nil || !slices.Equal(got.Spec.TargetNamespaces, want) {
				t.Fatalf("Of(%s) = %v, %v; want %v", ns, got, err, want)
			}
			alone, err := Of(context.Background(), c, ns)
			if err != nil || !reflect.DeepEqual(alone, got) {
				t.Fatalf("the Reader's answer for %s differs from Of's: %v against %v (%v)", ns, got, alone, err)
			}
		}
	}
	lists = map[string]int{}
	m = NewReader(c)
	for range 3 {
		_, _ = m.Of(context.Background(), "ns")
		_, _ = m.Of(context.Background(), "other")
	}
	if lists["*v1.OperatorGroupList"] != 2 || lists["NamespaceList"] != 1 {
		t.Errorf("lists made: %v; want 2 of OperatorGroups (one per namespace) and 1 of namespaces", lists)
	}
}
