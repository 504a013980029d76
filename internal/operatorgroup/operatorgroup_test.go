package operatorgroup

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
