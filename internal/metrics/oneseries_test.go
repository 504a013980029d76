package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestOneSeries(t *testing.T) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_ready", Help: "h"}, []string{"name", "state"})
	o := NewOneSeries(vec)
	expect := func(step, want string) {
		t.Helper()
		if err := testutil.CollectAndCompare(vec, strings.NewReader("# HELP test_ready h\n# TYPE test_ready gauge\n"+want)); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	o.Set("a", 0, "a", "progressing")
	o.Set("b", 1, "b", "ready")
	expect("two objects", "test_ready{name=\"a\",state=\"progressing\"} 0\ntest_ready{name=\"b\",state=\"ready\"} 1\n")
	o.Set("a", 1, "a", "ready")
	expect("a's state changed: its old series is gone", "test_ready{name=\"a\",state=\"ready\"} 1\ntest_ready{name=\"b\",state=\"ready\"} 1\n")
	o.Set("a", 1, "a", "ready")
	expect("the same state again", "test_ready{name=\"a\",state=\"ready\"} 1\ntest_ready{name=\"b\",state=\"ready\"} 1\n")
	o.Delete("a")
	o.Delete("unknown")
	expect("a deleted", "test_ready{name=\"b\",state=\"ready\"} 1\n")
}
