package peerbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/sim/calibrate"
	"github.com/exitgate/exitgate/sim/strategy"
)

// floors are what exitgate must hold against real limiters in 60 s runs
// through 10 tinyproxy exits, measured from each server's own access log.
// They start at what today's learner reliably achieves, minus a margin for
// a busy machine; tighten them as the learner improves. binary runs the
// `exitgate crawl` binary as the acceptance check does.
//
// Measured 2026-12-01 on a 2-core machine, three or four runs at once:
// first with the first learner, some under heavy load from other work
// (utilization after 30 s in each repeat; 429 ratio of the whole run), then
// with the rebuilt learner while six peerbench runs went on alongside:
//
//	                                first learner                        rebuilt
//	nginx-1r-s            engine:  86.7% 86.7% 86.7% 86.7%   0.23%        94.0%   0.75%
//	nginx-1r-s            binary:  83.7% 83.7%               0.23%        94.0%   0.75%
//	haproxy-20-per-10s    engine:  69.8% 70.5% 70.5% 69.8%   5.31-5.33%   70.7%   0.33%
//	httprate-30-per-10s   engine:  69.7% 65.8% 68.3% 73.7%   0%           96.7%   0%
type floor struct {
	target         string
	binary         bool
	minUtilAfter30 float64 // successes after the first 30 s over what the exits were allowed
	max429         float64 // 429s over all requests, whole run
}

var floors = []floor{
	{"nginx-1r-s", false, 0.80, 0.02},
	{"nginx-1r-s", true, 0.80, 0.02},
	{"haproxy-20-per-10s", false, 0.60, 0.03},
	{"httprate-30-per-10s", false, 0.85, 0.01},
	{"nginx-10r-s-burst5", false, 0.85, 0.01},
	// restify's bucket of 10 refilled at 1/s tells its rate in
	// X-RateLimit-Rate: read, the lanes pace at it from their first
	// answers (96.7% after 30 s over 120 s); unread, its first run and
	// recovery read as 16 per 10 s, and the search from there sat at
	// 84-86% after 30 s.
	{"restify-1-per-s-burst10-headers", false, 0.90, 0.01},
}

// calibrated are the targets TestCalibration holds to their twins, one per
// twin model that reads a different signal: nginx's millisecond leaky
// bucket holding a burst (without nodelay), x/time/rate's token bucket with
// a burst of 10 at 10/s, httprate's sliding-window counter with its
// X-RateLimit headers, and flask-limiter's moving window with its Reset
// from the newest hit and Retry-After on every response. Each one's 60-s
// runs repeat. nginx-1r-s's do not under the whole suite's load (with no
// burst, one request sent late draws a 429), nor haproxy-20-per-10s's with
// today's learner (whether the explorer's quick retry after its first 429
// lands just after a period boundary, and passes, decides between a bucket
// and a window reading: the twin reads a window, the real run at times a
// bucket), nor nginx-10r-s-burst5's (its burst of 5 at 10/s lets the
// ramp's one-second run at 15.5/s through for about 0.9 s: whether the run
// outlasts it, which the suite's load decides, makes the first 429 read as
// a burst and the search start from the count, 70% over 60 s as its twin,
// or as a bucket's pace, 79%): those are held to floors only.
var calibrated = []string{"nginx-2r-s-burst4-delay", "xrate-10-s-burst10", "httprate-30-per-10s", "flask-moving-20-per-min"}

// suiteRun is one real run of the suite: a target crawled by the exitgate
// strategy, in-process or through the crawl binary.
type suiteRun struct {
	target string
	binary bool
}

func (r suiteRun) name() string {
	if r.binary {
		return r.target + "/crawl-binary"
	}
	return r.target
}

// suiteDuration is each real run's length in the suite.
const suiteDuration = 60 * time.Second

// runAll makes the runs all at once, each on its own server and its own
// range of exit addresses (not t.Parallel: that would run only GOMAXPROCS
// at once), and returns their results in order.
func runAll(t *testing.T, runs []suiteRun) ([]Result, []error, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real limiters for 60 s each: skipped with -short")
	}
	for _, bin := range []string{"nginx", "haproxy", "tinyproxy"} {
		peertest.Require(t, bin)
	}
	spec, _ := strategy.ByName(strategy.Exitgate)
	base := t.TempDir()
	cfgs := make([]RunConfig, len(runs))
	for i, r := range runs {
		targets, err := SelectTargets([]string{r.target})
		if err != nil {
			t.Fatal(err)
		}
		addrs, err := ExitAddrs(DefaultFirstIP, 10*(i+1))
		if err != nil {
			t.Fatal(err)
		}
		cfgs[i] = RunConfig{Target: targets[0], Strategy: spec, Exits: 10, FirstIP: addrs[10*i], Duration: suiteDuration,
			// Side by side, never nested: a run empties its own directory
			// first, and nginx-1r-s's would take nginx-1r-s/crawl-binary
			// with it while that run was starting.
			Dir: filepath.Join(base, strings.ReplaceAll(r.name(), "/", "-"))}
		if r.binary {
			cfgs[i].CrawlBinary = buildExitgate(t)
		}
	}
	results, errs := runSideBySide(cfgs)
	dirs := make([]string, len(cfgs))
	for i, cfg := range cfgs {
		dirs[i] = cfg.Dir
	}
	return results, errs, dirs
}

// runSideBySide runs every cfg at once, each bounded by the suite's
// duration and a few minutes, and returns their results in order.
func runSideBySide(cfgs []RunConfig) ([]Result, []error) {
	results := make([]Result, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), suiteDuration+4*time.Minute)
			defer cancel()
			results[i], errs[i] = Run(ctx, cfg)
		})
	}
	wg.Wait()
	return results, errs
}

// logLearner writes a failed run's learning decisions (the limit.log an
// in-process run leaves in dir, the limiter's lines of the crawl binary's
// stderr) to the test's output: a run that misses its floor under CI's
// load is then read from CI's output, not guessed at.
func logLearner(t *testing.T, dir string) {
	t.Helper()
	if t.Failed() {
		printLearner(t, dir)
	}
}

// printLearner writes a run's learning decisions to the test's output.
func printLearner(t *testing.T, dir string) {
	t.Helper()
	// exitgate-crawl-wK.stderr: each worker's, when the run had workers.
	crawls, _ := filepath.Glob(filepath.Join(dir, "exitgate-crawl*.stderr"))
	for _, p := range append([]string{filepath.Join(dir, "limit.log")}, crawls...) {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			var lines []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, `msg="limit:`) {
					lines = append(lines, l)
				}
			}
			if len(lines) > 80 {
				lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-80)}, lines[len(lines)-80:]...)
			}
			t.Logf("the learner's decisions (%s):\n%s", p, strings.Join(lines, "\n"))
		}
	}
}

// rerunMissed runs again, once, all at once, the runs whose figures missed
// (miss says how; "" when they held), and puts the second run's result in
// place of the first: a real run measured on the wall clock of a shared
// 2-core machine now and then loses seconds that are not the learner's
// (nginx-1r-s read 77.7% after 30 s in one suite run alone, 95-97% in
// every repeat), and a learner that misses for its own reasons misses
// twice. The first run's figures and decisions stay in the test's output.
func rerunMissed(t *testing.T, runs []suiteRun, results []Result, errs []error, dirs []string, miss func(i int, r Result) string) {
	t.Helper()
	var again []int
	for i := range runs {
		if errs[i] != nil {
			continue
		}
		if why := miss(i, results[i]); why != "" {
			t.Logf("%s missed on its first run (%s; %s): run again", runs[i].name(), why, results[i].Summary())
			printLearner(t, dirs[i])
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return
	}
	sub := make([]suiteRun, len(again))
	for k, i := range again {
		sub[k] = runs[i]
	}
	r2, e2, d2 := runAll(t, sub)
	for k, i := range again {
		results[i], errs[i], dirs[i] = r2[k], e2[k], d2[k]
	}
}

// floorMiss says how r misses f's floors, or "".
func floorMiss(f floor, r Result) string {
	if u := r.Server.UtilizationAfter30; u < f.minUtilAfter30 {
		return fmt.Sprintf("utilization after 30 s = %.3f, want >= %.2f", u, f.minUtilAfter30)
	}
	if q := r.Server.Ratio429; q > f.max429 {
		return fmt.Sprintf("429 ratio = %.4f (%d of %d), want <= %.2f", q, r.Server.Limited, r.Server.Requests, f.max429)
	}
	return ""
}

// TestRealLimiters crawls real third-party rate limiters (nginx limit_req,
// an haproxy stick table that counts denied requests, go-chi/httprate with
// its X-RateLimit headers) with the exitgate strategy for 60 s each, all at
// once, and checks every URL is accounted for, the server's log agrees
// with the client, and the floors above hold. One run goes through the
// `exitgate crawl` binary.
func TestRealLimiters(t *testing.T) {
	runs := make([]suiteRun, len(floors))
	for i, f := range floors {
		runs[i] = suiteRun{f.target, f.binary}
	}
	results, errs, dirs := runAll(t, runs)
	rerunMissed(t, runs, results, errs, dirs, func(i int, r Result) string { return floorMiss(floors[i], r) })
	for i, f := range floors {
		t.Run(runs[i].name(), func(t *testing.T) {
			defer logLearner(t, dirs[i])
			res, err := results[i], errs[i]
			peertest.Check(t, err)
			checkRun(t, res)
			if why := floorMiss(f, res); why != "" {
				t.Error(why)
			}
		})
	}
}

// TestCalibration holds each calibrated target's twin to it: the exitgate
// strategy runs on the real targets for 60 s through 10 exits, all four at
// once (after TestRealLimiters' runs, not beside them: the machine's load
// is part of what a twin models), then on each twin in virtual time with
// the same exits, duration, seed and URL count, the same phase and the
// server up as long; the whole-run utilization may differ by 5 points and
// the 429 ratio by 1 (calibrate.DefaultTolerance). `go run ./cmd/peerbench
// --calibrate` does the same for every target.
func TestCalibration(t *testing.T) {
	runs := make([]suiteRun, len(calibrated))
	for i, name := range calibrated {
		runs[i] = suiteRun{name, false}
	}
	results, errs, dirs := runAll(t, runs)
	twin := func(name string, r Result) (Calibration, error) {
		targets, err := SelectTargets([]string{name})
		if err != nil {
			return Calibration{}, err
		}
		return CompareTwin(context.Background(), targets[0], r, calibrate.Tolerance{})
	}
	rerunMissed(t, runs, results, errs, dirs, func(i int, r Result) string {
		if c, err := twin(calibrated[i], r); err == nil && !c.OK() {
			return fmt.Sprintf("%s: %v", c.Twin, c.Gap)
		}
		return ""
	})
	for i, name := range calibrated {
		t.Run(name, func(t *testing.T) {
			defer logLearner(t, dirs[i])
			res, err := results[i], errs[i]
			peertest.Check(t, err)
			checkRun(t, res)
			c, err := twin(name, res)
			if err != nil {
				t.Fatal(err)
			}
			if !c.OK() {
				t.Errorf("%s against %s: %v", c.Twin, name, c.Gap)
			} else {
				t.Logf("%s against %s: %v", c.Twin, name, c.Gap)
			}
		})
	}
}

// checkRun checks what every real run of the suite must show: every URL
// accounted for, one 200 per URL done, the server's log agreeing with the
// client, and a real run's worth of requests.
func checkRun(t *testing.T, r Result) {
	t.Helper()
	t.Logf("%s; %d 429s while learning, settled after %.0f s (-1: never)", r.Summary(), r.Server.LearningLimited, r.Server.SettleSeconds)
	if !r.Accounted() || r.RanDry {
		t.Errorf("URLs: %d done + %d abandoned + %d queued + %d parked of %d, want all accounted for and some left",
			r.Done, r.Abandoned, r.Queued, r.Parked, r.URLs)
	}
	if ok := r.ClientCounts.ByStatus[200]; r.Done != ok {
		t.Errorf("%d URLs done, %d responses 200 on the client: want one per URL", r.Done, ok)
	}
	if !r.Agree {
		t.Errorf("client and server disagree: %v", r.Mismatches)
	}
	if r.ClientCounts.Requests < 100 || r.Server.Requests < 100 {
		t.Errorf("client counted %d requests, server %d in the span: want a real run", r.ClientCounts.Requests, r.Server.Requests)
	}
}

// buildExitgate builds the exitgate command into a temporary directory.
func buildExitgate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "exitgate")
	if err := peertest.GoBuild(bin, "github.com/exitgate/exitgate/cmd/exitgate"); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestRerunSameDir runs one short crawl twice into the same directory: the
// second is measured from its own requests alone (the server once appended
// to the first run's access log, and the figures counted both).
func TestRerunSameDir(t *testing.T) {
	if testing.Short() {
		t.Skip("a real limiter twice for 5 s: skipped with -short")
	}
	for _, bin := range []string{"nginx", "tinyproxy"} {
		peertest.Require(t, bin)
	}
	targets, err := SelectTargets([]string{"nginx-1r-s"})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := strategy.ByName(strategy.Exitgate)
	addrs, err := ExitAddrs(DefaultFirstIP, 200)
	if err != nil {
		t.Fatal(err)
	}
	cfg := RunConfig{Target: targets[0], Strategy: spec, Exits: 3, FirstIP: addrs[190], Duration: 5 * time.Second, Dir: t.TempDir()}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := Run(ctx, cfg)
		cancel()
		peertest.Check(t, err)
		if !res.Agree || res.Server.Requests > 3*8 {
			t.Errorf("run %d: client and server agree = %v, %d requests in the server's log (3 exits at 1/s for 5 s: at most 24)", i+1, res.Agree, res.Server.Requests)
		}
	}
}

// workersFloors are what two `exitgate crawl --redis` workers sharing one
// crawl and 10 exits must hold in a 60 s run, from the server's log: the
// distributed mode must learn the limit as one process does, a searched
// one (nginx) and a declared one (go-limiter's headers, which the leader
// shares: a worker that joined after the leader read them held 0.25/s
// before). The runs are not repeated when they miss (that would double the
// test's minute), so the margin is wider than one binary's floor above.
//
// Measured 2026-12-04 on the 2-core machine, alone: nginx-1r-s, 2 workers,
// 60 s: 96.3% after 30 s, 0.36% 429s; 3 workers, 120 s (peerbench
// --workers 3): 95.7-95.9%, 0.18%; one binary, 120 s: 96.8%, 0.26%.
// golimiter-3-per-s, 2 workers, 60 s: 100%, 0% (88.3% on the learner
// before the declared pace was shared: its floor is set between); 3
// workers, 120 s: 97.7%, 0% (62.3% before).
var workersFloors = []floor{
	{"nginx-1r-s", true, 0.75, 0.02},
	{"golimiter-3-per-s", true, 0.92, 0.02},
}

// TestRealWorkers runs the distributed mode against real limiters: for each
// of workersFloors, two `exitgate crawl --redis` workers started together on
// one redis-server, the same exits and the same URL file, for 60 s, the
// targets side by side. It checks what every real run must show, the
// floors, that both workers finished URLs (the exits were shared out), and
// that no URL was finished twice across the workers' results.
func TestRealWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("two crawl workers against real limiters for 60 s: skipped with -short")
	}
	for _, bin := range []string{"nginx", "tinyproxy", "redis-server"} {
		peertest.Require(t, bin)
	}
	spec, _ := strategy.ByName(strategy.Exitgate)
	// Addresses no other test of the package uses (TestRerunSameDir's are
	// 190 on).
	addrs, err := ExitAddrs(DefaultFirstIP, 200+10*len(workersFloors))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildExitgate(t)
	cfgs := make([]RunConfig, len(workersFloors))
	for i, fl := range workersFloors {
		targets, err := SelectTargets([]string{fl.target})
		if err != nil {
			t.Fatal(err)
		}
		cfgs[i] = RunConfig{Target: targets[0], Strategy: spec, Exits: 10, FirstIP: addrs[200+10*i], Duration: suiteDuration,
			Dir: t.TempDir(), CrawlBinary: bin, Workers: 2}
	}
	results, errs := runSideBySide(cfgs)
	for i, fl := range workersFloors {
		t.Run(fl.target, func(t *testing.T) {
			res := results[i]
			peertest.Check(t, errs[i])
			defer logLearner(t, cfgs[i].Dir)
			checkRun(t, res)
			if why := floorMiss(fl, res); why != "" {
				t.Error(why)
			}
			if res.Workers != 2 || len(res.WorkerRows) != 2 {
				t.Fatalf("workers = %d, rows per worker %v: want 2 workers", res.Workers, res.WorkerRows)
			}
			for k, n := range res.WorkerRows {
				if n == 0 {
					t.Errorf("worker w%d finished no URL (rows per worker %v): the exits were not shared out", k+1, res.WorkerRows)
				}
			}
			if res.DuplicateURLs != 0 {
				t.Errorf("%d URLs finished twice across the workers' results.jsonl, want none", res.DuplicateURLs)
			}
		})
	}
}
