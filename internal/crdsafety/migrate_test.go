package crdsafety

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestMigrate(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "caches"}
	for _, tc := range []struct {
		name string
		// refuse maps an object's name to the error its update gets
		refuse    map[string]error
		rewritten int
		err       string // the error names this, "" for none
	}{
		{name: "all rewritten", rewritten: 3},
		{name: "one rewritten meanwhile, one deleted", rewritten: 1, refuse: map[string]error{
			"a": apierrors.NewConflict(gvr.GroupResource(), "a", errors.New("changed")),
			"b": apierrors.NewNotFound(gvr.GroupResource(), "b")}},
		{name: "forbidden", err: "update caches.example.com ops/b", refuse: map[string]error{
			"b": apierrors.NewForbidden(gvr.GroupResource(), "b", errors.New("no"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sch := crdScheme(t)
			live := storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1", "v1")
			live.Spec.Group, live.Spec.Names.Plural = "example.com", "caches"
			c := fake.NewClientBuilder().WithScheme(sch).WithObjects(live).WithStatusSubresource(live).Build()
			if err := c.Get(context.Background(), client.ObjectKey{Name: live.Name}, live); err != nil {
				t.Fatal(err)
			}
			var objs []runtime.Object
			for _, n := range []string{"a", "b", "c"} {
				o := cr(n, 1)
				objs = append(objs, &o)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "CacheList"}, objs...)
			var updated []string
			dyn.PrependReactor("update", "caches", func(a k8stesting.Action) (bool, runtime.Object, error) {
				o := a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
				updated = append(updated, o.GetName())
				if err := tc.refuse[o.GetName()]; err != nil {
					return true, nil, err
				}
				return false, nil, nil
			})
			m, _ := Plan(live, storageCRD([]string{"v1"}, "v1"))
			n, err := Migrate(context.Background(), c, dyn, live, m)
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: live.Name}, got); err != nil {
				t.Fatal(err)
			}
			if tc.err != "" {
				var se *StepError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &se) || !apierrors.IsForbidden(err) {
					t.Fatalf("got %v; want a StepError naming %q", err, tc.err)
				}
				if !reflect.DeepEqual(got.Status.StoredVersions, []string{"v1alpha1", "v1"}) {
					t.Errorf("storedVersions %v after a failed migration; want them kept", got.Status.StoredVersions)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.rewritten || len(updated) != 3 {
				t.Errorf("rewrote %d (updates tried: %v); want %d of 3", n, updated, tc.rewritten)
			}
			if !reflect.DeepEqual(got.Status.StoredVersions, []string{"v1"}) {
				t.Errorf("storedVersions %v; want [v1]", got.Status.StoredVersions)
			}
			// live is the CRD as written: an apply holding to its version goes through.
			if live.ResourceVersion != got.ResourceVersion || !reflect.DeepEqual(live.Status.StoredVersions, []string{"v1"}) {
				t.Errorf("live after the migration: resourceVersion %s, storedVersions %v; want %s, [v1]",
					live.ResourceVersion, live.Status.StoredVersions, got.ResourceVersion)
			}
		})
	}
}

func TestMigrateConflictOnTheCRD(t *testing.T) {
	sch := crdScheme(t)
	live := storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1", "v1")
	live.Spec.Group, live.Spec.Names.Plural = "example.com", "caches"
	c := fake.NewClientBuilder().WithScheme(sch).WithObjects(live).WithStatusSubresource(live).Build()
	if err := c.Get(context.Background(), client.ObjectKey{Name: live.Name}, live); err != nil {
		t.Fatal(err)
	}
	stale := live.DeepCopy()
	live.Labels = map[string]string{"changed": "meanwhile"}
	if err := c.Update(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "caches"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "CacheList"})
	m, _ := Plan(stale, storageCRD([]string{"v1"}, "v1"))
	if _, err := Migrate(context.Background(), c, dyn, stale, m); !apierrors.IsConflict(err) {
		t.Fatalf("got %v; want a Conflict for a CRD changed since it was read", err)
	}
}

// TestMigrateSwitchesStorageFirst: a migration off the live storage version (allowed by
// Preflight only while nothing is stored) updates the live CRD to store in the new version,
// the old one still served, and stops there: the rest follows once the new version is
// served, as an ordinary migration.
func TestMigrateSwitchesStorageFirst(t *testing.T) {
	sch := crdScheme(t)
	live := storageCRD([]string{"v1alpha1"}, "v1alpha1", "v1alpha1")
	live.Spec.Group, live.Spec.Names.Plural = "example.com", "caches"
	next := storageCRD([]string{"v1beta1"}, "v1beta1")
	c := fake.NewClientBuilder().WithScheme(sch).WithObjects(live).WithStatusSubresource(live).Build()
	if err := c.Get(context.Background(), client.ObjectKey{Name: live.Name}, live); err != nil {
		t.Fatal(err)
	}
	m, v := Plan(live, next)
	if v != nil || m == nil || m.SwitchFrom != "v1alpha1" {
		t.Fatalf("plan %+v, %v", m, v)
	}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	if _, err := Migrate(context.Background(), c, dyn, live, m); !errors.Is(err, ErrStorageSwitched) {
		t.Fatalf("Migrate = %v, want ErrStorageSwitched", err)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: live.Name}, got); err != nil {
		t.Fatal(err)
	}
	versions := map[string][2]bool{}
	for _, v := range got.Spec.Versions {
		versions[v.Name] = [2]bool{v.Served, v.Storage}
	}
	if !reflect.DeepEqual(versions, map[string][2]bool{"v1alpha1": {true, false}, "v1beta1": {true, true}}) {
		t.Errorf("live CRD versions after the switch (served, storage) = %v", versions)
	}
	// The next pass: the live storage version is kept by the new CRD, so an ordinary
	// migration drops the old one.
	got.Status.StoredVersions = []string{"v1alpha1", "v1beta1"}
	m, v = Plan(got, next)
	if v != nil || m == nil || m.SwitchFrom != "" || m.StorageVersion != "v1beta1" || !reflect.DeepEqual(m.Drop, []string{"v1alpha1"}) {
		t.Errorf("plan after the switch = %+v, %v", m, v)
	}
}

// TestPreflightMigratesOnlyItsOwnCRD: a migration is planned only for a CRD the installing
// package applied; another package's CRD (portworx and portworx-essentials ship the same
// one) or one made outside operator-manager is refused as a dropped stored version is.
func TestPreflightMigratesOnlyItsOwnCRD(t *testing.T) {
	sch := crdScheme(t)
	for _, tc := range []struct {
		owner   string
		migrate bool
		says    string
	}{
		{"mine", true, ""},
		{"theirs", false, "installed by package theirs"},
		{"", false, "not installed by operator-manager"},
	} {
		live := storageCRD([]string{"v1alpha1", "v1"}, "v1", "v1alpha1", "v1")
		live.Spec.Group, live.Spec.Names.Plural = "example.com", "caches"
		if tc.owner != "" {
			live.Annotations = map[string]string{PackageAnnotation: tc.owner}
		}
		c := fake.NewClientBuilder().WithScheme(sch).WithObjects(live).Build()
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "caches"}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "CacheList"})
		_, m, v, err := Preflight(context.Background(), c, dyn, storageCRD([]string{"v1"}, "v1"), "mine")
		if err != nil {
			t.Fatal(err)
		}
		if tc.migrate && (m == nil || v != nil) {
			t.Errorf("owner %q: migration %+v, refusal %v; want a migration", tc.owner, m, v)
		}
		if !tc.migrate && (m != nil || v == nil || !strings.Contains(v.Error(), tc.says)) {
			t.Errorf("owner %q: migration %+v, refusal %v; want a refusal saying %q", tc.owner, m, v, tc.says)
		}
	}
}

// crdScheme knows CRDs, for a fake client holding the live CRD.
func crdScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	sch := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	return sch
}
