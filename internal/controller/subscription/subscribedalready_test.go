package subscription

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestSubscribedAlready: a new Subscription of a package that another Subscription of the
// namespace installs already, under another name, is found before it is created (the
// manager refuses it, PackageAlreadySubscribed, and it was left behind failed), whether
// it names the package, OLM's spec.name, or a startingCSV of that package; a package
// whose name only begins like another's is not taken for it.
func TestSubscribedAlready(t *testing.T) {
	sub := func(name string, spec omv1.SubscriptionSpec, resolved string) omv1.Subscription {
		s := omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		s.Status.Package = resolved
		return s
	}
	subs := []omv1.Subscription{
		sub("cache", omv1.SubscriptionSpec{Package: "cache-operator", Version: "1.1.0"}, "cache-operator"),
		sub("prom", omv1.SubscriptionSpec{StartingCSV: "prometheus.0.22.2"}, "prometheus"),
		sub("fresh", omv1.SubscriptionSpec{StartingCSV: "etcd.0.9.0"}, ""), // not yet resolved
		sub("foo", omv1.SubscriptionSpec{Package: "foo"}, "foo"),
	}
	if got := SubscribedAlready(subs, "cache", omv1.SubscriptionSpec{Package: "cache-operator"}); got != nil {
		t.Errorf("a Subscription of the same name was taken for another (%s): that one is changed, not created", got.Name)
	}
	for _, tc := range []struct {
		name string
		spec omv1.SubscriptionSpec
		want string
	}{
		{"the package by name", omv1.SubscriptionSpec{Package: "cache-operator", Version: "1.2.0"}, "cache"},
		{"OLM's spec.name", omv1.SubscriptionSpec{Name: "cache-operator", Channel: "stable"}, "cache"},
		{"a startingCSV of it", omv1.SubscriptionSpec{StartingCSV: "prometheus.0.23.0"}, "prom"},
		{"a startingCSV of it, v-prefixed", omv1.SubscriptionSpec{StartingCSV: "cache-operator.v1.2.0"}, "cache"},
		{"another package", omv1.SubscriptionSpec{Package: "backup-operator"}, ""},
		{"a package whose name begins like one installed", omv1.SubscriptionSpec{StartingCSV: "foo.bar.1.0.0"}, ""},
		{"one not yet resolved is known by nothing but its startingCSV", omv1.SubscriptionSpec{Package: "etcd"}, ""},
	} {
		got := ""
		if s := SubscribedAlready(subs, "new", tc.spec); s != nil {
			got = s.Name
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
