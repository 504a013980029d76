package config_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/metrics"
	"github.com/operator-manager/operator-manager/internal/testenv"
	"github.com/operator-manager/operator-manager/test/promrules"
)

const alertsFile = "prometheus/alerts.yaml"

// exportedMetrics are the names of the metrics the manager serves that rules may read:
// its own, and controller-runtime's leader election gauge.
func exportedMetrics() map[string]bool {
	names := map[string]bool{"leader_election_master_status": true}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range metrics.Collectors() {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fqName.FindStringSubmatch(d.String()); m != nil {
				names[m[1]] = true
			}
		}
	}
	return names
}

// TestAlertRulesLoad reads the shipped alerting rules as Prometheus loads a rule file
// and checks what a person who receives one relies on: a severity to route by, a summary
// and a description, and only metrics the manager exports (a renamed metric would
// silence its alert for good).
func TestAlertRulesLoad(t *testing.T) {
	groups, err := promrules.Load(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
		}
	}
	if alerts < 9 {
		t.Errorf("%d alerts, want the 9 shipped", alerts)
	}
	used, err := promrules.MetricNames(groups)
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedMetrics()
	for name, rules := range used {
		if !exported[name] {
			t.Errorf("%s read %s, which the manager does not export", strings.Join(rules, ", "), name)
		}
	}
	if _, err := promrules.Load("prometheus/monitor.yaml"); err == nil || !strings.Contains(err.Error(), "prometheus/monitor.yaml") {
		t.Errorf("a ServiceMonitor read as rules: %v, want an error naming the file", err)
	}
}

// TestServiceMonitor checks that config/prometheus builds with kubectl's kustomize, that
// the shipped ServiceMonitor is one (no unknown field), and that it finds the manager's
// metrics Service and its port.
func TestServiceMonitor(t *testing.T) {
	bins, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	built, err := exec.Command(filepath.Join(bins, testenv.BinKubectl), "kustomize", "prometheus").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize config/prometheus: %v\n%s", err, built)
	}
	for _, want := range []string{"kind: ServiceMonitor", "kind: PrometheusRule", "alert: OperatorChangeFailed"} {
		if !strings.Contains(string(built), want) {
			t.Errorf("kubectl kustomize config/prometheus lacks %q", want)
		}
	}
	data, err := os.ReadFile("prometheus/monitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sm monitoringv1.ServiceMonitor
	if err := yaml.UnmarshalStrict(data, &sm); err != nil {
		t.Fatalf("prometheus/monitor.yaml: %v", err)
	}
	var svc *corev1.Service
	manifests, err := os.ReadFile("manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(manifests), "\n---\n") {
		var s corev1.Service
		if err := utilyaml.Unmarshal([]byte(doc), &s); err == nil && s.Kind == "Service" && s.Name == "operator-manager-metrics" {
			svc = &s
		}
	}
	if svc == nil {
		t.Fatal("config/manager/manager.yaml has no Service operator-manager-metrics")
	}
	if sm.Namespace != svc.Namespace {
		t.Errorf("the ServiceMonitor is in %q, the Service in %q", sm.Namespace, svc.Namespace)
	}
	if !labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels)) || len(sm.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service's labels %v", sm.Spec.Selector.MatchLabels, svc.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
		t.Errorf("the endpoint's port %q is not a port of the Service: %+v", ep.Port, svc.Spec.Ports)
	}
	if ep.Scheme == nil || *ep.Scheme != "https" || ep.Path != "/metrics" {
		t.Errorf("endpoint %+v, want https /metrics (the manager serves /metrics over HTTPS in a cluster)", ep)
	}
	if !ep.HonorLabels {
		t.Error("honorLabels is off: the target's namespace label would rename the series' own to exported_namespace, which every alert groups by")
	}
}

// TestAlertScenarios evaluates the shipped rules, with Prometheus's engine and alerting
// state machine, on the series the manager exports in each state, minute by minute: which
// alerts fire, with which labels, and which stay quiet.
func TestAlertScenarios(t *testing.T) {
	groups, err := promrules.Load(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	ready := func(state, reason, values string) string {
		return `operator_manager_subscription_ready{namespace="team-a",subscription="cache",package="cache-operator",state="` + state + `",reason="` + reason + `"} ` + values
	}
	for _, tc := range []struct {
		name   string
		series []string
		end    time.Duration
		want   []string // alert name and its subscription, catalog, kind or lease
	}{
		{name: "all ready, one of two replicas leads", end: 2 * time.Hour, series: []string{
			ready("ready", "Succeeded", "1x120"),
			`operator_manager_catalog_ready{namespace="team-a",catalogsource="samples"} 1x120`,
			`operator_manager_drift_repairs_total{package="cache-operator",kind="Deployment"} 0+0x120`,
			`operator_manager_api_requests_total{verb="patch",resource="blueprints/status",code="200",pod="om-0"} 0+10x120`,
			`leader_election_master_status{name="operator-manager.operators.coreos.com.operator-manager.domain",pod="om-0"} 1x120`,
			`leader_election_master_status{name="operator-manager.operators.coreos.com.operator-manager.domain",pod="om-1"} 0x120`,
		}},
		{name: "rolled back, past 5 minutes", end: 20 * time.Minute, series: []string{ready("failed", "RolledBack", "0x20")},
			want: []string{"OperatorChangeFailed team-a/cache RolledBack"}},
		{name: "rolled back, 4 minutes ago", end: 4 * time.Minute, series: []string{ready("failed", "RolledBack", "0x4")}},
		// Two scrapes' series of one Subscription (a replica that led and one that leads
		// now, each seen by Prometheus for a while): one alert, counted from the first.
		{name: "rolled back, seen from two replicas", end: 20 * time.Minute, series: []string{
			`operator_manager_subscription_ready{namespace="team-a",subscription="cache",package="cache-operator",state="failed",reason="RolledBack",pod="om-0"} 0x20`,
			`operator_manager_subscription_ready{namespace="team-a",subscription="cache",package="cache-operator",state="failed",reason="RolledBack",pod="om-1"} _x8 0x12`,
		}, want: []string{"OperatorChangeFailed team-a/cache RolledBack"}},
		{name: "installing for 40 minutes", end: 40 * time.Minute, series: []string{ready("progressing", "WaitingForCRDs", "0x40")},
			want: []string{"OperatorChangeStuck team-a/cache WaitingForCRDs"}},
		{name: "installing for 20 minutes", end: 20 * time.Minute, series: []string{ready("progressing", "Install", "0x20")}},
		{name: "40 minutes of progress, its step changing after 20", end: 40 * time.Minute, series: []string{
			ready("progressing", "Install", "0x20 stale"),
			ready("progressing", "WaitingForCRDs", "_x20 0x20"),
		}},
		{name: "unhealthy for 15 minutes", end: 15 * time.Minute, series: []string{ready("unhealthy", "ComponentUnhealthy", "0x15")},
			want: []string{"OperatorUnhealthy team-a/cache ComponentUnhealthy"}},
		{name: "unhealthy for 5 minutes", end: 5 * time.Minute, series: []string{ready("unhealthy", "ComponentUnhealthy", "0x5")}},
		{name: "unresolvable for 20 minutes", end: 20 * time.Minute, series: []string{ready("unresolved", "Unsatisfiable", "0x20")},
			want: []string{"OperatorSubscriptionUnresolved team-a/cache Unsatisfiable"}},
		{name: "an approval waiting 25 hours", end: 25 * time.Hour, series: []string{ready("waiting", "UpgradePending", "0x1500")},
			want: []string{"OperatorChangeAwaitingApproval team-a/cache UpgradePending"}},
		{name: "an approval waiting 23 hours", end: 23 * time.Hour, series: []string{ready("waiting", "UpgradePending", "0x1380")}},
		{name: "paused for two days", end: 48 * time.Hour, series: []string{ready("paused", "Paused", "0x2880")}},
		{name: "uninstalled as asked", end: 48 * time.Hour, series: []string{ready("uninstalled", "Uninstalled", "0x2880")}},
		{name: "a catalog failing for 20 minutes", end: 20 * time.Minute,
			series: []string{`operator_manager_catalog_ready{namespace="team-a",catalogsource="samples"} 1x2 0x18`},
			want:   []string{"OperatorCatalogLoadFailing team-a/samples"}},
		{name: "a catalog failing for 10 minutes", end: 10 * time.Minute,
			series: []string{`operator_manager_catalog_ready{namespace="team-a",catalogsource="samples"} 0x10`}},
		{name: "a Deployment put back every minute", end: time.Hour,
			series: []string{`operator_manager_drift_repairs_total{package="cache-operator",kind="Deployment"} 0+1x60`},
			want:   []string{"OperatorObjectsRepairedRepeatedly Deployment"}},
		{name: "a Deployment put back three times in an hour", end: time.Hour,
			series: []string{`operator_manager_drift_repairs_total{package="cache-operator",kind="Deployment"} 0x20 1x20 3x20`}},
		{name: "429s for 20 minutes", end: 20 * time.Minute, series: []string{
			`operator_manager_api_requests_total{verb="patch",resource="blueprints/status",code="429",namespace="operator-manager-system",pod="om-0"} 0+5x20`},
			want: []string{"OperatorManagerThrottled om-0"}},
		{name: "the bundle cache failing to write for 30 minutes", end: 30 * time.Minute, series: []string{
			`operator_manager_bundle_cache_errors_total{operation="write",namespace="operator-manager-system",pod="om-0"} 0+2x30`},
			want: []string{"OperatorManagerBundleCacheFailing om-0 write"}},
		{name: "the bundle cache failing once, an hour ago", end: 90 * time.Minute, series: []string{
			`operator_manager_bundle_cache_errors_total{operation="read",namespace="operator-manager-system",pod="om-0"} 0x30 1x60`}},
		{name: "no replica leads for 10 minutes", end: 10 * time.Minute, series: []string{
			`leader_election_master_status{name="operator-manager.operators.coreos.com.operator-manager.domain",pod="om-0"} 0x10`,
			`leader_election_master_status{name="operator-manager.operators.coreos.com.operator-manager.domain",pod="om-1"} 0x10`},
			want: []string{"OperatorManagerNoLeader operator-manager.operators.coreos.com.operator-manager.domain"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := promrules.Script(t, "load 1m\n  "+strings.Join(tc.series, "\n  "))
			var got []string
			for _, a := range promrules.Firing(t, groups, st, tc.end, time.Minute) {
				got = append(got, describeAlert(a))
				if a.Labels["subscription"] != "" && !strings.Contains(a.Annotations["description"], a.Labels["namespace"]+"/"+a.Labels["subscription"]) {
					t.Errorf("%s: the description does not name the Subscription: %q", a.Name, a.Annotations["description"])
				}
				if strings.Contains(a.Annotations["summary"]+a.Annotations["description"], "<no value>") {
					t.Errorf("%s: a template names a label the alert lacks: %v", a.Name, a.Annotations)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("firing: %q, want %q", got, tc.want)
			}
		})
	}
}

// describeAlert names an alert by what it is about: its Subscription and reason, its
// catalog, the kind of object fought over, the throttled pod or the lease.
func describeAlert(a promrules.Alert) string {
	l := a.Labels
	switch {
	case l["subscription"] != "":
		return a.Name + " " + l["namespace"] + "/" + l["subscription"] + " " + l["reason"]
	case l["catalogsource"] != "":
		return a.Name + " " + l["namespace"] + "/" + l["catalogsource"]
	case l["kind"] != "":
		return a.Name + " " + l["kind"]
	case l["operation"] != "":
		return a.Name + " " + l["pod"] + " " + l["operation"]
	case l["pod"] != "":
		return a.Name + " " + l["pod"]
	}
	return a.Name + " " + l["name"]
}
