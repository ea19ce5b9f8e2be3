// Package calibrate holds a twin to its real limiter: it runs a strategy on
// a simulated twin (sim/server) with the exits, span and URL count with
// which the real-limiter bench ran the same strategy on the real server,
// and compares the two runs' figures, both measured by sim/measure from the
// server's record of requests.
//
// The real side is not run here, so that the simulator does not depend on
// the programs it imitates: Check and Compare take the real run's
// measure.Figures, and internal/peerbench (which starts nginx, HAProxy, the
// Go, Python and Node limiters behind tinyproxy exits) runs both sides and
// calls them (peerbench.Calibrate, TestCalibration, `peerbench
// --calibrate`). A twin is calibrated when its utilization is within
// Tolerance.Utilization (5 points) of the real one and its 429 ratio within
// Tolerance.Ratio429 (1 point).
//
// Functions here are safe for concurrent use; values are plain.
package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/exitgate/exitgate/sim/measure"
	simrun "github.com/exitgate/exitgate/sim/run"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// Tolerance is how far a twin may stray from its real limiter, in
// fractions (0.05 is 5 points). The zero value means DefaultTolerance.
type Tolerance struct {
	Utilization float64
	Ratio429    float64
}

// DefaultTolerance: 5 points of utilization, 1 point of 429 ratio.
var DefaultTolerance = Tolerance{Utilization: 0.05, Ratio429: 0.01}

// Gap is one comparison of a twin run with a real run.
type Gap struct {
	Twin, Real measure.Figures
	// Utilization and Ratio429 are twin minus real, in fractions.
	Utilization, Ratio429 float64
	// OK is true when both gaps are within tolerance.
	OK bool
}

// String says the two runs' figures and the gaps, in points.
func (g Gap) String() string {
	verdict := "within tolerance"
	if !g.OK {
		verdict = "OUT of tolerance"
	}
	return fmt.Sprintf("twin %.1f%% utilization, %.2f%% 429s; real %.1f%%, %.2f%%; gap %+.1f and %+.2f points: %s",
		100*g.Twin.Utilization, 100*g.Twin.Ratio429, 100*g.Real.Utilization, 100*g.Real.Ratio429,
		100*g.Utilization, 100*g.Ratio429, verdict)
}

// Compare compares the whole-run figures of a twin run and a real run of
// the same strategy and span.
func Compare(twin, real measure.Figures, tol Tolerance) Gap {
	if tol == (Tolerance{}) {
		tol = DefaultTolerance
	}
	g := Gap{Twin: twin, Real: real,
		Utilization: twin.Utilization - real.Utilization,
		Ratio429:    twin.Ratio429 - real.Ratio429,
	}
	// A hair of float slack, so a gap of exactly the tolerance passes.
	const eps = 1e-9
	g.OK = math.Abs(g.Utilization) <= tol.Utilization+eps && math.Abs(g.Ratio429) <= tol.Ratio429+eps
	return g
}

// Run is one side of a calibration: a strategy on a target for a span.
type Run struct {
	// Scenario is the twin scenario's name (twin-nginx-1r-s...). Required.
	Scenario string
	// Strategy is the strategy's name; default exitgate.
	Strategy string
	// Exits is the pool size; default 20.
	Exits int
	// Duration is the span run and measured; default 120 s (the acceptance
	// check's length).
	Duration time.Duration
	// URLs is the size of the URL set; default what a perfect client
	// fetches in 10 minutes (sim/run.Config.URLs).
	URLs int
	// Seed; default 1.
	Seed uint64
	// Phase is where in a second the twin's run starts, and Uptime how long
	// its server had run when the first request arrived: the real run's,
	// so that what a server writes in whole seconds (Date, epoch resets)
	// and a limiter whose windows start with its server (httprate) meet
	// the crawl as they did in the real run. Zero: the twin scenario's
	// own (server.TwinStartPhase, server.TwinUptime).
	Phase, Uptime time.Duration
}

// ErrNotTwin is returned for a scenario that is not a twin of a real
// limiter, nor built as one beside a held-out real target.
var ErrNotTwin = errors.New("calibrate: not a twin scenario")

func (r Run) withDefaults() Run {
	if r.Strategy == "" {
		r.Strategy = strategy.Exitgate
	}
	if r.Exits == 0 {
		r.Exits = 20
	}
	if r.Duration == 0 {
		r.Duration = 120 * time.Second
	}
	if r.Seed == 0 {
		r.Seed = 1
	}
	return r
}

// Twin runs r on its twin in virtual time and returns the figures measured
// from the twin's record of requests.
func Twin(ctx context.Context, r Run) (measure.Figures, error) {
	r = r.withDefaults()
	sc, ok := server.ScenarioByName(r.Scenario)
	if !ok {
		return measure.Figures{}, fmt.Errorf("%w: no scenario %q", ErrNotTwin, r.Scenario)
	}
	if !strings.HasPrefix(r.Scenario, "twin-") && sc.Path == (server.Latency{}) {
		// A twin, or a scenario built as one beside a held-out real
		// target (wide's block-bucket-*, beside the Varnish targets):
		// either models the bench's path; a textbook scenario does not.
		return measure.Figures{}, fmt.Errorf("%w: %q", ErrNotTwin, r.Scenario)
	}
	spec, ok := strategy.ByName(r.Strategy)
	if !ok {
		return measure.Figures{}, fmt.Errorf("calibrate: no strategy %q", r.Strategy)
	}
	if r.Phase > 0 {
		sc.StartPhase = r.Phase % time.Second
	}
	if r.Uptime > 0 {
		sc.Config.Uptime = r.Uptime
	}
	res, err := simrun.Virtual(ctx, simrun.Config{Scenario: sc, Strategy: spec, Exits: r.Exits, Seed: r.Seed, Duration: r.Duration, URLs: r.URLs})
	if err != nil {
		return measure.Figures{}, err
	}
	return res.Figures, nil
}

// RealTarget is the bench's name for the real limiter a twin models: the
// twin's name without "twin-" (twin-nginx-1r-s models nginx-1r-s).
func RealTarget(twin string) string { return strings.TrimPrefix(twin, "twin-") }

// Check runs r on its twin and compares it with the real run's figures.
func Check(ctx context.Context, r Run, real measure.Figures, tol Tolerance) (Gap, error) {
	tw, err := Twin(ctx, r)
	if err != nil {
		return Gap{}, err
	}
	return Compare(tw, real, tol), nil
}
