package peerbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/exitgate/exitgate/sim/calibrate"
	"github.com/exitgate/exitgate/sim/strategy"
)

// The calibration lives here, not in sim/calibrate: the real side needs
// internal/peers (nginx, haproxy, the Go, Python and Node apps, tinyproxy),
// and the simulator must not depend on the programs it imitates. So
// peerbench imports sim/calibrate and hands it the real run's figures.

// CalibrationConfig is a strategy run on real targets and on their twins.
// The zero value of each optional field is its documented default.
type CalibrationConfig struct {
	// Targets are the real limiters; each is compared with its twin
	// (Target.Twin). Required.
	Targets []Target
	// Strategy is run on both sides. Default exitgate.
	Strategy strategy.Spec
	// Exits, Duration, Parallel, FirstIP, Dir, Seed, TargetLead, Log and
	// ProgressEvery are the real runs' (MatrixConfig); the twin runs take
	// the same exits, duration, seed and URL count, and the real run's
	// phase and uptime. Duration defaults to 60 s.
	Exits         int
	Duration      time.Duration
	Parallel      int
	FirstIP       netip.Addr
	Dir           string
	Seed          uint64
	TargetLead    time.Duration
	Log           io.Writer
	ProgressEvery time.Duration
	// Tolerance is how far a twin may stray; zero: calibrate.DefaultTolerance.
	Tolerance calibrate.Tolerance
}

// Calibration is one target compared with its twin.
type Calibration struct {
	Target string `json:"target"`
	Twin   string `json:"twin"`
	// Real is the real run (its Server figures are the real side).
	Real Result `json:"real"`
	// Gap holds both sides' whole-run figures and the gaps.
	Gap calibrate.Gap `json:"gap"`
	// Error is why the real or the twin run failed; Gap is then empty.
	Error string `json:"error,omitempty"`
}

// OK reports whether both runs went through and the twin is within
// tolerance.
func (c Calibration) OK() bool { return c.Error == "" && c.Gap.OK }

// Calibrate runs cfg.Strategy on every target (Matrix, cfg.Parallel at
// once), then on each target's twin in virtual time with the same exits,
// duration, seed and URL count, and compares the two runs' whole-run
// utilization and 429 ratio (calibrate.Compare). It returns one
// Calibration per target, in order; the error joins the runs that failed
// (a twin out of tolerance is not an error: see Calibration.OK).
func Calibrate(ctx context.Context, cfg CalibrationConfig) ([]Calibration, error) {
	for _, t := range cfg.Targets {
		if t.Twin == "" {
			return nil, errNoTwin(t) // refused before any run starts
		}
	}
	if cfg.Strategy.New == nil {
		cfg.Strategy, _ = strategy.ByName(strategy.Exitgate)
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 60 * time.Second
	}
	if cfg.Exits <= 0 {
		cfg.Exits = 10
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	results, err := Matrix(ctx, MatrixConfig{
		Targets: cfg.Targets, Strategies: []strategy.Spec{cfg.Strategy}, Exits: cfg.Exits, Duration: cfg.Duration,
		Parallel: cfg.Parallel, FirstIP: cfg.FirstIP, Dir: cfg.Dir, Seed: cfg.Seed, TargetLead: cfg.TargetLead, Log: cfg.Log, ProgressEvery: cfg.ProgressEvery,
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	errs := []error{err}
	out := make([]Calibration, len(cfg.Targets))
	for i, t := range cfg.Targets {
		out[i] = Calibration{Target: t.Name, Twin: t.Twin, Real: results[i]}
		if results[i].Error != "" {
			out[i].Error = results[i].Error
			continue
		}
		c, err := CompareTwin(ctx, t, results[i], cfg.Tolerance)
		if err != nil {
			out[i].Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", t.Twin, err))
			continue
		}
		out[i] = c
	}
	return out, errors.Join(errs...)
}

// CompareTwin runs the strategy of a real run on the target's twin with the
// run's exits, duration, seed and URL count, started at the same instant
// within a second and with the server up as long before the first request
// (calibrate.Run's Phase and Uptime), and compares the two.
func CompareTwin(ctx context.Context, t Target, real Result, tol calibrate.Tolerance) (Calibration, error) {
	c := Calibration{Target: t.Name, Twin: t.Twin, Real: real}
	g, err := calibrate.Check(ctx, calibrate.Run{
		Scenario: t.Twin, Strategy: real.Strategy, Exits: real.Exits,
		Duration: time.Duration(real.DurationSeconds * float64(time.Second)), URLs: real.URLs, Seed: real.Seed,
		Phase:  time.Duration(real.Start.Nanosecond()),
		Uptime: time.Duration(real.TargetLead * float64(time.Second)),
	}, real.Server, tol)
	if err != nil {
		return c, err
	}
	c.Gap = g
	return c, nil
}

// CalibrationMarkdown writes one row per target: the twin's and the real
// run's whole-run utilization and 429 ratio, the gaps in points (twin minus
// real) and the verdict.
func CalibrationMarkdown(w io.Writer, command string, cs []Calibration) error {
	var b strings.Builder
	if command != "" {
		fmt.Fprintf(&b, "Command: `%s`\n\n", command)
	}
	tol := calibrate.DefaultTolerance
	fmt.Fprintf(&b, "Whole-run utilization / 429 ratio, measured from each server's record of requests (sim/measure); a twin passes within %.0f points of utilization and %.0f point of 429 ratio.\n\n",
		100*tol.Utilization, 100*tol.Ratio429)
	b.WriteString("| target | twin: utilization / 429 | real: utilization / 429 | gap: utilization / 429 (points) | verdict |\n")
	b.WriteString("|---|---:|---:|---:|---|\n")
	pass := 0
	for _, c := range cs {
		if c.Error != "" {
			fmt.Fprintf(&b, "| %s | | | | failed: %s |\n", c.Target, strings.ReplaceAll(firstLine(c.Error), "|", "/"))
			continue
		}
		g := c.Gap
		verdict := "pass"
		if !c.OK() {
			verdict = "**OUT**"
		} else {
			pass++
		}
		fmt.Fprintf(&b, "| %s | %.1f%% / %.2f%% | %.1f%% / %.2f%% | %+.1f / %+.2f | %s |\n", c.Target,
			100*g.Twin.Utilization, 100*g.Twin.Ratio429, 100*g.Real.Utilization, 100*g.Real.Ratio429,
			100*g.Utilization, 100*g.Ratio429, verdict)
	}
	fmt.Fprintf(&b, "\n%d of %d twins within tolerance.\n", pass, len(cs))
	_, err := io.WriteString(w, b.String())
	return err
}
