package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v4"

	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/monitor"
)

// exportedNames lists every metric name /metrics can carry, from the
// descriptions of crawl's collectors; a histogram's series add _bucket,
// _sum and _count.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	mon, err := monitor.New(monitor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range crawlCollectors(metrics.NewTally(time.Now()), mon, 50, 200) {
		ch := make(chan *prometheus.Desc, 512)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fq.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
				names[m[1]+suffix] = true
			}
		}
	}
	return names
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*\s*\(?`)
	promWords    = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true,
		"without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL expression reads: its
// identifiers that are neither functions, aggregations, keywords, labels
// nor strings.
func metricNames(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	var out []string
	for _, id := range promIdent.FindAllString(e, -1) {
		if strings.HasSuffix(id, "(") || promWords[strings.ToLower(strings.TrimSpace(id))] {
			continue // a function or aggregation, or a keyword
		}
		out = append(out, strings.TrimSpace(id))
	}
	return out
}

// TestMonitoringFilesNameExportedMetrics checks the shipped Prometheus
// rules and Grafana dashboard: every expression reads at least one metric,
// and every metric it reads is one the binary exports or one the rules
// record.
func TestMonitoringFilesNameExportedMetrics(t *testing.T) {
	exported := exportedNames(t)
	for _, want := range []string{"exitgate_requests_total", "exitgate_breaker_state", "exitgate_jobs", "go_goroutines", "process_cpu_seconds_total", "exitgate_retry_after_seconds_bucket"} {
		if !exported[want] {
			t.Fatalf("the binary does not export %s: the test reads the wrong collectors", want)
		}
	}
	if exported["exitgate_429_ratio"] {
		t.Errorf("exitgate_429_ratio is exported: ratios are recorded by the rules, not precomputed")
	}

	raw, err := os.ReadFile("../../deploy/prometheus/exitgate-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Record, Alert, Expr, For string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("rules: %v", err)
	}
	known := map[string]bool{}
	for k := range exported {
		known[k] = true
	}
	type query struct{ where, expr string }
	var queries []query
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			switch {
			case r.Record != "":
				known[r.Record] = true
				queries = append(queries, query{"record " + r.Record, r.Expr})
			case r.Alert != "":
				alerts++
				queries = append(queries, query{"alert " + r.Alert, r.Expr})
			default:
				t.Errorf("rules group %s: a rule that neither records nor alerts: %+v", g.Name, r)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("rule %s%s: for %q: %v", r.Record, r.Alert, r.For, err)
				}
			}
		}
	}
	if alerts < 5 {
		t.Errorf("%d alert rules, want the monitor's alerts (over budget, breaker, spike, early warnings, reputation)", alerts)
	}

	raw, err = os.ReadFile("../../deploy/grafana/exitgate-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries = append(queries, query{"panel " + p.Title, tg.Expr})
		}
	}
	if len(dash.Panels) < 10 {
		t.Errorf("dashboard %q has %d panels", dash.Title, len(dash.Panels))
	}

	used := map[string]bool{}
	for _, q := range queries {
		names := metricNames(q.expr)
		if len(names) == 0 {
			t.Errorf("%s: %q reads no metric", q.where, q.expr)
		}
		for _, n := range names {
			used[n] = true
			if !known[n] {
				t.Errorf("%s: %q reads %s, which the binary does not export and no rule records", q.where, q.expr, n)
			}
		}
	}
	// The monitor's metrics are all shown or alerted on somewhere.
	for n := range exported {
		if strings.HasPrefix(n, "exitgate_") && !strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") && !strings.HasSuffix(n, "_bucket") && !used[n] &&
			!slices.Contains([]string{"exitgate_retry_after_seconds", "exitgate_breaker_trips_total", "exitgate_host_over_budget_seconds", "exitgate_429_budget", "exitgate_host_lanes"}, n) {
			t.Errorf("%s is exported but no rule or panel reads it", n)
		}
	}
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum by (host) (rate(exitgate_requests_total{status="429"}[5m])) / sum by (host) (rate(exitgate_requests_total[5m]))`, []string{"exitgate_requests_total", "exitgate_requests_total"}},
		{`exitgate:host_429_ratio:rate5m > on (host) exitgate_host_429_budget`, []string{"exitgate:host_429_ratio:rate5m", "exitgate_host_429_budget"}},
		{`histogram_quantile(0.9, sum by (le, host) (rate(exitgate_retry_after_seconds_bucket[5m])))`, []string{"exitgate_retry_after_seconds_bucket"}},
		{`delta(exitgate_jobs{state="done"}[15m]) == 0 and on () exitgate_jobs{state="queued"} > 0`, []string{"exitgate_jobs", "exitgate_jobs"}},
		{`exitgate_exit_reputation == 1`, []string{"exitgate_exit_reputation"}},
	} {
		if got := metricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("metricNames(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}
