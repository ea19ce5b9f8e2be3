package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	simrun "github.com/exitgate/exitgate/sim/run"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

type benchFlags struct {
	scenario    string
	strategy    string
	json        bool
	out         string
	exits       int
	urls        int
	seed        uint64
	warmup      time.Duration
	maxTime     time.Duration
	parallel    int
	concurrency int
	real        bool
	duration    time.Duration
}

func newBenchCmd() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Compare exitgate with the baseline strategies on simulated rate-limited sites",
		Long: `bench runs every strategy on every scenario (or the ones named) against a
simulated site and a simulated pool of exits, with the production fetch engine
and limiter code, and reports for each: utilization (successes over what the
server allows the pool), 429 ratio, 429s while learning, time to settle, bans,
retries per success and time to finish a fixed URL set. Utilization, 429
ratios, settling and learning 429s are measured by sim/measure from the
simulated server's own record of requests, as the real-limiter harness
measures a real server's log. Figures "after warmup" leave out the first
--warmup of each run, while the limiters learn; "settle" is when every exit's
success rate entered and stayed within 90-100% of its limit.

By default it runs in virtual time: a discrete-event simulation, deterministic
for a --seed, that crawls hours of traffic in seconds; --duration 120s stops
each run after 120 s of virtual time and measures exactly that span (the
acceptance check's length), while the default runs until the URL set is done.
With --real it uses real sockets on loopback instead: the site listens on
127.0.0.1, every exit is a proxy dialing from its own 127.0.0.x address, and
each run is capped by --duration (30 s when unset).

--scenario takes names, or the groups all, classic (the first list below),
twins (simulated twins of the real limiters of go run ./cmd/peerbench, each
named twin-<target>: nginx, HAProxy, x/time/rate, go-chi/httprate,
flask-limiter, express-rate-limit) and wide (a short crawl, reputation tiers,
two limits at once, 100 hosts at once).

Scenarios:
` + scenarioHelp() + `
Strategies:
` + strategyHelp(),
		Example: `  exitgate bench
  exitgate bench --scenario per-ip-token-bucket --json
  exitgate bench --scenario twins --strategy exitgate --duration 120s
  exitgate bench --out bench-out        # also writes one SVG chart per scenario
  exitgate bench --scenario per-ip-gcra --strategy exitgate --exits 10000 --urls 1000000 --concurrency 1024`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.real {
				// Virtual time's alone: accepted, they did nothing.
				for _, name := range []string{"max-time", "parallel"} {
					if cmd.Flags().Changed(name) {
						return usageError(fmt.Errorf("--%s does nothing with --real (a virtual-time cap or count of runs at once)", name))
					}
				}
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", "all", "scenario to run, or all; a comma-separated list works too; a twin at other parameters as twin-NAME:quota=N:window=D:retry-after=D:burst=N (any of the fields; burst is the model's, nginx's burst plus one); a Varnish bucket as block-bucket-NAME:... or mod_evasive as apache-evasive-NAME:..., with block=D too; refuse=403 answers the refusals with a bare 403")
	fl.StringVar(&f.strategy, "strategy", "all", "strategy to run, or all; a comma-separated list works too")
	fl.BoolVar(&f.json, "json", false, `print {"scenarios": [{"name", "kind", "headers", "results": [{"strategy", "utilization", "ratio_429", "bans", "retries_per_success", "seconds_to_finish", ...}]}]} instead of tables; utilization and ratio_429 leave out the first --warmup, as the targets do (utilization_whole_run and ratio_429_whole_run include it); settle_seconds (-1: never) and learning_429s; hosts holds per-host figures of a multi-host scenario`)
	fl.StringVar(&f.out, "out", "", "directory to write bench.md, bench.json and one SVG chart per scenario (rate and 429s over time per strategy)")
	fl.IntVar(&f.exits, "exits", 20, "number of exits in the simulated pool")
	fl.IntVar(&f.urls, "urls", 0, "size of the fixed URL set per scenario; 0 means what a perfect client fetches in 10 minutes (200 with --real)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of every random choice; a virtual-time run is repeatable for a seed")
	fl.DurationVar(&f.warmup, "warmup", simrun.DefaultWarmup, `the "first window" left out of the steady-state figures`)
	fl.DurationVar(&f.maxTime, "max-time", 24*time.Hour, "virtual time cap of one run; URLs left then count as unfinished")
	fl.IntVar(&f.parallel, "parallel", 0, "runs at once in virtual time; 0 means one per CPU (results do not depend on it)")
	fl.IntVar(&f.concurrency, "concurrency", 0, "override every strategy's requests in flight (and exitgate's in-flight caps), for large pools; 0 keeps each strategy's own")
	fl.BoolVar(&f.real, "real", false, "use real sockets on loopback and real time instead of virtual time")
	fl.DurationVar(&f.duration, "duration", 0, "stop each run after this long and measure that span (virtual time; with --real, real time, 30s when unset); 0 runs the URL set to its end")
	return cmd
}

func scenarioHelp() string {
	var b strings.Builder
	for i, g := range [][]server.Scenario{server.Scenarios(), server.Twins(), server.Wide()} {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, s := range g {
			fmt.Fprintf(&b, "  %-31s %s\n", s.Name, s.Description)
		}
	}
	return b.String()
}

// scenarioGroups are the names --scenario accepts for several scenarios.
var scenarioGroups = map[string]func() []server.Scenario{
	"all": server.All, "classic": server.Scenarios, "twins": server.Twins, "wide": server.Wide,
}

func strategyHelp() string {
	var b strings.Builder
	for _, s := range strategy.All() {
		fmt.Fprintf(&b, "  %-22s %s\n", s.Name, s.Summary)
	}
	r := strategy.Reference()
	fmt.Fprintf(&b, "  %-22s %s (by name only: not in all)\n", r.Name, r.Summary)
	return b.String()
}

func pickScenarios(arg string) ([]server.Scenario, error) {
	if arg == "" {
		arg = "all"
	}
	var out []server.Scenario
	for _, n := range strings.Split(arg, ",") {
		if g := scenarioGroups[strings.TrimSpace(n)]; g != nil {
			out = append(out, g()...)
			continue
		}
		if strings.Contains(n, ":") {
			s, err := server.TwinVariant(strings.TrimSpace(n))
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			continue
		}
		s, ok := server.ScenarioByName(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("unknown scenario %q (see exitgate bench --help)", n)
		}
		out = append(out, s)
	}
	return out, nil
}

// checkBenchFlags refuses a value out of its flag's range, naming the flag
// (one message named them all; --exits 100000000 took 2.35 GB).
func checkBenchFlags(f benchFlags) error {
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{
		{"--exits", f.exits, 1, 100_000},
		{"--urls", f.urls, 0, 10_000_000},
		{"--concurrency", f.concurrency, 0, maxConcurrency},
		{"--parallel", f.parallel, 0, 1024},
	} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s %d: want %d to %d", c.name, c.v, c.lo, c.hi)
		}
	}
	return checkDurations([]durationFlag{
		{"--warmup", f.warmup, true, 0},
		{"--max-time", f.maxTime, false, 0},
		{"--duration", f.duration, true, 0},
	})
}

func pickStrategies(arg string) ([]strategy.Spec, error) {
	if arg == "" || arg == "all" {
		return strategy.All(), nil
	}
	var out []strategy.Spec
	for _, n := range strings.Split(arg, ",") {
		s, ok := strategy.ByName(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("unknown strategy %q (one of %s)", n, strings.Join(strategy.Names(), ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

func runBench(ctx context.Context, stdout, stderr io.Writer, f benchFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	scs, err := pickScenarios(f.scenario)
	if err != nil {
		return usageError(err)
	}
	specs, err := pickStrategies(f.strategy)
	if err != nil {
		return usageError(err)
	}
	if err := checkBenchFlags(f); err != nil {
		return usageError(err)
	}
	if f.real && !slices.ContainsFunc(scs, realRunnable) {
		// Every scenario named skipped: it printed an empty report and
		// exited 0.
		return usageError(fmt.Errorf("--real: none of the scenarios named runs on real sockets (a rotating gateway, or many hosts, is simulated in virtual time only)"))
	}
	start := time.Now()
	var rs []simrun.ScenarioResult
	if f.real {
		rs, err = benchReal(ctx, stderr, f, scs, specs)
	} else {
		rs, err = simrun.Matrix(ctx, simrun.MatrixConfig{
			Scenarios: scs, Strategies: specs, Parallel: f.parallel,
			Base: simrun.Config{Exits: f.exits, URLs: f.urls, Seed: f.seed, Warmup: f.warmup, MaxTime: f.maxTime, Concurrency: f.concurrency, Duration: f.duration},
		})
	}
	if err != nil {
		return err
	}
	wall := time.Since(start)
	doc := simrun.Report{Scenarios: rs}
	if f.out != "" {
		if err := writeBenchOut(f.out, doc); err != nil {
			return err
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	if err := simrun.Markdown(stdout, rs); err != nil {
		return err
	}
	mode := "virtual time"
	if f.real {
		mode = "real sockets"
	}
	fmt.Fprintf(stdout, "%d scenarios × %d strategies in %s, %.1f s wall.\n", len(scs), len(specs), mode, wall.Seconds())
	return nil
}

// realRunnable reports whether a scenario runs on real sockets (--real).
func realRunnable(sc server.Scenario) bool { return sc.Kind != server.Rotating && len(sc.Hosts) == 0 }

func benchReal(ctx context.Context, stderr io.Writer, f benchFlags, scs []server.Scenario, specs []strategy.Spec) ([]simrun.ScenarioResult, error) {
	urls := f.urls
	if urls == 0 {
		urls = 200
	}
	if f.duration == 0 {
		f.duration = 30 * time.Second
	}
	var out []simrun.ScenarioResult
	for _, sc := range scs {
		if sc.Kind == server.Rotating {
			fmt.Fprintf(stderr, "skipping %s: %v\n", sc.Name, simrun.ErrRealRotating)
			continue
		}
		if len(sc.Hosts) > 0 {
			fmt.Fprintf(stderr, "skipping %s: %v\n", sc.Name, simrun.ErrRealHosts)
			continue
		}
		sr := simrun.ScenarioResult{Name: sc.Name, Description: sc.Description, Kind: sc.Kind, Headers: server.HeadersLabel(sc.Config), URLs: urls}
		for _, spec := range specs {
			fmt.Fprintf(stderr, "%s / %s ...\n", sc.Name, spec.Name)
			r, err := simrun.Real(ctx, simrun.RealConfig{Scenario: sc, Strategy: spec, Exits: f.exits, URLs: urls, Duration: f.duration, Seed: f.seed, Warmup: f.warmup})
			if err != nil {
				return nil, fmt.Errorf("%s / %s: %w", sc.Name, spec.Name, err)
			}
			sr.Results = append(sr.Results, r)
		}
		out = append(out, sr)
	}
	return out, nil
}

func writeBenchOut(dir string, doc simrun.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	if err := simrun.Markdown(&md, doc.Scenarios); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	for _, s := range doc.Scenarios {
		var b strings.Builder
		if err := simrun.SVG(&b, s); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, s.Name+".svg"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
