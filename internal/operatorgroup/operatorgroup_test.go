package operatorgroup

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
