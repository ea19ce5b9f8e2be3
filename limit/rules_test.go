package limit

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// Table tests of the learning rules at explicit instants (Unix ns). Each
// builds the state a rule sees, applies the rule, and checks what it
// changed and the Change it recorded.

var at0 = time.Unix(1_800_000_000, 0).UnixNano()

func sec(s float64) int64 { return at0 + int64(s*1e9) }

func testRules(t *testing.T, c Config) *rules {
	t.Helper()
	r, err := c.rules()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// hostWith builds a host with the named lanes, the first one the explorer.
func hostWith(r *rules, names ...string) *host {
	h := newHost("h")
	for _, n := range names {
		h.newLane(r, n, 0, at0)
	}
	h.exp.exit = names[0]
	h.exp.pace = r.startPace()
	r.setPace(h, h.lanes[names[0]], h.exp.pace)
	return h
}

// bisecting builds a host of lanes e and f whose explorer e is in the
// search's bisection, on the default rules.
func bisecting(t *testing.T) (*rules, *host, *lane) {
	t.Helper()
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	h.exp.phase = expBisect
	return r, h, h.lanes["e"]
}

func lastChange(h *host, what string) (Change, bool) {
	cs := h.log.recent()
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].What == what {
			return cs[i], true
		}
	}
	return Change{}, false
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{Settle: 1.5},
		{FirstGuess: PerMinute(1), MinLaneRate: PerMinute(5)},
		{HostConcurrency: -1},
		{BackoffBase: time.Minute, BackoffCap: time.Second},
		{FirstGuess: Rate{N: math.Inf(1)}},
		{BanWave: 1000},
	} {
		if _, err := c.rules(); err == nil {
			t.Errorf("rules(%+v) = nil error, want ErrConfig", c)
		}
	}
	// Each refusal names the values, and a field the caller did not set
	// as a default: "MinLaneRate exceeds FirstGuess" blamed a FirstGuess
	// never given, and a floor above the cap was reported as that.
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{MinLaneRate: PerSecond(10)}, "MinLaneRate 10/s exceeds FirstGuess's default 0.5/s"},
		{Config{MinLaneRate: PerSecond(10), MaxLaneRate: PerSecond(1)}, "MinLaneRate 10/s exceeds MaxLaneRate 1/s"},
		{Config{FirstGuess: PerSecond(100), HostCeiling: PerSecond(1)}, "HostCeiling 1/s is below FirstGuess 100/s"},
		{Config{BackoffCap: 100 * time.Millisecond}, "BackoffCap 100ms is below BackoffBase's default 1s"},
		{Config{BanMax: time.Minute}, "BanMax 1m0s is below BanBase's default 10m0s"},
		{Config{FirstGuess: Rate{N: 1e-12}}, "below one request a year"},
	} {
		if _, err := tc.c.rules(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rules(%+v) = %v, want %q", tc.c, err, tc.want)
		}
	}
	if d := (Rate{N: 1e-12}).Interval(); d <= 0 {
		t.Errorf("Interval of 1e-12/s = %v, want the longest Duration, not below zero", d)
	}
	r := testRules(t, Config{})
	if r.first != 0.5 || r.hostConc != 32 || r.maxInFlight != 256 || r.settle != 0.97 || r.changes != 16 {
		t.Errorf("defaults %+v", r)
	}
	// The default floor follows a first guess under it (10 an hour: a
	// site known to be that slow); it was refused as exceeding the guess.
	if r := testRules(t, Config{FirstGuess: Rate{N: 10, Per: time.Hour}}); r.minLane != r.first {
		t.Errorf("first guess 10/h: floor %v, want the guess %v", r.minLane, r.first)
	}
}

// TestRamp: the explorer doubles after a run of rampRun successes spanning
// rampSpan at its pace, and the followers take what it passed.
func TestRamp(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	start := r.startPace()
	if !near(start, 0.485) || e.pace != start || h.lanes["f"].pace != 0.25 {
		t.Fatalf("start: explorer %v follower %v, want Settle x 0.5 = 0.485 and half the first guess", e.pace, h.lanes["f"].pace)
	}
	r.exploreOK(h, e, sec(0), sec(0))
	if e.pace != start {
		t.Fatalf("after one success pace %v, want %v (a run is %d successes over %v)", e.pace, start, rampRun, time.Duration(rampSpan))
	}
	r.exploreOK(h, e, sec(2.1), sec(2.1))
	if !near(e.pace, 2*start) || h.cap.pass != start || h.lanes["f"].pace != 0.25 {
		t.Errorf("after a run: explorer %v pass %v follower %v, want %v, %v and still 0.25", e.pace, h.cap.pass, h.lanes["f"].pace, 2*start, start)
	}
	if c, ok := lastChange(h, "pace"); !ok || c.Rule != "ramp" || c.From != 0.485 || c.To != 0.97 {
		t.Errorf("change %+v, want ramp pace 0.485 -> 0.97", c)
	}
	// The next run: the followers take what was passed one step behind.
	r.exploreOK(h, e, sec(3.2), sec(3.2))
	r.exploreOK(h, e, sec(4.3), sec(4.3))
	if !near(e.pace, 4*start) || !near(h.lanes["f"].pace, start) {
		t.Errorf("after two runs: explorer %v follower %v, want %v and %v", e.pace, h.lanes["f"].pace, 4*start, start)
	}
}

// TestEndRamp reads the first 429 with and without Retry-After.
func TestEndRamp(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name     string
		ra       time.Duration
		n1       int32
		t1       float64 // seconds
		pass     float64 // what the ramp passed
		wantSafe float64
		careful  bool
		await    bool
		wantHi   float64
		phase    uint8
		holds    bool // a follower keeps its pace until the run's count (awaitHolds)
	}{
		// nginx 1r/s with Retry-After 1: 3 successes in 5 s, recovery 1 s;
		// a short recovery: what the ramp passed holds.
		{"bucket with Retry-After", time.Second, 3, 5, 0.5, 0.5, false, false, 1, expRefine, false},
		// A window of 20 per minute: 20 successes in 12 s, then 48 s to
		// wait: 60 s in all, a minute. Its quota is known: settled at it,
		// nothing above to search.
		{"window with Retry-After", 48 * time.Second, 20, 12, 2, 20.0 / 60, true, false, 0, expSettled, false},
		// 20 successes in 12 s, then a 30-s penalty: 42 s fits no usual
		// window (a 10-s one and a penalty, or a window of a minute whose
		// recovery the penalty understates). The careful reading is the
		// run over the first usual window that long, 20 per minute; the
		// window holds no more than the run fitted into it, and the
		// search bisects from the careful reading.
		{"penalty with Retry-After", 30 * time.Second, 20, 12, 2, 20.0 / 60, true, false, 20.0 / 12, expBisect, false},
		// haproxy's 10 per 30 s with Retry-After: 15: 10 in 6.7 s, then
		// 15 s: 21.7 s is no window; 30 s is the first usual one.
		{"recovery shorter than the window", 15 * time.Second, 10, 6.7, 1.94, 10.0 / 30, true, false, 10 / 6.7, expBisect, false},
		// No Retry-After: the cautious reading (a minute) until the lane
		// is seen to recover.
		{"no Retry-After", 0, 6, 8, 1, 6.0 / 68, false, true, 2, expRefine, false},
		// The same with a first run of 12: the followers keep their pace
		// until they have sent 10 (awaitHolds).
		{"no Retry-After, a larger first run", 0, 12, 8, 1, 12.0 / 68, false, true, 2, expRefine, true},
		// A long first run (longRun): 99 in 11 s. Read as a minute's
		// window from its first request, and the followers do not hold
		// its count: they would spend it in seconds and idle the minute.
		{"no Retry-After, a long first run", 0, 99, 11, 8, 99.0 / 60, false, true, 16, expRefine, false},
	} {
		h := hostWith(r, "e", "f")
		h.cap.pass = tc.pass
		e := h.lanes["e"]
		before := h.lanes["f"].pace
		r.endRamp(h, e, 2*tc.pass, series{at: sec(0), ok: tc.n1}, tc.ra, sec(tc.t1))
		c := &h.cap
		if !near(c.safe, tc.wantSafe) || c.careful != tc.careful || (h.exp.awaitAt != 0) != tc.await {
			t.Errorf("%s: safe %.4f careful %v await %v; want %.4f %v %v", tc.name, c.safe, c.careful, h.exp.awaitAt != 0, tc.wantSafe, tc.careful, tc.await)
		}
		if !near(c.hi, tc.wantHi) || h.exp.phase != tc.phase {
			t.Errorf("%s: hi %v phase %v, want %v and %v", tc.name, c.hi, h.exp.phase, tc.wantHi, tc.phase)
		}
		f := h.lanes["f"]
		if h.awaitHolds(f) != tc.holds {
			t.Errorf("%s: follower holds its pace %v, want %v", tc.name, h.awaitHolds(f), tc.holds)
		}
		if tc.holds {
			// Until the recovery is known, a follower that has sent
			// fewer than the explorer's first run less two keeps its
			// pace (no window holds fewer); at that count it slows.
			if f.pace != before {
				t.Errorf("%s: follower at %v while it sent nothing, want its pace %v held", tc.name, f.pace, before)
			}
			f.serSent = tc.n1 - 2
			r.awaitSpent(h, f)
		}
		if f.pace > r.settle*max(c.pass, c.safe)*(1+tolerance) {
			t.Errorf("%s: follower at %v, above Settle times what is known (%v)", tc.name, f.pace, max(c.pass, c.safe))
		}
	}
}

// TestUsualWindowStep: a careful reading that is the first run's quota over
// a usual window a Retry-After completed (haproxy's 10 per 30 s with
// Retry-After: 15) is tried one request a window above, and pushed back
// there the host settles at it: one 429, not a bisection from the middle.
// A Retry-After of round seconds may be a penalty's block: the ramp's pace
// is tested first (penaltyTest), and pushed back within the run's count
// the step comes as before.
func TestUsualWindowStep(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	h.cap.pass = 1.94
	e := h.lanes["e"]
	r.endRamp(h, e, 3.88, series{at: sec(0), ok: 10}, 15*time.Second, sec(6.7))
	if !h.exp.ptest || h.exp.wtest != 22 || !near(e.pace, 1.94) {
		t.Fatalf("Retry-After: 15: explorer at %v, test of %d (penalty's %v); want 22 at the ramp's 1.94/s, a penalty's", e.pace, h.exp.wtest, h.exp.ptest)
	}
	r.explore429(h, e, e.pace, 10, sec(6.7+15+5.2))
	if h.exp.phase != expSettled || !near(h.lanes["f"].pace, r.settle*10/30) {
		t.Errorf("the penalty's test pushed back within the run's count: phase %v, follower at %v; want settled at %v", phaseNames[h.exp.phase], h.lanes["f"].pace, r.settle*10/30)
	}
	// Without the test (no 429 to spare), the step above the reading.
	h = hostWith(r, "e", "f")
	h.cap.pass = 1.94
	h.c.Throttled = 3 // the host's 429s so far: learnAllowance spent
	e = h.lanes["e"]
	r.endRamp(h, e, 3.88, series{at: sec(0), ok: 10}, 15*time.Second, sec(6.7))
	if want := 11.0 / 30 * (1 - tolerance); !near(e.pace, want) || h.exp.quotaW != 30*time.Second {
		t.Fatalf("explorer at %v (window %v), want %v: one request more per 30 s", e.pace, h.exp.quotaW, want)
	}
	r.explore429(h, e, e.pace, 3, sec(20))
	if h.exp.phase != expSettled || !near(h.lanes["f"].pace, r.settle*10/30) {
		t.Errorf("pushed back one request a window above: phase %v, follower at %v; want settled at %v", phaseNames[h.exp.phase], h.lanes["f"].pace, r.settle*10/30)
	}
	// The same reading from a recovery seen, not told, bisects as before.
	h = hostWith(r, "e", "f")
	h.cap.pass = 1.94
	e = h.lanes["e"]
	r.endRamp(h, e, 3.88, series{at: sec(0), ok: 10}, 0, sec(6.7))
	r.exploreOK(h, e, sec(6.7+15), sec(6.7+15))
	if h.exp.quotaW != 0 || near(e.pace, 11.0/30*(1-tolerance)) {
		t.Errorf("a recovery seen: explorer at %v (window %v), want the middle of the bisection", e.pace, h.exp.quotaW)
	}
}

// TestOnePerWait: one success, then a 429 at the next request and a wait
// that fits no common window: the explorer tries one per that wait (nginx's
// 12r/m with Retry-After: 5) while the followers hold the careful reading.
func TestOnePerWait(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name string
		ra   time.Duration
		want float64 // the explorer's pace
		w    time.Duration
	}{
		{"Retry-After: 5 after 2.06 s", 5 * time.Second, r.settle / 5, 5 * time.Second},
		// Three seconds read as the usual two: one per 2 s is where the
		// 429 came, nothing to try; the refine starts two steps under it.
		{"Retry-After: 3", 3 * time.Second, 0.485 / rampStep / rampStep, 0},
		// A whole-second Retry-After says nothing of the limit.
		{"Retry-After: 1", time.Second, 0.485 / rampStep / rampStep, 0},
	} {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		r.endRamp(h, e, 0.485, series{at: sec(0), ok: 1}, tc.ra, sec(2.06))
		if !near(e.pace, tc.want) || h.exp.quotaW != tc.w {
			t.Errorf("%s: explorer at %.4f (window %v), want %.4f (%v)", tc.name, e.pace, h.exp.quotaW, tc.want, tc.w)
		}
		if f := h.lanes["f"].pace; f > r.settle*h.cap.safe*(1+tolerance) {
			t.Errorf("%s: follower at %v, above Settle under the careful reading %v", tc.name, f, h.cap.safe)
		}
	}
}

// TestWindowFit: the first run's time and the lane's recovery read as a
// usual window only when they add up to one, or a little over (a fixed
// Retry-After counts from the 429).
func TestWindowFit(t *testing.T) {
	for _, tc := range []struct {
		t1, rec float64 // seconds
		want    time.Duration
		ok      bool
	}{
		{7.2, 60, time.Minute, true},        // haproxy 6 per minute, Retry-After: 60
		{12, 48, time.Minute, true},         // an honest Retry-After: to the window's end
		{2.1, 10, 10 * time.Second, true},   // nginx 6r/m: one success, Retry-After: 10
		{4.1, 30, 30 * time.Second, false},  // 2 per 10 s and a 30-s penalty: no usual window
		{6.7, 24, 30 * time.Second, true},   // 10 per 30 s, Retry-After to the window's end
		{0.5, 30.5, 30 * time.Second, true}, // a whole-second Retry-After to the end of 10 per 30 s
		{0.5, 1, 0, false},                  // a whole-second Retry-After says nothing
		{70, 10, time.Minute, false},        // the run took longer than the window
		{100, 3600, time.Hour, true},
	} {
		w, ok := windowFit(int64(tc.t1*1e9), 0, int64(tc.rec*1e9))
		if ok != tc.ok || (ok && w != tc.want) {
			t.Errorf("%.1f s and %.0f s to recover: %v %v, want %v %v", tc.t1, tc.rec, w, ok, tc.want, tc.ok)
		}
	}
}

// TestQuotaKnown: a first 429 whose reading fits a usual window settles
// the host at the first run's quota over it at once, the followers Settle
// under it; a lane that drew the 429 in a burst far above that pace waits
// a little past its Retry-After.
func TestQuotaKnown(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e, f := h.lanes["e"], h.lanes["f"]
	h.cap.pass = 0.97
	r.endRamp(h, e, 1.94, series{at: sec(0), ok: 6, run: 2}, time.Minute, sec(7.2))
	if h.exp.phase != expSettled || !near(h.cap.pass, 0.1) || h.cap.hi != 0 {
		t.Fatalf("6 in 7.2 s, Retry-After 60: phase %v pass %v hi %v; want settled at 0.1/s, no ceiling", h.exp.phase, h.cap.pass, h.cap.hi)
	}
	if want := r.settle * 0.1; !near(f.pace, want) || !near(e.pace, want) {
		t.Errorf("lanes at %v and %v, want Settle under 6 per minute, %v", e.pace, f.pace, want)
	}
	r.cooldown(h, e, 1.94, time.Minute, false, sec(7.2), 0.5)
	if want := sec(7.2+60) + min(interval(e.pace), int64(15*time.Second)); e.cool != want {
		t.Errorf("the explorer waits until %v, want %v: the Retry-After and an interval at its new pace", time.Duration(e.cool-at0), time.Duration(want-at0))
	}
	f.cool = 0
	r.cooldown(h, f, f.pace, time.Minute, false, sec(8), 0.5)
	if f.cool != sec(68) {
		t.Errorf("a follower pushed back at its own pace waits until %v, want the Retry-After exactly", time.Duration(f.cool-at0))
	}
}

// TestShortFitsReprobesSoon: a told recovery that fits a usual window (15
// in 7.5 s and Retry-After: 3, read as 15 per 10 s) as well as a shorter
// one the run outlasted (two windows of 5 s) brings the first re-probe a
// quarter of the usual time on (rate-limiter-flexible's 10 per 5 s: 75% of
// it for the 111 s before its re-probe). A run inside the shorter window
// does not (6 in 4.2 s, Retry-After: 6).
func TestShortFitsReprobesSoon(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		n1   int32
		t1   float64
		ra   time.Duration
		soon bool
	}{
		{15, 7.5, 3 * time.Second, true},
		{6, 4.2, 6 * time.Second, false},
	} {
		h := hostWith(r, "e", "f")
		h.cap.pass, h.exp.ramped = 3.88, 3.88 // the ramp passed 3.88/s
		r.endRamp(h, h.lanes["e"], 7.76, series{at: sec(0), ok: tc.n1, run: 3}, tc.ra, sec(tc.t1))
		if h.exp.phase != expSettled || h.exp.shortFits != tc.soon {
			t.Errorf("%d in %.1f s, Retry-After %v: phase %v, shortFits %v; want settled, %v", tc.n1, tc.t1, tc.ra, phaseNames[h.exp.phase], h.exp.shortFits, tc.soon)
		}
		if !tc.soon {
			continue
		}
		// Due a quarter of the usual time on (15 s), after a quarter of
		// the usual successes (100): the host's 400 at 14.6/s came 28 s
		// on.
		at := sec(tc.t1 + 16)
		h.exp.okSince = reprobeQuiet/4 - 2
		r.reprobeDue(h, h.lanes["e"], at)
		if h.exp.reprobe {
			t.Errorf("re-probed after %d successes, want %d", h.exp.okSince, reprobeQuiet/4)
		}
		r.reprobeDue(h, h.lanes["e"], at)
		if !h.exp.reprobe {
			t.Errorf("no re-probe 16 s on after %d successes", h.exp.okSince)
		}
	}
}

// TestQuotaNeedsWindow: a first run that happens to last about 10 s and a
// quick recovery (2.1 s: a bucket's refill at under 1/s) add up to a 10-s
// window, but a recovery short against the pace is no window: no quota.
func TestQuotaNeedsWindow(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	h.cap.pass = 0.97
	r.endRamp(h, e, 3.88, series{at: sec(0), ok: 12, run: 8}, 0, sec(9.9))
	r.exploreOK(h, e, sec(12), sec(12))
	if h.exp.phase == expSettled || h.cap.windowed {
		t.Errorf("12 in 9.9 s, recovered 2.1 s later: phase %v windowed %v, want no window and no quota", phaseNames[h.exp.phase], h.cap.windowed)
	}
}

// TestTightWindow: 32 successes in 10.8 s, then a 429 without Retry-After;
// the lane recovers 11.1 s later (httprate's 30 per 10 s once the quick
// retry was pushed back): the run lasted about a window, so what it fitted
// in (32 in 10.8 s) is close, and the careful bisect tries three quarters
// of the way up to it (in log space) rather than the middle. A recovery
// much longer than the run is no such reading.
func TestTightWindow(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name  string
		rec   float64
		tight bool
	}{
		{"recovered as long after as the run took", 11.1, true},
		{"recovered far later", 40, false},
	} {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		h.cap.pass = 7.76
		r.endRamp(h, e, 15.52, series{at: sec(0), ok: 32, run: 11}, 0, sec(10.8))
		r.exploreOK(h, e, sec(10.8+tc.rec), sec(10.8+tc.rec))
		if h.exp.tight != tc.tight || !h.cap.windowed {
			t.Errorf("%s: tight %v windowed %v, want %v and a window", tc.name, h.exp.tight, h.cap.windowed, tc.tight)
			continue
		}
		lo, hi := h.cap.pass, h.cap.hi
		want := math.Sqrt(lo * hi)
		if tc.tight {
			want = math.Pow(lo, 0.25) * math.Pow(hi, 0.75)
		}
		if !near(e.pace, want) {
			t.Errorf("%s: explorer at %v between %v and %v, want %v", tc.name, e.pace, lo, hi, want)
		}
	}
}

// TestToldPair: one success, then a 429 at the second request of the
// ramp's first pace, and a Retry-After: a pace limit with no burst whose
// Retry-After is most often a fixed header. Nothing is read from the
// Retry-After until a retry passes: the followers hold (nginx 6r/m told 1 s
// had each follower sent at one per the wait, all pushed back at once), the
// recovery is measured as without one, and a retry the Retry-After would
// hold past its time goes on another lane. nginx 6r/m told 10 s: the retry
// at the schedule's 6.2 s is pushed back, one request per the Retry-After
// passes, and with no round limit between 6 and 9.7 a minute the search
// settles there, Settle under 6 per minute (pairRung); the successes after
// it do not take the search up again (phase records flapping every
// request).
func TestToldPair(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f", "g")
	e, c := h.lanes["e"], &h.cap
	firstOK := func(l *lane, at float64) {
		l.serAt, l.serSent, l.serOK = sec(at), 1, 1
		l.tat = sec(at) + interval(l.pace)
	}
	firstOK(h.lanes["f"], 0.3)
	firstOK(h.lanes["g"], 0.1) // the lane whose last request is oldest retries first
	h.newLane(r, "idle", 0, at0)
	firstOK(h.lanes["idle"], -70) // idle since: its next request would test 72 s, not 6.2
	r.endRamp(h, e, 0.485, series{at: sec(0), ok: 1, run: 1}, 10*time.Second, sec(2.06))
	if c.pair || h.exp.awaitAt == 0 {
		t.Fatalf("after the 429: pair %v, awaiting %v; want the recovery awaited, nothing read", c.pair, h.exp.awaitAt != 0)
	}
	if c.follow > r.minLane*(1+1e-9) {
		t.Fatalf("followers at %.3g/s, want them held (one per the wait is no reading)", c.follow)
	}
	r.cooldown(h, e, 0.485, 10*time.Second, false, sec(2.06), 0.5)
	if e.cool < sec(12.06) {
		t.Fatalf("the explorer waits until %.2fs, want the Retry-After honoured", secs(e.cool-at0))
	}
	g := h.lanes["g"]
	if h.exp.exit != "g" {
		t.Fatalf("the retry goes on lane %q, want g (free, and sent longest ago)", h.exp.exit)
	}
	if got := secs(r.laneReady(g) - sec(0.1)); math.Abs(got-6.18) > 0.05 {
		t.Fatalf("g's retry %.2fs after its last request, want the schedule's spacing, 6.18s", got)
	}
	// g's retry is pushed back: one request per the Retry-After goes on f.
	r.cooldown(h, g, g.pace, 10*time.Second, false, sec(6.35), 0.5)
	f := h.lanes["f"]
	if h.exp.exit != "f" || !near(f.pace, r.settle/10) {
		t.Fatalf("after the retry was pushed back: explorer %q at %.4g/s; want f at Settle under one per 10 s, %.4g", h.exp.exit, f.pace, r.settle/10)
	}
	sent := r.laneReady(f)
	r.exploreOK(h, f, sent, sent+int64(time.Millisecond))
	if !c.pair || math.Abs(f.pace/(r.settle/10)-1) > 1e-3 || h.exp.phase != expSettled {
		t.Fatalf("one per the Retry-After passed: pair %v, explorer at %.4g/s, phase %s; want settled Settle under 6 per minute", c.pair, f.pace, phaseNames[h.exp.phase])
	}
	if c.follow > f.pace*(1+1e-9) {
		t.Errorf("followers at %.4g/s, above what passed", c.follow)
	}
	h.c.OK = 3 * earnEvery
	n := len(h.log.recent())
	for i := range 3 {
		r.reprobeDue(h, f, sec(71+10*float64(i)))
	}
	if h.exp.phase != expSettled || len(h.log.recent()) != n {
		t.Errorf("after successes: phase %v, %d change records more; want settled and none", phaseNames[h.exp.phase], len(h.log.recent())-n)
	}

	// Told 1 s: the schedule's retry comes later than the Retry-After, on
	// the explorer itself.
	h = hostWith(r, "e", "f")
	e = h.lanes["e"]
	firstOK(h.lanes["f"], 0.3)
	r.endRamp(h, e, 0.485, series{at: sec(0), ok: 1, run: 1}, time.Second, sec(2.06))
	r.cooldown(h, e, 0.485, time.Second, false, sec(2.06), 0.5)
	if h.exp.exit != "e" || math.Abs(secs(e.cool-sec(2.06))-4.12) > 0.05 {
		t.Errorf("told 1 s: explorer %q cools %.2fs; want e, the schedule's 4.12s", h.exp.exit, secs(e.cool-sec(2.06)))
	}

	// Told 60 s: the search starts from the usual refine start.
	h = hostWith(r, "e", "f")
	e = h.lanes["e"]
	r.endRamp(h, e, 0.485, series{at: sec(0), ok: 1, run: 1}, time.Minute, sec(2.06))
	if h.exp.phase == expSettled || e.pace < 0.485/8 {
		t.Errorf("one success, Retry-After 60: phase %v explorer at %v, want the search from the usual refine start", h.exp.phase, e.pace)
	}
}

// TestTryQuota: haproxy's 2 per 10 s with Retry-After: 30. Two successes
// in 4.1 s, a 429; the window test at the ramp's pace is pushed back after
// two again: a window of 2, between 4.1 s and 34.1 s long. The explorer
// tries 2 per 10 s (the shortest usual window in there) while the
// followers hold the careful reading; sustained over three windows it
// settles the host there. Pushed back, the bisection goes on under it.
func TestTryQuota(t *testing.T) {
	start := func() (*rules, *host, *lane, *lane) {
		r := testRules(t, Config{})
		h := hostWith(r, "e", "f")
		e, f := h.lanes["e"], h.lanes["f"]
		h.cap.pass = 0.485
		r.endRamp(h, e, 0.97, series{at: sec(0), ok: 2, run: 1}, 30*time.Second, sec(4.1))
		if h.exp.wtest == 0 || !near(e.pace, 0.485) {
			t.Fatalf("2 successes, the second at a doubled pace, Retry-After 30: wtest %d pace %v, want a window test at 0.485/s", h.exp.wtest, e.pace)
		}
		r.explore429(h, e, 0.485, 2, sec(6.7))
		want := r.settle * 0.2
		if !h.exp.qtry || h.exp.quotaW != 10*time.Second || !near(e.pace, want) {
			t.Fatalf("window test pushed back after 2: qtry %v window %v explorer at %v, want a try of Settle under 2 per 10 s, %v", h.exp.qtry, h.exp.quotaW, e.pace, want)
		}
		if f.pace > 0.1 {
			t.Fatalf("follower at %v during the try, want the careful reading (2 in 34 s)", f.pace)
		}
		return r, h, e, f
	}

	r, h, e, f := start()
	if span := h.proofSpan(e.pace); span < int64(30*time.Second) || span > int64(maxSpan) {
		t.Errorf("the try's proof span %v, want three windows, a minute at most", time.Duration(span))
	}
	at := 7.0
	for ; h.exp.phase != expSettled && at < 60; at += 1 / e.pace {
		r.exploreOK(h, e, sec(at), sec(at))
	}
	if h.exp.phase != expSettled || !near(h.cap.pass, 0.2) || h.cap.hi != 0 {
		t.Fatalf("after %.0f s at the quota: phase %v pass %v hi %v, want settled at 2 per 10 s", at-7, h.exp.phase, h.cap.pass, h.cap.hi)
	}
	if at-7 < 30 || at-7 > 40 {
		t.Errorf("settled after %.1f s at the quota, want three windows (30 s) and a few requests", at-7)
	}
	if want := r.settle * 0.2; !near(f.pace, want) {
		t.Errorf("follower at %v once settled, want %v", f.pace, want)
	}

	// The window is 30 s, not 10: the try is pushed back, and the search
	// goes on between the careful reading and the try.
	r, h, e, _ = start()
	try := e.pace
	r.explore429(h, e, try, 2, sec(17.5))
	if h.exp.qtry || h.exp.quotaW != 0 || !near(h.cap.hi, try) {
		t.Fatalf("try pushed back: qtry %v window %v hi %v, want no quota and the ceiling at the try, %v", h.exp.qtry, h.exp.quotaW, h.cap.hi, try)
	}
	if e.pace >= try || e.pace <= h.cap.safe {
		t.Errorf("explorer at %v after the try was pushed back, want between the reading %v and the try %v", e.pace, h.cap.safe, try)
	}
}

// TestRecovery: a 429 without Retry-After; the lane is seen to recover at
// the first try (a bucket) or only after a long wait (a window).
func TestRecovery(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name    string
		rec     float64
		careful bool
	}{
		{"quick: a bucket", 1, false},
		{"a minute: a window", 50, true},
	} {
		h := hostWith(r, "e", "f")
		h.cap.pass = 1
		e := h.lanes["e"]
		r.endRamp(h, e, 2, series{at: sec(0), ok: 10}, 0, sec(10))
		r.exploreOK(h, e, sec(10+tc.rec), sec(10+tc.rec))
		if h.exp.awaitAt != 0 || h.cap.careful != tc.careful {
			t.Errorf("%s: await %v careful %v, want 0 and %v", tc.name, h.exp.awaitAt, h.cap.careful, tc.careful)
		}
		if want := 10 / (10 + tc.rec); !near(h.cap.safe, min(want, 1)) {
			t.Errorf("%s: safe %v, want %v", tc.name, h.cap.safe, want)
		}
	}
}

// TestRecoveryAfterBurst: a quick recovery with a burst seen (httprate's 30
// per 10 s without headers: 11 successes at 15.5/s after a ramp that passed
// 7.76/s for a second, 32 in 10.8 s in all): the ramp's quick runs prove
// nothing of the rate, so the followers hold the count and the explorer
// bisects up from it. With half a request of burst (nginx 1r/s on timing)
// what the ramp passed holds.
func TestRecoveryAfterBurst(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name       string
		pass, x    float64
		ok, run    int32
		t1         float64
		wantPass   float64
		wantBisect bool
	}{
		{"a burst of 5.5: the count", 7.76, 15.52, 32, 11, 10.8, 32 / 11.1, true},
		{"half a request: the ramp's pace", 0.97, 1.94, 5, 1, 6.7, 0.97, false},
	} {
		h := hostWith(r, "e", "f")
		h.cap.pass = tc.pass
		e, f := h.lanes["e"], h.lanes["f"]
		r.endRamp(h, e, tc.x, series{at: sec(0), ok: tc.ok, run: tc.run}, 0, sec(tc.t1))
		r.exploreOK(h, e, sec(tc.t1+0.3), sec(tc.t1+0.3))
		if !near(h.cap.pass, tc.wantPass) {
			t.Errorf("%s: pass %v, want %v", tc.name, h.cap.pass, tc.wantPass)
		}
		if (h.exp.phase == expBisect) != tc.wantBisect || f.pace > tc.wantPass {
			t.Errorf("%s: phase %v follower at %v, want bisect %v and the follower at most %v", tc.name, phaseNames[h.exp.phase], f.pace, tc.wantBisect, tc.wantPass)
		}
		if tc.wantBisect && (e.pace <= tc.wantPass || e.pace >= tc.x) {
			t.Errorf("%s: explorer at %v, want between the count %v and the pushback %v", tc.name, e.pace, tc.wantPass, tc.x)
		}
	}
}

// TestBisect: the explorer tries the middle of passed and pushed back in log
// space, and settles once they are within bisectDone.
func TestBisect(t *testing.T) {
	r, h, e := bisecting(t)
	h.cap.pass = 0.8
	h.cap.ceil(1.25, sec(0))
	r.nextBisect(h, e, sec(0))
	if !near(e.pace, 1) {
		t.Errorf("middle of 0.8 and 1.25 = %v, want 1", e.pace)
	}
	// Pushed back at 1: hi 1, the middle of 0.8 and 1 next.
	r.explore429(h, e, 1, 0, sec(1))
	if h.cap.hi != 1 || !near(e.pace, math.Sqrt(0.8)) {
		t.Errorf("after a 429 at 1: hi %v pace %v, want 1 and %v", h.cap.hi, e.pace, math.Sqrt(0.8))
	}
	h.cap.pass = 0.98
	r.nextBisect(h, e, sec(2))
	if want := r.settle * 1; h.exp.phase != expSettled || !near(h.lanes["f"].pace, want) {
		t.Errorf("passed 0.98, pushed back at 1: phase %v follower %v, want settled at Settle under the pushback, %v", h.exp.phase, h.lanes["f"].pace, want)
	}
}

// TestSameRuns: careful runs in a row at one pace add up, so the search
// does not try the same middle forever proving a request less each time;
// a 429 starts the count afresh.
func TestSameRuns(t *testing.T) {
	r, h, e := bisecting(t)
	h.cap.careful, h.cap.pass, h.cap.span = true, 0.9, minSpan
	h.cap.ceil(1.026, sec(0))
	pace := 0.975
	at := 0.0
	runAt := func() int32 {
		r.setExplorerPace(h, e, pace, sec(at), "test", "")
		h.exp.run = run{}
		n := int32(0)
		for pass := h.cap.pass; h.cap.pass == pass; n++ {
			r.exploreOK(h, e, sec(at), sec(at+0.005))
			at += 1 / pace
		}
		return n
	}
	n1 := runAt()
	if want := pace * float64(n1-1) / float64(n1); !near(h.cap.pass, want) {
		t.Fatalf("first run of %d: pass %v, want %v", n1, h.cap.pass, want)
	}
	h.cap.pass = 0.9 // as if it had proven nothing new
	n2 := runAt()
	if n := n1 + n2; !near(h.cap.pass, pace*float64(n-1)/float64(n)) {
		t.Errorf("second run at the same pace: pass %v, want %v (%d requests in all)", h.cap.pass, pace*float64(n-1)/float64(n), n)
	}
	r.throttled(h, e, ticketRec{at: sec(at), laneIv: int64(1e9 / pace)}, &Outcome{}, sec(at), sec(at), 0.5)
	if h.exp.chain.n != 0 {
		t.Errorf("after a 429: %d successes still counted at the pace, want 0", h.exp.chain.n)
	}
	// A bucket's burst seen (and no window): runs in a row do not add up.
	h.exp.phase, h.cap.extra, h.cap.pass = expBisect, 2, 0.9
	h.cap.ceil(1.026, sec(at))
	n3 := runAt()
	h.cap.pass = 0.9
	n4 := runAt()
	if want := pace * float64(n4-1) / float64(n4); n3 == 0 || !near(h.cap.pass, want) {
		t.Errorf("with a burst of 2: pass %v after a second run, want %v (that run alone)", h.cap.pass, want)
	}
}

// TestStaleCeiling: a ceiling older than ProbeEvery is tried again before
// the search settles under it; pushed back there, it stands and the next
// retest waits twice as long; passed, it is dropped and the explorer climbs
// (the limit was raised).
func TestStaleCeiling(t *testing.T) {
	r, h, e := bisecting(t)
	h.cap.pass = 0.5
	h.cap.ceil(0.6, sec(0))
	r.nextBisect(h, e, sec(30))
	if mid := math.Sqrt(0.5 * 0.6); !near(e.pace, mid) || h.exp.retest {
		t.Fatalf("30 s after the ceiling: pace %v retest %v, want the middle %v", e.pace, h.exp.retest, mid)
	}
	r.nextBisect(h, e, sec(61))
	if !near(e.pace, 0.6) || !h.exp.retest {
		t.Fatalf("61 s after the ceiling: pace %v retest %v, want the ceiling 0.6 tried again", e.pace, h.exp.retest)
	}
	r.explore429(h, e, 0.6, 0, sec(62))
	if h.cap.hi != 0.6 || h.cap.hiAt != sec(62) || h.exp.fails != 1 || h.exp.retest {
		t.Fatalf("pushed back at the old ceiling: hi %v at %v fails %d, want it to stand, fresh, one failure", h.cap.hi, h.cap.hiAt, h.exp.fails)
	}
	r.nextBisect(h, e, sec(62+61))
	if h.exp.retest {
		t.Fatal("a retest 61 s after a failed one: want it to wait 2 x ProbeEvery")
	}
	r.nextBisect(h, e, sec(62+121))
	if !h.exp.retest {
		t.Fatal("no retest 121 s after a failed one")
	}
	// Sustained at the old ceiling: dropped, and the explorer doubles.
	for i := 0; i < 40; i++ {
		at := sec(200 + float64(i)/0.6)
		r.exploreOK(h, e, at, at)
	}
	if h.cap.hi != 0 || h.exp.fails != 0 || e.pace <= 0.6*1.5 {
		t.Errorf("passed the old ceiling: hi %v fails %d pace %v, want it dropped and the pace doubled", h.cap.hi, h.exp.fails, e.pace)
	}
}

// TestFallBack: the explorer pushed back at a pace it had passed drops what
// it passed and searches carefully from the cautious estimate.
func TestFallBack(t *testing.T) {
	r, h, e := bisecting(t)
	h.cap.pass, h.cap.hi, h.cap.safe = 2, 4, 0.6
	r.explore429(h, e, 2, 0, sec(0))
	c := &h.cap
	if c.pass != 0 || !c.careful || c.hi != 2 {
		t.Errorf("pass %v careful %v hi %v, want 0, true, 2", c.pass, c.careful, c.hi)
	}
	if f := h.lanes["f"].pace; !near(f, r.settle*0.6) {
		t.Errorf("followers at %v, want Settle x the cautious estimate %v", f, r.settle*0.6)
	}
}

// TestFallBackSettledEstimate: a settled host whose lanes all held a pace
// falls back to a cut under it, not to an estimate from before that pace
// was held (the first 429's reading, a fifth of it).
func TestFallBackSettledEstimate(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	h.exp.phase = expSettled
	h.cap.pass, h.cap.sent, h.cap.safe = 18, 18, 4
	r.updateFollow(h, sec(0), "test", "")
	x := h.cap.follow
	r.fallBack(h, h.lanes["e"], x, sec(5), "test")
	if want := followCut * x; !near(h.cap.safe, want) || h.lanes["f"].pace < r.settle*want*0.99 {
		t.Errorf("estimate %v, followers at %v; want %v and Settle under it", h.cap.safe, h.lanes["f"].pace, want)
	}
}

// TestFollowers: one follower pushed back alone gets its own budget; a
// second one at the host's pace within sympathySpan makes everyone fall
// back.
func TestFollowers(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "a", "b", "c")
	h.exp.phase = expSettled
	h.cap.pass, h.cap.hi = 1, 1.02
	r.updateFollow(h, sec(0), "test", "")
	a, b := h.lanes["a"], h.lanes["b"]
	pushed := func(l *lane, at float64) {
		h.addEvidence(r, evEntry{exit: l.exit, at: sec(at), pace: l.pace})
		r.follow429(h, l, l.pace, series{at: sec(at - 10), ok: 6}, sec(at))
	}
	f := h.cap.follow // min(1, Settle x 1.02)
	pushed(a, 1)
	if a.own() != f || a.pace >= f || b.pace != f {
		t.Errorf("one lane alone: own %v pace %v, other %v; want own %v, under it, other untouched", a.own(), a.pace, b.pace, f)
	}
	pushed(b, 2)
	if h.cap.pass != 0 || !h.cap.careful || h.lanes["c"].pace >= f {
		t.Errorf("two at the host's pace: pass %v careful %v third lane %v; want everyone back", h.cap.pass, h.cap.careful, h.lanes["c"].pace)
	}
}

// TestSetPaceDebt: a lane that sent ahead of a slower pace since its last
// 429 is held back; a faster pace lifts the hold.
func TestSetPaceDebt(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	r.setPace(h, f, 2)
	f.serAt, f.serSent, f.tat = sec(0), 20, sec(10) // 20 sent in 10 s at 2/s
	h.last = sec(10)
	r.setPace(h, f, 1)
	if f.tat != sec(20) {
		t.Errorf("slowed to 1/s after 20 sent since 0: next at %v, want 20 s", time.Duration(f.tat-at0))
	}
	r.setPace(h, f, 4)
	if f.tat > sec(10.25) {
		t.Errorf("sped up to 4/s: next at %v, want the hold lifted (<= 10.25 s)", time.Duration(f.tat-at0))
	}
	// Held back by a slower pace, then pushed back: its series begins
	// again, empty, and a faster pace lifts the hold all the same (nine
	// followers of Rack::Attack's 15 per 10 s, held at the first 429's
	// cautious 0.354/s for what they sent at the ramp's 3.88/s, each
	// pushed back a moment later, sat 36 s past the explorer's recovery at
	// 2.3/s).
	r.setPace(h, f, 0.5)
	if f.tat != sec(40) {
		t.Fatalf("slowed to 0.5/s after 20 sent since 0: next at %v, want 40 s", time.Duration(f.tat-at0))
	}
	f.serAt, f.serSent, f.serOK = sec(11), 0, 0 // pushed back at 11 s
	h.last = sec(21)
	r.setPace(h, f, 2)
	if f.tat > sec(21.5) {
		t.Errorf("sped up to 2/s at 21 s, its series empty since its 429 at 11 s: next at %v, want the hold lifted (<= 21.5 s)", time.Duration(f.tat-at0))
	}
}

// TestQuotaWindow: the window of an X-RateLimit-Limit without one is the
// first usual window at least as long as the longest reset seen, or the
// move of a reset on a grid.
func TestQuotaWindow(t *testing.T) {
	q := &quota{}
	q.update(&Outcome{Quota: 10, Remaining: 9, HasRemaining: true, HasReset: true, ResetIn: 40 * time.Second}, sec(0), 0)
	if q.span() != int64(60*time.Second) || q.grid() {
		t.Errorf("after one answer: span %v grid %v, want 1m (the window holds 40 s at least), not yet", time.Duration(q.span()), q.grid())
	}
	for _, tc := range []struct{ w, want time.Duration }{
		{9 * time.Second, 10 * time.Second}, {10 * time.Second, 10 * time.Second}, {11 * time.Second, 10 * time.Second},
		{12 * time.Second, 15 * time.Second}, {61 * time.Second, time.Minute}, {0, 0}, {48 * time.Hour, 48 * time.Hour},
		// A usual window to the nanosecond is a reset told in whole seconds
		// from now: that window, not the one under it plus a rounding.
		{2 * time.Second, 2 * time.Second}, {1900 * time.Millisecond, time.Second}, {10*time.Second + 1, 10 * time.Second},
		{15 * time.Second, 15 * time.Second},
	} {
		if got := usualWindow(int64(tc.w)); got != int64(tc.want) {
			t.Errorf("usualWindow(%v) = %v, want %v", tc.w, time.Duration(got), tc.want)
		}
	}
	q.update(&Outcome{Quota: 10, Remaining: 9, HasRemaining: true, HasReset: true, ResetIn: 59 * time.Second}, sec(41), 0)
	if q.span() != int64(60*time.Second) || !q.grid() {
		t.Errorf("reset moved a minute: span %v grid %v, want 1m on a grid", time.Duration(q.span()), q.grid())
	}
	// A moving window (flask-limiter): the reset moves with each hit.
	m := &quota{}
	for i := range 5 {
		m.update(&Outcome{Quota: 20, Remaining: float64(19 - i), HasRemaining: true, HasReset: true, ResetIn: 61 * time.Second}, sec(float64(3*i)), 0)
	}
	if m.grid() || m.span() != int64(60*time.Second) {
		t.Errorf("moving window: grid %v span %v, want no grid and 1m (resets 61 s away: the newest hit's expiry plus one)", m.grid(), time.Duration(m.span()))
	}
	// Nothing remains: a grid waits for its reset, a moving window one
	// interval at its rate once a request sent so on its host was let
	// through, or on the lane that tries it first (earlyProbe); before
	// that, or once one was refused (gin-rate-limit's window, begun again
	// at each request), it waits for its reset too.
	q.rem, m.rem = 0, 0
	if got := q.readyAt(); got != q.reset {
		t.Errorf("grid with nothing left: ready %v, want the reset", got)
	}
	for _, tc := range []struct {
		read  int8
		probe bool
		early bool
	}{{1, false, true}, {0, true, true}, {0, false, false}, {-1, false, false}, {-1, true, false}} {
		m.earlyRead, m.earlyProbe = tc.read, tc.probe
		want := m.reset
		if tc.early {
			want = m.seen + int64(1e9/m.rate())
		}
		if got := m.readyAt(); got != want {
			t.Errorf("moving window with nothing left, early read %d, probe %v: ready %v, want %v", tc.read, tc.probe, got, want)
		}
	}
}

// TestFixedWindowLateReset: a fixed window's reset stated late (whole
// epoch seconds, plus one: flask-limiter) does not hold a lane that ran out
// of it: the window ends within a window of the answer to its first hit.
// Lanes that waited for the stated reset sent half of 10 per second.
func TestFixedWindowLateReset(t *testing.T) {
	q := &quota{fixed: true} // the window's kind is inferred elsewhere (TestQuotaWindow)
	// The window opened at 10.02 s; the server says it resets at 12 s
	// (int(11.02)+1), 1.98 s from the first answer.
	for i := range 10 {
		now := sec(10.02 + 0.09*float64(i))
		q.update(&Outcome{Quota: 10, Window: time.Second, Remaining: float64(9 - i), HasRemaining: true, HasReset: true, ResetIn: time.Duration(sec(12) - now)}, now, 0)
	}
	want := sec(10.02) + int64(time.Second) + int64(time.Second)/50
	if got := q.readyAt(); got != want {
		t.Errorf("fixed window run out: ready at %.3fs, want a window after its first answer and a fiftieth (%.3fs), not the reset (12s)", secs(got-at0), secs(want-at0))
	}
	// An answer to the first hit of an earlier window says nothing of
	// this one: the stated reset holds.
	q.update(&Outcome{Quota: 10, Window: time.Second, Remaining: 6, HasRemaining: true, HasReset: true, ResetIn: time.Duration(sec(14) - sec(12.5))}, sec(12.5), 0)
	q.rem = 0
	if got := q.readyAt(); got != q.reset {
		t.Errorf("a new window without its first answer: ready at %.3fs, want its reset %.3fs", secs(got-at0), secs(q.reset-at0))
	}
	// Not known fixed (a sliding counter, or not known yet): the reset for
	// the lane that probes the first roll, a second after it for the
	// others (TestFirstRollProbe).
	q = &quota{}
	q.update(&Outcome{Quota: 10, Window: time.Second, Remaining: 9, HasRemaining: true, HasReset: true, ResetIn: 1980 * time.Millisecond}, sec(10.02), 0)
	q.update(&Outcome{Quota: 10, Window: time.Second, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: 1100 * time.Millisecond}, sec(10.9), 0)
	if got, want := q.readyAt(), q.reset+int64(time.Second); got != want {
		t.Errorf("window of unknown kind: ready at %.3fs, want a second after its reset %.3fs", secs(got-at0), secs(want-at0))
	}
	q.probe = true
	if got := q.readyAt(); got != q.reset {
		t.Errorf("window of unknown kind, the roll's probe: ready at %.3fs, want its reset %.3fs", secs(got-at0), secs(q.reset-at0))
	}
}

// TestDeclaredPace: a declared limit sets every lane at Settle under it,
// less half a request per window for a small limit unless the limit is a
// rate (a Remaining above it: a token bucket's tokens).
func TestDeclaredPace(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		quota, remaining float64
		window           time.Duration
		want             float64 // lane pace, req/s
	}{
		{10, 9, time.Minute, (1 - 0.6/10) * 10 / 60},
		{100, 99, time.Minute, 0.97 * 100 / 60},
		{1, 0, time.Second, 0.4},
		{1, 3, time.Second, 0.97}, // tollbooth: 1/s, 3 tokens left of its burst
	} {
		h := hostWith(r, "e", "f")
		r.declared(h, h.lanes["f"], &Outcome{Quota: tc.quota, Window: tc.window, Remaining: tc.remaining, HasRemaining: true, HasReset: true, ResetIn: tc.window}, sec(0))
		for _, l := range h.lanes {
			if !near(l.pace, tc.want) {
				t.Errorf("%v per %v, %v remaining: lane %s at %v, want %v", tc.quota, tc.window, tc.remaining, l.exit, l.pace, tc.want)
			}
		}
	}
}

// TestDeclaredMoving: a moving window (a log of the last window's hits, as
// flask-limiter's), whose reset moves with each hit, is paced at Settle under
// its quota (declared rate = quota per window) without a sliding counter's headroom: an even pace under the
// quota never has more than the quota in any window. A sliding counter's
// resets move by whole windows, and it keeps the headroom.
func TestDeclaredMoving(t *testing.T) {
	r := testRules(t, Config{})
	const quota, iv = 5.0, 2.2 // 5 per 10 s, sent 2.2 s apart
	for _, tc := range []struct {
		name  string
		reset func(at float64) float64 // when the answer to a hit at at says the window resets
		want  float64
	}{
		{"moving", func(at float64) float64 { return at + 10 }, quota / 10},
		{"sliding counter", func(at float64) float64 { return 10 * (math.Floor(at/10) + 1) }, (1 - 0.6/quota) / r.settle * quota / 10},
	} {
		h := hostWith(r, "e", "f")
		var hits []float64
		for i := range 12 {
			at := float64(i) * iv
			n := 0
			for _, h := range hits {
				if h > at-10 {
					n++
				}
			}
			hits = append(hits, at)
			o := &Outcome{Quota: quota, Remaining: quota - float64(n) - 1, HasRemaining: true, HasReset: true, ResetIn: time.Duration((tc.reset(at) - at) * 1e9)}
			r.declared(h, h.lanes["f"], o, sec(at))
		}
		if got := h.cap.declared; !near(got, tc.want) {
			t.Errorf("%s: declared rate %.4f/s, want %.4f/s (lanes at Settle under it)", tc.name, got, tc.want)
		}
	}
}

// TestEcho: a lane pushed back again at its first request after the
// Retry-After it was told reads nothing of its pace (no budget of its own,
// no evidence) and waits twice as long.
func TestEcho(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	h.exp.phase = expSettled
	h.cap.pass = 0.2
	r.updateFollow(h, sec(0), "test", "")
	f := h.lanes["f"]
	f.hot = true
	iv := int64(1e9 / f.pace)
	ra := &Outcome{RetryAfter: 30 * time.Second}
	r.throttled(h, f, ticketRec{at: sec(0), laneIv: iv}, ra, sec(0), sec(0), 0.5)
	own, evs := f.own(), h.ev.n
	if f.cool != sec(30) {
		t.Fatalf("first 429: cool until %v, want 30 s", time.Duration(f.cool-at0))
	}
	// Not the lane's first request since its 429 (one sent before it
	// was answered): read as usual, the Retry-After as it is.
	r.throttled(h, f, ticketRec{at: sec(31), laneIv: iv}, ra, sec(31), sec(31), 0.5)
	if f.cool != sec(61) || h.ev.n != evs+1 {
		t.Errorf("a later request: cool until %v, evidence %d -> %d; want 61 s and one more", time.Duration(f.cool-at0), evs, h.ev.n)
	}
	own, evs = f.own(), h.ev.n
	r.throttled(h, f, ticketRec{at: sec(62), laneIv: iv, first: true}, ra, sec(62), sec(62), 0.5)
	if want := sec(62) + int64(4*30*time.Second); f.cool != want {
		t.Errorf("echo after two 429s: cool until %v, want %v (4 times the Retry-After)", time.Duration(f.cool-at0), time.Duration(want-at0))
	}
	if f.own() != own || h.ev.n != evs {
		t.Errorf("echo: own %v -> %v, evidence %d -> %d; want nothing read", own, f.own(), evs, h.ev.n)
	}
	// Pushed back again at its first request after that wait, now told an
	// hour: longer than it was told before, waited as said (it was
	// doubled too, the host held 2 h while every message said one).
	at := f.cool
	r.throttled(h, f, ticketRec{at: at, laneIv: iv, first: true}, &Outcome{RetryAfter: time.Hour}, at, at, 0.5)
	if want := at + int64(time.Hour); f.cool != want {
		t.Errorf("echo with a longer Retry-After: cool %v, want the hour as said", time.Duration(f.cool-at))
	}
	// An absurd Retry-After is held to a day.
	r.throttled(h, f, ticketRec{at: sec(70), laneIv: iv}, &Outcome{RetryAfter: time.Duration(math.MaxInt64)}, sec(70), sec(70), 0.5)
	if f.cool <= sec(70) || f.cool > sec(70)+int64(24*time.Hour) {
		t.Errorf("Retry-After of 292 years: cool until %v, want within a day", time.Duration(f.cool-at0))
	}
}

// TestHeldPace: followers hold Settle under a quick pass; under a careful
// pass (one request less than was sent) no lower than that pass or Settle
// under what was sent, whichever is lower; with a burst seen, Settle under
// the pass again (a burst lets a pace above the rate run a careful span).
func TestHeldPace(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		careful    bool
		extra      float64
		pass, sent float64
		want       float64
	}{
		{false, 0, 1, 1, r.settle * 1},
		{true, 0, 0.155, 0.169, 0.155},
		{true, 0, 0.97, 1.0, r.settle * 1.0},
		{true, 2, 0.155, 0.169, r.settle * 0.155},
	} {
		c := &capacity{careful: tc.careful, extra: tc.extra, pass: tc.pass, sent: tc.sent}
		if got := r.heldPace(c); !near(got, tc.want) {
			t.Errorf("careful %v extra %v pass %v sent %v: held %v, want %v", tc.careful, tc.extra, tc.pass, tc.sent, got, tc.want)
		}
		c.windowed = true // a window: its burst is covered by the careful span
		if tc.careful {
			tc.want = min(tc.pass, r.settle*tc.sent)
		}
		if got := r.heldPace(c); !near(got, tc.want) {
			t.Errorf("careful %v extra %v pass %v sent %v windowed: held %v, want %v", tc.careful, tc.extra, tc.pass, tc.sent, got, tc.want)
		}
	}
}

// TestFixedWindowExact: once a new window of a declared quota begins with
// most of it remaining after a busy one, the window is fixed and every lane
// paces at its rate exactly (Remaining is the stop); a sliding counter's
// small remainder after its reset keeps Settle's margin and its headroom; a
// 429 brings back Settle's margin alone.
func TestFixedWindowExact(t *testing.T) {
	r := testRules(t, Config{})
	window := func(h *host, l *lane, nextAt, nextRem float64) {
		l.q = &quota{}
		r.declared(h, l, &Outcome{Quota: 6, Window: time.Minute, Remaining: 5, HasRemaining: true, HasReset: true, ResetIn: time.Minute}, sec(0))
		for i := range 6 {
			l.q.take(sec(float64(10 * i)))
		}
		l.q.take(sec(nextAt)) // the request the next answer is for
		r.declared(h, l, &Outcome{Quota: 6, Window: time.Minute, Remaining: nextRem, HasRemaining: true, HasReset: true, ResetIn: time.Minute}, sec(nextAt))
	}
	busyWindow := func(h *host, l *lane, nextRem float64) { window(h, l, 61, nextRem) }
	// Back under Settle's margin, without a sliding counter's headroom: the
	// window is still known fixed, only its resets come early.
	margin := r.settle * 0.1

	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	busyWindow(h, f, 5)
	// The rate, less exactMargin a window for the arrivals' jitter: the
	// seventh request goes 60.025 s after the first, not on the window's
	// end.
	exact := 0.1 * 60 / (60 + exactMargin.Seconds())
	if !h.cap.exact || !near(f.pace, exact) || !near(h.lanes["e"].pace, exact) {
		t.Errorf("fixed window: exact %v, lanes at %v and %v; want %v/s", h.cap.exact, f.pace, h.lanes["e"].pace, exact)
	}
	r.throttled(h, f, ticketRec{at: sec(62), laneIv: int64(10 * time.Second)}, &Outcome{RetryAfter: time.Second}, sec(62), sec(62), 0.5)
	if h.cap.exact || !h.cap.inexact || !near(h.lanes["e"].pace, margin) {
		t.Errorf("after a 429: exact %v inexact %v, lane at %v; want the margin back (%v)", h.cap.exact, h.cap.inexact, h.lanes["e"].pace, margin)
	}
	r.declared(h, f, &Outcome{Quota: 6, Window: time.Minute, Remaining: 5, HasRemaining: true, HasReset: true, ResetIn: time.Minute}, sec(130))
	if h.cap.exact {
		t.Error("exact again after a 429, want the margin for good")
	}

	// A window idle between (a sliding counter's previous window is
	// empty then too) tells nothing.
	i := hostWith(r, "e", "f")
	window(i, i.lanes["f"], 125, 5)
	if i.cap.exact {
		t.Error("a busy window, an idle one, then most of one remaining: read as fixed")
	}

	// Lanes that answer slower than twice exactMargin leave half their
	// answer time (the way there): half a second a minute.
	slow := hostWith(r, "e", "f")
	slow.lanes["e"].rttMid = uint16(time.Second / time.Duration(rttUnit))
	busyWindow(slow, slow.lanes["f"], 5)
	if want := 0.1 * 60 / 60.5; !slow.cap.exact || !near(slow.lanes["f"].pace, want) {
		t.Errorf("fixed window, answers in 1 s: exact %v, lane at %v; want %v", slow.cap.exact, slow.lanes["f"].pace, want)
	}

	s := hostWith(r, "e", "f")
	busyWindow(s, s.lanes["f"], 1)
	headroom := r.settle * min(1, (1-0.6/6)/r.settle) * 0.1
	if s.cap.exact || !near(s.lanes["f"].pace, headroom) {
		t.Errorf("little left after the reset (sliding): exact %v, lane at %v; want %v", s.cap.exact, s.lanes["f"].pace, headroom)
	}
}

// TestFixedSecondMargin: a fixed window of a second paced at its rate
// leaves a request due on the window's end, where a window opened by the
// client's first request (ulule/limiter's 5 per second) refuses it at
// every window the arrival comes a millisecond early: every lane is paced
// so that the sixth request goes exactMargin after the window's end.
func TestFixedSecondMargin(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	f.q = &quota{}
	answer := func(rem float64, at float64) {
		r.declared(h, f, &Outcome{Quota: 5, Window: time.Second, Remaining: rem, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(at))
	}
	answer(4, 0)
	for i := range 5 {
		f.q.take(sec(0.2 * float64(i)))
	}
	f.q.take(sec(1.01))
	answer(4, 1.01)
	if want := 5 / (1 + exactMargin.Seconds()); !h.cap.exact || !near(f.pace, want) || !near(h.lanes["e"].pace, want) {
		t.Errorf("fixed window of a second: exact %v, lanes at %v and %v; want %v", h.cap.exact, f.pace, h.lanes["e"].pace, want)
	}
	// Never under Settle's pace: a margin longer than Settle's (answers in
	// 100 ms, 50 ms a way) gives Settle's.
	f.rttMid = uint16(100 * time.Millisecond / time.Duration(rttUnit))
	h.cap.exact = false
	answer(4, 2.02)
	if want := r.settle * 5; !h.cap.exact || !near(h.lanes["e"].pace, want) {
		t.Errorf("fixed window of a second, answers in 100 ms: exact %v, lane at %v; want Settle under the rate, %v", h.cap.exact, h.lanes["e"].pace, want)
	}
}

// TestWholeSecondResetStep: a window opened by a client's first request,
// its reset told in whole seconds rounded up (@fastify/rate-limit), moves
// its reset by up to a second less than its length: the window is still
// the usual one, not the move (8 per 9.47 s drew a 429 every window).
func TestWholeSecondResetStep(t *testing.T) {
	q := &quota{}
	q.update(&Outcome{Quota: 8, Remaining: 7, HasRemaining: true, HasReset: true, ResetIn: 10 * time.Second}, sec(0), 0)
	q.update(&Outcome{Quota: 8, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(9.5), 0) // 0.5 s to go, told as 1
	q.update(&Outcome{Quota: 8, Remaining: 7, HasRemaining: true, HasReset: true, ResetIn: 10 * time.Second}, sec(10.2), 0)
	if !q.grid() || q.span() != int64(10*time.Second) {
		t.Errorf("reset moved %v: grid %v, span %v; want a grid of 10 s", time.Duration(q.step), q.grid(), time.Duration(q.span()))
	}
	// A move more than a second short of the usual window is the window.
	q = &quota{}
	q.update(&Outcome{Quota: 8, Remaining: 7, HasRemaining: true, HasReset: true, ResetIn: 12 * time.Second}, sec(0), 0)
	q.update(&Outcome{Quota: 8, Remaining: 7, HasRemaining: true, HasReset: true, ResetIn: 12 * time.Second}, sec(12), 0)
	if q.span() != int64(12*time.Second) {
		t.Errorf("a window of 12 s: span %v, want 12s (not 15s)", time.Duration(q.span()))
	}
}

// TestPastResetMoves: a reset told in whole seconds rounded down on a
// window of a second (go-chi/httprate's 10 per second, its windows starting
// with the server 0.9 s into a second) is a second already begun in most
// answers. Their moves are still the window's: the step is a second, and a
// busy window's roll with little left tells a sliding counter. Before, only
// the rare answer with the reset ahead was read, the window stayed a guess
// held back by its reserve, and the lanes sent at 10% of the limit.
func TestPastResetMoves(t *testing.T) {
	// Windows of 0.9-1.9 s, 1.9-2.9 s, ...: stated 1, 2, ...; an answer
	// after the whole second reads a reset already past.
	q := &quota{}
	for _, tc := range []struct {
		at      float64
		rem     float64
		resetIn time.Duration
	}{
		{0.95, 9, 50 * time.Millisecond}, // the one answer in 0.9-1.0 s: the reset ahead
		{1.5, 3, -500 * time.Millisecond},
		{2.2, 0.4, -200 * time.Millisecond}, // rolled at 1.9 (stated 2), little left: the last one still counts
		{2.6, 0, -600 * time.Millisecond},
	} {
		q.update(&Outcome{Quota: 10, Remaining: tc.rem, HasRemaining: true, HasReset: true, ResetIn: tc.resetIn}, sec(tc.at), 0)
	}
	if q.step != int64(time.Second) || !q.sliding {
		t.Errorf("resets told a second early: step %v, sliding %v; want a step of a second, and a sliding counter", time.Duration(q.step), q.sliding)
	}
}

// TestDeclaredStricter: lanes pushed back at a declared pace on a window
// not known fixed lose a step of the limit, at least a request a window,
// once a window, for good and never below strictFloor; a fixed window's
// 429 brings Settle's margin back instead (TestFixedWindowExact).
func TestDeclaredStricter(t *testing.T) {
	r := testRules(t, Config{})
	// declaredHost is a host following a declared 12 per 10 s of the
	// window win, and its lane f, sending.
	declaredHost := func(win quota) (*host, *lane) {
		h := hostWith(r, "e", "f")
		h.cap.win = win
		h.cap.declared = r.declaredRate(&h.cap.win, false)
		r.updateFollow(h, sec(0), "test", "")
		f := h.lanes["f"]
		f.hot = true
		return h, f
	}
	h, f := declaredHost(quota{limit: 12, window: int64(10 * time.Second), sliding: true})
	base := h.cap.declared
	push := func(at float64) {
		r.throttled(h, f, ticketRec{at: sec(at), laneIv: int64(1e9 / f.pace)}, &Outcome{RetryAfter: 10 * time.Second}, sec(at), sec(at), 0.5)
	}
	push(20)
	if want := base * (1 - 1.0/12); !near(h.cap.declared, want) || !near(h.lanes["e"].pace, r.settle*want) {
		t.Errorf("after a 429 at the declared pace: declared %v, lane e at %v; want %v and Settle under it", h.cap.declared, h.lanes["e"].pace, want)
	}
	if r.roomDue(h) {
		t.Error("a headroom check is due on a quota seen stricter than declared; want none")
	}
	f.pace = h.lanes["e"].pace
	push(25) // the same window: one push-back
	if want := base * (1 - 1.0/12); !near(h.cap.declared, want) {
		t.Errorf("a second 429 in the window: declared %v, want %v", h.cap.declared, want)
	}
	for i := range 20 {
		f.pace = h.lanes["e"].pace
		push(31 + 11*float64(i))
	}
	if want := base * strictFloor; h.cap.declared < want*(1-1e-9) || h.cap.declared > base*(1-5.0/12) {
		t.Errorf("after twenty windows of 429s: declared %v, want at least the floor %v", h.cap.declared, want)
	}

	// Under the declared pace (a lane held back for another reason): its
	// 429 is not the declared pace's.
	g, gf := declaredHost(quota{limit: 12, window: int64(10 * time.Second), sliding: true})
	was := g.cap.declared
	r.throttled(g, gf, ticketRec{at: sec(20), laneIv: int64(2e9 / gf.pace)}, &Outcome{RetryAfter: 10 * time.Second}, sec(20), sec(20), 0.5)
	if g.cap.declared != was {
		t.Errorf("a 429 at half the declared pace: declared %v, want %v", g.cap.declared, was)
	}
	// Above it (sent while the window was read short, then the 429's own
	// headers told the real one): nothing said of the server.
	v, vf := declaredHost(quota{limit: 12, window: int64(10 * time.Second), sliding: true})
	was = v.cap.declared
	r.throttled(v, vf, ticketRec{at: sec(20), laneIv: int64(1e9 / (5 * vf.pace))}, &Outcome{RetryAfter: 10 * time.Second}, sec(20), sec(20), 0.5)
	if v.cap.declared != was {
		t.Errorf("a 429 at five times the declared pace: declared %v, want %v", v.cap.declared, was)
	}
	// A fixed window: not this rule's.
	x, xf := declaredHost(quota{limit: 12, window: int64(10 * time.Second), fixed: true})
	r.throttled(x, xf, ticketRec{at: sec(20), laneIv: int64(1e9 / xf.pace)}, &Outcome{RetryAfter: 10 * time.Second}, sec(20), sec(20), 0.5)
	if x.cap.win.strict != 0 {
		t.Errorf("a fixed window's 429: strict %v, want 0", x.cap.win.strict)
	}
}

// TestHostRate: the host's own rate is cut per pushback episode, restarts
// no lower than Settle times what was counted between two episodes, and
// climbs back no higher than Settle times the rate that drew the last one.
func TestHostRate(t *testing.T) {
	r := testRules(t, Config{})
	h := newHost("h")
	h.rate.on, h.rate.now = true, 4
	h.send.rate = 4
	r.hostDecrease(h, sec(0), sec(0), "test")
	if h.rate.now != 2 || h.rate.hi != 4 {
		t.Fatalf("first cut: rate %v hi %v, want 2 and 4", h.rate.now, h.rate.hi)
	}
	for range 31 {
		r.hostIncrease(h, sec(5))
	}
	h.send.rate = 3
	r.hostDecrease(h, sec(10), sec(10), "test") // 31 successes in 10 s: 3/s counted
	if !near(h.rate.lo, 3) || !near(h.rate.now, r.settle*3) {
		t.Errorf("second cut: lo %v rate %v, want 3 and %v", h.rate.lo, h.rate.now, r.settle*3)
	}
	for range 1000 {
		r.hostIncrease(h, sec(11))
	}
	if h.rate.now > r.settle*h.rate.hi*(1+tolerance) {
		t.Errorf("climbed to %v, above Settle x hi %v", h.rate.now, h.rate.hi)
	}
	// A request sent before the episode began is the same episode.
	if r.hostDecrease(h, sec(9), sec(12), "test") {
		t.Errorf("a pushback for a request sent before the episode counted as a new one")
	}
}

// TestChangeRing keeps the last Config.Changes records, oldest first, and
// drops changes under the tolerance.
func TestChangeRing(t *testing.T) {
	r := testRules(t, Config{Changes: 3})
	h := newHost("h")
	for i := range 5 {
		h.note(r, sec(float64(i)), "test", "", "pace", float64(i), float64(i+1), "")
	}
	h.note(r, sec(9), "test", "", "pace", 1, 1.0000001, "noise")
	cs := h.log.recent()
	if len(cs) != 3 || cs[0].From != 2 || cs[2].From != 4 {
		t.Errorf("ring = %+v, want the changes from 2, 3, 4", cs)
	}
	if op := h.log.takeOp(); len(op) != 5 || len(h.log.takeOp()) != 0 {
		t.Errorf("takeOp = %d records then more, want 5 then none", len(op))
	}
}

// TestLearnedRoundTrip: what one limiter learned, restored into another,
// is trusted when fresh, proven again when stale, dropped when old.
func TestLearnedRoundTrip(t *testing.T) {
	r := testRules(t, Config{})
	src := &Limiter{rules: r, tab: newTable()}
	h := hostWith(r, "e", "f", "g")
	h.exp.phase = expSettled
	h.cap.pass, h.cap.hi, h.cap.at = 1.9, 2, sec(0)
	h.cap.extra, h.cap.windowed, h.cap.bucket = 2.5, true, true
	h.cap.win.free, h.cap.room.done, h.cap.win.strict = true, true, 1.5
	h.cap.block = int64(30 * time.Second)
	h.cap.refuses, h.waveHold = true, int64(24*time.Second)
	r.updateFollow(h, sec(0), "test", "")
	g := h.lanes["g"]
	g.extra().own, g.x.tpass = 0.5, 0.45
	src.tab.shard("h").hosts["h"] = h
	saved := src.Learned(time.Unix(0, sec(1)))
	if len(saved.Hosts) != 1 || saved.Hosts[0].LaneRate != h.cap.follow || len(saved.Hosts[0].Lanes) != 1 {
		t.Fatalf("Learned = %+v, want one host at %v with one lane of its own", saved, h.cap.follow)
	}
	for _, tc := range []struct {
		age   time.Duration
		phase string
		rate  float64
		n     int
	}{
		{time.Minute, "settled", h.cap.follow, 1},
		{2 * time.Hour, "bisect", r.settle * staleMargin * h.cap.follow, 1},
		{48 * time.Hour, "", 0, 0},
	} {
		dst := &Limiter{rules: r, tab: newTable()}
		n, err := dst.Restore(saved, time.Unix(0, sec(1)).Add(tc.age))
		if err != nil || n != tc.n {
			t.Errorf("age %v: Restore = %d, %v; want %d, nil", tc.age, n, err, tc.n)
			continue
		}
		dh := dst.tab.shard("h").hosts["h"]
		if tc.n == 0 {
			if dh != nil {
				t.Errorf("age %v: host restored, want it learned again", tc.age)
			}
			continue
		}
		if dh.phase() != tc.phase || !near(dh.followPace(r), tc.rate) {
			t.Errorf("age %v: phase %s rate %v, want %s at %v", tc.age, dh.phase(), dh.followPace(r), tc.phase, tc.rate)
		}
		if !dh.cap.refuses || dh.waveHold != int64(24*time.Second) {
			t.Errorf("age %v: refuses %v, refusal hold %v; want a host that refuses, held 24 s", tc.age, dh.cap.refuses, time.Duration(dh.waveHold))
		}
		if dh.cap.extra != 2.5 || !dh.cap.windowed || !dh.cap.bucket || !dh.cap.win.free || !dh.cap.room.done || dh.cap.win.strict != 1.5 || dh.cap.block != int64(30*time.Second) {
			t.Errorf("age %v: burst %v windowed %v declared bucket %v, no headroom %v (checked %v), strict %v, block %v, want the measured 2.5, a window, a bucket, no headroom, 1.5 a window stricter and a block of 30 s",
				tc.age, dh.cap.extra, dh.cap.windowed, dh.cap.bucket, dh.cap.win.free, dh.cap.room.done, dh.cap.win.strict, time.Duration(dh.cap.block))
		}
	}
	bad := Learned{Saved: saved.Saved, Hosts: []LearnedHost{{Host: "", LaneRate: 1}, {Host: "x", LaneRate: math.NaN()}, saved.Hosts[0]}}
	dst := &Limiter{rules: r, tab: newTable()}
	if n, err := dst.Restore(bad, time.Unix(0, sec(2))); n != 1 || err == nil {
		t.Errorf("Restore with two bad entries = %d, %v; want the good one restored and an error", n, err)
	}
}

// TestLearnedMidRecovery: a host saved while its first 429's recovery is
// measured holds a cautious reading, no rate (17 in 2.2 s read as 17 per
// minute, 0.27/s on a server of 5 r/s): it is not saved, and a resumed
// crawl learns it again rather than settle there. Once the reading stands
// (here: the explorer's exit failed, and nothing more will be measured) it
// is saved.
func TestLearnedMidRecovery(t *testing.T) {
	r := testRules(t, Config{})
	h, e := bareFirst429(r, 15.52, 17, 17, 2.2)
	h.name = "h"
	src := &Limiter{rules: r, tab: newTable()}
	src.tab.shard("h").hosts["h"] = h
	if h.exp.awaitAt == 0 || h.followPace(r) > 0.3 {
		t.Fatalf("after the first 429: awaiting %v, followers at %v; want the recovery awaited at a cautious pace", h.exp.awaitAt != 0, h.followPace(r))
	}
	if saved := src.Learned(time.Unix(0, sec(3))); len(saved.Hosts) != 0 {
		t.Errorf("saved while the recovery is measured: %+v, want nothing", saved.Hosts)
	}
	r.explorerLost(h, e, sec(4))
	saved := src.Learned(time.Unix(0, sec(5)))
	if len(saved.Hosts) != 1 || !near(saved.Hosts[0].LaneRate, h.followPace(r)) {
		t.Errorf("saved once the careful reading stands: %+v, want the host at %v", saved.Hosts, h.followPace(r))
	}
}

// TestPenaltyClockGrid: a told recovery that ends where a common window
// long enough to hold the run and the recovery ends on the clock may be
// that window, and no penalty's test is spent on it; anywhere else it is
// tested. A block of 10 s after a run of 8 s fits windows of 20 s and
// 30 s: its end at :20 or :30 may be theirs, at :10 or :50 it is no
// common window's (the grid of 10 s, every common window's divisor, took
// them for ends too). A block of a minute after the same run fits an
// hour's window only: its end at :20 is chance (one first 429 in five read
// vsthrottle's block of a minute as 16 per minute, 5.3% of its rate), and
// the test runs.
func TestPenaltyClockGrid(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		ra   time.Duration
		at   float64 // the first 429, seconds after a whole hour
		test bool
	}{
		{10 * time.Second, 10, false}, // ends at :20
		{10 * time.Second, 20, false}, // :30
		{10 * time.Second, 40, true},  // :50
		{10 * time.Second, 60, true},  // :10
		{time.Minute, 10, true},       // :20 of the next minute
	} {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		h.cap.pass = 3.88
		r.endRamp(h, e, 7.76, series{at: sec(tc.at - 8), ok: 16}, tc.ra, sec(tc.at))
		if h.exp.ptest != tc.test {
			t.Errorf("Retry-After %v from a 429 at %vs: penalty's test %v, want %v", tc.ra, tc.at, h.exp.ptest, tc.test)
		}
	}
}

// TestResumedSearchEarnsItsProbe: a search restored settled short of its
// ceiling (it settled there for want of a 429 to spend) does not search on
// with a fresh allowance at its first successes: the allowance was spent
// where it was learned. It searches on once it has earned a 429.
func TestResumedSearchEarnsItsProbe(t *testing.T) {
	r := testRules(t, Config{})
	saved := Learned{Saved: time.Unix(0, sec(0)), Hosts: []LearnedHost{{
		Host: "h", Phase: "settled", At: time.Unix(0, sec(0)),
		LaneRate: 5.4, Pass: 5.68, Sent: 5.68, Ceiling: 7.76, Burst: 1,
	}}}
	dst := &Limiter{rules: r, tab: newTable()}
	if n, err := dst.Restore(saved, time.Unix(0, sec(10))); n != 1 || err != nil {
		t.Fatalf("Restore = %d, %v", n, err)
	}
	h := dst.tab.shard("h").hosts["h"]
	h.newLane(r, "e", 0, sec(10))
	e := h.lanes["e"]
	h.exp.exit = "e"
	now := 10.0
	for i := 1; i <= earnEvery; i++ {
		now += 0.2
		h.c.OK++
		r.reprobeDue(h, e, sec(now))
		if h.exp.phase != expSettled {
			if i < earnEvery {
				t.Fatalf("resumed, %d successes: phase %s, want settled until a 429 is earned (%d)", i, phaseNames[h.exp.phase], earnEvery)
			}
			return
		}
	}
	t.Errorf("resumed, %d successes: still settled, want the search to go on once a 429 is earned", earnEvery)
}

// TestHandOff: an explorer told to wait 30 s hands the search to another
// lane that is sending, at the pace the search had reached, and paces with
// the followers itself; a wait of a second is waited out in place.
func TestHandOff(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name string
		wait time.Duration
		hand bool
	}{
		{"Retry-After 30s", 30 * time.Second, true},
		{"Retry-After 1s", time.Second, false},
	} {
		h := hostWith(r, "e", "f")
		e, f := h.lanes["e"], h.lanes["f"]
		f.hot = true
		h.exp.phase = expBisect
		h.cap.pass, h.cap.follow = 0.4, 0.388
		r.setExplorerPace(h, e, 0.6, sec(0), "test", "")
		e.cool = sec(1) + int64(tc.wait)
		r.handOff(h, e, sec(1))
		if got := h.exp.exit == "f"; got != tc.hand {
			t.Errorf("%s: explorer %q, want hand-off %v", tc.name, h.exp.exit, tc.hand)
			continue
		}
		if tc.hand && (!near(f.pace, 0.6) || !near(e.pace, 0.388) || h.exp.cAt != 0) {
			t.Errorf("%s: new explorer %v old %v count from %v; want 0.6, the followers' 0.388, no count yet", tc.name, f.pace, e.pace, h.exp.cAt)
		}
	}
}

// TestExplorerOutlier: on a host whose IPs have budgets of their own, the
// explorer pushed back under the pace its followers hold (and hold without
// being pushed back) is the small one: it takes its own ceiling and the
// search goes on on a follower, from the followers' pace. Followers pushed
// back there too mean the host's knowledge is wrong: the usual path.
func TestExplorerOutlier(t *testing.T) {
	setup := func() (*rules, *host) {
		r := testRules(t, Config{})
		h := hostWith(r, "e", "a", "b", "c", "d")
		h.exp.phase = expRefine
		h.cap.safe, h.cap.hi = 0.326, 0.485
		r.updateFollow(h, sec(0), "test", "")
		for _, n := range []string{"a", "b", "c", "d"} {
			h.lanes[n].hot = true
		}
		r.setExplorerPace(h, h.lanes["e"], 0.121, sec(0), "test", "")
		return r, h
	}
	r, h := setup()
	f := h.cap.follow
	r.explore429(h, h.lanes["e"], 0.121, 1, sec(19))
	e := h.lanes["e"]
	if e.own() != 0.121 || h.exp.exit == "e" {
		t.Fatalf("explorer pushed back at 0.121/s under the followers' %v: own %v, explorer now %q; want its own ceiling and another explorer", f, e.own(), h.exp.exit)
	}
	if h.cap.safe != 0.326 || h.cap.follow != f {
		t.Errorf("safe %v follow %v, want the followers' pace untouched (0.326, %v)", h.cap.safe, h.cap.follow, f)
	}
	if ex := h.lanes[h.exp.exit]; !near(ex.pace, f*refineStep) || h.cap.hi != 0 {
		t.Errorf("new explorer at %v, ceiling %v; want a step above the followers' pace, %v, and the outlier's ceiling gone", ex.pace, h.cap.hi, f*refineStep)
	}

	// Followers pushed back at their pace a moment before (three of the
	// five lanes): the host's knowledge is wrong, not the explorer's IP.
	r, h = setup()
	for i, n := range []string{"a", "b", "c"} {
		h.addEvidence(r, evEntry{exit: n, at: sec(18 + float64(i)/10), pace: h.cap.follow})
	}
	r.explore429(h, h.lanes["e"], 0.121, 1, sec(19))
	if h.lanes["e"].own() != 0 || h.exp.exit != "e" {
		t.Errorf("followers pushed back too: explorer's own %v, explorer %q; want the usual search on e", h.lanes["e"].own(), h.exp.exit)
	}
}

// TestChallenger: the search is handed to a lane sent at its pace first,
// never to one waiting out a cooldown of its own, and to an idle one when
// no other is left (a fleet's worker holds two or three lanes).
func TestChallenger(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f", "g")
	e, f, g := h.lanes["e"], h.lanes["f"], h.lanes["g"]
	g.hot = true
	if c := h.challenger(e, sec(1)); c != g {
		t.Errorf("challenger %v, want g, the lane sent at its pace", c)
	}
	g.cool = sec(30)
	if c := h.challenger(e, sec(1)); c != f {
		t.Errorf("g cooling: challenger %v, want f, idle but free", c)
	}
	f.cool = sec(30)
	if c := h.challenger(e, sec(1)); c != nil {
		t.Errorf("both cooling: challenger %v, want none", c.exit)
	}
}

// TestBurstProof: with a burst of extra requests seen, a run evenly paced
// at p proves p*(1-extra/(n-1)), and lasts until that is half way from
// what passed to p (or a minute).
func TestBurstProof(t *testing.T) {
	r, h, e := bisecting(t)
	h.cap.pass, h.cap.extra = 8, 4
	h.cap.ceil(12, sec(0))
	r.setExplorerPace(h, e, 10, sec(0), "test", "")
	// (10+8)/2 = 9 needs n-1 >= 40: 41 successes at 10/s.
	for i := range 40 {
		at := sec(1 + float64(i)/10)
		r.exploreOK(h, e, at, at)
	}
	if h.cap.pass != 8 {
		t.Fatalf("after 40 successes pass %v, want still 8 (10*(1-4/39) < 9)", h.cap.pass)
	}
	at := sec(1 + 4.0)
	r.exploreOK(h, e, at, at)
	if !near(h.cap.pass, 9) {
		t.Errorf("after 41 successes pass %v, want 10*(1-4/40) = 9", h.cap.pass)
	}
	// The next run at the same pace adds up with it: 41+40 successes
	// prove 10*(1-4/80) = 9.5, half way from 9 to 10, where 40 alone
	// would not (10*(1-4/39) = 8.97).
	h.cap.ceil(10.1, sec(5))
	r.setExplorerPace(h, e, 10, sec(5), "test", "")
	for i := range 40 {
		at := sec(5.1 + float64(i)/10)
		r.exploreOK(h, e, at, at)
	}
	if want := 9.5; !near(h.cap.pass, want) {
		t.Errorf("after a second run of 11 at 10/s pass %v, want %v: runs in a row at one pace add up", h.cap.pass, want)
	}
	// burstSeen: 12 successes at 10/s before a 429, at least 8/s
	// sustained: at most 12*(1-0.8) = 2.4 beyond the rate; a smaller
	// reading does not lower what was seen.
	h.cap.extra = 0
	r.burstSeen(h, e, 10, 12, 8, sec(10))
	r.burstSeen(h, e, 10, 5, 8, sec(11))
	if !near(h.cap.extra, 2.4) {
		t.Errorf("extra %v, want 2.4", h.cap.extra)
	}
}

// TestProbeBackoffTime: each failed re-probe doubles the time the next one
// waits as well as the successes: a fast host earns reprobeQuiet successes
// in seconds, so with the time fixed it re-probed every ProbeEvery, a 429
// a minute for good.
func TestProbeBackoffTime(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	h.exp.exit, h.exp.phase, h.exp.fails, h.exp.quietAt = "e", expSettled, 2, sec(0)
	h.cap.pass, h.cap.follow = 1, 0.97
	h.cap.ceil(1.02, sec(0))
	h.exp.okSince = reprobeQuiet << 3
	h.c.OK = 100000
	r.reprobeDue(h, e, sec(3*60))
	if h.exp.reprobe {
		t.Fatal("re-probed 3 minutes after the last 429 with 2 failed probes behind: want 4 minutes")
	}
	r.reprobeDue(h, e, sec(4*60+1))
	if !h.exp.reprobe {
		t.Error("no re-probe 4 minutes after the last 429")
	}
}

// TestProbeBudget: a host spends at most learnAllowance 429s before it
// has earned more with successes; with none left a settled host does not
// re-probe above its pace.
func TestProbeBudget(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	if !h.canProbe() {
		t.Fatal("a new host cannot probe")
	}
	h.c.Throttled = learnAllowance
	if h.canProbe() {
		t.Fatalf("%d 429s and no success: want no probe left", learnAllowance)
	}
	h.c.OK = earnEvery
	if !h.canProbe() {
		t.Fatalf("%d successes did not earn a probe", earnEvery)
	}
	h.exp.phase = expSettled
	h.cap.pass, h.cap.follow = 1, 0.97
	h.cap.ceil(1.02, sec(0))
	h.exp.okSince = reprobeQuiet
	h.c.OK, h.c.Throttled = 1000, learnAllowance+1000/earnEvery
	r.reprobeDue(h, e, sec(120))
	if h.exp.reprobe {
		t.Fatal("re-probed with no 429 left to spend")
	}
	h.c.OK += earnEvery
	r.reprobeDue(h, e, sec(121))
	if !h.exp.reprobe {
		t.Error("no re-probe once a 429 was earned")
	}

	// A costly host (a failed probe idles its lane for a long
	// Retry-After) waits costlyQuiet times as many quiet successes.
	h = hostWith(r, "e", "f")
	e = h.lanes["e"]
	h.exp.exit, h.exp.phase = "e", expSettled
	h.cap.pass, h.cap.follow, h.cap.costly = 1, 0.97, true
	h.cap.ceil(1.02, sec(0))
	h.exp.okSince = reprobeQuiet
	r.reprobeDue(h, e, sec(120))
	if h.exp.reprobe {
		t.Fatalf("costly host re-probed after %d quiet successes, want %d", reprobeQuiet, reprobeQuiet*costlyQuiet)
	}
	h.exp.okSince = reprobeQuiet * costlyQuiet
	r.reprobeDue(h, e, sec(121))
	if !h.exp.reprobe {
		t.Errorf("costly host did not re-probe after %d quiet successes", reprobeQuiet*costlyQuiet)
	}
}

// TestCostlySearch: a 429 that holds its lane for many intervals makes the
// search settle within costlyDone instead of bisectDone.
func TestCostlySearch(t *testing.T) {
	r, h, e := bisecting(t)
	h.cap.pass, h.cap.safe = 0.485, 0.03
	h.cap.ceil(0.531, sec(0))
	r.nextBisect(h, e, sec(1))
	if h.exp.phase == expSettled {
		t.Fatal("0.485 passed, 0.531 pushed back: settled before a 429 was costly, want the search to go on within 2.5%")
	}
	h.cap.costly = true
	r.nextBisect(h, e, sec(2))
	if h.exp.phase != expSettled || !near(h.lanes["f"].pace, 0.485) {
		t.Errorf("costly: phase %v follower %v, want settled at what passed, 0.485", h.exp.phase, h.lanes["f"].pace)
	}
}

// TestFirstRequestPushedBack: a 429 at the explorer's very first request
// reads nothing of the limit: the followers keep their starting pace
// instead of dropping to the slowest.
func TestFirstRequestPushedBack(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	r.endRamp(h, e, r.startPace(), series{at: sec(0), ok: 0}, time.Second, sec(0.01))
	if f := h.lanes["f"].pace; f < r.settle*0.2 {
		t.Errorf("follower at %v after a 429 at the first request, want about its starting 0.25", f)
	}
	if h.exp.awaitAt != 0 {
		t.Error("waiting to measure a recovery from a first-request 429")
	}
}

// TestCountSpan: what the explorer counted between two 429s is a lower
// bound only over two careful spans; a shorter interval's count (ten of a
// 10-per-10-s window's successes in 8.4 s, across its reset) is not one,
// even when it joins a long one before it, which counts together.
func TestCountSpan(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "a", "b")
	l := h.lanes["a"]
	h.cap.span = int64(5 * time.Second)
	r.count(h, l, sec(0)) // the count starts at a 429
	h.exp.cN = 12
	r.count(h, l, sec(12)) // 12 in 12 s: over two spans, counted
	if c := h.cap.lo; !near(c, 11.0/12) {
		t.Fatalf("after 12 successes in 12 s: lo %v, want 11/12", c)
	}
	h.cap.lo = 0
	h.exp.cN = 10
	r.count(h, l, sec(20.4)) // 10 in 8.4 s: alone it would read 1.07/s
	if got, want := h.cap.lo, (10.0+12-2)/20.4; !near(got, want) {
		t.Fatalf("after 10 in 8.4 s following 12 in 12 s: lo %v, want the two together %v", got, want)
	}

	// A bucket full at both 429s drained what it let through, less one, by
	// the last success (nginx's 10r/m with a burst of 10: 6 between two
	// 429s 39.8 s apart, the last 34.1 s after the first); a window may
	// have reset between, and counts to the second 429.
	for _, windowed := range []bool{false, true} {
		h := hostWith(r, "a", "b")
		l := h.lanes["a"]
		h.cap.span, h.cap.windowed = int64(5*time.Second), windowed
		r.count(h, l, sec(0))
		h.exp.cN, h.exp.cLast = 6, sec(34.1)
		r.count(h, l, sec(39.8))
		want := 5 / 34.1
		if windowed {
			want = 5 / 39.8
		}
		if got := h.cap.lo; !near(got, want) {
			t.Errorf("windowed %v: 6 between two 429s 39.8 s apart, the last 34.1 s after the first: lo %v, want %v", windowed, got, want)
		}
	}
}

// TestExactCount: a count of preciseCount successes or more between two
// 429s of the explorer is the rate within 5% (nginx 10r/s with a burst of
// 5 counted 64 in 6.4 s): the search settles there instead of bisecting
// the last percent up to the ceiling at a 429 a step, and a 429 to spend
// later does not restart it. A short count (9 in 0.9 s) bisects on, and so
// does a count over which the budget may have overflowed: the lane held
// under the rate longer than its burst covers (simulated tiers: 0.97/s for
// 52 s on an IP of 1/s with a burst of one, its own pace counted).
func TestExactCount(t *testing.T) {
	for _, tc := range []struct {
		name         string
		n            int32
		secs         float64
		burst, first float64 // the burst known; the first success's time
		paces        []float64
		pass         float64 // the fastest pace the search passed
		settled      bool
	}{
		{"64 in 6.4 s", 64, 6.4, 5, 0.3, []float64{12.2}, 0.6, true},
		{"9 in 0.9 s", 9, 0.9, 5, 0.1, []float64{12.2}, 0.6, false},
		{"64 in 6.4 s, the first success late", 64, 6.4, 5, 0.5, []float64{12.2}, 0.6, false},
		{"50 in 52.4 s, held under the rate", 50, 52.4, 1.1, 0.1, []float64{0.97, 1.16}, 0.6, false},
		// A bisection's steps, the first under the count's own rate
		// but within the burst of it: the count is the rate...
		{"120 in 13.7 s, steps up", 120, 13.7, 7.5, 0.16, []float64{7.3, 9.17, 10.67, 11.8}, 0.6, true},
		// ...unless the search passed 10.67/s: under that, the lane's
		// slack overflowed the burst, and the count is what it sent
		// (nginx's 10r/s with a burst of 5 settled at 8.7/s).
		{"120 in 13.7 s, steps up from under a pace passed", 120, 13.7, 7.5, 0.16, []float64{7.3, 9.17, 10.67, 11.8}, 10.67, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, h, e := bisecting(t)
			h.cap.span, h.cap.safe, h.cap.pass, h.cap.extra = int64(100*time.Millisecond), 0.5, tc.pass, tc.burst
			h.cap.ceil(15.5, sec(0))
			r.count(h, e, sec(0)) // the first 429: the count starts
			h.exp.countStep(tc.paces[0], sec(tc.first))
			h.exp.cN = 1
			for i, p := range tc.paces[1:] {
				r.setExplorerPace(h, e, p, sec(tc.secs*float64(i+1)/float64(len(tc.paces))), "test", "")
			}
			h.exp.cN = tc.n
			x := tc.paces[len(tc.paces)-1]
			r.explore429(h, e, x, 0, sec(tc.secs))
			lo := float64(tc.n-1) / tc.secs
			if !near(h.cap.lo, lo) {
				t.Fatalf("lo %v, want the count %v", h.cap.lo, lo)
			}
			if got := h.exp.phase == expSettled; got != tc.settled {
				t.Fatalf("settled %v, want %v (phase %v, explorer at %v)", got, tc.settled, h.exp.phase, e.pace)
			}
			if !tc.settled {
				return
			}
			if f := h.lanes["f"].pace; !near(f, lo) {
				t.Errorf("follower at %v, want the count %v", f, lo)
			}
			h.c.OK = 1000 // 429s to spend
			r.reprobeDue(h, e, sec(tc.secs+1))
			if h.exp.phase != expSettled {
				t.Errorf("a 429 to spend restarted the search (phase %v)", h.exp.phase)
			}
			// At the re-probe's time the search goes on between the
			// count and the ceiling (a count is only a lower bound on a
			// bucket of whole tokens; the ceiling, old by then, is tried
			// again first), not a re-probe's step above the settled pace.
			h.exp.okSince = reprobeQuiet
			r.reprobeDue(h, e, sec(tc.secs+1)+r.probeEvery)
			if hi := h.cap.hi; h.exp.phase != expBisect || e.pace <= lo || e.pace > hi {
				t.Errorf("at the re-probe: phase %v, explorer at %v; want the search between the count %v and the ceiling %v", phaseNames[h.exp.phase], e.pace, lo, hi)
			}
		})
	}
}

// TestCountIdle: an explorer that went idle between two 429s (no work for
// it) let its budget refill meanwhile, so the count between them is not
// the rate: the idle spell is recorded as a pace of 0 and the count is
// judged inexact (it read 64 successes over 15 s, ten of them idle, as the
// rate itself).
func TestCountIdle(t *testing.T) {
	for _, idle := range []float64{0, 10} {
		r, h, e := bisecting(t)
		h.cap.span, h.cap.safe, h.cap.pass, h.cap.extra = int64(100*time.Millisecond), 0.5, 0.6, 5
		h.cap.ceil(15.5, sec(0))
		r.setExplorerPace(h, e, 12.2, sec(0), "test", "")
		r.count(h, e, sec(0)) // the first 429: the count starts
		at := 0.1
		for i := range 64 {
			if i == 32 {
				at += idle
			}
			r.exploreOK(h, e, sec(at), sec(at+0.01))
			at += 1 / 12.2
		}
		r.explore429(h, e, e.pace, 0, sec(at))
		if exact := h.exp.exactAt != 0; exact != (idle == 0) {
			t.Errorf("idle %vs: count judged exact %v, want %v (steps %v)", idle, exact, idle == 0, h.exp.cSteps[:h.exp.cK])
		}
	}
}

// TestBoundedRecovery: a 429 without Retry-After whose first retry was
// pushed back too and whose next one passed: the recovery took between the
// two, and the window is the shortest usual one in there. haproxy's 20 per
// 10 s without a header: 20 successes in 8.2 s, a retry pushed back 0.56 s
// after the 429, the next passed 8.7 s after it: 20 per 10 s, every lane
// settles under it. With the retry pushed back 9.3 s after (a window longer
// than 16 s) and no usual window up to the recovery, the search goes on
// carefully.
func TestBoundedRecovery(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name       string
		lo, rec    float64
		settled    bool
		wantFollow float64
		wantTry    time.Duration // the shorter window the explorer tries (tryShorter)
	}{
		{"10 s between the retries", 0.56, 8.7, true, r.settle * 2, 0},
		{"no usual window between them", 9.3, 20, false, 0, 0},
		// Half a minute read, 20 s not ruled out (the retries went from
		// 17.5 s to 33.2 s after the run's start): the followers hold 20
		// per 30 s, and the explorer tries 20 per 20 s.
		{"half a minute between them", 9.3, 25, false, r.settle * 20 / 30, 20 * time.Second},
	} {
		h := hostWith(r, "e", "f")
		h.cap.pass = 3.88
		e, f := h.lanes["e"], h.lanes["f"]
		r.endRamp(h, e, 7.76, series{at: sec(0), ok: 20, run: 8}, 0, sec(8.2))
		r.cooldown(h, e, 7.76, 0, false, sec(8.2), 0.5)
		r.cooldown(h, e, 7.76, 0, false, sec(8.2+tc.lo), 0.5)
		if h.exp.secTry {
			// The retry a second's window on, pushed back too
			// (TestSecondWindowRetry).
			r.cooldown(h, e, 7.76, 0, false, sec(8.2)+secondWindow, 0.5)
		}
		r.exploreOK(h, e, sec(8.2+tc.rec), sec(8.2+tc.rec))
		passProof(r, h, e, sec(8.2+tc.rec))
		if got := h.exp.phase == expSettled; got != tc.settled {
			t.Errorf("%s: settled %v, want %v (phase %s)", tc.name, got, tc.settled, phaseNames[h.exp.phase])
		}
		if tc.wantFollow > 0 && !near(f.pace, tc.wantFollow) {
			t.Errorf("%s: follower at %v, want %v", tc.name, f.pace, tc.wantFollow)
		}
		if tc.wantTry > 0 && (!h.exp.qtry || h.exp.quotaW != tc.wantTry || !near(e.pace, r.settle*20/tc.wantTry.Seconds())) {
			t.Errorf("%s: explorer at %v (try %v of %v), want Settle under 20 per %v", tc.name, e.pace, h.exp.qtry, h.exp.quotaW, tc.wantTry)
		}
		if !tc.settled && !h.cap.careful {
			t.Errorf("%s: not careful after a long recovery", tc.name)
		}
	}
}

// TestBucketQuota: a declared limit whose Remaining stays above half of it
// while a lane sends most of it per window is a bucket's capacity
// (github.com/throttled/throttled declares its burst, with resets of a
// second): it stops being a ceiling and the host explores above it, from
// the pace it proved; Remaining is no longer a stop. A window's Remaining
// counting down, or a Remaining above the limit (a rate's tokens), never
// reads so.
func TestBucketQuota(t *testing.T) {
	r := testRules(t, Config{})
	feed := func(h *host, l *lane, n int, rem func(i int) float64) {
		iv := 1 / 3.88
		for i := range n {
			now := sec(float64(i) * iv)
			if l.q != nil {
				l.q.take(now)
			}
			r.declared(h, l, &Outcome{Quota: 4, Remaining: rem(i), HasRemaining: true, HasReset: true, ResetIn: time.Second}, now)
		}
	}

	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	feed(h, f, 14, func(int) float64 { return 3 }) // refilled between requests
	if h.cap.declared != 0 || !h.cap.bucket || !h.exploring() || h.exp.exit != "f" {
		t.Fatalf("Remaining 3 of 4 throughout: declared %v bucket %v exploring %v explorer %q; want a bucket explored by f",
			h.cap.declared, h.cap.bucket, h.exploring(), h.exp.exit)
	}
	proved := 0.97 * 4 * min(1, (1-0.6/4)/0.97)
	if !near(h.exp.pace, proved*reprobeStep) || !near(h.lanes["e"].pace, r.settle*proved) {
		t.Errorf("explorer at %v, follower at %v; want a step above %v and Settle under it", h.exp.pace, h.lanes["e"].pace, proved)
	}
	f.q.rem = 0
	if got := f.q.readyAt(); got != 0 {
		t.Errorf("a bucket with nothing remaining: ready at %v, want no stop", got)
	}
	declared := h.cap.declared
	feed(h, f, 3, func(int) float64 { return 3 })
	if h.cap.declared != declared {
		t.Errorf("declared again after reading a bucket: %v", h.cap.declared)
	}

	// A fixed window of 4 per second: Remaining counts down each window.
	w := hostWith(r, "e", "f")
	feed(w, w.lanes["f"], 30, func(i int) float64 { return float64(3 - i%4) })
	if w.cap.bucket || w.cap.declared == 0 {
		t.Errorf("a window counting down: bucket %v declared %v, want the declared ceiling", w.cap.bucket, w.cap.declared)
	}
	// Remaining and a reset before any limit is known say nothing of it.
	var q quota
	if q.watch(5, sec(0)) || q.check.overFull {
		t.Error("Remaining 5 with no limit known: read as above the limit")
	}
	// Tokens above the limit: a rate, read right.
	o := hostWith(r, "e", "f")
	feed(o, o.lanes["f"], 30, func(int) float64 { return 5 })
	if o.cap.bucket || o.cap.declared == 0 {
		t.Errorf("Remaining above the limit: bucket %v declared %v, want the declared ceiling", o.cap.bucket, o.cap.declared)
	}
}

// TestHeadroomCheckEnds: a check whose quota turns out fixed or a bucket
// ends without holding its lane apart from the host's pace.
func TestHeadroomCheckEnds(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	for i := range 3 {
		r.declared(h, f, &Outcome{Quota: 4, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(float64(i)*0.3))
	}
	if !r.roomDue(h) {
		t.Fatalf("4 per second, of unknown kind: no headroom check due (declared %v)", h.cap.declared)
	}
	f.hot = true
	r.roomOK(h, f, sec(5))
	if !r.roomHeld(h, f) || !near(f.pace, r.settle*4) {
		t.Fatalf("after 5 s at the declared pace: checked %v, pace %v; want f checked at %v", r.roomHeld(h, f), f.pace, r.settle*4)
	}
	h.cap.win.fixed, h.cap.exact, h.cap.declared = true, true, 4 // a fixed window, seen meanwhile
	r.updateFollow(h, sec(5.1), "declared", "test")
	if r.roomHeld(h, f) || f.pace != h.followPace(r) {
		t.Errorf("quota fixed: checked %v, pace %v; want f at the host's %v", r.roomHeld(h, f), f.pace, h.followPace(r))
	}
	if r.room429(h, f, sec(5.2)) || f.pace != h.followPace(r) {
		t.Errorf("a 429 after the check ended read as the check's, or moved the pace to %v", f.pace)
	}

	// The checked lane's exit leaves and comes back: the new lane starts
	// at the host's pace and is no check (its ten windows there would
	// have proven the headroom unneeded without ever sending faster).
	h = hostWith(r, "e", "f")
	f = h.lanes["f"]
	for i := range 3 {
		r.declared(h, f, &Outcome{Quota: 4, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(float64(i)*0.3))
	}
	f.hot = true
	r.roomOK(h, f, sec(5))
	h.dropLane(f)
	f = h.newLane(r, "f", sec(6), sec(6))
	if r.roomHeld(h, f) || f.pace != h.followPace(r) {
		t.Errorf("a lane back on the checked exit: checked %v at %v, want no check at the host's %v", r.roomHeld(h, f), f.pace, h.followPace(r))
	}

	// The quota changes during a check: the checked lane takes the host's
	// new pace, and the check waits on it.
	f.hot = true
	r.roomOK(h, f, sec(9))
	if !r.roomHeld(h, f) {
		t.Fatal("no check started again")
	}
	r.declared(h, f, &Outcome{Quota: 2, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(9.1))
	if r.roomHeld(h, f) || f.pace != h.followPace(r) {
		t.Errorf("the limit changed to 2 mid-check: checked %v at %v, want the host's %v", r.roomHeld(h, f), f.pace, h.followPace(r))
	}
}

// TestJitterFall: followers pushed back at the pace the host settled at a
// moment ago, where no burst was ever seen, take one more margin and stay
// settled (the path's jitter); once, and only a moment after settling: the
// next such fall, or one later on, searches again carefully (the limit
// moved).
func TestJitterFall(t *testing.T) {
	r := testRules(t, Config{})
	settled := func() *host {
		h := hostWith(r, "e", "f", "g")
		c := &h.cap
		c.pass, c.sent, c.hi = 19.3, 19.3, 19.85
		r.settleHere(h, h.lanes["e"], sec(10), "test")
		return h
	}
	h := settled()
	f := h.cap.follow
	r.fallBack(h, h.lanes["f"], f, sec(11), "followers pushed back")
	if h.exp.phase != expSettled || h.cap.careful || !near(h.cap.follow, r.settle*f) {
		t.Fatalf("pushed back 1 s after settling at %v: phase %v careful %v follow %v; want settled at %v", f, phaseNames[h.exp.phase], h.cap.careful, h.cap.follow, r.settle*f)
	}
	r.fallBack(h, h.lanes["g"], h.cap.follow, sec(12), "followers pushed back")
	if h.exp.phase != expBisect || !h.cap.careful {
		t.Errorf("pushed back again: phase %v careful %v, want a careful search", phaseNames[h.exp.phase], h.cap.careful)
	}
	// A third lane's 429 for a request sent at the old pace is the same
	// fall: still settled at the new pace.
	h = settled()
	f = h.cap.follow
	r.fallBack(h, h.lanes["f"], f, sec(11), "followers pushed back")
	r.fallBack(h, h.lanes["g"], f, sec(11.2), "followers pushed back")
	if h.exp.phase != expSettled || !near(h.cap.follow, r.settle*f) {
		t.Errorf("a straggler of the same fall: phase %v follow %v, want settled at %v", phaseNames[h.exp.phase], h.cap.follow, r.settle*f)
	}
	// At a round limit the followers hold the pace sent: no margin to take,
	// so no jitter reading.
	h = settled()
	h.exp.roundHeld = true
	r.fallBack(h, h.lanes["f"], h.cap.follow, sec(11), "followers pushed back")
	if h.exp.phase != expBisect {
		t.Errorf("a fall at a round limit: phase %v, want a careful search", phaseNames[h.exp.phase])
	}
	h = settled()
	r.fallBack(h, h.lanes["f"], h.cap.follow, sec(10)+sympathySpan+1, "followers pushed back")
	if h.exp.phase != expBisect || !h.cap.careful {
		t.Errorf("pushed back long after settling: phase %v careful %v, want a careful search", phaseNames[h.exp.phase], h.cap.careful)
	}
}

// TestQuotaTryFollowers: while the explorer tries a window's quota (2 per
// 10 s after haproxy's Retry-After: 30 hid the window), the followers hold
// the careful reading until the try passed a request more than its quota,
// then go half way to it (in log space), and all the way once it passed a
// request more than twice its quota (a window or two before it is proven
// over three: haproxy 2 per 10 s, twin 83.5% -> 87.1% over the run).
func TestQuotaTryFollowers(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	c, e := &h.cap, &h.exp
	c.careful, c.windowed, c.safe, c.pass, c.sent, c.hi = true, true, 2.0/60, 2.0/60, 2.0/60, 0.485
	e.phase, e.n1, e.qtry, e.quotaW = expBisect, 2, true, 10*time.Second
	ex := h.lanes["e"]
	try := r.settle * 2 / 10
	r.setExplorerPace(h, ex, try, sec(0), "bisect", "test")
	r.updateFollow(h, sec(0), "bisect", "test")
	careful := h.lanes["f"].pace
	iv := 1 / try
	for i := range 6 {
		at := sec(float64(i) * iv)
		r.exploreOK(h, ex, at, at)
		want := careful
		switch {
		case i >= 4:
			want = try // past twice the quota: all the way
		case i >= 2:
			want = math.Sqrt(careful * try)
		}
		if got := h.lanes["f"].pace; !near(got, want) {
			t.Errorf("after %d successes of the try at %.3g/s: follower at %.4f, want %.4f", i+1, try, got, want)
		}
	}
}

// TestSpaceAfter: a lane's answers that take their usual time, a little
// more or less, leave its pace alone; one far slower than usual may have
// reached the server late, and holds the next request back by as much.
// (Measured against the quickest answer, every answer a little slower
// held the next back, and lanes at 20/s went 3% under their pace.)
func TestSpaceAfter(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "a")
	l := h.lanes["a"]
	r.setPace(h, l, 19)
	iv := interval(19)
	at := sec(0)
	for i := range 200 {
		rtt := int64(5*time.Millisecond) + int64(i%5-2)*int64(200*time.Microsecond) // 4.6 to 5.4 ms
		l.tat = at + iv
		r.spaceAfter(l, ticketRec{l: l, at: at, laneIv: iv}, at+rtt)
		if l.tat != at+iv {
			t.Fatalf("answer %d in %v, usual 5 ms: next request held back by %v", i, time.Duration(rtt), time.Duration(l.tat-at-iv))
		}
		at += iv
	}
	l.tat = at + iv
	r.spaceAfter(l, ticketRec{l: l, at: at, laneIv: iv}, at+int64(35*time.Millisecond))
	if held := time.Duration(l.tat - at - iv); held < 29*time.Millisecond || held > 31*time.Millisecond {
		t.Errorf("an answer in 35 ms, usual 5 ms: next request held back by %v, want 30 ms", held)
	}
	// One answer of 2 s moves the usual up a sixteenth of the way (a
	// server that delays on purpose must be followed there);
	// 80 answers on it is back, and one 30 ms late is held back again.
	at += iv
	r.spaceAfter(l, ticketRec{l: l, at: at, laneIv: iv}, at+int64(2*time.Second))
	for range 80 {
		at += iv
		r.spaceAfter(l, ticketRec{l: l, at: at, laneIv: iv}, at+int64(5*time.Millisecond))
	}
	at += iv
	l.tat = at + iv
	r.spaceAfter(l, ticketRec{l: l, at: at, laneIv: iv}, at+int64(35*time.Millisecond))
	if held := time.Duration(l.tat - at - iv); held < 25*time.Millisecond {
		t.Errorf("an answer in 35 ms 80 answers after one of 2 s: next request held back by %v, want about 30 ms", held)
	}
}

// TestReprobeSpan: a re-probe's first step passes only after reprobeSpan:
// a bucket refills its burst while the lanes go just under its rate, and
// that burst carries a quick run a quarter above it (x/time/rate's 10/s
// with a burst of 10 passed 12.4/s for 2 s, the search doubled, and drew
// ten 429s on the way back down).
func TestReprobeSpan(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	h.exp.exit, h.exp.phase = "e", expSettled
	h.cap.pass, h.cap.sent = 10, 10
	h.cap.ceil(10.2, sec(0))
	r.updateFollow(h, sec(0), "test", "")
	h.exp.okSince = reprobeQuiet
	h.c.OK = 10000
	r.reprobeDue(h, e, sec(120))
	if !h.exp.reprobe {
		t.Fatal("no re-probe after a quiet minute")
	}
	e = h.lanes[h.exp.exit] // another lane may probe
	iv := 1 / e.pace
	at := 120.0
	for at < 120+secs(reprobeSpan)-1 {
		at += iv
		r.exploreOK(h, e, sec(at), sec(at))
		if !h.exp.reprobe {
			t.Fatalf("the re-probe's first step passed after %.1fs, want %v", at-120, time.Duration(reprobeSpan))
		}
	}
	for at < 120+secs(reprobeSpan)+2 {
		at += iv
		r.exploreOK(h, e, sec(at), sec(at))
	}
	if h.exp.reprobe {
		t.Errorf("the re-probe's first step had not passed after %.1fs", at-120)
	}
}

// TestSayRetryAfter: a Retry-After beyond what a lane honours is worded in
// days with what is honoured, not as a parser's saturated 2562047h47m16s.
func TestSayRetryAfter(t *testing.T) {
	for _, c := range []struct {
		ra   time.Duration
		want string
	}{
		{30 * time.Second, "Retry-After 30s"},
		{48 * time.Hour, "Retry-After 2 days, honoured as 24h0m0s"},
		{math.MaxInt64, "Retry-After over a century, honoured as 24h0m0s"},
	} {
		if got := sayRetryAfter(c.ra); got != c.want {
			t.Errorf("sayRetryAfter(%v) = %q, want %q", c.ra, got, c.want)
		}
	}
}

// TestSinceEmptyProof: the first careful run after the explorer's 429
// proves no more than what passed since that 429 (its budget empty then),
// whatever a bucket's burst refilled during the cooldown; the runs after
// it are proven as before, and a window's runs never are held to it.
func TestSinceEmptyProof(t *testing.T) {
	for _, windowed := range []bool{false, true} {
		r, h, e := bisecting(t)
		h.cap.careful, h.cap.extra, h.cap.windowed = true, 1, windowed
		h.cap.ceil(6.687, sec(0))
		r.count(h, e, sec(0)) // the explorer's 429: its budget is empty at 0 s
		r.setExplorerPace(h, e, 6.05, sec(0), "test", "")
		// nginx 5r/s with a burst of 5: 6.05/s after a 0.925-s cooldown
		// runs 3.3 s without a 429 on what the cooldown refilled.
		var n int
		var last int64
		for n = 1; h.cap.pass == 0 && n < 100; n++ {
			last = sec(0.925 + float64(n-1)/6.05)
			r.exploreOK(h, e, last, last)
		}
		n--
		if windowed {
			if want := 6.05 * float64(n-1) / float64(n); !near(h.cap.pass, want) {
				t.Errorf("windowed: pass %v after %d successes, want %v (a request less than sent)", h.cap.pass, n, want)
			}
			continue
		}
		if want := float64(n-1) / secs(last-sec(0)); !near(h.cap.pass, want) || h.cap.pass >= 5 {
			t.Fatalf("pass %v after %d successes, want %v: what passed since the 429, under the server's 5/s", h.cap.pass, n, want)
		}
		// The next run is proven as before: a request less than sent.
		p := h.exp.pace
		start := last
		var m int
		for m = 1; h.cap.pass < p*0.9 && m < 200; m++ {
			at := start + int64(float64(m)/p*1e9)
			r.exploreOK(h, e, at, at)
		}
		m--
		if want := p * float64(m-1) / float64(m); !near(h.cap.pass, want) {
			t.Errorf("second run at %.3g/s: pass %v after %d successes, want %v", p, h.cap.pass, m, want)
		}
	}
}

// TestRampBurst: once the count bounds the rate, the ramp's steps above it
// tell how much burst the lane's full bucket gave: nginx 5r/s with a burst
// of 10, read as 5 at the first 429 from the last step alone.
func TestRampBurst(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name      string
		lane      string
		windowed  bool
		wantExtra float64
	}{
		{"the ramp's lane", "e", false, 10*(1-4.9/15.52) + (9 - 4.9*1.16)},
		{"another lane", "f", false, 5},
		{"a window", "e", true, 5},
	} {
		h := hostWith(r, "e", "f")
		e := &h.exp
		e.rampExit, e.steps = "e", []rampRunRec{{pace: 3.88, n: 4, d: int64(time.Second)}, {pace: 7.76, n: 9, d: int64(1160 * time.Millisecond)}}
		e.n1, e.k1, e.x1 = 31, 10, 15.52
		h.cap.extra, h.cap.lo, h.cap.windowed = 5, 4.9, tc.windowed
		r.rampBurst(h, h.lanes[tc.lane], sec(10))
		if !near(h.cap.extra, tc.wantExtra) {
			t.Errorf("%s: extra %v, want %v", tc.name, h.cap.extra, tc.wantExtra)
		}
	}
}

// TestBurstProofSinceEmpty: with a burst known, a run proves at least what
// passed since the explorer's last 429 over the time since (its budget was
// empty then), which a short cooldown makes far quicker than a burst's
// discount: 10/s with a burst of 10 known passes half way from 8 to 10 in
// about two seconds instead of ten.
func TestBurstProofSinceEmpty(t *testing.T) {
	r, h, e := bisecting(t)
	h.cap.pass, h.cap.extra = 8, 10
	h.cap.ceil(12, sec(0))
	r.count(h, e, sec(0)) // the explorer's 429 at 0 s
	r.setExplorerPace(h, e, 10, sec(0), "test", "")
	var last int64
	for i := 0; h.cap.pass == 8 && i < 200; i++ {
		last = sec(0.1 + float64(i)/10)
		r.exploreOK(h, e, last, last)
	}
	if h.cap.pass < 9 || secs(last-sec(0)) > 3 {
		t.Errorf("pass %v at %.1fs, want at least 9 within 3 s (a burst of 10 alone needs 10 s)", h.cap.pass, secs(last-sec(0)))
	}
}

// TestLaneOrderTotal: lanes with equal keys, never taken, come off the
// heap, and are chosen to take a search on, in one order whatever the
// order they were added in (a map's, when every lane's pace is set).
func TestLaneOrderTotal(t *testing.T) {
	r := testRules(t, Config{})
	var tops, challengers []string
	for _, names := range [][]string{{"a", "b", "c", "d"}, {"d", "c", "a", "b"}, {"c", "a", "d", "b"}} {
		h := hostWith(r, names...)
		for _, l := range h.lanes {
			l.key = 0
			h.fix(l)
		}
		tops = append(tops, h.heap[0].exit)
		challengers = append(challengers, h.challenger(h.lanes["a"], 0).exit)
	}
	for i := 1; i < len(tops); i++ {
		if tops[i] != tops[0] || challengers[i] != challengers[0] {
			t.Fatalf("heap tops %v, challengers %v: want one of each whatever the order", tops, challengers)
		}
	}
}

// TestOwnBudget429s: a 429 on a lane held under its own smaller budget,
// below the host's pace, is that lane's search: it neither breaks the
// host's quiet (the re-probe's wait) nor spends the host's learning
// allowance. A 429 at the host's pace does both.
func TestOwnBudget429s(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f", "g")
	h.exp.phase, h.exp.quietAt, h.cap.follow = expSettled, sec(0), 1
	f, g := h.lanes["f"], h.lanes["g"]
	f.extra().own, f.pace, f.hot = 0.5, 0.35, true
	g.pace, g.hot = 1, true
	throttled := func(l *lane, pace float64, at float64) {
		o := Outcome{Verdict: verdict.Throttled, RetryAfter: time.Second}
		r.outcome(h, l, ticketRec{l: l, at: sec(at - 0.1), laneIv: int64(float64(time.Second) / pace)}, &o, sec(at), 0.5)
	}
	throttled(f, 0.35, 10)
	if h.exp.quietAt != sec(0) || h.learning429s() != 0 || h.c.Throttled != 1 {
		t.Fatalf("429 under its own budget: quiet since %v, learning 429s %d of %d; want the quiet kept and none spent",
			h.exp.quietAt, h.learning429s(), h.c.Throttled)
	}
	throttled(g, 1, 20)
	if h.exp.quietAt != sec(20) || h.learning429s() != 1 {
		t.Errorf("429 at the host's pace: quiet since %v, learning 429s %d; want the quiet broken and one spent", h.exp.quietAt, h.learning429s())
	}
}

// TestQuotaReserve: a short window guessed from the first reset keeps two
// requests back (none under a limit of five), until it rolls, the host saw it roll, or its longest time to a
// reset and two seconds have passed since the first answer (a moving
// window never rolls by a second); a window of 10 s or more, none. An
// answer with nothing to say of the reset (none sent, or the last one
// stated not just past) leaves what remains alone.
func TestQuotaReserve(t *testing.T) {
	guess := func(limit float64, resetIn time.Duration) *quota {
		q := &quota{}
		q.update(&Outcome{Quota: limit, Remaining: limit - 1, HasRemaining: true, HasReset: true, ResetIn: resetIn}, sec(0), 0)
		return q
	}
	sent := func(limit float64) float64 { return limit - (guess(limit, 1200*time.Millisecond).reserve() - 1) }
	for _, tc := range []struct{ limit, want float64 }{{3, 3}, {4, 4}, {5, 3}, {6, 4}, {7, 5}, {30, 28}} {
		if got := sent(tc.limit); got != tc.want {
			t.Errorf("limit %g on a guessed window of a second: sends %g before its reset, want %g", tc.limit, got, tc.want)
		}
	}
	if r := guess(30, 9500*time.Millisecond).reserve(); r != 1 {
		t.Errorf("a window guessed 10 s: reserve %g, want 1", r)
	}
	q := guess(30, 1200*time.Millisecond)
	q.update(&Outcome{Quota: 30, Remaining: 20, HasRemaining: true, HasReset: true, ResetIn: 800 * time.Millisecond}, sec(0.4), 0)
	if r := q.reserve(); r != 3 {
		t.Fatalf("within the guessed window: reserve %g, want 3", r)
	}
	// A moving window: its resets move by less than a second, never roll.
	for i := 1; i <= 40; i++ {
		q.update(&Outcome{Quota: 30, Remaining: 2, HasRemaining: true, HasReset: true, ResetIn: 1200 * time.Millisecond}, sec(0.4+0.1*float64(i)), 0)
	}
	if r := q.reserve(); r != 1 || q.step != 0 {
		t.Errorf("3.2 s of resets 1.2 s away, none rolled: reserve %g (step %v), want 1", r, q.step)
	}
	// The host saw the window roll on another lane.
	k := guess(30, 1200*time.Millisecond)
	k.known = true
	if r := k.reserve(); r != 1 {
		t.Errorf("a window the host saw roll: reserve %g, want 1", r)
	}

	// An answer without a Reset (ResetIn zero) half an hour before the
	// stated one: nothing changes.
	h := guess(100, 30*time.Minute)
	h.update(&Outcome{Quota: 100, Remaining: 50, HasRemaining: true, HasReset: true, ResetIn: 29 * time.Minute}, sec(60), 0)
	h.update(&Outcome{Quota: 100, Remaining: 0, HasRemaining: true}, sec(61), 0)
	if h.rem != 50 || h.reset != sec(60)+int64(29*time.Minute) {
		t.Errorf("an answer without a Reset: rem %g, reset in %v; want 50 and the stated reset", h.rem, time.Duration(h.reset-sec(61)))
	}
	// Just past the stated reset, the server still counting: what
	// remains counts, and the window ends within the second.
	e := guess(30, 1200*time.Millisecond)
	e.update(&Outcome{Quota: 30, Remaining: 1, HasRemaining: true}, sec(1.25), 0)
	if e.rem != 1 || e.reset != sec(2.25) {
		t.Errorf("an answer 50 ms past its stated reset: rem %g, reset at %.2fs; want 1 and 2.25s", e.rem, secs(e.reset-at0))
	}
}

// TestFirstRollProbe: lanes that spent a declared quota before anything
// rolled wait past their reset, but one, the probe, goes at it: its answer
// tells the window's kind, and the others go when it does. gofiber's
// sliding 12 per 10 s pushed back all ten lanes at the first roll, each for
// a 10-s Retry-After.
func TestFirstRollProbe(t *testing.T) {
	r := testRules(t, Config{})
	spend := func(h *host, name string) *lane {
		l := h.lanes[name]
		r.declared(h, l, &Outcome{Quota: 12, Remaining: 11, HasRemaining: true, HasReset: true, ResetIn: 10 * time.Second}, sec(0))
		for i := range 12 {
			l.q.take(sec(0.8 * float64(i)))
		}
		r.declared(h, l, &Outcome{Quota: 12, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(9))
		return l
	}
	for _, tc := range []struct {
		name string
		rem  float64 // what the probe's answer after the roll says remains
	}{
		{"fixed", 11},  // the reset freed all of it
		{"sliding", 0}, // the window just ended still counts
	} {
		h := hostWith(r, "e", "f", "g")
		e, f, g := spend(h, "e"), spend(h, "f"), spend(h, "g")
		if !e.q.probe || f.q.probe || g.q.probe {
			t.Fatalf("%s: probes e %v f %v g %v; want the first lane to run out", tc.name, e.q.probe, f.q.probe, g.q.probe)
		}
		if got := e.q.readyAt(); got != sec(10) {
			t.Errorf("%s: the probe is ready at %v, want its reset (10 s)", tc.name, secs(got-at0))
		}
		// A second after the reset: an interval at 12 per 10 s is shorter.
		if got := f.q.readyAt(); got != sec(11) {
			t.Errorf("%s: another lane is ready at %v, want a second after its reset (11 s)", tc.name, secs(got-at0))
		}
		e.q.take(sec(10))
		h.raised = false
		r.declared(h, e, &Outcome{Quota: 12, Remaining: tc.rem, HasRemaining: true, HasReset: true, ResetIn: 10 * time.Second}, sec(10))
		if !h.raised || !f.q.known || !g.q.known {
			t.Errorf("%s: after the probe's answer raised %v, f known %v, g known %v; want the others told", tc.name, h.raised, f.q.known, g.q.known)
		}
		if got := f.q.readyAt(); got > sec(10) {
			t.Errorf("%s: after the probe's answer another lane is ready at %v, want now (10 s)", tc.name, secs(got-at0))
		}
	}

	// The lane whose reset comes first probes, whichever ran out first.
	h := hostWith(r, "e", "f")
	e, f := spend(h, "e"), h.lanes["f"]
	r.declared(h, f, &Outcome{Quota: 12, Remaining: 11, HasRemaining: true, HasReset: true, ResetIn: 9 * time.Second}, sec(0.5))
	r.declared(h, f, &Outcome{Quota: 12, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: 500 * time.Millisecond}, sec(9))
	if e.q.probe || !f.q.probe {
		t.Errorf("a lane resetting at 9.5 s after one resetting at 10 s: probes e %v f %v, want f alone", e.q.probe, f.q.probe)
	}
	if got := e.q.readyAt(); got != sec(11) {
		t.Errorf("the lane no longer the probe is ready at %v, want a second after its reset (11 s)", secs(got-at0))
	}

	// One quota for the whole site: no lanes to keep out of lock step.
	h = hostWith(r, "e", "f")
	h.scope = ScopeHost
	r.declared(h, h.lanes["e"], &Outcome{Quota: 12, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(9))
	if got := h.q.readyAt(); got != sec(10) {
		t.Errorf("site-wide quota ready at %v, want its reset (10 s)", secs(got-at0))
	}
}

// TestDeclaredPolicies: a server holding a client to two limits at once
// (flask-limiter's "5 per second;30 per minute", moving windows) states in
// each answer the one with the fewest remaining: the second's while the
// minute has room, the minute's once it runs low. Each limit is a quota of
// its own: the host's declared rate is the minute's (read as one quota, the
// minute's reset with the second's limit said 5 per minute, a tenth of it),
// and a lane whose minute ran out waits for it whatever the second's
// answers say.
func TestDeclaredPolicies(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	var hits []float64
	answer := func(at float64) {
		n1, n60 := 1, 1
		for _, h := range hits {
			if h > at-1 {
				n1++
			}
			if h > at-60 {
				n60++
			}
		}
		hits = append(hits, at)
		o := &Outcome{Quota: 5, Remaining: float64(max(0, 5-n1)), HasRemaining: true, HasReset: true, ResetIn: time.Second}
		if 30-n60 < 5-n1 {
			o = &Outcome{Quota: 30, Remaining: float64(max(0, 30-n60)), HasRemaining: true, HasReset: true, ResetIn: time.Minute}
		}
		r.declared(h, f, o, sec(at))
	}
	// A burst at 4 per second spends the minute in 7.5 s.
	for i := range 30 {
		answer(float64(i) / 4)
	}
	if got, want := h.cap.declared, 30.0/60; !near(got, want) {
		t.Errorf("after the minute ran out: declared rate %.4f/s, want the minute's %.4f/s", got, want)
	}
	// The second's quota has room (its answers come on in-flight requests'
	// answers too): the lane still waits for the minute's slots.
	r.declared(h, f, &Outcome{Quota: 5, Remaining: 4, HasRemaining: true, HasReset: true, ResetIn: time.Second}, sec(7.6))
	if got := r.laneReady(f); got < sec(9) {
		t.Errorf("the minute spent, an answer of the second's quota let the lane go at %.2fs", float64(got)/1e9)
	}
	// At the minute's pace from its first slot on, answers of both.
	for i := range 30 {
		answer(60 + 2.1*float64(i))
	}
	if got, want := h.cap.declared, 30.0/60; !near(got, want) {
		t.Errorf("at the minute's pace: declared rate %.4f/s, want %.4f/s", got, want)
	}
}

// TestDeclaredPoliciesBounded: a server stating another limit on every
// answer leaves each lane and the host a few quotas, never a list that
// grows with the answers.
func TestDeclaredPoliciesBounded(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	for i := range 200 {
		o := &Outcome{Quota: float64(10 + i), Remaining: 5, HasRemaining: true, HasReset: true, ResetIn: time.Second}
		r.declared(h, f, o, sec(float64(i)/10))
	}
	const few = 4 // maxPolicies written out: a larger bound must fail here
	if n := len(f.x.qo) + 1; n > few {
		t.Errorf("lane keeps %d quotas, want at most %d", n, few)
	}
	if n := len(h.cap.others) + 1; n > few {
		t.Errorf("host keeps %d quotas, want at most %d", n, few)
	}
	if f.q.limit != 209 {
		t.Errorf("lane's quota is of limit %v, want the last stated, 209", f.q.limit)
	}
}

// TestEchoOthers: a lane pushed back again after waiting a Retry-After out
// (an echo: the server counts what it refused) lengthens the waits of the
// other lanes told the same Retry-After, which would meet the same echo
// (haproxy's 10 per 30 s with Retry-After: 15, a 429 more in 378 requests);
// a lane told another one, or not waiting, keeps its own.
func TestEchoOthers(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f", "g", "k")
	e, f, g, k := h.lanes["e"], h.lanes["f"], h.lanes["g"], h.lanes["k"]
	ra := 15 * time.Second
	r.cooldown(h, e, 1, ra, false, sec(0), 0.5)
	r.cooldown(h, f, 1, ra, false, sec(4), 0.5)
	r.cooldown(h, g, 1, 5*time.Second, false, sec(12), 0.5)
	fCool, gCool, kCool := f.cool, g.cool, k.cool
	r.cooldown(h, e, 1, ra, true, sec(15.5), 0.5)
	if f.cool != fCool+int64(ra) {
		t.Errorf("f told the same %v: wait until %v, want %v (one more)", ra, time.Duration(f.cool), time.Duration(fCool+int64(ra)))
	}
	if g.cool != gCool || k.cool != kCool {
		t.Errorf("g told 5 s, k not waiting: waits %v and %v changed (from %v and %v)", time.Duration(g.cool), time.Duration(k.cool), time.Duration(gCool), time.Duration(kCool))
	}
	// Another echo later finds f waiting past the told end already: once
	// per wait (haproxy's 30 per minute told 20 s: nine lanes lengthened
	// twice idled a third of the run).
	fCool = f.cool
	r.cooldown(h, g, 1, ra, false, sec(16), 0.5)
	r.cooldown(h, g, 1, ra, true, sec(31.5), 0.5)
	if f.cool != fCool {
		t.Errorf("a second echo lengthened f again: wait until %v, want %v", time.Duration(f.cool), time.Duration(fCool))
	}
}

// TestSeriesWindow: a lane pushed back with a Retry-After that ends inside
// the window the host reads, the window that began with the lane's series,
// waits until the series and its retry are spent at the window's pace
// (haproxy's 10 per 30 s told 15 s: 11 sent since 0.5 s, a 429 at 7.2 s,
// the retry at 22.2 s pushed back again); a Retry-After that tells the
// window's end, a quota of few, a window of the clock or no window read is
// waited as told; a reading withdrawn gives the added wait back.
func TestSeriesWindow(t *testing.T) {
	const ra = 15.0
	for _, tc := range []struct {
		name     string
		n1       int32
		readW    time.Duration // the window read from the first 429
		quota    float64       // a quota known per quotaW
		quotaW   time.Duration
		windowed bool
		clock    bool
		toldAt   float64 // where the told wait ends (s)
		want     float64 // where the lane's wait ends (s)
	}{
		{name: "read from the first 429", n1: 10, readW: 30 * time.Second, windowed: true, toldAt: 7.2 + ra, want: 0.5 + 12*3},
		{name: "a quota known", quota: 10, quotaW: 30 * time.Second, windowed: true, toldAt: 7.2 + ra, want: 0.5 + 12*3},
		{name: "told the window's end", n1: 10, readW: 30 * time.Second, windowed: true, toldAt: 30, want: 30},
		{name: "a quota of few", n1: 2, readW: time.Minute, windowed: true, toldAt: 7.2 + ra, want: 7.2 + ra},
		{name: "a window of the clock", n1: 10, readW: 30 * time.Second, windowed: true, clock: true, toldAt: 7.2 + ra, want: 7.2 + ra},
		{name: "no window read", n1: 10, readW: 30 * time.Second, toldAt: 7.2 + ra, want: 7.2 + ra},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRules(t, Config{})
			h := hostWith(r, "e", "f")
			f := h.lanes["f"]
			h.exp.n1, h.exp.readW = tc.n1, int64(tc.readW)
			h.cap.windowed, h.cap.clock.on = tc.windowed, tc.clock
			h.cap.setQuota(tc.quota, int64(tc.quotaW))
			f.cool = sec(tc.toldAt)
			r.seriesWindow(h, f, series{at: sec(0.5), ok: 10, sent: 11}, sec(7.2))
			if !near(float64(f.cool-at0)/1e9, tc.want) {
				t.Fatalf("wait until %v, want %.1fs", time.Duration(f.cool-at0), tc.want)
			}
			if tc.want == tc.toldAt {
				return
			}
			if c, ok := lastChange(h, "cooldown"); !ok || c.Lane != "f" {
				t.Errorf("no change recorded for the hold: %+v", c)
			}
			r.unwindow(h, sec(10))
			if f.cool != sec(tc.toldAt) {
				t.Errorf("reading withdrawn: wait until %v, want the told %.1fs", time.Duration(f.cool-at0), tc.toldAt)
			}
			if h.c.ThrottledNs != 0 {
				t.Errorf("reading withdrawn: %v still counted as throttled, want the added wait given back", time.Duration(h.c.ThrottledNs))
			}
		})
	}
}

// TestRewindow: a lane seriesWindow held past a told Retry-After on the
// first 429's reading is held again when the host reads its window's quota
// (haproxy's 12 per minute told 60 s: 12 in 7.1 s and the wait read 12 per
// 2 minutes, the lane held to 130.5 s; the quota read 12 per minute at 9.9 s
// ends its series of 13 at 70.5 s). A quota whose window ends the series
// before the told end leaves the told wait; one that holds it longer, or a
// quota of few, leaves the wait as it was.
func TestRewindow(t *testing.T) {
	const toldAt = 7.6 + 60
	for _, tc := range []struct {
		name string
		n    float64
		w    time.Duration
		want float64 // where the lane's wait ends (s)
		held bool    // still held past the told end (unwindow would give it back)
	}{
		{name: "a shorter window", n: 12, w: time.Minute, want: 0.5 + 14*5, held: true},
		{name: "a window that ends before the told wait", n: 12, w: 30 * time.Second, want: toldAt},
		{name: "a longer window", n: 12, w: 3 * time.Minute, want: 0.5 + 14*10, held: true},
		{name: "a quota of few", n: 2, w: 10 * time.Second, want: 0.5 + 14*10, held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRules(t, Config{})
			h := hostWith(r, "e", "f")
			f := h.lanes["f"]
			h.exp.n1, h.exp.readW = 12, int64(2*time.Minute)
			h.cap.windowed = true
			f.cool = sec(toldAt)
			r.seriesWindow(h, f, series{at: sec(0.5), ok: 12, sent: 13}, sec(7.6))
			if !near(float64(f.cool-at0)/1e9, 0.5+14*10) {
				t.Fatalf("first reading: wait until %v, want 140.5s", time.Duration(f.cool-at0))
			}
			r.rewindow(h, tc.n, int64(tc.w), sec(9.9))
			if !near(float64(f.cool-at0)/1e9, tc.want) {
				t.Errorf("wait until %v, want %.1fs", time.Duration(f.cool-at0), tc.want)
			}
			if got := f.x.toldEnd != 0; got != tc.held {
				t.Errorf("held past the told end: %v, want %v", got, tc.held)
			}
			// The test set the told wait itself: what is counted as
			// throttled is the hold past it, and none of what was given
			// back.
			if want := max(0, sec(tc.want)-sec(toldAt)); !near(float64(h.c.ThrottledNs)/1e9, float64(want)/1e9) {
				t.Errorf("throttled %v, want %v (the wait given back no longer counted)", time.Duration(h.c.ThrottledNs), time.Duration(want))
			}
		})
	}
}

// TestCountFell: the explorer's counts between its 429s, falling well under
// the bound the count read before over three intervals, lower it (nginx's
// two zones per address: 4 successes in 0.8 s read 4.66/s, then 2 in
// 0.59 s, 1 in 0.67 s and none in 0.41 s as the long zone's burst ran
// out); not on a window, not where the burst seen could not hold an
// interval's refill, not on counts near the bound or on two intervals.
func TestCountFell(t *testing.T) {
	type iv struct {
		n int32
		t float64
	}
	nginx := []iv{{2, 0.59}, {1, 0.67}, {0, 0.41}}
	for _, tc := range []struct {
		name     string
		ivs      []iv
		extra    float64
		windowed bool
		want     float64 // the bound after; 4.662 unchanged
	}{
		{name: "a second limit ran out", ivs: nginx, extra: 5.75, want: 3 / 1.67},
		{name: "a window", ivs: nginx, extra: 5.75, windowed: true, want: 4.662},
		{name: "a burst too small to hold a refill", ivs: nginx, extra: 1, want: 4.662},
		{name: "counts near the bound", ivs: []iv{{4, 0.9}, {3, 0.7}, {4, 0.85}}, extra: 5.75, want: 4.662},
		{name: "two intervals", ivs: nginx[:2], extra: 5.75, want: 4.662},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, h, e := bisecting(t)
			c := &h.cap
			c.lo, c.pass, c.safe, c.extra, c.windowed = 4.662, 4.662, 4.662, tc.extra, tc.windowed
			at := 10.0
			for _, v := range tc.ivs {
				at += v.t
				r.countFell(h, e, v.n, int64(v.t*1e9), sec(at))
			}
			if math.Abs(c.lo-tc.want) > 1e-3 {
				t.Fatalf("bound %.3f/s after %v, want %.3f/s", c.lo, tc.ivs, tc.want)
			}
			if tc.want == 4.662 {
				return
			}
			if c.pass > c.lo || c.safe > c.lo {
				t.Errorf("pass %.3f, estimate %.3f: want both at most the new bound %.3f", c.pass, c.safe, c.lo)
			}
			if ch, ok := lastChange(h, "count"); !ok || math.Abs(float64(ch.To)-c.lo) > 1e-3 {
				t.Errorf("no count change recorded to %.3f: %+v", tc.want, ch)
			}
		})
	}
}

// TestCostlyClimb: with nothing pushed back above what the host settled on
// (no ceiling), a search climbs by doubling, but where a 429 idles a lane
// long (costly: vsthrottle's 5/s blocking a minute) in steps of costlyDone,
// which its first 429 ends: doubling from 4.85/s went to 9.2, 6.5 and
// 5.5/s, each pushed back and its lane blocked a minute.
func TestCostlyClimb(t *testing.T) {
	// 4.5/s sits Settle under no round limit (4.64/s).
	for _, costly := range []bool{false, true} {
		h, e := climbFrom(t, costly, 4.5)
		c := &h.cap
		if e.pace == 4.5 {
			t.Fatalf("costly %v: no step after 200 successes at 4.5/s", costly)
		}
		if want := c.pass * rampStep; !costly && !near(e.pace, want) {
			t.Errorf("not costly: %.3g/s after passing %.3g/s, want %.3g/s (doubled)", e.pace, c.pass, want)
		}
		if want := c.pass * costlyDone; costly && !near(e.pace, want) {
			t.Errorf("costly: %.3g/s after passing %.3g/s, want %.3g/s (a step of costlyDone)", e.pace, c.pass, want)
		}
	}
}

// climbFrom runs a searching explorer, 3.6/s passed, at pace until it
// steps or settles (at most 200 successes), on a host costly or not.
func climbFrom(t *testing.T, costly bool, pace float64) (*host, *lane) {
	r, h, e := bisecting(t)
	c := &h.cap
	c.costly, c.pass, c.sent, c.safe = costly, 3.6, 3.6, 3.6
	r.setPace(h, e, pace)
	h.exp.pace = pace
	at := 10.0
	for i := 0; i < 200 && e.pace == pace && h.exp.phase != expSettled; i++ {
		r.exploreOK(h, e, sec(at), sec(at))
		at += 1 / pace
	}
	return h, e
}

// TestCostlyClimbRound: a costly host's climb above what it settled on
// (vsthrottle's 5/s blocking a minute, re-probed from 3.88/s) settles
// where it passed a pace Settle under a round limit: a step above 4.85/s,
// Settle under 5 per second, idled a lane for a minute.
func TestCostlyClimbRound(t *testing.T) {
	h, e := climbFrom(t, true, 4.85)
	if h.exp.phase != expSettled || !h.exp.roundHeld || h.exp.roundSoon {
		t.Errorf("passed 4.85/s: phase %s roundHeld %v roundSoon %v, want settled there for a later re-probe", phaseNames[h.exp.phase], h.exp.roundHeld, h.exp.roundSoon)
	}
	if f := h.cap.follow; !near(f, 4.85) || !near(e.pace, 4.85) {
		t.Errorf("passed 4.85/s: followers at %v, explorer at %v; want 4.85", f, e.pace)
	}
}

// TestSlowCeilingWithoutFirstGuess: a HostCeiling under the default first
// guess (30/min), with no FirstGuess given, starts the lanes at it; it was
// refused as "MaxLaneRate is below FirstGuess", two fields never set. A
// FirstGuess given above the lane cap is still refused.
func TestSlowCeilingWithoutFirstGuess(t *testing.T) {
	for _, c := range []Rate{PerMinute(29), PerMinute(1), PerMinute(0.5)} {
		l, err := New(Config{HostCeiling: c})
		if err != nil {
			t.Errorf("HostCeiling %v: %v, want it taken", c, err)
			continue
		}
		if got := l.rules.first; math.Abs(got-c.Hz()) > 1e-12 {
			t.Errorf("HostCeiling %v: first guess %v/s, want the ceiling's %v/s", c, got, c.Hz())
		}
	}
	if _, err := New(Config{HostCeiling: PerMinute(1), FirstGuess: PerMinute(30)}); err == nil {
		t.Errorf("FirstGuess 30/min over a ceiling of 1/min: accepted, want MaxLaneRate below FirstGuess refused")
	}
}

// TestLongRunRemainingHolds: after a long first run (longRun) the followers
// do not hold the run's count, unless the host tells X-RateLimit-Remaining
// alone: each follower's own fall to 0 tells it its budget spent (Varnish's
// bucket of 40 per 20 s so told, 99.8% → 88.2% over the run when they
// slowed).
func TestLongRunRemainingHolds(t *testing.T) {
	r := testRules(t, Config{})
	for _, told := range []bool{false, true} {
		h := hostWith(r, "e", "f")
		h.cap.pass = 8
		e, f := h.lanes["e"], h.lanes["f"]
		if told {
			e.extra().rem, e.x.remN, e.x.remAt = remLeft, 3, sec(10)
		}
		r.setPace(h, f, 7.76) // a ramp step behind the explorer
		before := f.pace
		r.endRamp(h, e, 16, series{at: sec(0), ok: 46}, 0, sec(10))
		if h.awaitHolds(f) != told || (f.pace == before) != told {
			t.Errorf("Remaining told %v: follower holds %v at %v (was %v); want held %v", told, h.awaitHolds(f), f.pace, before, told)
		}
	}
}

// TestRefutedShort: a penalty's test pushed back on a follower under the
// first run's count, over a series longer than the run and shorter than
// the window read from the run and its told recovery, refutes that window:
// rate-limiter-flexible's 10 per 5 s blocking 30 s passed 15 in 7.5 s
// (read 15 per minute) and a follower 12 in 9.5 s.
func TestRefutedShort(t *testing.T) {
	e := explorer{n1: 15, t1: sec(7.5) - at0, ptestU: int64(time.Minute)}
	for _, tc := range []struct {
		name      string
		ok        int32
		serAt, at float64 // seconds
		want      bool
	}{
		{"12 in 9.5 s", 12, 0.5, 10, true},
		{"the run's count", 15, 0.5, 10, false},
		{"one fewer: a bucket's refill missed by a moment", 14, 0.5, 10, false},
		{"two fewer", 13, 0.5, 10, true},
		{"a series no longer than the run", 12, 3, 10, false},
		{"a series as long as the window read", 12, 0.5, 61, false},
		{"no series", 12, -1, 10, false},
	} {
		serAt := sec(tc.serAt)
		if tc.serAt < 0 {
			serAt = 0
		}
		if got := e.refutedShort(tc.ok, serAt, sec(tc.at)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	few := e
	few.n1 = fewRun - 1
	if few.refutedShort(fewRun-3, sec(0.5), sec(10)) {
		t.Error("a run of fewer than fewRun: refuted, want the reading kept")
	}
}

// TestShorterStepSpan: shorterStep's step above a window's quota, told a
// wait longer than the window, is held until a window opened within it
// could have held the quota and one more at the step's pace
// (rate-limiter-flexible's 30 per 10 s blocking 20 s:
// 3.6/s held 12.5 s across two windows, 28 and 29 of it, read as a bucket).
func TestShorterStepSpan(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e")
	h.exp.n1, h.exp.t1, h.exp.rec1 = 30, int64(8800*time.Millisecond), int64(20*time.Second)
	h.exp.phase = expBisect
	before, under := h.proofSpan(3.6), h.proofSpan(3.0)
	h.exp.stepW, h.exp.stepHi = 10*time.Second, 3.6
	want := int64(10*time.Second) + 31*interval(3.6)
	if got := h.proofSpan(3.6); got < want {
		t.Errorf("the step at 3.6/s is proven over %v, want at least %v (%v before it was set)", time.Duration(got), time.Duration(want), time.Duration(before))
	}
	if got := h.proofSpan(3.0); got != under {
		t.Errorf("a pace under the step is proven over %v, want %v as any other", time.Duration(got), time.Duration(under))
	}
	// Told a wait no longer than the window (nginx's 5r/s with a burst of
	// 10 told 10 s): proven as any other pace.
	h.exp.rec1 = int64(10 * time.Second)
	if got := h.proofSpan(3.6); got != before {
		t.Errorf("told 10 s, the step is proven over %v, want %v as any other", time.Duration(got), time.Duration(before))
	}
}
