package calibrate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/sim/measure"
	"github.com/exitgate/exitgate/sim/server"
)

func figs(util, r429 float64) measure.Figures {
	return measure.Figures{Utilization: util, Ratio429: r429}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name       string
		twin, real measure.Figures
		tol        Tolerance
		ok         bool
	}{
		{"equal", figs(0.8, 0.02), figs(0.8, 0.02), Tolerance{}, true},
		{"5 points of utilization is the edge", figs(0.80, 0.02), figs(0.75, 0.02), Tolerance{}, true},
		{"5.1 points is out", figs(0.801, 0.02), figs(0.75, 0.02), Tolerance{}, false},
		{"the twin too pessimistic counts as much as too optimistic", figs(0.60, 0.02), figs(0.79, 0.02), Tolerance{}, false},
		{"1 point of 429s is the edge", figs(0.8, 0.17), figs(0.8, 0.16), Tolerance{}, true},
		{"1.1 points of 429s is out", figs(0.8, 0.041), figs(0.8, 0.03), Tolerance{}, false},
		{"a simulator that shows no 429s against a real 17% fails", figs(0.97, 0), figs(0.79, 0.17), Tolerance{}, false},
		{"a looser tolerance", figs(0.8, 0.05), figs(0.7, 0.03), Tolerance{Utilization: 0.1, Ratio429: 0.02}, true},
	} {
		g := Compare(tc.twin, tc.real, tc.tol)
		if g.OK != tc.ok {
			t.Errorf("%s: Compare(%v, %v) = %v", tc.name, tc.twin.Utilization, tc.real.Utilization, g)
		}
		if !strings.Contains(g.String(), "tolerance") {
			t.Errorf("%s: String() = %q", tc.name, g.String())
		}
	}
}

// Every twin scenario runs for the acceptance check's 120 s and is
// measured; twins are named for their real targets.
func TestTwinSide(t *testing.T) {
	for _, sc := range server.Twins() {
		f, err := Twin(context.Background(), Run{Scenario: sc.Name})
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		if f.Seconds != 120 || f.Requests == 0 || f.Keys != 20 {
			t.Errorf("%s: measured %v s, %d requests, %d keys; want 120 s, some requests, 20 keys", sc.Name, f.Seconds, f.Requests, f.Keys)
		}
		t.Logf("%-32s util %5.1f%%  429 %5.2f%%  learning 429s %4d  settle %v", sc.Name, 100*f.Utilization, 100*f.Ratio429, f.LearningLimited, f.SettleSeconds)
	}
	if _, err := Twin(context.Background(), Run{Scenario: "per-ip-token-bucket"}); err == nil {
		t.Error("Twin(per-ip-token-bucket) = nil error, want ErrNotTwin")
	}
	// Built as a twin beside a held-out real target (Varnish's vsthrottle).
	if _, err := Twin(context.Background(), Run{Scenario: "block-bucket-30-per-min-remaining"}); err != nil {
		t.Errorf("Twin(block-bucket-30-per-min-remaining): %v, want a run", err)
	}
	if got := RealTarget("twin-haproxy-2-per-10s"); got != "haproxy-2-per-10s" {
		t.Errorf("RealTarget = %q", got)
	}
}

// TestTwinStartPhases runs the exitgate strategy on httprate's twin from
// 160 start phases: the server up 0.25 to 10 s before the first request
// (its windows start with it) and the first request at four points of a
// second (its resets are whole seconds, rounded down), 10 exits, 60 s. A
// first reset a second or a few away read as a short window, and the
// lanes that spent it and went at the stated reset drew a 429 and
// Retry-After: 10 s each, in 60 of the 160 phases, the whole run between
// 84% and 108%: no point estimate could calibrate that (CI's run met one,
// 105.9% against the real 99.6%). Now no phase draws a 429 and the whole
// run stays within a few points (limit.quota.reserve).
func TestTwinStartPhases(t *testing.T) {
	if testing.Short() {
		t.Skip("160 virtual runs: skipped with -short")
	}
	bad, lo, hi := 0, 2.0, 0.0
	for up := 250 * time.Millisecond; up <= 10*time.Second; up += 250 * time.Millisecond {
		for ph := time.Duration(0); ph < time.Second; ph += 300 * time.Millisecond {
			// Phase zero is the scenario's own: a millisecond in.
			f, err := Twin(context.Background(), Run{Scenario: "twin-httprate-30-per-10s", Exits: 10, Duration: 60 * time.Second,
				URLs: 16300, Phase: ph + time.Millisecond, Uptime: up})
			if err != nil {
				t.Fatal(err)
			}
			lo, hi = min(lo, f.Utilization), max(hi, f.Utilization)
			if f.Limited > 0 {
				if bad++; bad <= 3 {
					t.Errorf("server up %v, first request %v into a second: %d 429s, utilization %.3f; want none",
						up, ph+time.Millisecond, f.Limited, f.Utilization)
				}
			}
		}
	}
	t.Logf("160 phases: %d with 429s, utilization %.1f%% to %.1f%%", bad, 100*lo, 100*hi)
	if bad > 0 || lo < 0.9 || hi > 1 {
		t.Errorf("%d of 160 phases drew 429s, utilization %.3f to %.3f; want none, and 0.90 to 1.00", bad, lo, hi)
	}
}

// TestTwinStartPhasesSecond runs httprate's 10 per second, headers on, over
// 40 start phases (server up 0.1-1 s, the first request at four points of a
// second): its windows start with the server and its X-RateLimit-Reset is
// their end in whole seconds rounded down, so at most phases most answers
// state a second already begun. Read as a window that never rolled, each
// lane was held a second at a time: 10% of the limit at 29 of 40 phases (and
// 10.4% in one of two real runs, `--targets httprate-10-per-s`).
func TestTwinStartPhasesSecond(t *testing.T) {
	if testing.Short() {
		t.Skip("40 virtual runs: skipped with -short")
	}
	sum, low := 0.0, 0
	for up := 100 * time.Millisecond; up <= time.Second; up += 100 * time.Millisecond {
		for ph := time.Duration(0); ph < time.Second; ph += 250 * time.Millisecond {
			f, err := Twin(context.Background(), Run{Scenario: "twin-httprate-10-per-s", Exits: 10, Duration: 120 * time.Second,
				Phase: ph + time.Millisecond, Uptime: up})
			if err != nil {
				t.Fatal(err)
			}
			sum += f.Utilization
			if f.Limited > 0 {
				t.Errorf("server up %v, first request %v into a second: %d 429s", up, ph+time.Millisecond, f.Limited)
			}
			if f.Utilization < 0.85 {
				low++
				t.Logf("server up %v, first request %v into a second: %.1f%%", up, ph+time.Millisecond, 100*f.Utilization)
			}
		}
	}
	if mean := sum / 40; mean < 0.85 || low > 5 {
		t.Errorf("40 phases: %.1f%% on average, %d under 85%%; want 85%% or more, at most 5 under", 100*mean, low)
	}
}
