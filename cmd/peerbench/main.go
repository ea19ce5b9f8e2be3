// Command peerbench measures exitgate and the baseline strategies against
// real third-party rate limiters on loopback, behind real tinyproxy exits:
// flags and wiring only; the bench is internal/peerbench.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/exitgate/exitgate/internal/peerbench"
	"github.com/exitgate/exitgate/sim/strategy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `peerbench crawls real rate limiters (nginx limit_req, haproxy stick tables,
golang.org/x/time/rate, go-chi/httprate, Python flask-limiter, Node
express-rate-limit), each keyed on
the client IP, through N tinyproxy exits bound to 127.0.0.11, .12, ..., with
exitgate and the baseline strategies, and measures every run from the
server's own access log (sim/measure). Each run starts its own server and its
own exits and lasts --duration; targets x strategies run in turn, --parallel
at once.

Writes to --out: peerbench.md (a table per target), peerbench.json
(everything, with timelines), <target>.svg (successes and 429s per second per
strategy) and runs/<target>/<strategy>/ (the server's config and access log,
the proxies file, the crawl's output). Prints the Markdown (or, with --json,
the JSON) and exits 1 if any run failed.

With --calibrate it runs one strategy (exitgate unless --strategies names
another) on each target and on its simulated twin (sim/server, twin-<target>)
with the same exits, duration and URL count, and prints, per target, both
sides' whole-run utilization and 429 ratio, the gaps and the verdict (a twin
passes within 5 points of utilization and 1 point of 429 ratio); it writes
calibration.md and calibration.json to --out and exits 1 if a twin is out of
tolerance.

Needs Debian's nginx, haproxy, tinyproxy, python3-flask-limiter and nodejs
with npm (the Node targets' modules, express-rate-limit, fastify with
@fastify/rate-limit, rate-limiter-flexible, restify, hono with
hono-rate-limiter, koa with koa-ratelimit and hapi with hapi-rate-limit,
pinned, are installed into the user cache once); the held-out targets need
ruby-rack-attack, ruby-activesupport and puma, varnish and varnish-modules,
and apache2 with libapache2-mod-qos and libapache2-mod-evasive.

Usage:
  go run ./cmd/peerbench [flags]

Targets:
%s
Strategies:
%s
Flags:
`

type flags struct {
	targets, strategies []string
	exits, parallel     int
	workers             int
	duration, progress  time.Duration
	lead                time.Duration
	out, crawlBinary    string
	firstExit           string
	json, calibrate     bool
	seed                uint64
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("peerbench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var f flags
	fs.StringSliceVar(&f.targets, "targets", []string{"all"}, "`NAMES` of the targets to run, comma-separated; all (every target with a twin) or holdout (every held-out target)")
	fs.StringSliceVar(&f.strategies, "strategies", []string{"all"}, "`NAMES` of the strategies to run, comma-separated, or all (exitgate and every baseline); with --crawl-binary the default is exitgate")
	fs.IntVar(&f.exits, "exits", 10, "`N` tinyproxy exits per run, each bound to its own 127.0.0.x address")
	fs.DurationVar(&f.duration, "duration", 120*time.Second, "length of each run")
	fs.StringVar(&f.out, "out", "peerbench-out", "`DIR` for the report, the JSON, the SVGs and each run's files")
	fs.BoolVar(&f.json, "json", false, "print the JSON report instead of the Markdown tables")
	fs.StringVar(&f.crawlBinary, "crawl-binary", "", "`PATH` of an exitgate binary (go build -o exitgate ./cmd/exitgate): each run is exitgate crawl --proxies FILE --duration D --ignore-robots URLFILE --out DIR, with default flags otherwise (exitgate strategy only), read from its summary.json; empty: the engine runs in-process")
	fs.IntVar(&f.workers, "workers", 1, "`N` exitgate crawl processes per run, with --crawl-binary only: above 1, each run starts its own redis-server and N workers at once (exitgate crawl --redis URL --crawl TARGET --proxies FILE --duration D --ignore-robots --out RUNDIR/wK URLFILE), sharing the exits and the URL file; the server's log measures them together, and the report counts URLs finished twice (by two workers, or twice in one results.jsonl); each worker's stderr is RUNDIR/exitgate-crawl-wK.stderr; 1: one crawl process, no Redis")
	fs.StringVar(&f.firstExit, "first-exit", peerbench.DefaultFirstIP.String(), "`ADDR` of the first run's first exit, in 127.0.0.0/8; the runs take --exits addresses each from it on (two peerbench runs at once need ranges apart)")
	fs.IntVar(&f.parallel, "parallel", 1, "`N` runs at once, each with its own server instance and its own range of exit addresses")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the strategies' random choices (timing is real, so runs still vary)")
	fs.DurationVar(&f.lead, "target-lead", 0, "how long each target runs before its crawl starts (at least: the exits start after it); a limiter whose windows start with its server (httprate) then meets the crawl at that point of its window; 0: as soon as the exits are up")
	fs.DurationVar(&f.progress, "progress", 10*time.Second, "interval of each run's progress line on stderr")
	fs.BoolVar(&f.calibrate, "calibrate", false, "compare each target with its simulated twin: one strategy (default exitgate) on both, the same exits, duration and URL count; prints the calibration table")
	fs.Usage = func() {
		fmt.Fprintf(stderr, usage, listTargets(), listStrategies())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		// ContinueOnError prints nothing itself: exit 2 alone said
		// nothing of the flag.
		fmt.Fprintf(stderr, "peerbench: %v; run 'peerbench --help' for the flags\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "peerbench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if (f.crawlBinary != "" || f.calibrate) && !fs.Changed("strategies") {
		f.strategies = []string{strategy.Exitgate}
	}
	cfg, err := config(f)
	if err != nil {
		fmt.Fprintln(stderr, "peerbench:", err)
		return 2
	}
	cfg.Log = stderr
	if f.calibrate {
		return calibrate(ctx, f, cfg, "go run ./cmd/peerbench "+strings.Join(args, " "), stdout, stderr)
	}
	started := time.Now()
	results, runErr := peerbench.Matrix(ctx, cfg)
	mode := "in-process engine (sim/run.Live)"
	if f.crawlBinary != "" {
		mode = "exitgate crawl binary " + f.crawlBinary
	}
	rep := peerbench.Report{
		Command: "go run ./cmd/peerbench " + strings.Join(args, " "), Started: started,
		Exits: cfg.Exits, DurationSeconds: cfg.Duration.Seconds(), Parallel: cfg.Parallel, Workers: cfg.Workers, Mode: mode,
		Targets: cfg.Targets, Strategies: peerbench.Infos(cfg.Strategies), Results: ran(results),
	}
	if err := write(f, rep, stdout); err != nil {
		fmt.Fprintln(stderr, "peerbench:", err)
		return 1
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "peerbench:", runErr)
		return 1
	}
	return 0
}

func config(f flags) (peerbench.MatrixConfig, error) {
	targets, err := peerbench.SelectTargets(f.targets)
	if err != nil {
		return peerbench.MatrixConfig{}, fmt.Errorf("--targets: %w", err)
	}
	var specs []strategy.Spec
	if len(f.strategies) == 1 && f.strategies[0] == "all" {
		// The told reference too: on a real server it is the mark of
		// what even pacing under the true limit reaches there.
		specs = append(strategy.All(), strategy.Reference())
	} else {
		for _, n := range f.strategies {
			s, ok := strategy.ByName(n)
			if !ok {
				return peerbench.MatrixConfig{}, fmt.Errorf("--strategies: unknown strategy %q (known: %s)", n, strings.Join(strategy.Names(), ", "))
			}
			specs = append(specs, s)
		}
	}
	switch {
	case f.exits < 1:
		return peerbench.MatrixConfig{}, fmt.Errorf("--exits %d: want at least 1", f.exits)
	case f.workers < 1:
		return peerbench.MatrixConfig{}, fmt.Errorf("--workers %d: want at least 1", f.workers)
	case f.workers > 1 && f.crawlBinary == "":
		return peerbench.MatrixConfig{}, fmt.Errorf("--workers %d: needs --crawl-binary (the in-process engine is one process)", f.workers)
	case f.parallel < 1:
		return peerbench.MatrixConfig{}, fmt.Errorf("--parallel %d: want at least 1", f.parallel)
	case f.duration < time.Second:
		return peerbench.MatrixConfig{}, fmt.Errorf("--duration %v: want at least 1s", f.duration)
	case f.lead < 0:
		return peerbench.MatrixConfig{}, fmt.Errorf("--target-lead %v: want 0 or more", f.lead)
	case f.progress <= 0:
		return peerbench.MatrixConfig{}, fmt.Errorf("--progress %v: want above 0", f.progress)
	}
	first, err := netip.ParseAddr(f.firstExit)
	if err != nil {
		return peerbench.MatrixConfig{}, fmt.Errorf("--first-exit %q: %w", f.firstExit, err)
	}
	if _, err := peerbench.ExitAddrs(first, f.exits*f.parallel); err != nil {
		return peerbench.MatrixConfig{}, fmt.Errorf("--first-exit: %w", err)
	}
	bin := ""
	if f.crawlBinary != "" {
		if bin, err = filepath.Abs(f.crawlBinary); err != nil {
			return peerbench.MatrixConfig{}, fmt.Errorf("--crawl-binary: %w", err)
		}
		if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return peerbench.MatrixConfig{}, fmt.Errorf("--crawl-binary %s: not an executable file (%v)", f.crawlBinary, err)
		}
		for _, s := range specs {
			if s.Name != strategy.Exitgate {
				return peerbench.MatrixConfig{}, fmt.Errorf("--crawl-binary: %w, not %s", peerbench.ErrBinaryStrategy, s.Name)
			}
		}
	}
	out, err := filepath.Abs(f.out)
	if err != nil {
		return peerbench.MatrixConfig{}, fmt.Errorf("--out: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return peerbench.MatrixConfig{}, fmt.Errorf("--out: %w", err)
	}
	return peerbench.MatrixConfig{
		Targets: targets, Strategies: specs, Exits: f.exits, Duration: f.duration, Parallel: f.parallel,
		Dir: out, CrawlBinary: bin, Workers: f.workers, FirstIP: first, Seed: f.seed, TargetLead: f.lead, ProgressEvery: f.progress,
	}, nil
}

// calibrate runs peerbench.Calibrate and writes its table.
func calibrate(ctx context.Context, f flags, cfg peerbench.MatrixConfig, command string, stdout, stderr io.Writer) int {
	if cfg.CrawlBinary != "" || len(cfg.Strategies) != 1 {
		fmt.Fprintln(stderr, "peerbench: --calibrate runs one strategy in-process: no --crawl-binary, one --strategies")
		return 2
	}
	cs, runErr := peerbench.Calibrate(ctx, peerbench.CalibrationConfig{
		Targets: cfg.Targets, Strategy: cfg.Strategies[0], Exits: cfg.Exits, Duration: cfg.Duration,
		Parallel: cfg.Parallel, Dir: cfg.Dir, Seed: cfg.Seed, TargetLead: cfg.TargetLead, Log: stderr, ProgressEvery: cfg.ProgressEvery,
	})
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "peerbench:", ctx.Err())
		return 1
	}
	var md, js strings.Builder
	if err := peerbench.CalibrationMarkdown(&md, command, cs); err != nil {
		fmt.Fprintln(stderr, "peerbench:", err)
		return 1
	}
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Command      string                  `json:"command"`
		Calibrations []peerbench.Calibration `json:"calibrations"`
	}{command, cs}); err != nil {
		fmt.Fprintln(stderr, "peerbench:", err)
		return 1
	}
	for name, content := range map[string]string{"calibration.md": md.String(), "calibration.json": js.String()} {
		if err := os.WriteFile(filepath.Join(f.out, name), []byte(content), 0o644); err != nil {
			fmt.Fprintln(stderr, "peerbench:", err)
			return 1
		}
	}
	out := md.String()
	if f.json {
		out = js.String()
	}
	if _, err := io.WriteString(stdout, out); err != nil {
		return 1
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "peerbench:", runErr)
		return 1
	}
	for _, c := range cs {
		if !c.OK() {
			return 1
		}
	}
	return 0
}

// ran leaves out the runs that never started (after an interrupt).
func ran(rs []peerbench.Result) []peerbench.Result {
	var out []peerbench.Result
	for _, r := range rs {
		if r.Target != "" {
			out = append(out, r)
		}
	}
	return out
}

// write saves the report, the JSON and one SVG per target in --out, and
// prints the Markdown or the JSON.
func write(f flags, rep peerbench.Report, stdout io.Writer) error {
	var md, js strings.Builder
	if err := peerbench.Markdown(&md, rep); err != nil {
		return err
	}
	if err := peerbench.WriteJSON(&js, rep); err != nil {
		return err
	}
	files := map[string]string{"peerbench.md": md.String(), "peerbench.json": js.String()}
	for _, t := range rep.Targets {
		if rs := rep.ResultsFor(t.Name); len(rs) > 0 {
			var svg strings.Builder
			if err := peerbench.SVG(&svg, t, rep.Exits, rs); err != nil {
				return err
			}
			files[t.Name+".svg"] = svg.String()
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(f.out, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	out := md.String()
	if f.json {
		out = js.String()
	}
	_, err := io.WriteString(stdout, out)
	return err
}

func listTargets() string {
	var b strings.Builder
	for _, t := range peerbench.Targets() {
		fmt.Fprintf(&b, "  %-26s %s\n", t.Name, t.Describe())
	}
	b.WriteString("Held out (--targets holdout: limiters the learner was not tuned on, no twin):\n")
	for _, t := range peerbench.Holdouts() {
		fmt.Fprintf(&b, "  %-26s %s\n", t.Name, t.Describe())
	}
	return b.String()
}

func listStrategies() string {
	var b strings.Builder
	for _, s := range append(strategy.All(), strategy.Reference()) {
		fmt.Fprintf(&b, "  %-26s %s\n", s.Name, s.Summary)
	}
	return b.String()
}
