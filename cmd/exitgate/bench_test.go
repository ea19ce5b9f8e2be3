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
			for _, k := range []string{"strategy", "utilization", "ratio_429", "utilization_whole_run", "ratio_429_whole_run", "settle_seconds", "learning_429s", "bans", "retries_per_success", "seconds_to_finish"} {
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

// The twins group runs for --duration and the table carries the new
// columns; a multi-host scenario reports per-host figures in JSON.
func TestBenchTwinsDuration(t *testing.T) {
	var out, errOut bytes.Buffer
	f := benchFlags{scenario: "twin-nginx-1r-s,twin-httprate-30-per-10s", strategy: "exitgate", exits: 5, seed: 1,
		warmup: time.Minute, maxTime: time.Hour, duration: 120 * time.Second}
	if err := runBench(context.Background(), &out, &errOut, f); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| learning 429s | settle s |", "### twin-nginx-1r-s (per-ip, headers: none+retry-after=1s", "### twin-httprate-30-per-10s (per-ip, headers: x-ratelimit"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bench output lacks %q:\n%s", want, out.String())
		}
	}
	scs, err := pickScenarios("twins,wide")
	if err != nil || len(scs) < 19 {
		t.Errorf("pickScenarios(twins,wide) = %d scenarios, %v", len(scs), err)
	}
}
