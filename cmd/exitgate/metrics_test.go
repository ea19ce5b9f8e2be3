package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/verdict"
)

func TestServeMetrics(t *testing.T) {
	tally := metrics.NewTally(time.Now())
	var log bytes.Buffer
	ln, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := newRegistry(tally, nil, 50)
	if err != nil {
		t.Fatal(err)
	}
	defer serveMetrics(ln, reg, &log)()
	tally.Record(metrics.Event{Host: "a.example", Exit: "e1", Status: 429, Verdict: verdict.Throttled, At: time.Now()})
	addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(log.String()), "metrics at http://"), "/metrics")
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics (log %q): %v", log.String(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`exitgate_requests_total{host="a.example",status="429"} 1`, "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if _, err := listenMetrics("not an address"); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("listenMetrics(bad address) error = %v, want one naming --metrics-addr", err)
	}
}
