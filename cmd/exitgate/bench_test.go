package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// bench --json prints the documented shape, with kind and headers per
// scenario and the five figures per strategy.
func TestBenchJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	f := benchFlags{scenario: "per-ip-retry-after,host-scoped", strategy: "exitgate,no-limiter", json: true,
		exits: 5, urls: 300, seed: 1, warmup: time.Minute, maxTime: time.Hour}
	if err := runBench(context.Background(), &out, &errOut, f); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenarios []struct {
			Name    string                       `json:"name"`
			Kind    string                       `json:"kind"`
			Headers string                       `json:"headers"`
			Results []map[string]json.RawMessage `json:"results"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("bench --json output is not JSON: %v\n%s", err, out.String())
	}
	if len(doc.Scenarios) != 2 {
		t.Fatalf("%d scenarios, want 2", len(doc.Scenarios))
	}
	kinds := map[string]string{"per-ip-retry-after": "per-ip", "host-scoped": "host-scoped"}
	for _, s := range doc.Scenarios {
		if kinds[s.Name] != s.Kind || s.Headers != "retry-after" {
			t.Errorf("scenario %q kind %q headers %q, want kind %q headers retry-after", s.Name, s.Kind, s.Headers, kinds[s.Name])
		}
		if len(s.Results) != 2 {
			t.Fatalf("scenario %q: %d results, want 2", s.Name, len(s.Results))
		}
		for _, r := range s.Results {
			for _, k := range []string{"strategy", "utilization", "ratio_429", "bans", "retries_per_success", "seconds_to_finish"} {
				if _, ok := r[k]; !ok {
					t.Errorf("scenario %q result lacks %q", s.Name, k)
				}
			}
		}
	}
}

func TestBenchUnknownNames(t *testing.T) {
	var out bytes.Buffer
	for _, f := range []benchFlags{{scenario: "nope", strategy: "all", exits: 1}, {scenario: "all", strategy: "nope", exits: 1}} {
		err := runBench(context.Background(), &out, &out, f)
		if err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("runBench(%q, %q) err = %v, want one naming the unknown name", f.scenario, f.strategy, err)
		}
	}
}
