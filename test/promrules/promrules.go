// Package promrules evaluates operator-manager's shipped alerting rules
// (config/prometheus/alerts.yaml) as Prometheus does, with Prometheus's own rule
// parser, query engine and alerting-rule state machine, so the tests can say which alerts
// a set of series fires: the series of a scenario written in PromQL's test notation, or
// what a live manager's /metrics serves.
package promrules

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	"sigs.k8s.io/yaml"
)

// Parser is the PromQL parser the rules are read with: Prometheus's defaults.
var Parser = parser.NewParser(parser.Options{})

// Load reads a PrometheusRule manifest, refusing fields its kind does not have, and
// parses and validates its groups as Prometheus loads a rule file (every expression,
// duration and template), naming the file in any error.
func Load(path string) (*rulefmt.RuleGroups, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pr monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(data, &pr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if pr.Kind != "PrometheusRule" || pr.APIVersion != monitoringv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("%s: %s %s, want a PrometheusRule of %s", path, pr.APIVersion, pr.Kind, monitoringv1.SchemeGroupVersion)
	}
	spec, err := yaml.Marshal(pr.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, Parser, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", path, errs)
	}
	return groups, nil
}

// MetricNames are the metric names the rules' expressions select.
func MetricNames(groups *rulefmt.RuleGroups) (map[string][]string, error) {
	names := map[string][]string{} // metric -> rules
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr, err := Parser.ParseExpr(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("rule %s%s: %w", r.Alert, r.Record, err)
			}
			for _, sel := range parser.ExtractSelectors(expr) {
				for _, m := range sel {
					if m.Name == labels.MetricName {
						names[m.Value] = append(names[m.Value], r.Alert+r.Record)
					}
				}
			}
		}
	}
	return names, nil
}

// Script is a storage holding the series of a script in PromQL's test notation
// ("load 1m" and one series per line, as in Prometheus's own rule tests).
func Script(t testing.TB, script string) storage.Storage {
	return promqltest.LoadedStorage(t, script)
}

// Scrape is a storage holding what a /metrics page served, each sample repeated at every
// step from 0 to span, as if the page had been scraped unchanged all that time.
func Scrape(t testing.TB, page io.Reader, span, step time.Duration) storage.Storage {
	t.Helper()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	families, err := tp.TextToMetricFamilies(page)
	if err != nil {
		t.Fatalf("reading the /metrics page: %v", err)
	}
	st := teststorage.New(t)
	app := st.Appender(context.Background())
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				v = m.GetUntyped().GetValue()
			default:
				continue // histograms and summaries: no rule reads them
			}
			b := labels.NewScratchBuilder(len(m.GetLabel()) + 1)
			b.Add(labels.MetricName, name)
			for _, l := range m.GetLabel() {
				b.Add(l.GetName(), l.GetValue())
			}
			b.Sort()
			lset := b.Labels()
			for ts := time.Duration(0); ts <= span; ts += step {
				if _, err := app.Append(0, lset, ts.Milliseconds(), v); err != nil {
					t.Fatalf("storing %s: %v", lset, err)
				}
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	return st
}

// prometheusURL is the external URL the annotations' templates may name.
var prometheusURL = &url.URL{Scheme: "http", Host: "prometheus.example"}

// Alert is an alert that fires: its rule's name, labels and expanded annotations.
type Alert struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// Firing evaluates every alerting rule of groups over st from time 0 to end, once every
// interval as Prometheus's rule manager does, and returns the alerts firing at end
// (pending ones, whose "for" has not passed, are not), sorted by name and labels.
func Firing(t testing.TB, groups *rulefmt.RuleGroups, st storage.Queryable, end, interval time.Duration) []Alert {
	t.Helper()
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	query := rules.EngineQueryFunc(engine, st)
	var out []Alert
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			expr, err := Parser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("rule %s: %v", r.Alert, err)
			}
			rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), time.Duration(r.KeepFiringFor),
				labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", false, slog.New(slog.DiscardHandler))
			for ts := time.Duration(0); ts <= end; ts += interval {
				if _, err := rule.Eval(context.Background(), 0, time.UnixMilli(ts.Milliseconds()), query, prometheusURL, 0); err != nil {
					t.Fatalf("rule %s at %s: %v", r.Alert, ts, err)
				}
			}
			for _, a := range rule.ActiveAlerts() {
				if a.State != rules.StateFiring {
					continue
				}
				out = append(out, Alert{Name: r.Alert, Labels: a.Labels.Map(), Annotations: a.Annotations.Map()})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return fmt.Sprint(out[i].Labels) < fmt.Sprint(out[j].Labels)
	})
	return out
}
