package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
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

// TestBenchDemoBadFlags: bench's and demo's values out of range are usage
// errors (exit 2) naming their flag, and bench's virtual-time flags are
// refused with --real; they exited 1 with one message naming every flag,
// and --real took --max-time and --parallel and did nothing with them.
func TestBenchDemoBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--urls", "-1"}, "--urls -1: want 0 to"},
		{[]string{"bench", "--exits", "100000000"}, "--exits 100000000: want 1 to"},
		{[]string{"bench", "--warmup", "-1m"}, "--warmup -1m0s: want 0 (none) or more"},
		{[]string{"bench", "--max-time", "-1s"}, "--max-time -1s: want above 0"},
		{[]string{"bench", "--real", "--max-time", "1s"}, "--max-time does nothing with --real"},
		{[]string{"bench", "--real", "--parallel", "7"}, "--parallel does nothing with --real"},
		{[]string{"bench", "--scenario", "nope"}, "nope"},
		{[]string{"demo", "--exits", "0"}, "--exits 0: want 1 to 100"},
		{[]string{"demo", "--urls", "0"}, "--urls 0: want 1 to 100000"},
		{[]string{"demo", "--scenario", "host-scoped"}, "the demo runs per-IP scenarios of one host"},
		{[]string{"bench", "--real", "--scenario", "rotating", "--duration", "1s"}, "none of the scenarios named runs on real sockets"},
	} {
		r := runCmd(t, tc.args...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d), want exit %d saying %q", tc.args, r.err, exitCode(r.err), exitUsage, tc.want)
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

// TestDemoProgressEndsWithTable: the demo's last progress line says where
// each crawl ended, as its table does (the line stopped at the last
// report before the end: 585/600 for a crawl that did all 600).
func TestDemoProgressEndsWithTable(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5-s demo")
	}
	out, msg, code := run(t, "demo", "--urls", "20", "--exits", "2", "--duration", "5s")
	if code != 0 {
		t.Fatalf("demo: exit %d %s\n%s", code, msg, out)
	}
	var last string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "s  |  exitgate: ") {
			last = line
		}
	}
	done := regexp.MustCompile(`URLs done +(\d+) / 20 +(\d+) / 20`).FindStringSubmatch(out)
	if last == "" || done == nil {
		t.Fatalf("no progress line or table:\n%s", out)
	}
	if want := fmt.Sprintf("exitgate: %s/20 done", done[1]); !strings.Contains(last, want) {
		t.Errorf("last progress line %q, want %q as the table says", last, want)
	}
	if want := fmt.Sprintf("global-per-domain: %s/20 done", done[2]); !strings.Contains(last, want) {
		t.Errorf("last progress line %q, want %q as the table says", last, want)
	}
}
