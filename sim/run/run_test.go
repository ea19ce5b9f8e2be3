package run

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// The targets on the per-IP token bucket, with the bench's own
// 10-minute URL set and 20 exits (reduced to one scenario): exitgate gets
// >= 95% of the allowed rate with <= 1% 429s after the first window, no
// baseline gets more at an equal or lower 429 ratio, and a global
// per-domain limiter uses about 1/20 of the pool.
func TestMatrixPerIPTokenBucket(t *testing.T) {
	sc, _ := server.ScenarioByName("per-ip-token-bucket")
	rs, err := Matrix(context.Background(), MatrixConfig{Scenarios: []server.Scenario{sc}})
	if err != nil {
		t.Fatal(err)
	}
	res := rs[0].Results
	for _, r := range res {
		t.Logf("%-22s util %5.1f%% (after 1st window %5.1f%%)  429 %6.2f%% (%6.2f%%)  %.0f s", r.Strategy,
			100*r.Utilization, 100*r.UtilizationSteady, 100*r.Ratio429, 100*r.Ratio429Steady, r.SecondsToFinish)
	}
	eg, _ := find(res, strategy.Exitgate)
	if eg.UtilizationSteady < TargetUtilization {
		t.Errorf("exitgate utilization after the first window = %.1f%%, want >= %.0f%%", 100*eg.UtilizationSteady, 100*TargetUtilization)
	}
	if eg.Ratio429Steady > Target429 {
		t.Errorf("exitgate 429 ratio after the first window = %.2f%%, want <= %.0f%%", 100*eg.Ratio429Steady, 100*Target429)
	}
	if !eg.Finished || eg.Done != eg.URLs {
		t.Errorf("exitgate finished %v with %d of %d URLs done", eg.Finished, eg.Done, eg.URLs)
	}
	for _, r := range res {
		if strategy.Baseline(r.Strategy) && r.Utilization > eg.Utilization && r.Ratio429 <= eg.Ratio429 {
			t.Errorf("%s: %.1f%% utilization at %.2f%% 429s beats exitgate's %.1f%% at %.2f%%",
				r.Strategy, 100*r.Utilization, 100*r.Ratio429, 100*eg.Utilization, 100*eg.Ratio429)
		}
	}
	g, _ := find(res, strategy.GlobalPerDomain)
	if g.Utilization < 0.8/20 || g.Utilization > 1.2/20 {
		t.Errorf("global-per-domain utilization = %.2f%%, want about 1/20 (5%%)", 100*g.Utilization)
	}
}

// A virtual run is a pure function of its config.
func TestVirtualDeterministic(t *testing.T) {
	sc, _ := server.ScenarioByName("per-ip-retry-after")
	for _, name := range []string{strategy.Exitgate, strategy.PerWorker} {
		spec, _ := strategy.ByName(name)
		cfg := Config{Scenario: sc, Strategy: spec, Exits: 5, URLs: 800, Seed: 9}
		a, err := Virtual(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Virtual(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if a.Requests != b.Requests || a.Successes != b.Successes || a.Limited != b.Limited || a.SecondsToFinish != b.SecondsToFinish {
			t.Errorf("%s: two runs of one config differ: %+v vs %+v", name, a, b)
		}
		if a.Done+a.Abandoned != 800 || a.Requests < 800 {
			t.Errorf("%s: %d done + %d abandoned of 800 URLs in %d requests", name, a.Done, a.Abandoned, a.Requests)
		}
	}
}

// On a rotating gateway exitgate keys sticky sessions by their resolved IP;
// the baselines see one rotating endpoint.
func TestRoutesRotating(t *testing.T) {
	sc, _ := server.ScenarioByName("rotating")
	for _, tc := range []struct {
		name     string
		min, max int
	}{
		{strategy.Exitgate, 15, 20},       // 80 sessions hashed over 20 exits, keyed by IP
		{strategy.ArticlePerExit, 20, 20}, // one session per exit, keyed by name
		{strategy.GlobalPerDomain, 1, 1},  // the gateway
	} {
		spec, _ := strategy.ByName(tc.name)
		cfg, _ := Config{Scenario: sc, Strategy: spec}.withDefaults()
		pool, _ := newPool(cfg)
		_, keys := routesFor(cfg, pool)
		if len(keys) < tc.min || len(keys) > tc.max {
			t.Errorf("%s: %d exit keys, want %d..%d", tc.name, len(keys), tc.min, tc.max)
		}
	}
}

// stuck refuses everything without saying when.
type stuck struct{}

func (stuck) Acquire(string, limit.Want, time.Time) (limit.Ticket, bool, time.Time, error) {
	return limit.Ticket{}, false, time.Time{}, nil
}
func (stuck) Done(limit.Ticket, limit.Outcome, time.Time) {}
func (stuck) Cancel(limit.Ticket, time.Time)              {}

// A limiter that never lets anything go keeps the engine polling; the run
// stops at its virtual time cap and reports the URLs unfinished.
func TestVirtualTimeCap(t *testing.T) {
	sc, _ := server.ScenarioByName("per-ip-token-bucket")
	spec := strategy.Spec{Name: "stuck", New: func(strategy.Env) (fetch.Limiter, error) { return stuck{}, nil }}
	r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: spec, URLs: 10, MaxTime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.Finished || r.Done != 0 || r.Requests != 0 {
		t.Errorf("stuck run: finished %v, %d done, %d requests; want unfinished, 0, 0", r.Finished, r.Done, r.Requests)
	}
}

// The report writers: the SVG is well-formed XML naming every strategy, and
// the markdown has a row per strategy and the target lines.
func TestReports(t *testing.T) {
	sc, _ := server.ScenarioByName("host-scoped")
	rs, err := Matrix(context.Background(), MatrixConfig{
		Scenarios:  []server.Scenario{sc},
		Strategies: []strategy.Spec{must(strategy.ByName(strategy.Exitgate)), must(strategy.ByName(strategy.GlobalPerDomain))},
		Base:       Config{URLs: 300},
	})
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := SVG(&svg, rs[0]); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg.Bytes()))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
	var md strings.Builder
	if err := Markdown(&md, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<polyline", "exitgate", "global-per-domain"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	for _, want := range []string{"| exitgate |", "| global-per-domain |", "### Targets", "host-scoped:"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func must(s strategy.Spec, ok bool) strategy.Spec {
	if !ok {
		panic("unknown strategy")
	}
	return s
}

// TestTargetsWhenTheSiteChanges: exitgate where the site moves under it.
// A site capacity below the pool's per-IP total that sheds with 503 holds
// the per-IP targets (the host rate settles under it instead of halving on
// every episode). A per-IP limit that halves at 60 s and quadruples at
// 120 s does not: the fall is followed within seconds, but a raise gives
// no signal, and the explorer finds it only when it tries its old ceiling
// again (a ceiling older than ProbeEvery) or re-probes a settled pace, a
// minute or more after it happened. The floor there is what the learner
// holds today (81%: see README, "What the learner does not do yet").
func TestTargetsWhenTheSiteChanges(t *testing.T) {
	eg, _ := strategy.ByName(strategy.Exitgate)
	for _, tc := range []struct {
		name        string
		util, ratio float64
	}{
		{"overload-503", TargetUtilization, Target429},
		{"limit-change", 0.78, Target429},
	} {
		sc, ok := server.ScenarioByName(tc.name)
		if !ok {
			t.Fatalf("no scenario %s", tc.name)
		}
		rs, err := Matrix(context.Background(), MatrixConfig{Scenarios: []server.Scenario{sc}, Strategies: []strategy.Spec{eg}})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := find(rs[0].Results, strategy.Exitgate)
		if !ok {
			t.Fatalf("%s: no exitgate result", tc.name)
		}
		t.Logf("%s: %.1f%% utilization, %.2f%% 429s after the first window", tc.name, 100*r.UtilizationSteady, 100*r.Ratio429Steady)
		if r.UtilizationSteady < tc.util || r.Ratio429Steady > tc.ratio {
			t.Errorf("%s: %.1f%% utilization (floor %.0f%%), %.2f%% 429s (cap %.1f%%) after the first window",
				tc.name, 100*r.UtilizationSteady, 100*tc.util, 100*r.Ratio429Steady, 100*tc.ratio)
		}
	}
}

// A crawl of 100 hosts finishes: every host's jobs are dispatched even
// after the Core prunes idle hosts from its round-robin (it stalled with
// jobs buffered for pruned hosts before fetch.Core re-listed them), and
// the figures are per host and overall.
func TestVirtualManyHosts(t *testing.T) {
	sc, ok := server.ScenarioByName("hosts-100")
	if !ok {
		t.Fatal("no scenario hosts-100")
	}
	for i := range sc.Hosts {
		sc.Hosts[i].URLs = 20
	}
	eg, _ := strategy.ByName(strategy.Exitgate)
	r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 5, MaxTime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Finished || r.Done != 2000 {
		t.Fatalf("finished %v with %d of 2000 URLs done after %.0f s", r.Finished, r.Done, r.SecondsToFinish)
	}
	if len(r.Hosts) != 100 {
		t.Fatalf("%d host figures, want 100", len(r.Hosts))
	}
	ok200 := 0
	for _, h := range r.Hosts {
		ok200 += h.OK
	}
	if ok200 != 2000 {
		t.Errorf("hosts' records hold %d successes, want 2000", ok200)
	}
	if r.Utilization <= 0 || r.Utilization > 1.2 {
		t.Errorf("overall utilization %.3f, want in (0, 1.2]", r.Utilization)
	}
}

// The scenario's path delay sits between the client's send and the site's
// arrival: with a fixed 5 s path, nothing reaches the site in the first
// 5 s, and every figure comes from the site's own record.
func TestVirtualPathDelay(t *testing.T) {
	sc, _ := server.ScenarioByName("per-ip-token-bucket")
	sc.Path = server.Latency{Base: 5 * time.Second}
	eg, _ := strategy.ByName(strategy.Exitgate)
	r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 2, URLs: 50})
	if err != nil {
		t.Fatal(err)
	}
	tl := r.Figures.Timeline
	if len(tl) < 6 {
		t.Fatalf("timeline of %d s", len(tl))
	}
	for i := range 5 {
		if tl[i].OK+tl[i].Limited != 0 {
			t.Errorf("second %d: %+v arrived before the 5 s path delay", i, tl[i])
		}
	}
	if r.Figures.OK != 50 || r.Done != 50 {
		t.Errorf("site recorded %d successes, client %d done; want 50 and 50", r.Figures.OK, r.Done)
	}
}

// With Duration a run stops there and is measured over exactly that span.
func TestVirtualDuration(t *testing.T) {
	sc, _ := server.ScenarioByName("twin-nginx-1r-s")
	eg, _ := strategy.ByName(strategy.Exitgate)
	r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Duration: 120 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Figures.Seconds != 120 || r.Finished {
		t.Errorf("measured %v s, finished %v; want 120 s of an unfinished 10-minute set", r.Figures.Seconds, r.Finished)
	}
}

// A scenario's WakeLate makes the engine wake that much after the time its
// limiter gave, as a live engine's timers do: the same crawl then runs
// differently (the learner reads a late lane as under its pace), and
// repeatably for a seed.
func TestVirtualWakeLate(t *testing.T) {
	sc, _ := server.ScenarioByName("twin-nginx-1r-s")
	eg, _ := strategy.ByName(strategy.Exitgate)
	run := func(late server.Latency) Result {
		sc.WakeLate = late
		r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 5, Duration: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	dot, late := run(server.Latency{}), run(server.Latency{Dist: server.Fixed, Base: 200 * time.Millisecond})
	if late.Requests == dot.Requests && late.Successes == dot.Successes {
		t.Errorf("waking 200 ms late: %d requests, %d successes in 30 s, as on the dot; want a different run", late.Requests, late.Successes)
	}
	if again := run(server.Latency{Dist: server.Fixed, Base: 200 * time.Millisecond}); again.Requests != late.Requests {
		t.Errorf("two runs with the same seed: %d and %d requests; want the same", again.Requests, late.Requests)
	}
}

// TestFleetAsOneLimiter: exitgate's distributed mode, simulated (8 workers,
// the pool split among them, host state shared, one worker leading each
// host's search), uses the pool as one limiter does, within 5 points, at
// most 1% 429s: per IP, site-wide and under 503 overload (where each
// worker's host rate saw 1/8 of the host's traffic and climbed 1/8 as fast,
// 32-58% before the rate counted the fleet).
func TestFleetAsOneLimiter(t *testing.T) {
	var scs []server.Scenario
	for _, name := range []string{"per-ip-token-bucket", "host-scoped", "overload-503", "tiers"} {
		sc, ok := server.ScenarioByName(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		scs = append(scs, sc)
	}
	for _, s := range fleetBesideOne(t, scs, Config{}) {
		eg, fl := s.Results[0], s.Results[1]
		if fl.Utilization < eg.Utilization-0.05 || fl.Ratio429 > 0.01 {
			t.Errorf("%s: fleet %.1f%% utilization at %.2f%% 429s, want within 5 points of one limiter's %.1f%%, at most 1%%",
				s.Name, 100*fl.Utilization, 100*fl.Ratio429, 100*eg.Utilization)
		}
		if !fl.Finished || fl.Done != fl.URLs {
			t.Errorf("%s: fleet finished %v with %d of %d URLs done", s.Name, fl.Finished, fl.Done, fl.URLs)
		}
	}
}

// fleetBesideOne runs scs with exitgate (Results[0]) and its simulated
// fleet (Results[1]) on base, and logs the two side by side.
func fleetBesideOne(t *testing.T, scs []server.Scenario, base Config) []ScenarioResult {
	t.Helper()
	one, _ := strategy.ByName(strategy.Exitgate)
	fleet, _ := strategy.ByName(strategy.ExitgateFleet)
	rs, err := Matrix(context.Background(), MatrixConfig{Scenarios: scs, Strategies: []strategy.Spec{one, fleet}, Base: base})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rs {
		eg, fl := s.Results[0], s.Results[1]
		t.Logf("%-45s exitgate %5.1f%% %5.2f%% 429s; fleet %5.1f%% %5.2f%% 429s", s.Name,
			100*eg.Utilization, 100*eg.Ratio429, 100*fl.Utilization, 100*fl.Ratio429)
	}
	return rs
}

// TestFleetBareAwait: a fleet on a window without any header, where the
// leader's first 429 ends a run whose recovery it then measures: the other
// workers' lanes hold their pace to the first run's count as the leader's
// own followers do (HostView.Await), so the fleet uses the pool over two
// minutes as one limiter does. They took the cautious reading at once
// before, and sat out most of the recovery: haproxy's 20 per 10 s 85.7%
// against one limiter's 89.9%, its bare 15 per 20 s 83.3% against 88.3%
// (the real fleet of three on haproxy: 84.3% and 83.3%). And a fixed
// window read shorter than it is (flask-limiter's bare 40 per 15 s, read
// as 40 per 10 s): a led lane pushed back again inside its spent window
// reads nothing (rule again, with the window the leader published,
// HostView.Window); each such 429 was read as the lane's own smaller
// budget, published, and the leader fell on them: 24-70% over four seeds
// against one limiter's 82%.
func TestFleetBareAwait(t *testing.T) {
	var scs []server.Scenario
	for _, spec := range []string{"twin-haproxy-20-per-10s", "twin-haproxy-20-per-10s:quota=15:window=20s", "twin-flask-fixed-40-per-15s-bare"} {
		sc, err := server.TwinVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	fleetWithinTwoPoints(t, scs, 0.015)
}

// fleetWithinTwoPoints runs 8 workers and one limiter on 10 exits for two
// minutes on each of scs and fails where the fleet uses the pool over the
// run 2 points or more under one limiter, or draws more 429s than 1% or
// over429 above its, each the mean of seeds 1-3 (one run is one draw: on
// flask-limiter's bare 40 per 15 s one limiter read 79.8% on seed 1 and
// 72.1-72.2% on seeds 2-3, the fleet 73.4-73.8% on all three).
func fleetWithinTwoPoints(t *testing.T, scs []server.Scenario, over429 float64) {
	t.Helper()
	const seeds = 3
	type sum struct{ eg, fl, egR, flR float64 }
	sums := make([]sum, len(scs))
	for seed := uint64(1); seed <= seeds; seed++ {
		for i, s := range fleetBesideOne(t, scs, Config{Exits: 10, Duration: 2 * time.Minute, Seed: seed}) {
			eg, fl := s.Results[0], s.Results[1]
			sums[i].eg += eg.Utilization / seeds
			sums[i].fl += fl.Utilization / seeds
			sums[i].egR += eg.Ratio429 / seeds
			sums[i].flR += fl.Ratio429 / seeds
		}
	}
	for i, m := range sums {
		if m.fl < m.eg-0.02 || m.flR > max(0.01, m.egR+over429) {
			t.Errorf("%s: fleet %.1f%% of the limit over the run at %.2f%% 429s (seeds 1-3), want within 2 points of one limiter's %.1f%%, 429s at most 1%% or %.1f points over its %.2f%%",
				scs[i].Name, 100*m.fl, 100*m.flR, 100*m.eg, 100*over429, 100*m.egR)
		}
	}
}

// TestFleetLeaderLanes: 8 workers on 10 exits, where most workers own one
// exit. The leader owns three (rendezvous.Share), so its search passes to
// another lane while one or two wait out long Retry-Afters: on nginx's 30
// per minute with Retry-After: 60 the search stalled a minute with every
// worker's lanes at the cautious pace (43.8% against one limiter's 87.8%,
// one lane), and on haproxy's 2 per 10 s with Retry-After: 30 both lanes of
// a leader of two waited it out (64.2% against 86.7%). And the leader's
// explorer pushed back at the settled pace while the other workers' lanes
// hold it takes its own budget, as one limiter's does (othersHolding): read
// as the host's limit, it cut every worker's pace and the fleet sat out the
// debt (flask-limiter's bare 50 per 10 s: 67.8% against 87.5%).
func TestFleetLeaderLanes(t *testing.T) {
	var scs []server.Scenario
	for _, name := range []string{"twin-nginx-30r-m", "twin-flask-fixed-50-per-10s-bare", "twin-haproxy-2-per-10s"} {
		sc, ok := server.ScenarioByName(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		scs = append(scs, sc)
	}
	fleetWithinTwoPoints(t, scs, 0.005)
}

// TestFleetSharedRate: 8 workers on 10 exits whose one proxy credential
// the server limits (2/s for the pool, whatever the exit): the workers
// share the host's rate as one limiter holds it, within 8 points over the
// steady part of the run, seeds 1-3. Two workers' cuts within 2 s of each
// other are one overload, but counted from the last cut adopted every cut
// that came within 2 s of the one before was the same episode, none was
// adopted, and the workers' rates drifted from 0.6/s to 4.8/s until the
// lowest ceiling held the fleet; and one worker's successes between two
// cuts, an eighth of the fleet's, counted k(n-1) for the fleet's kn
// (57.5%, 75.0% and 83.3% against one limiter's 98.3%, 93.3% and 96.7%).
func TestFleetSharedRate(t *testing.T) {
	sc, ok := server.ScenarioByName("per-credential")
	if !ok {
		t.Fatal("no scenario per-credential")
	}
	for seed := uint64(1); seed <= 3; seed++ {
		for _, s := range fleetBesideOne(t, []server.Scenario{sc}, Config{Exits: 10, Duration: 2 * time.Minute, Seed: seed}) {
			eg, fl := s.Results[0], s.Results[1]
			if fl.UtilizationSteady < eg.UtilizationSteady-0.08 || fl.Ratio429 > eg.Ratio429+0.02 {
				t.Errorf("seed %d: fleet %.1f%% of the limit after the first minute, %.2f%% 429s over the run; want within 8 points of one limiter's %.1f%%, 429s at most 2 points over its %.2f%%",
					seed, 100*fl.UtilizationSteady, 100*fl.Ratio429, 100*eg.UtilizationSteady, 100*eg.Ratio429)
			}
		}
	}
}

// TestVirtualRepeatsManyHosts: a virtual run repeats for a seed on many
// hosts too (bench's --seed says so). hosts-100 did not: lanes' paces set
// for every lane of a host in a map's order left equal lanes in the heap in
// a different layout each run, and the explorer's search passed to
// another lane from one run to the next (the lane heap's order is total now).
func TestVirtualRepeatsManyHosts(t *testing.T) {
	sc, _ := server.ScenarioByName("hosts-100")
	eg, _ := strategy.ByName(strategy.Exitgate)
	var first Result
	for i := range 3 {
		r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 10, Duration: 40 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r
			continue
		}
		if r.Requests != first.Requests || r.Successes != first.Successes || r.Limited != first.Limited {
			t.Fatalf("run %d: %d requests, %d successes, %d 429s; the first: %d, %d, %d", i+1,
				r.Requests, r.Successes, r.Limited, first.Requests, first.Successes, first.Limited)
		}
	}
}
