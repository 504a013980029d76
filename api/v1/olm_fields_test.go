package v1

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSubscriptionOLMFields(t *testing.T) {
	cases := []struct {
		name                    string
		spec                    SubscriptionSpec
		pkg, catalog, catalogNS string
		approval                Approval
		olm                     bool
	}{
		{"own words", SubscriptionSpec{Package: "etcd", Catalog: "mine", Approval: ApprovalManual}, "etcd", "mine", "ns", ApprovalManual, false},
		{"olm words", SubscriptionSpec{Name: "etcd", Source: "hub", SourceNamespace: "olm", InstallPlanApproval: ApprovalManual}, "etcd", "hub", "olm", ApprovalManual, true},
		{"both, agreeing", SubscriptionSpec{Package: "etcd", Name: "etcd", Catalog: "hub", Source: "hub"}, "etcd", "hub", "ns", ApprovalAutomatic, true},
		{"nothing said", SubscriptionSpec{StartingCSV: "etcd.0.9.4"}, "", "", "ns", ApprovalAutomatic, false},
		{"own approval wins over an absent olm one", SubscriptionSpec{Name: "etcd", Approval: ApprovalManual}, "etcd", "", "ns", ApprovalManual, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			if s.PackageName() != tc.pkg || s.CatalogName() != tc.catalog || s.CatalogNamespace("ns") != tc.catalogNS ||
				s.ApprovalMode() != tc.approval || s.OLMStyle() != tc.olm {
				t.Errorf("package %q catalog %q in %q approval %q olm %v", s.PackageName(), s.CatalogName(), s.CatalogNamespace("ns"), s.ApprovalMode(), s.OLMStyle())
			}
			want := ""
			if tc.catalog != "" {
				want = tc.catalogNS + "/" + tc.catalog
			}
			if got := s.CatalogRef("ns"); got != want {
				t.Errorf("CatalogRef = %q, want %q", got, want)
			}
		})
	}
}

func TestCatalogSourceOLMFields(t *testing.T) {
	hour := &metav1.Duration{Duration: time.Hour}
	ten := &metav1.Duration{Duration: 10 * time.Minute}
	cases := []struct {
		name    string
		spec    CatalogSourceSpec
		typ     SourceType
		poll    *metav1.Duration
		secrets []string
	}{
		{"own words", CatalogSourceSpec{SourceType: SourceImage, PollInterval: ten, PullSecret: "a"}, SourceImage, ten, []string{"a"}},
		{"olm grpc image", CatalogSourceSpec{SourceType: SourceGRPC, Image: "quay.io/x/catalog:latest", PollInterval: ten,
			UpdateStrategy: &UpdateStrategy{RegistryPoll: &RegistryPoll{Interval: hour}}, Secrets: []string{"b", "c"}}, SourceImage, hour, []string{"b", "c"}},
		{"olm grpc image and address: the image is read", CatalogSourceSpec{SourceType: SourceGRPC, Image: "quay.io/x/catalog:latest", Address: "registry:50051"}, SourceImage, nil, nil},
		{"olm grpc address", CatalogSourceSpec{SourceType: SourceGRPC, Address: "registry:50051", UpdateStrategy: &UpdateStrategy{RegistryPoll: &RegistryPoll{Interval: hour}}}, SourceGRPC, hour, nil},
		{"both secrets, one named twice", CatalogSourceSpec{SourceType: SourceDirectory, PullSecret: "a", Secrets: []string{"a", "b"}}, SourceDirectory, nil, []string{"a", "b"}},
		{"empty update strategy", CatalogSourceSpec{SourceType: SourceHTTP, PollInterval: ten, UpdateStrategy: &UpdateStrategy{}}, SourceHTTP, ten, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			if s.Type() != tc.typ || s.Poll() != tc.poll || !slices.Equal(s.PullSecrets(), tc.secrets) {
				t.Errorf("type %q poll %v secrets %v", s.Type(), s.Poll(), s.PullSecrets())
			}
		})
	}
}
