package config_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/scheme"
	"github.com/operator-manager/operator-manager/internal/testenv"
)

var (
	env *testenv.Env
	k8s client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.APIOnly, &env, func(e *testenv.Env) error {
		c, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := config.InstallCRDs(ctx, c); err != nil {
			return err
		}
		// A new client discovers the kinds the CRDs just added.
		k8s, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme})
		return err
	}))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// fromYAML decodes a manifest as a user would write it, without Go types in between.
func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	return u
}

// TestSeedSubscriptionAccepted: the original operator-manager's documented example must
// keep working as written.
func TestSeedSubscriptionAccepted(t *testing.T) {
	seed := fromYAML(t, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: prometheus-subscription}
spec: {startingCSV: prometheus.0.22.2, option: create}
`)
	if err := k8s.Create(ctx(t), seed); err != nil {
		t.Fatalf("the seed's Subscription is refused: %v", err)
	}
	got := &omv1.Subscription{}
	if err := k8s.Get(ctx(t), client.ObjectKey{Namespace: "default", Name: "prometheus-subscription"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.StartingCSV != "prometheus.0.22.2" || got.Spec.Option != omv1.OptionCreate {
		t.Errorf("stored spec = %+v", got.Spec)
	}
	// Defaults an administrator relies on without writing them. Approval is Automatic by
	// its absence (no default is written, so OLM's installPlanApproval is not contradicted).
	if got.Spec.ApprovalMode() != omv1.ApprovalAutomatic || got.Spec.HistoryLimit == nil || *got.Spec.HistoryLimit != 10 {
		t.Errorf("defaults not applied: approval %q historyLimit %v", got.Spec.ApprovalMode(), got.Spec.HistoryLimit)
	}
}

// TestOLMSubscriptionAccepted: an OLM Subscription, with only its apiVersion changed, is
// accepted by the API server as written (kubectl's strict field validation included), and
// its fields mean what they mean in OLM.
func TestOLMSubscriptionAccepted(t *testing.T) {
	doc := `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: olm-etcd}
spec:
  channel: singlenamespace-alpha
  name: etcd
  source: operatorhubio-catalog
  sourceNamespace: olm
  installPlanApproval: Manual
  startingCSV: etcdoperator.v0.9.2
  config:
    env: [{name: HTTP_PROXY, value: "http://proxy:3128"}]
    envFrom: [{configMapRef: {name: proxy-env}}]
    volumes: [{name: certs, secret: {secretName: ca}}]
    volumeMounts: [{name: certs, mountPath: /etc/ssl/extra}]
    nodeSelector: {pool: ops}
    tolerations: [{key: dedicated, operator: Exists}]
    resources: {limits: {memory: 1Gi}}
    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
    annotations: {cost-center: "42"}
`
	u := fromYAML(t, doc)
	// Strict field validation, as kubectl apply asks for it: an unknown field is an error.
	if err := k8s.Create(ctx(t), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("an OLM Subscription is refused: %v", err)
	}
	got := &omv1.Subscription{}
	if err := k8s.Get(ctx(t), client.ObjectKey{Namespace: "default", Name: "olm-etcd"}, got); err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.PackageName() != "etcd" || s.CatalogName() != "operatorhubio-catalog" || s.CatalogNamespace("default") != "olm" ||
		s.ApprovalMode() != omv1.ApprovalManual || !s.OLMStyle() || s.Config == nil || len(s.Config.Volumes) != 1 ||
		len(s.Config.EnvFrom) != 1 || s.Config.Affinity == nil || s.Config.Annotations["cost-center"] != "42" {
		t.Errorf("stored spec = %+v", s)
	}
}

// TestOLMCatalogSourceAccepted: OLM's CatalogSource, with only its apiVersion changed, is
// accepted as written, strict field validation included.
func TestOLMCatalogSourceAccepted(t *testing.T) {
	u := fromYAML(t, `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: operatorhubio-catalog}
spec:
  sourceType: grpc
  image: quay.io/operatorhubio/catalog:latest
  displayName: Community Operators
  publisher: OperatorHub.io
  icon: {base64data: iVBORw0KGgo=, mediatype: image/png}
  secrets: [hub-pull]
  grpcPodConfig: {securityContextConfig: restricted, nodeSelector: {pool: infra}}
  updateStrategy: {registryPoll: {interval: 60m}}
`)
	if err := k8s.Create(ctx(t), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("an OLM CatalogSource is refused: %v", err)
	}
	got := &omv1.CatalogSource{}
	if err := k8s.Get(ctx(t), client.ObjectKey{Namespace: "default", Name: "operatorhubio-catalog"}, got); err != nil {
		t.Fatal(err)
	}
	if s := got.Spec; s.Type() != omv1.SourceImage || s.Poll() == nil || s.Poll().Duration.String() != "1h0m0s" ||
		s.Publisher != "OperatorHub.io" || len(s.PullSecrets()) != 1 || s.GRPCPodConfig == nil {
		t.Errorf("stored spec = %+v", s)
	}
}

// TestValidationRefusesWithFieldNames: each refusal names the field a person must fix.
func TestValidationRefusesWithFieldNames(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"bad option", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: bad-option}
spec: {startingCSV: prometheus.0.22.2, option: upgrade}
`, []string{"spec.option", `"upgrade"`, `"create"`, `"delete"`}},
		{"nothing to install", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: empty}
spec: {option: create}
`, []string{"spec.startingCSV or spec.package is required"}},
		{"version twice", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: twice}
spec: {startingCSV: etcd.0.9.4, version: 0.9.2}
`, []string{"spec.startingCSV already names a version"}},
		{"a target namespace that cannot be a namespace's name", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: bad-target}
spec: {package: etcd, targetNamespaces: [team-a, Team_B]}
`, []string{"spec.targetNamespaces[1]", `"Team_B"`}},
		{"a catalog that cannot be a CatalogSource's name", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: bad-catalog}
spec: {package: etcd, catalog: team-a/samples}
`, []string{"spec.catalog", `"team-a/samples"`}},
		{"OLM's source namespace that cannot be a namespace's name", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: bad-source-namespace}
spec: {name: etcd, source: operatorhubio-catalog, sourceNamespace: OLM}
`, []string{"spec.sourceNamespace", `"OLM"`}},
		{"an OperatorGroup target namespace that cannot be a namespace's name", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: OperatorGroup
metadata: {name: bad-target}
spec: {targetNamespaces: [team.a]}
`, []string{"spec.targetNamespaces[0]", `"team.a"`}},
		{"an upgrade window that never stays open", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: shut-window}
spec: {package: etcd, upgradeWindows: [{schedule: "0 2 * * *", duration: 0s}]}
`, []string{"spec.upgradeWindows[0].duration", "a window must stay open for some time"}},
		{"an upgrade window without a schedule", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: no-schedule}
spec: {package: etcd, upgradeWindows: [{duration: 2h}]}
`, []string{"spec.upgradeWindows[0].schedule", "Required value"}},
		{"bad approval", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: bad-approval}
spec: {package: etcd, approval: Sometimes}
`, []string{"spec.approval", "Automatic", "Manual"}},
		{"olm name and package differ", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: two-packages}
spec: {package: etcd, name: prometheus}
`, []string{"spec.name is OLM's name for spec.package"}},
		{"olm source and catalog differ", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: two-catalogs}
spec: {package: etcd, catalog: mine, source: operatorhubio-catalog}
`, []string{"spec.source is OLM's name for spec.catalog"}},
		{"olm source namespace alone", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: namespace-alone}
spec: {name: etcd, sourceNamespace: olm}
`, []string{"spec.sourceNamespace needs spec.source"}},
		{"olm approval contradicts", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: two-approvals}
spec: {name: etcd, approval: Automatic, installPlanApproval: Manual}
`, []string{"spec.installPlanApproval is OLM's name for spec.approval"}},
		{"negative history", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: bad-history}
spec: {package: etcd, historyLimit: -1}
`, []string{"spec.historyLimit"}},
		{"a name too long to label what it installs", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Subscription
metadata: {name: cache-operator-subscription-with-a-very-long-name-for-testing-limits-xxxx}
spec: {package: etcd}
`, []string{"metadata.name", "at most 63 characters"}},
		{"http catalog without url", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: no-url}
spec: {sourceType: HTTP}
`, []string{"spec.url is required"}},
		{"unknown source type", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: ftp}
spec: {sourceType: FTP, url: ftp://x}
`, []string{"spec.sourceType", "Directory", "HTTP"}},
		{"olm grpc catalog with neither image nor address", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: CatalogSource
metadata: {name: grpc-nothing}
spec: {sourceType: grpc, displayName: Nothing}
`, []string{"spec.sourceType grpc needs spec.image", "spec.address"}},
		{"blueprint without csv", `
apiVersion: operators.coreos.com.operator-manager.domain/v1
kind: Blueprint
metadata: {name: no-csv}
spec: {oldVersion: etcd.0.9.2}
`, []string{"spec.clusterServiceVersionName"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(ctx(t), fromYAML(t, tc.doc))
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestStatusIsASubresource: a spec write cannot change status, and a status write cannot
// change spec, as controllers and people rely on.
func TestStatusIsASubresource(t *testing.T) {
	bp := &omv1.Blueprint{
		ObjectMeta: metav1.ObjectMeta{Name: "status-sub", Namespace: "default"},
		Spec:       omv1.BlueprintSpec{ClusterServiceVersionName: "etcdoperator.v0.9.4", Package: "etcd"},
		Status:     omv1.BlueprintStatus{Phase: omv1.BlueprintSucceeded},
	}
	if err := k8s.Create(ctx(t), bp); err != nil {
		t.Fatal(err)
	}
	if bp.Status.Phase != "" {
		t.Errorf("create stored status phase %q; status must be ignored on create", bp.Status.Phase)
	}
	bp.Status.Phase = omv1.BlueprintInstalling
	bp.Status.CurrentVersion = "0.9.4"
	bp.Spec.OldVersion = "etcdoperator.v0.9.2"
	if err := k8s.Status().Update(ctx(t), bp); err != nil {
		t.Fatal(err)
	}
	got := &omv1.Blueprint{}
	if err := k8s.Get(ctx(t), client.ObjectKeyFromObject(bp), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != omv1.BlueprintInstalling || got.Spec.OldVersion != "" {
		t.Errorf("after status update: phase %q oldVersion %q; want Installing and no spec change", got.Status.Phase, got.Spec.OldVersion)
	}
}

// TestPrinterColumns asks the API server for the table kubectl prints, wide, and checks the
// columns that answer an administrator's first question.
func TestPrinterColumns(t *testing.T) {
	bp := &omv1.Blueprint{
		ObjectMeta: metav1.ObjectMeta{Name: "columns", Namespace: "default"},
		Spec:       omv1.BlueprintSpec{ClusterServiceVersionName: "etcdoperator.v0.9.4", OldVersion: "etcdoperator.v0.9.2", Package: "etcd", Generation: 2},
	}
	if err := k8s.Create(ctx(t), bp); err != nil {
		t.Fatal(err)
	}
	bp.Status = omv1.BlueprintStatus{Phase: omv1.BlueprintUpgrading, CurrentVersion: "0.9.2"}
	if err := k8s.Status().Update(ctx(t), bp); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resource string
		want     map[string]string
	}{
		{"blueprints/columns", map[string]string{"Package": "etcd", "Current": "0.9.2", "Old": "etcdoperator.v0.9.2",
			"Target": "etcdoperator.v0.9.4", "Phase": "Upgrading", "Revision": "2"}},
	} {
		table := getTable(t, tc.resource)
		for col, want := range tc.want {
			if got := table[col]; got != want {
				t.Errorf("%s column %q = %q, want %q (all: %v)", tc.resource, col, got, want, table)
			}
		}
	}
	for _, kind := range []string{"subscriptions", "clusterserviceversions", "catalogsources"} {
		if cols := tableColumns(t, kind); len(cols) < 5 {
			t.Errorf("%s has only columns %v", kind, cols)
		}
	}
}
