package run

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/syncbuf"

	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// TestTwinFloors holds exitgate's figures on some twins of the real limiters
// (sim/server.Twins: each checked against its real server by peerbench's
// calibration) at 120 s, 10 exits, seed 1 (a virtual run repeats exactly):
// whole run, after warmup, 429 ratio and learning 429s. Each row is a case a
// learner failed on a real server; the floors sit a little under what this
// learner does, to be tightened as it improves. The real figures are in the
// README ("Real rate limiters").
func TestTwinFloors(t *testing.T) {
	eg, _ := strategy.ByName(strategy.Exitgate)
	for _, tc := range []struct {
		twin         string
		whole, after float64 // utilization floors
		ratio        float64 // 429 ratio cap, whole run
		learning429s int     // cap
	}{
		// nginx under 29 per minute, no burst, no Retry-After: the
		// ramp's first pace pushed back at its second request (30%
		// before pairLimit: the retry read as 1 per 10 s).
		// Stepping from one round limit to the next, it settles Settle
		// under 20 a minute (95% after 30 s with steps of 15%).
		{"twin-nginx-20r-m-bare", 0.9, 0.95, 0.006, 2},
		// The same with a fixed Retry-After: 10 s, read as the interval
		// before (27.8%), and 10r/m told 1 s, every follower sent at one
		// per the wait (6.25% of 429s): the Retry-After is the least a
		// retry waits (handAwait). 6r/m told 10 s, its interval: a
		// second 429, the search's one failed step (0.89% before).
		{"twin-nginx-20r-m-ra10", 0.9, 0.94, 0.006, 2},
		{"twin-nginx-10r-m-ra1", 0.97, 0.97, 0.0101, 2},
		{"twin-nginx-6r-m", 0.97, 0.97, 0.017, 2},
		// nginx 1r/s with a burst of 5: the run's count held the burst
		// (1.38/s), every follower took it and was pushed back (1.30% of
		// 429s, 14 learning); the quick retry bounds the rate from below.
		{"twin-nginx-1r-s-burst5", 0.92, 0.95, 0.006, 5},
		// nginx 10r/m with a burst of 10: the burst and one read as 12
		// per 10 s, seven times the rate; the explorer proves it before
		// the followers take it, is pushed back twice, and the host is
		// read as a bucket between bounds (10.2% of 429s before, every
		// follower pushed back at the reading). Utilization counts the
		// burst over the rate: above 100%. What is left: the bucket's
		// search proves a step a minute at this rate.
		{"twin-nginx-10r-m-burst10", 1.15, 0.68, 0.03, 7},
		// nginx 10r/m with a burst of 1: the ramp's first step's run of
		// two passes at any pace; read as the ramp's pace, every follower
		// went three times the rate (7.07% of 429s, 13 learning).
		{"twin-nginx-10r-m-burst1", 0.88, 0.87, 0.025, 4},
		// A moving window of a small quota, declared: paced with a
		// sliding counter's headroom (1-0.6/5 of it), 89% before; its
		// resets move with each hit, and an even pace under its quota
		// never fills it.
		{"twin-flask-moving-5-per-10s", 0.95, 0.95, 0.001, 0},
		// A fixed window's reset stated as the whole second plus one
		// (50% before: the lanes waited for it).
		{"twin-flask-fixed-10-per-s", 0.95, 0.95, 0.001, 0},
		// A window of a second without headers (34% before: read as 32
		// per 10 s).
		{"twin-flask-fixed-10-per-s-bare", 0.78, 0.92, 0.002, 3},
		// A per-minute fixed window without headers: the retry a window
		// after the run's start (89% before); the retry half a minute on
		// costs one learning 429 more, and the retry that tests 10 s
		// after a run the ramp's head was left out of (rampHead) 3.4
		// points; the retry a third of a minute on one more 429.
		{"twin-flask-fixed-60-per-min-bare", 0.89, 0.86, 0.006, 6},
		// flask-limiter's defaults (a fixed window, no headers) at 50 per
		// 10 s: the ramp ran the window out just before it ended, the
		// quick retry read a bucket, and its retries inside the next
		// window bisected it down (36% before rereadWindow).
		{"twin-flask-fixed-50-per-10s-bare", 0.86, 0.93, 0.003, 9},
		// Windows of 30 s without headers: the retry half a minute (and
		// a third) after the run's start (48% before: read as a minute);
		// the retry a third of a minute on, one 429 more (1.19% before);
		// the quota's proof holds the followers half way for two
		// requests at a third a second (83.3% over the run before).
		{"twin-haproxy-10-per-30s-bare", 0.80, 0.93, 0.016, 5},
		{"twin-flask-fixed-10-per-30s-bare", 0.80, 0.93, 0.016, 5},
		// A window of 20 s (haproxy's, held out as a real target without
		// a twin): the retry a third of a minute on reads it (58% before:
		// read as half a minute).
		{"twin-haproxy-20-per-10s:quota=15:window=20s", 0.88, 0.95, 0.007, 5},
		// 40 per 15 s: read as 10 s, every lane over it at once, and each
		// lane's retry inside the window it had spent cut the host again,
		// to a twentieth of the limit (29% before rule again). Its run of
		// 46 in 9.3 s is a long one (longRun): the followers wait out the
		// explorer's recovery at a minute's reading, not at the run's
		// count, and the twin's lanes come back from the 429s at 30 s at
		// half the pace the real ones do (82.2 / 92% before; the real
		// target 83.9 / 93.4% before, 70.3-77.1 / 91.1-93.4% since). A
		// lane's 429 at a pace it had slowed to a moment before, its
		// window still holding its faster requests, read as that pace
		// too fast (rule slowed since), held the host at half the limit
		// (55.8 / 52.2 / 0.94%; real 50.8-58.0%, 1.22%): 79.8 / 92.4 /
		// 1.12% since, seeds 2-4 72.1-72.2% at 0.86-0.90% (real
		// 73.3-74.1% at 0.84-1.10%); the misread window still lets a
		// proof straddling two of them pass above the limit.
		{"twin-flask-fixed-40-per-15s-bare", 0.70, 0.70, 0.012, 30},
		// 20 per 2 minutes: the followers, their windows spent while the
		// explorer's retries went a minute apart, each retried every few
		// seconds (24.5% of 429s before awaitHold). Utilization over a
		// window longer than the warmup says little here.
		{"twin-flask-fixed-20-per-2min-bare", 0.9, 0, 0.08, 17},
		// haproxy's 6 per 30 s: the run and its 429s weigh two thirds
		// over the quota in its count, and the retry waits for it
		// (countedSlack; 50% before, at a fixed third of the window).
		{"twin-haproxy-6-per-30s-bare", 0.78, 0.9, 0.017, 3},
		// haproxy's 10-s rolling count without Retry-After: the second's
		// window test costs it nothing (a second of the pace passed).
		{"twin-haproxy-20-per-10s", 0.89, 0.95, 0.003, 2},
		{"twin-haproxy-5-per-10s", 0.85, 0.95, 0.008, 2},
		// A quota of 100 per 10 s: the ramp ran it out in 11 s, its first
		// steps outside the window, and the run's length read half a
		// minute (34% before rampHead). The followers wait out the
		// recovery at a minute's reading (longRun: 92.4% over the run
		// before, holding the run's count; real 86.2% since).
		{"twin-haproxy-100-per-10s-bare", 0.86, 0.97, 0.001, 3},
		// A 10-s sliding counter without headers lets the second's
		// retry through: one learning 429 more, no more.
		{"twin-httprate-30-per-10s-bare", 0.87, 0.95, 0.003, 3},
		// haproxy with a fixed Retry-After shorter than its period (its
		// counted refusals outlast it): a lane's echo lengthens the waits
		// of the lanes told the same (echoOthers; 1.39% and 4.23% of
		// 429s without, 0.80% and 4.06% before the penalty's test, which
		// spends a 429 on each of these).
		{"twin-haproxy-20-per-10s:quota=20:window=60s:retry-after=30s", 0.91, 0.82, 0.011, 4},
		{"twin-haproxy-20-per-10s:quota=30:window=60s:retry-after=20s", 0.88, 0.76, 0.034, 18},
		// Two limits at once, bare (wide's, not a twin: the held-out real
		// target it simulates agreed to the tenth): every lane spends the
		// minute at the second's pace and is pushed back together; read
		// as the limit falling, each retry into the spent minute cut the
		// pace (51.9% over the run, 2.5% after 30 s, before the wall).
		// The explorer meets its minute first; the followers wait at its
		// count (3.43% of 429s, 27 while learning, before wallCount).
		{"layered-moving-bare", 0.93, 0.85, 0.011, 9},
		// haproxy's fixed Retry-After shorter than the window the lane's
		// series began: held until the series is spent at the window's
		// pace (seriesWindow), its retry's echo gone (1.06% of 429s
		// before, real and simulated alike).
		{"twin-haproxy-20-per-10s:quota=10:window=30s:retry-after=15s", 0.95, 0.95, 0.009, 4},
		// nginx's two zones per address: the counts between the
		// explorer's 429s fall as the long zone's burst runs out
		// (countFell; 90.3% over the run, 79.3% after warmup and 2.11%
		// of 429s before, every lane pushed back within a second).
		{"layered-nginx-5r-s-60r-m-bare", 0.97, 0.97, 0.01, 12},
		// vsthrottle blocking a minute: a climb with no ceiling in steps
		// of costlyDone, its first 429 ending it (62.7% and 71.5%
		// before, three lanes blocked a minute by doubling).
		{"block-bucket-5-per-s-block60-ra", 0.66, 0.80, 0.002, 4},
		// vsthrottle blocking half a minute, bare: the retry half a
		// minute from the run's start waits for the block's end from the
		// 429, and the penalty's test at twice the window's pace refutes
		// the window (18.4% over the run and 1.78% of 429s before, read
		// as 18 per minute; 34.1% with the retry alone, as 18 per 30 s;
		// 39.5% with the test, its refinement stepping back under the
		// pace held).
		{"block-bucket-15-per-10s-block30", 0.49, 0.66, 0.008, 6},
	} {
		t.Run(tc.twin, func(t *testing.T) {
			sc, ok := server.ScenarioByName(tc.twin)
			if !ok {
				var err error
				if sc, err = server.TwinVariant(tc.twin); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 10, Seed: 1, Duration: 120 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%.1f%% over the run, %.1f%% after warmup, %.2f%% 429s, %d learning", 100*r.Utilization, 100*r.UtilizationSteady, 100*r.Ratio429, r.Learning429s)
			if r.Utilization < tc.whole || r.UtilizationSteady < tc.after || r.Ratio429 > tc.ratio || r.Learning429s > tc.learning429s {
				t.Errorf("%.1f%% over the run (floor %.0f%%), %.1f%% after warmup (floor %.0f%%), %.2f%% 429s (cap %.1f%%), %d learning 429s (cap %d)",
					100*r.Utilization, 100*tc.whole, 100*r.UtilizationSteady, 100*tc.after, 100*r.Ratio429, 100*tc.ratio, r.Learning429s, tc.learning429s)
			}
		})
	}
}

// TestSettledStaysSettled: a settled search is taken up again only where a
// step is left to try. nginx's 6 per minute told 10 s settles between what
// passed (0.097/s) and what was pushed back (0.161/s) with no round limit
// between, and nginx's 2r/s with a burst of 4, delayed, with what passed
// within 4% of the ceiling by its lower bound; every success after it took
// the search up ("a 429 to spend again") and settled it at once, 11 and 192
// times in 120 s, two change records each: they filled the host's last
// changes in the summary, and each restarted the quiet a re-probe waits.
func TestSettledStaysSettled(t *testing.T) {
	eg, _ := strategy.ByName(strategy.Exitgate)
	for _, twin := range []string{"twin-nginx-6r-m", "twin-nginx-2r-s-burst4-delay"} {
		sc, ok := server.ScenarioByName(twin)
		if !ok {
			t.Fatalf("no %s", twin)
		}
		var log syncbuf.Buffer
		res, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 10, Seed: 1,
			Warmup: 30 * time.Second, Duration: 120 * time.Second,
			Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		settled := strings.Count(log.String(), ": settled\"")
		again := strings.Count(log.String(), "a 429 to spend again")
		if settled == 0 || again > 0 {
			t.Errorf("%s: the search settled %d times and was taken up again %d times; want settled, and not taken up again with no step left (utilization %.3f)", twin, settled, again, res.Utilization)
		}
	}
}

// TestLayeredFloors holds exitgate's figures on two limits at once without
// headers (wide's layered-moving-bare with other limits and windows, on 10
// and 3 exits, 120 s, seed 1): each row is a case a learner failed on. The
// learner before the wall and the history of a window read again read
// the figure in the comment.
func TestLayeredFloors(t *testing.T) {
	base, ok := server.ScenarioByName("layered-moving-bare")
	if !ok {
		t.Fatal("no scenario layered-moving-bare")
	}
	sec, minute := time.Second, time.Minute
	for _, tc := range []struct {
		name         string
		algo         server.Algo
		short, long  server.Policy
		exits        int
		whole, after float64 // utilization floors
		ratio        float64 // 429 ratio cap, whole run
	}{
		// The held-out real target on three exits: its run cut by the
		// second's 429s, read 31 per minute from the last run (77.5%).
		{"3/s;40/min moving, 3 exits", server.LimitsMoving, server.Policy{Quota: 3, Window: sec}, server.Policy{Quota: 40, Window: minute}, 3, 0.88, 0.85, 0.03},
		// flask-limiter's default strategy (real: 51.1% before the wall,
		// 90.8% after; 3.47% of 429s before wallCount).
		{"3/s;40/min fixed", server.LimitsFixed, server.Policy{Quota: 3, Window: sec}, server.Policy{Quota: 40, Window: minute}, 10, 0.92, 0.85, 0.011},
		// Released at 100 per minute, the lanes met what was left of
		// their runs in the moving window, read as a fall (53.8%); the
		// grace waits for the window's end.
		{"5/s;100/min moving", server.LimitsMoving, server.Policy{Quota: 5, Window: sec}, server.Policy{Quota: 100, Window: minute}, 10, 0.70, 0.42, 0.03},
		// The explorer ran the minute out over three runs, and the window
		// read again counted the last (92 per minute, 46.4%).
		{"10/s;200/min fixed", server.LimitsFixed, server.Policy{Quota: 10, Window: sec}, server.Policy{Quota: 200, Window: minute}, 10, 0.82, 0.80, 0.01},
		// 4.88% of 429s before wallCount.
		{"1/s;20/min moving", server.LimitsMoving, server.Policy{Quota: 1, Window: sec}, server.Policy{Quota: 20, Window: minute}, 10, 0.95, 0.85, 0.025},
		// A direct crawl, one lane: fixed windows 77.5% before the wall
		// stood on one lane stuck twice; moving ones 95.0% at 6.2%.
		{"3/s;40/min fixed, one exit", server.LimitsFixed, server.Policy{Quota: 3, Window: sec}, server.Policy{Quota: 40, Window: minute}, 1, 0.93, 0.85, 0.12},
		{"3/s;40/min moving, one exit", server.LimitsMoving, server.Policy{Quota: 3, Window: sec}, server.Policy{Quota: 40, Window: minute}, 1, 0.93, 0.85, 0.12},
		// Half a minute's quota, three exits: 57.8% before the history;
		// 91.1% before wallCount, 87.5% with it before the grace's
		// headEnd (the lanes held at the count, let go, waited out the
		// whole window their runs filled).
		{"2/s;30 per 30 s moving, 3 exits", server.LimitsMoving, server.Policy{Quota: 2, Window: sec}, server.Policy{Quota: 30, Window: 30 * sec}, 3, 0.92, 0.90, 0.02},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := base
			sc.Config.Algorithm, sc.Config.Policy, sc.Config.Also = tc.algo, tc.short, []server.Policy{tc.long}
			holdsFloors(t, sc, tc.exits, tc.whole, tc.after, tc.ratio)
		})
	}
}

// A bucket that blocks a client once it runs out, the block told by
// Retry-After (wide's block-bucket-4-per-s-block10-ra: Varnish's vsthrottle,
// Cloudflare's rules alike), at other limits and blocks: the first run's
// quota over the block read as a window held the lanes to a fraction of
// the rate until the penalty's test (penaltyTest). On a quota of a few a
// window no test is spent (haproxy's 6 per minute, twin-haproxy-6-per-min
// in TestTwinFloors: 2.80% of 429s with it). Not met: 15 per 10 s with a
// 30-s block (22% of its rate, before and after), whose whole tokens refill
// nothing while a lane goes faster than a token's time (vmod_vsthrottle.c
// drops the fraction at each request let through), so the test at the
// ramp's pace passes no more than a window would.
func TestPenaltyFloors(t *testing.T) {
	sec, minute := time.Second, time.Minute
	policyFloors(t, "block-bucket-4-per-s-block10-ra", []policyFloor{
		// 35.4 / 50.2% before (real Varnish the same: 35.4% over the run).
		{"4/s, block 10 s", server.Policy{Quota: 4, Window: sec, Block: 10 * sec}, 0.84, 0.94, 0.002},
		// 38.5 / 50.2% before.
		{"10/s, block 5 s", server.Policy{Quota: 10, Window: sec, Block: 5 * sec}, 0.70, 0.84, 0.002},
		// A block of a minute fits a usual window with the run: 5.3% before
		// (read as 20 per minute); real Varnish the same, 5.3 -> 62.6%.
		{"5/s, block 1 min", server.Policy{Quota: 5, Window: sec, Block: minute}, 0.60, 0.68, 0.003},
		{"10/s, block 1 min", server.Policy{Quota: 10, Window: sec, Block: minute}, 0.64, 0.78, 0.002},
		// A bucket of 100 refilled at 100 a minute: the test is pushed back
		// and the window fitted is read, as before, at the cost of the
		// test's lane blocked a minute (96 / 94% before 2026-12-06's
		// check of the clock (clockEnd), when this start's told end fell
		// on the grid of 10 s and no test ran, by chance, as at one
		// start in five).
		{"100 per min, block 1 min", server.Policy{Quota: 100, Window: minute, Block: minute}, 0.93, 0.87, 0.002},
	})
}

// A fixed window that blocks a client over it, the block told by
// Retry-After (wide's flexible-10-per-5s-block30-ra: rate-limiter-flexible's
// blockDuration): the first run spans two windows and its recovery is the
// block, read as a window as long as both (15 per minute for 10 per 5 s
// blocking 30 s); the penalty's test on a follower that had spent part of
// its window was pushed back under the run's count and the reading stood,
// a minute's window a step (13.5% over the run, real the same). Refuted so
// (refutedShort), the search bisects under the test's pace from half the
// run's rate with proofs as long as the run.
func TestBlockedWindowFloors(t *testing.T) {
	sec, minute := time.Second, time.Minute
	policyFloors(t, "flexible-10-per-5s-block30-ra", []policyFloor{
		// 13.5 / 13.0% before (after the first minute, as every floor here).
		{"10 per 5 s, block 30 s", server.Policy{Quota: 10, Window: 5 * sec, Block: 30 * sec}, 0.70, 0.88, 0.004},
		// 15.4 / 15.1% before: the run and the block fit a minute, read
		// as 10 per minute once the test was pushed back.
		{"5 per 5 s, block 1 min", server.Policy{Quota: 5, Window: 5 * sec, Block: minute}, 0.62, 0.73, 0.007},
		// 60.1 / 68.5% before.
		{"10 per 5 s, block 10 s", server.Policy{Quota: 10, Window: 5 * sec, Block: 10 * sec}, 0.78, 0.89, 0.004},
		// A first run of 7 told 10 s: no penalty's test under 8 before
		// (penaltyRun), the ceiling the run's own rate, 1.18/s of 2, and a
		// window's proof a step (39.7 / 45.3%).
		{"4 per 2 s, block 10 s", server.Policy{Quota: 4, Window: 2 * sec, Block: 10 * sec}, 0.85, 0.94, 0.002},
		// The step above the window's quota passed across two windows and
		// was read as a bucket's rate; every lane pushed back above the
		// limit, 20 s each (54.6 / 51.1%, 9 learning 429s; shorterStep's
		// proof in proofSpan).
		{"30 per 10 s, block 20 s", server.Policy{Quota: 30, Window: 10 * sec, Block: 20 * sec}, 0.81, 0.92, 0.003},
		// The lanes pushed back after the shorter window was read were
		// held at the longer one's pace, 60-90 s for a block of 30
		// (72.7 / 79.3%; shorterStep's readW).
		{"20 per 10 s, block 30 s", server.Policy{Quota: 20, Window: 10 * sec, Block: 30 * sec}, 0.77, 0.94, 0.003},
		// The run and the block fit a minute, and a follower's 69 in
		// 13.3 s, more than a minute's 50 let through, were read as 50 per
		// minute all the same (16.1 / 14.5%).
		{"50 per 10 s, block 1 min", server.Policy{Quota: 50, Window: 10 * sec, Block: minute}, 0.66, 0.78, 0.002},
	})
}

// What a penalty's test pushed back under the first run's count does not
// refute (refutedShort, found by a helper's review of it): a series that
// began at the explorer's own refused retry, mostly the wait after it, while
// a rolling count still held the run (haproxy's 10 per 20 s without a
// header: 77.1% after warmup and 6.22% of 429s while it did, 96.0 / 0.23%
// before and now); one fewer than the run, a bucket's refill missed by a
// moment (a block bucket of 20 per 10 s told 10 s blocking a minute: 28.3%
// after warmup and 2.67% of 429s, the search up to 5.2/s of 2).
func TestRefutedShortGuards(t *testing.T) {
	for _, tc := range []struct {
		spec         string
		whole, after float64 // utilization floors
		ratio        float64 // 429 ratio cap, whole run
	}{
		{"twin-haproxy-20-per-10s:quota=10:window=20s", 0.85, 0.93, 0.01},
		{"block-bucket-15-per-10s-block30:quota=20:window=10s:retry-after=10s:block=1m", 0.50, 0.50, 0.011},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			sc, err := server.TwinVariant(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			holdsFloors(t, sc, 10, tc.whole, tc.after, tc.ratio)
		})
	}
}

// policyFloor is a case of policyFloors: the scenario's limiter at another
// policy, and the floors it must hold.
type policyFloor struct {
	name         string
	policy       server.Policy
	whole, after float64 // utilization floors
	ratio        float64 // 429 ratio cap, whole run
}

// policyFloors runs the scenario named at each case's policy on 10 exits
// and holds each to its floors.
func policyFloors(t *testing.T, name string, cases []policyFloor) {
	t.Helper()
	base, ok := server.ScenarioByName(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := base
			sc.Config.Policy = tc.policy
			holdsFloors(t, sc, 10, tc.whole, tc.after, tc.ratio)
		})
	}
}

// X-RateLimit-Remaining alone (wide's block-bucket-30-per-min-remaining:
// Varnish's vsthrottle.remaining, no limit, no reset) on buckets and
// windows (limit/remaining.go): its fall to 0 is read as the 429 the next
// request would draw, the first recovery's Remaining as a bucket's refill
// unless a window explains it, a run's Remaining held as its proof, and a
// lane told it has budget left owes no debt. Before (no Remaining read),
// each lane that spent its bucket at the followers' pace drew a 429 (2.75%
// on vsthrottle's 30 per minute, real Varnish the same), and the bucket
// read as 31 per 10 s held 86% after warmup.
func TestRemainingFloors(t *testing.T) {
	base, ok := server.ScenarioByName("block-bucket-30-per-min-remaining")
	if !ok {
		t.Fatal("no scenario block-bucket-30-per-min-remaining")
	}
	minute := time.Minute
	sized := server.HeadersLimitRemaining
	for _, tc := range []struct {
		name         string
		algo         server.Algo
		policy       server.Policy
		headers      server.HeaderMode // 0: the scenario's, Remaining alone
		whole, after float64           // utilization floors
		ratio        float64           // 429 ratio cap, whole run
	}{
		// 117.8 / 84.0 / 2.75% with nothing read; 117.7 / 86.0 / 0.84%
		// with the fall to 0 only; 128.5 / 93.7 / 0.39%.
		{"vsthrottle 30 per min", server.BlockBucket, server.Policy{Quota: 30, Window: minute}, 0, 1.20, 0.92, 0.005},
		// 111.6 / 77.3 / 0.49% with the fall only; 129.8 / 95.1 / 0.12%.
		{"vsthrottle 100 per min", server.BlockBucket, server.Policy{Quota: 100, Window: minute}, 0, 1.25, 0.93, 0.002},
		// 133.3 / 87.7 / 2.44%; 130.5 / 98.7 / 0.76%; 143.5 / 99.7 / 0.23%.
		{"token bucket 30 per min", server.TokenBucket, server.Policy{Quota: 30, Window: minute}, 0, 1.35, 0.97, 0.004},
		// 124.8 / 89.8 / 0.40% with the fall only (nine followers held by
		// the debt of their burst for 50 s); 144.1 / 107.2 / 0.12%.
		{"token bucket 60 per min", server.TokenBucket, server.Policy{Quota: 60, Window: minute}, 0, 1.35, 1.00, 0.003},
		// 95.8 / 94.5 / 0.65%; 96.0 / 96.1 / 0.04%; 95.9 / 96.8 / 0.04%.
		{"GCRA 20 per 10 s", server.GCRA, server.Policy{Quota: 20, Window: 10 * time.Second}, 0, 0.94, 0.95, 0.002},
		// 92.0 / 90.0 / 1.08%; 92.0 / 90.0 / 0.90%; 96.7 / 93.3 / 0.85%.
		{"fixed window 30 per min", server.FixedWindow, server.Policy{Quota: 30, Window: minute}, 0, 0.94, 0.91, 0.0095},
		// A sliding minute whose first retry passed just past the window
		// told 0 left, as a bucket refilling one a minute would (read so
		// while the rule was built: 49.0 / 0.7%); 95.2 / 93.1 / 0.90% with
		// the fall only, 100.0 / 96.6 / 0.85%.
		{"sliding window 30 per min", server.SlidingWindow, server.Policy{Quota: 30, Window: minute}, 0, 0.97, 0.94, 0.0095},
		// The bucket's size told with its level (X-RateLimit-Limit and
		// -Remaining, no reset: Shopify's bucket of 40 leaking 2/s tells
		// used/size): read as Remaining alone. Before, the limit with no
		// window read nothing: 105.5 / 110.7 / 0.59% with 15 learning
		// 429s on a token bucket; 109.7 / 106.5 / 0.08% with 2. On
		// vsthrottle's (the real varnish-40-per-20s-limit-remaining):
		// 79.0 / 74.8 / 0.84% before, 99.8 / 95.8 / 0.04%.
		{"token bucket 40 per 20 s, its size told", server.TokenBucket, server.Policy{Quota: 40, Window: 20 * time.Second}, sized, 1.05, 1.00, 0.002},
		{"vsthrottle 40 per 20 s, its size told", server.BlockBucket, server.Policy{Quota: 40, Window: 20 * time.Second}, sized, 0.95, 0.92, 0.002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := base
			sc.Config.Algorithm, sc.Config.Policy = tc.algo, tc.policy
			if tc.headers != 0 {
				sc.Config.Headers = tc.headers
			}
			holdsFloors(t, sc, 10, tc.whole, tc.after, tc.ratio)
		})
	}
}

// holdsFloors runs exitgate on sc through exits for 120 s (seed 1) and fails
// t where its utilization over the run or after warmup falls under whole or
// after, or its 429 ratio passes ratio.
func holdsFloors(t *testing.T, sc server.Scenario, exits int, whole, after, ratio float64) {
	t.Helper()
	eg, _ := strategy.ByName(strategy.Exitgate)
	r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: exits, Seed: 1, Duration: 120 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.1f%% over the run, %.1f%% after warmup, %.2f%% 429s, %d learning", 100*r.Utilization, 100*r.UtilizationSteady, 100*r.Ratio429, r.Learning429s)
	if r.Utilization < whole || r.UtilizationSteady < after || r.Ratio429 > ratio {
		t.Errorf("%.1f%% over the run (floor %.0f%%), %.1f%% after warmup (floor %.0f%%), %.2f%% 429s (cap %.1f%%)",
			100*r.Utilization, 100*whole, 100*r.UtilizationSteady, 100*after, 100*r.Ratio429, 100*ratio)
	}
}

// TestMinuteAfter30s holds the bare windows of a minute with large quotas
// to the acceptance check's measure, from 30 s on: the ramp runs such a
// quota out in its first 10 s, and the followers, held to the first run's
// count while the explorer's recovery was measured, spent the rest of
// theirs at once and idled until the minute's end (55-61% from 30 s on,
// real and twin alike). They spread it over the minute now (longRun).
func TestMinuteAfter30s(t *testing.T) {
	eg, _ := strategy.ByName(strategy.Exitgate)
	for _, name := range []string{"twin-haproxy-100-per-min-bare", "twin-flask-fixed-60-per-min-bare", "haproxy-50-per-min-bare", "apache-qos-100-per-min"} {
		t.Run(name, func(t *testing.T) {
			sc, ok := server.ScenarioByName(name)
			if !ok {
				t.Fatalf("no scenario %s", name)
			}
			r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 10, Seed: 1, Duration: 120 * time.Second, Warmup: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%.1f%% over the run, %.1f%% after 30 s, %.2f%% 429s", 100*r.Utilization, 100*r.UtilizationSteady, 100*r.Ratio429)
			if r.Utilization < 0.93 || r.UtilizationSteady < 0.88 || r.Ratio429 > 0.01 {
				t.Errorf("%.1f%% over the run (floor 93%%), %.1f%% after 30 s (floor 88%%), %.2f%% 429s (cap 1%%)", 100*r.Utilization, 100*r.UtilizationSteady, 100*r.Ratio429)
			}
		})
	}
}

// TestQuietResetWaitsForItsReset: gin-rate-limit's window begins again at
// each request let through, and its 429s tell no Retry-After, only
// X-RateLimit-Remaining: 0 and the reset (a blind run against the real
// one: 49.8% and 19.2% of 429s over 120 s, every lane retried every 4 s
// into a minute's wait, and every lane sent again before its reset with
// nothing remaining, as on a moving window). The 429s' reset is waited
// for, one lane tries the early request for all, and once it is refused
// the quota is spent quickly and the reset waited out.
func TestQuietResetWaitsForItsReset(t *testing.T) {
	eg, _ := strategy.ByName(strategy.Exitgate)
	sc, ok := server.ScenarioByName("quiet-reset-30-per-min")
	if !ok {
		t.Fatal("no quiet-reset-30-per-min")
	}
	for _, tc := range []struct {
		d           time.Duration
		util, ratio float64
	}{{120 * time.Second, 0.5, 0.01}, {300 * time.Second, 0.75, 0.01}} {
		res, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 10, Seed: 1,
			Warmup: 30 * time.Second, Duration: tc.d})
		if err != nil {
			t.Fatal(err)
		}
		if res.Utilization < tc.util || res.Ratio429 > tc.ratio {
			t.Errorf("%v: utilization %.3f, 429 ratio %.4f over the run; want at least %.2f and at most %.2f", tc.d, res.Utilization, res.Ratio429, tc.util, tc.ratio)
		}
	}
}

// TestReprobeBurstCarried: a re-probe above a settled bucket (x/time/rate's
// 5/s with a burst of 5, bare) proves a step only once the burst it knows
// could not have carried it: a careful run of 21 requests in 3.2 s at
// 6.25/s read as 5.95/s passed, the followers took 5.77/s, every lane was
// pushed back within 5 s, and the host fell to a careful search from half
// its limit (84.9% over 300 s, 27 learning 429s).
func TestReprobeBurstCarried(t *testing.T) {
	eg, _ := strategy.ByName(strategy.Exitgate)
	sc, err := server.TwinVariant("twin-xrate-2-s-burst5:quota=5:window=1s:burst=5")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 10, Seed: 1,
		Warmup: 30 * time.Second, Duration: 300 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Utilization < 0.93 || res.UtilizationSteady < 0.95 {
		t.Errorf("utilization %.3f over the run, %.3f after 30 s; want at least 0.93 and 0.95", res.Utilization, res.UtilizationSteady)
	}
}

// TestRefusalsAreNotBans: Apache's mod_evasive answers a client over its
// count with a bare 403 and holds it while it keeps sending. Its 403 waves
// read as bans held the exploring lane ten minutes, nothing searched after
// it, and the host stayed at 1.94/s of 5 a lane (28%, real); read as the
// limit refusing the pace (rule wave), the search goes on. Each refusal is
// measured as a 429, and no URL is lost to one: a refused URL goes through
// another exit. At 7 a second the ramp's quick run passes 7.76/s and every
// follower that takes it is refused at once: each wave is read at the pace
// that ran the count out, not at the one its lane took since (read so, the
// search cascaded to 0.9/s, 9.6% of the limit; 13% real at 5 a second).
func TestRefusalsAreNotBans(t *testing.T) {
	eg, _ := strategy.ByName(strategy.Exitgate)
	for _, tt := range []struct {
		scenario            string
		whole, after, ratio float64
	}{
		{"apache-evasive-5-per-s-block10", 0.8, 0.88, 0.01},
		{"apache-evasive-5-per-s-block10:quota=7", 0.65, 0.85, 0.01},
		// (nginx's limit_req answering 403, its refusals one or two
		// between successes, and HAProxy's deny are misses, with
		// simulated variants: twin-nginx-10r-s-burst5:quota=3:burst=6:
		// refuse=403, twin-haproxy-20-per-10s:refuse=403.)
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			sc, err := server.TwinVariant(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Virtual(context.Background(), Config{Scenario: sc, Strategy: eg, Exits: 10, Seed: 1, Duration: 120 * time.Second, Warmup: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%.1f%% over the run, %.1f%% after 30 s, %.2f%% refused (%d 403s), %d abandoned", 100*r.Utilization, 100*r.UtilizationSteady, 100*r.Ratio429, r.Forbidden, r.Abandoned)
			if r.Utilization < tt.whole || r.UtilizationSteady < tt.after || r.Ratio429 > tt.ratio {
				t.Errorf("%.1f%% over the run (floor %.0f%%), %.1f%% after 30 s (floor %.0f%%), %.2f%% refused (cap %.0f%%)", 100*r.Utilization, 100*tt.whole, 100*r.UtilizationSteady, 100*tt.after, 100*r.Ratio429, 100*tt.ratio)
			}
			if r.Forbidden == 0 || r.Figures.Limited != int(r.Forbidden) || r.Abandoned != 0 {
				t.Errorf("%d 403s, %d measured as refusals, %d URLs abandoned: want some 403s, each a refusal, none abandoned", r.Forbidden, r.Figures.Limited, r.Abandoned)
			}
		})
	}
}
