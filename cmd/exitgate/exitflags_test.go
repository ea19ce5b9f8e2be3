package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
)

// TestLaneRateUnderHostRate: a --host-rate under the first guess of a lane
// (the default 30/min) starts every lane at the host's ceiling: no lane goes
// faster than its host. It stopped the crawl with exit 1 after the URLs were
// loaded ("MaxLaneRate is below FirstGuess"), and the limiter built from the
// flags is checked here too.
func TestLaneRateUnderHostRate(t *testing.T) {
	for _, tc := range []struct {
		host, lane string
		want       float64 // the first guess, per second
	}{
		{"10/min", "30/min", 10.0 / 60},
		{"1/h", "30/min", 1.0 / 3600},
		{"1/s", "2/s", 1},
		{"20/s", "30/min", 0.5},
		{"0", "30/min", 0.5},
	} {
		f := exitFlags{hostRate: tc.host, laneRate: tc.lane, concurrency: 32, perHostConcurrency: 8, logLevel: "warn"}
		c, err := f.limitConfig()
		if err != nil {
			t.Errorf("--host-rate %s --lane-rate %s: %v", tc.host, tc.lane, err)
			continue
		}
		if got := c.FirstGuess.Hz(); got < tc.want*0.999 || got > tc.want*1.001 {
			t.Errorf("--host-rate %s --lane-rate %s: first guess %v/s, want %v/s", tc.host, tc.lane, got, tc.want)
		}
		if _, err := limit.New(c); err != nil {
			t.Errorf("--host-rate %s --lane-rate %s: the limiter refuses its flags: %v", tc.host, tc.lane, err)
		}
	}
}

// TestFlagsThatNeedAnother: a flag that works only with another is refused
// without it (exit 2, nothing done): --sessions without --proxy-template,
// the distributed mode's flags without --redis, from the command line or
// the environment. They were accepted and did nothing.
func TestFlagsThatNeedAnother(t *testing.T) {
	dir := t.TempDir()
	urls := writeLines(t, dir, "urls.txt", []string{"http://127.0.0.1:9/x"})
	for _, args := range [][]string{
		{"crawl", "--sessions", "5"},
		{"crawl", "--lease-ttl", "-5s"},
		{"crawl", "--fleet-ttl", "10s"},
		{"crawl", "--worker-id", "w1"},
		{"crawl", "--crawl", "shop"},
		// Series of endpoints that are not served.
		{"crawl", "--metrics-hosts", "5"},
		{"crawl", "--metrics-exits", "5"},
	} {
		r := runCmd(t, append(append(args, "--out", filepath.Join(dir, "out")), urls)...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "needs --") {
			t.Errorf("%v: %v, want exit %d naming the flag it needs", args, r.err, exitUsage)
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
			t.Fatalf("%v: the output directory was made", args)
		}
	}
	if r := runCmd(t, "crawl", "--breaker-after", "0", "--breaker-cooldown", "1m", "--out", filepath.Join(dir, "out"), urls); exitCode(r.err) != exitUsage ||
		!strings.Contains(r.err.Error(), "--breaker-cooldown does nothing with --breaker-after 0") {
		t.Errorf("--breaker-cooldown with no breaker: %v, want exit %d saying it does nothing", r.err, exitUsage)
	}
	t.Setenv("EXITGATE_WORKER_ID", "w1")
	r := runCmd(t, "crawl", "--out", filepath.Join(dir, "out"), urls)
	if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "EXITGATE_WORKER_ID") {
		t.Errorf("EXITGATE_WORKER_ID without --redis: %v, want exit %d naming the variable", r.err, exitUsage)
	}
}

// TestRatesRefusedBeforeWork: a rate the limiter cannot take is refused by
// the flag that gave it, exit 2, before --out is made (it was refused once
// the URL list was loaded, exit 1, naming the limiter's FirstGuess); a
// --breaker-cooldown over an hour is taken (refused as "CooldownMax is
// below Cooldown").
func TestRatesRefusedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	urls := writeLines(t, dir, "urls.txt", []string{"http://127.0.0.1:9/x"})
	for _, args := range [][]string{{"--lane-rate", "1/9000h"}, {"--host-rate", "1e-300/s"}} {
		out := filepath.Join(dir, "out"+args[0])
		r := runCmd(t, append([]string{"crawl", "--out", out}, append(args, urls)...)...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), args[0]+" "+args[1]) {
			t.Errorf("%v: %v, want exit %d naming the flag", args, r.err, exitUsage)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: --out was made before the flag was refused", args)
		}
	}
	f := monitorFlags{budget: "1%", budgetWindow: time.Minute, alertAfter: 3 * time.Minute, breakerAfter: 5 * time.Minute, breakerCooldown: 2 * time.Hour, metricsExits: 50}
	if _, err := monitorConfig(f); err != nil {
		t.Errorf("--breaker-cooldown 2h: %v, want it taken", err)
	}
}
