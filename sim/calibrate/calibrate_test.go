package calibrate

import (
	"context"
	"strings"
	"testing"

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
	if got := RealTarget("twin-haproxy-2-per-10s"); got != "haproxy-2-per-10s" {
		t.Errorf("RealTarget = %q", got)
	}
}
