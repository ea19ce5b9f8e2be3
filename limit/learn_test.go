package limit

import (
	"math"
	"testing"
	"time"
)

func testRules(t *testing.T, c Config) *Rules {
	t.Helper()
	r, err := c.rules()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func perMin(hz float64) float64 { return math.Round(hz*60*1000) / 1000 }

var at0 = time.Unix(1_800_000_000, 0).UnixNano()

func sec(s float64) int64 { return at0 + int64(s*1e9) }

// TestOn429 tabulates the adaptive rule after the first 429 of an episode.
func TestOn429(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name         string
		in           learner
		now          int64
		pace, hi, lo float64 // per minute
	}{
		{"first 429: ceiling=pace, cut by Decrease", learner{pace: 0.5}, sec(30), 21, 30, 0},
		{"second 429: floor from successes between, settle", learner{pace: 0.35, hi: 0.5, cumAt: sec(0), cumN: 11}, sec(60), 14.7, 21, 10},
		{"floor bounds the cut", learner{pace: 0.2, hi: 0.25, cumAt: sec(0), cumN: 101}, sec(600), 9.7, 12, 10},
		{"pushed below the floor: forget it", learner{pace: 0.1, hi: 0.5, lo: 0.15, cumAt: sec(0), cumN: 50}, sec(600), 4.2, 6, 0},
		{"rate floor", learner{pace: 1.0 / 60}, sec(1), 1, 1, 0},
	} {
		l := tc.in
		r.on429(&l, tc.now)
		if perMin(l.pace) != tc.pace || perMin(l.hi) != tc.hi || perMin(l.lo) != tc.lo {
			t.Errorf("%s: on429(%+v) = pace %v hi %v lo %v /min, want %v %v %v",
				tc.name, tc.in, perMin(l.pace), perMin(l.hi), perMin(l.lo), tc.pace, tc.hi, tc.lo)
		}
	}
}

// TestOnOK tabulates the adaptive rule at the end of a run of successes.
func TestOnOK(t *testing.T) {
	r := testRules(t, Config{})
	run := func(pace float64) learner { // 19 successes so far, evenly at pace
		return learner{pace: pace, runAt: sec(0), runN: 19}
	}
	for _, tc := range []struct {
		name string
		in   learner
		now  int64
		pace float64 // per minute
	}{
		{"slow start: 5 saturated successes, nothing pushed back: probe x1.5", learner{pace: 0.5, runAt: sec(0), runN: 4}, sec(8), 45},
		{"slow start: 4 successes are not a run yet", learner{pace: 0.5, runAt: sec(0), runN: 3}, sec(6), 30},
		{"idle lane proves nothing", run(0.5), sec(380), 30},
		{"below ceiling: half the gap", func() learner { l := run(0.5); l.hi = 1; return l }(), sec(38), 44.1},
		{"near ceiling: settle at 97%", func() learner { l := run(0.96); l.hi = 1; l.quietAt = sec(0); return l }(), sec(19.8), 58.2},
		{"settled: hold", func() learner { l := run(0.97); l.hi = 1; l.quietAt = sec(0); return l }(), sec(19.6), 58.2},
		{"settled long: ceiling drifts up", func() learner { l := run(0.97); l.hi = 1; l.quietAt = sec(-3600); return l }(), sec(19.6), 59.364},
		{"declared quota: fixed", func() learner { l := run(0.5); l.fixed = true; return l }(), sec(38), 30},
	} {
		l := tc.in
		r.onOK(&l, tc.now)
		if got := perMin(l.pace); got != tc.pace {
			t.Errorf("%s: onOK = pace %v/min, want %v", tc.name, got, tc.pace)
		}
	}
}

// TestArticleRules: halve with a 2/min floor; +25% toward the first guess
// after 100 successes, never above it.
func TestArticleRules(t *testing.T) {
	r := testRules(t, Config{Policy: ArticlePerExit})
	l := learner{pace: 0.5}
	var got []float64
	for range 5 {
		r.on429(&l, sec(0))
		got = append(got, perMin(l.pace))
	}
	if want := []float64{15, 7.5, 3.75, 2, 2}; !equal(got, want) {
		t.Errorf("article halvings = %v, want %v", got, want)
	}
	for range 99 {
		r.onOK(&l, sec(1))
	}
	if perMin(l.pace) != 2 {
		t.Errorf("after 99 successes pace %v/min, want 2", perMin(l.pace))
	}
	r.onOK(&l, sec(1))
	if perMin(l.pace) != 2.5 {
		t.Errorf("after 100 successes pace %v/min, want 2.5", perMin(l.pace))
	}
	l.pace = 0.45
	for range 100 {
		r.onOK(&l, sec(1))
	}
	if perMin(l.pace) != 30 {
		t.Errorf("growth capped at %v/min, want the first guess 30", perMin(l.pace))
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCooldown(t *testing.T) {
	r := testRules(t, Config{})
	l := learner{pace: 0.5, eps: 1}
	for _, tc := range []struct {
		ra   time.Duration
		u    float64
		eps  int16
		want time.Duration
	}{
		{30 * time.Second, 0.5, 1, 30 * time.Second},             // Retry-After wins
		{0, 0.5, 1, 4 * time.Second},                             // two intervals at 30/min beat 0.5s jitter
		{0, 0.5, 4, 4 * time.Second},                             // 0.5 * 8s = 4s
		{0, 0.99, 8, time.Duration(0.99 * float64(time.Minute))}, // capped at 60s
	} {
		l.eps = tc.eps
		if got := time.Duration(r.cooldown(&l, tc.ra, tc.u)); got != tc.want {
			t.Errorf("cooldown(ra=%v, u=%v, eps=%d) = %v, want %v", tc.ra, tc.u, tc.eps, got, tc.want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{Settle: 1.5},
		{FirstGuess: PerMinute(1), MinLaneRate: PerMinute(5)},
		{HostConcurrency: -1},
		{BackoffBase: time.Minute, BackoffCap: time.Second},
		{Policy: 9},
		{FirstGuess: Rate{N: math.Inf(1)}},
	} {
		if _, err := c.rules(); err == nil {
			t.Errorf("rules(%+v) = nil error, want ErrConfig", c)
		}
	}
	r := testRules(t, Config{})
	if r.First != 0.5 || r.HostConc != 32 || r.MaxInFlight != 256 || r.Settle != 0.97 {
		t.Errorf("defaults %+v", r)
	}
}

// TestHostPrior: what one lane learned about a per-IP limit starts its
// siblings there, and stops a sibling's slow start before it overshoots.
func TestHostPrior(t *testing.T) {
	r := testRules(t, Config{})
	h := NewHostState()
	h.learnPrior(r, 1.0) // one lane drew a 429 at 60/min
	if fresh := h.newLane(r, "x1", sec(0)); perMin(fresh.l.pace) != 58.2 || fresh.l.hi != 1.0 {
		t.Errorf("new lane after a sibling's 429: pace %v/min hi %v, want 58.2/min (97%% of 60) and hi 1", perMin(fresh.l.pace), fresh.l.hi)
	}
	probing := learner{pace: 1.2}
	h.adoptPrior(r, &probing)
	if perMin(probing.pace) != 42 || probing.hi != 1.0 {
		t.Errorf("probing lane above the prior: pace %v/min, want restarted at 42/min (70%% of 60) like its sibling", perMin(probing.pace))
	}
	slow := learner{pace: 0.75}
	h.adoptPrior(r, &slow)
	if slow.pace != 0.75 || slow.hi != 1.0 {
		t.Errorf("lane below the prior: pace %v hi %v, want its pace kept and the sibling's ceiling adopted", slow.pace, slow.hi)
	}
	h.learnPrior(r, 2.0)
	if math.Abs(h.prior-1.2) > 1e-9 {
		t.Errorf("prior after a second lane's ceiling of 2/s = %v, want 1.2 (weighted 0.8/0.2)", h.prior)
	}
	art := testRules(t, Config{Policy: ArticlePerExit})
	h2 := NewHostState()
	h2.learnPrior(art, 1.0)
	if h2.prior != 0 {
		t.Errorf("article policy learned a prior; it must stay as published")
	}
}

// TestHostRate: the host AIMD rate halves on a pushback episode, remembers
// the rate that drew it when the host was really sent at that rate, and its
// additive increase stops at Settle times that rate.
func TestHostRate(t *testing.T) {
	r := testRules(t, Config{})
	h := NewHostState()
	h.aimd, h.sendRate = 2, 1.9
	if !r.hostDecrease(h, sec(0), sec(1)) {
		t.Fatalf("first pushback not a new episode")
	}
	if h.aimd != 1 || h.aimdHi != 2 {
		t.Errorf("after a pushback at 2/s: aimd %v hi %v, want 1 and 2", h.aimd, h.aimdHi)
	}
	if r.hostDecrease(h, sec(0.5), sec(1.2)) || h.aimd != 1 {
		t.Errorf("an answer to a request sent before the episode cut again: aimd %v", h.aimd)
	}
	for i := range 100 {
		r.hostIncrease(h, sec(2+float64(i)))
	}
	if h.aimd != 1.94 {
		t.Errorf("after 100 successes: aimd %v, want capped at 1.94 (97%% of 2)", h.aimd)
	}
	// Long quiet: the cap creeps so a raised limit is found again.
	for i := range 200 {
		r.hostIncrease(h, sec(3600+float64(i)))
	}
	if h.aimd <= 1.94 {
		t.Errorf("after an hour without pushback: aimd %v, want above 1.94", h.aimd)
	}
	// A pushback while the host was idle proves nothing about the limit.
	idle := NewHostState()
	idle.aimd, idle.sendRate = 4, 0.5
	r.hostDecrease(idle, sec(0), sec(1))
	if idle.aimdHi != 0 || idle.aimd != 2 {
		t.Errorf("pushback while sending 0.5/s of a 4/s allowance: hi %v aimd %v, want no ceiling and aimd 2", idle.aimdHi, idle.aimd)
	}
}

// TestHostRateFloor: between two pushback episodes the server's capacity
// refilled at least the successes in between; the next cut restarts no
// lower than Settle times that, and above it the rate creeps instead of
// climbing at full speed.
func TestHostRateFloor(t *testing.T) {
	r := testRules(t, Config{})
	h := NewHostState()
	h.aimd, h.sendRate = 14, 13
	r.hostDecrease(h, sec(0), sec(0))
	if h.aimd != 7 || h.aimdLo != 0 {
		t.Fatalf("first episode: aimd %v lo %v, want 7 and no floor yet", h.aimd, h.aimdLo)
	}
	// 121 successes in the next 10 s: at least 12/s.
	for i := range 121 {
		r.hostIncrease(h, sec(float64(i)/12.1))
	}
	h.aimd = 13
	r.hostDecrease(h, sec(10), sec(10))
	if h.aimdLo != 12 {
		t.Errorf("floor after 121 successes in 10 s = %v/s, want 12", h.aimdLo)
	}
	if want := r.Settle * 12; h.aimd != want {
		t.Errorf("cut with a floor of 12/s: aimd %v, want %v (not half of 13)", h.aimd, want)
	}
	before := h.aimd
	r.hostIncrease(h, sec(11))
	if step := h.aimd - before; step >= r.HostInc {
		t.Errorf("above the floor the rate stepped %v per success, want less than %v", step, r.HostInc)
	}
}

// TestReprobe429: a lane probing above its old ceiling (reHi) keeps it when
// the probe is pushed back within two steps, or when the series after its
// first 429 measures no more than reHi; a measure above reHi is the raised
// limit.
func TestReprobe429(t *testing.T) {
	r := testRules(t, Config{})
	probing := func(pace float64) learner { return learner{pace: pace, reHi: 1} }

	l := probing(2) // within 1.5^2 of the old ceiling
	r.on429(&l, sec(0))
	if l.reHi != 0 || l.hi != 1 || l.pace != r.Settle {
		t.Errorf("429 two steps up: reHi %v hi %v pace %v, want the old ceiling 1 at pace %v", l.reHi, l.hi, l.pace, r.Settle)
	}

	l = probing(9) // far above: a burst, or a raised limit
	r.on429(&l, sec(0))
	if l.reHi != 1 || l.hi != 9 || l.pace != 3 || l.cumAt != sec(0) {
		t.Fatalf("first 429 at 9/s: %+v, want still probing, hi 9, pace 3 (between 1 and 9), a series from 0", l)
	}
	raised := l
	for i := range 31 {
		r.onOK(&raised, sec(float64(i+1)/3))
	}
	raised.pace = 3.2
	r.on429(&raised, sec(10))
	if raised.reHi != 0 || raised.lo != 3 || raised.pace != 3 || raised.hi != 3.2 {
		t.Errorf("31 successes in 10 s then a 429: %+v, want lo 3 (raised), pace 3, hi 3.2", raised)
	}

	faked := l
	for i := range 11 {
		r.onOK(&faked, sec(float64(i+1)))
	}
	r.on429(&faked, sec(11))
	if faked.reHi != 0 || faked.hi != 1 || faked.lo != 0 {
		t.Errorf("11 successes in 11 s (about the old 1/s) then a 429: %+v, want the old ceiling back", faked)
	}

	few := l
	r.onOK(&few, sec(1))
	r.on429(&few, sec(1.5))
	if few.reHi != 0 || few.hi != 1 {
		t.Errorf("a second 429 after one success: %+v, want the probe over and the old ceiling back", few)
	}
}

// TestQuotaLearnsWindow: X-RateLimit-Limit without a window. When a window
// ends and the next response's reset lies one window later, the step is the
// window, and the quota then sets the lane's pace exactly.
func TestQuotaLearnsWindow(t *testing.T) {
	var q quota
	q.update(&Outcome{Quota: 10, Remaining: 9, HasRemaining: true, ResetIn: 8 * time.Second}, sec(2), 0)
	if q.window != 0 || q.limit != 10 || q.reset != sec(10) {
		t.Fatalf("after the first response: %+v, want limit 10, reset +10s, window unknown", q)
	}
	q.take(sec(10.5)) // the window ended: nothing to take, nothing forgotten
	if q.reset != sec(10) {
		t.Fatalf("take after the reset forgot it: %+v", q)
	}
	q.update(&Outcome{Quota: 10, Remaining: 9, HasRemaining: true, ResetIn: 9500 * time.Millisecond}, sec(10.5), 0)
	if q.window != int64(10*time.Second) {
		t.Errorf("window = %v, want 10s (from reset +10s to reset +20s)", time.Duration(q.window))
	}
	// A response within the same window (reset barely moves) teaches nothing.
	var same quota
	same.update(&Outcome{Quota: 10, Remaining: 5, HasRemaining: true, ResetIn: 3 * time.Second}, sec(0), 0)
	same.update(&Outcome{Quota: 10, Remaining: 4, HasRemaining: true, ResetIn: 2500 * time.Millisecond}, sec(1), 0)
	if same.window != 0 {
		t.Errorf("window learned within one window: %v", time.Duration(same.window))
	}
}

// TestLeadProbe: while nothing has pushed back, one lane leads the probing
// above the proven pace; the others wait there until it is proven.
func TestLeadProbe(t *testing.T) {
	r := testRules(t, Config{})
	h := NewHostState()
	a := &lane{exit: "a", l: learner{pace: 0.75}}
	b := &lane{exit: "b", l: learner{pace: 0.75}}
	// a finishes a saturated run at 0.5 and steps to 0.75: it leads.
	h.leadProbe(r, a, 0.5, sec(0))
	if h.leader != "a" || h.proven != 0.5 || a.l.pace != 0.75 {
		t.Fatalf("first step: leader %q proven %v pace %v, want a leading from 0.5 to 0.75", h.leader, h.proven, a.l.pace)
	}
	// b steps from 0.5 to 0.75 too: it may not pass the proven 0.5 yet.
	h.leadProbe(r, b, 0.5, sec(1))
	if b.l.pace != 0.5 {
		t.Errorf("follower stepped to %v, want held at the proven 0.5", b.l.pace)
	}
	// a proves 0.75 and steps on; b may now step up to 0.75, no further.
	a.l.pace = 1.125
	h.leadProbe(r, a, 0.75, sec(5))
	b.l.pace = 0.75
	h.leadProbe(r, b, 0.5, sec(6))
	if b.l.pace != 0.75 || h.proven != 0.75 {
		t.Errorf("follower after the leader proved 0.75: pace %v proven %v, want 0.75", b.l.pace, h.proven)
	}
	b.l.pace = 1.125
	h.leadProbe(r, b, 0.75, sec(7))
	if b.l.pace != 0.75 {
		t.Errorf("follower passed the leader's unproven step: pace %v", b.l.pace)
	}
	// A leader that stops stepping gives way after leaderTimeout.
	b.l.pace = 1.125
	h.leadProbe(r, b, 0.75, sec(7)+int64(leaderTimeout)+1)
	if h.leader != "b" || b.l.pace != 1.125 {
		t.Errorf("after the leader went quiet: leader %q pace %v, want b leading at 1.125", h.leader, b.l.pace)
	}
}

// TestSympathy: when two lanes of a host draw 429s at a like pace within
// ScopeSpan, the others as fast slow to the settle point under it at once
// (their next send pushed back too) instead of each drawing its own; one
// lane's 429 alone, or one far under the host's prior (a flagged IP), moves
// nobody, and a slower lane keeps its pace.
func TestSympathy(t *testing.T) {
	r := testRules(t, Config{})
	newHost := func() (*HostState, []*lane) {
		h := NewHostState()
		h.scope, h.prior = ScopeExit, 1.1
		var ls []*lane
		for _, id := range []string{"a", "b", "c", "d"} {
			l := &lane{exit: id, idx: -1, hot: true, l: learner{pace: 1.05, hi: 1.1}}
			h.lanes[id] = l
			ls = append(ls, l)
		}
		ls[3].l.pace = 0.9 // d is slower
		return h, ls
	}
	throttle := func(h *HostState, l *lane, at float64) {
		r.throttled(h, l, &Outcome{}, sec(at), sec(at), 0)
	}

	h, ls := newHost()
	throttle(h, ls[0], 10)
	h.sympathize(r, ls[2], sec(10.5))
	if ls[2].l.pace != 1.05 {
		t.Errorf("after one lane's 429, c slowed to %v; one 429 may be timing noise", ls[2].l.pace)
	}
	throttle(h, ls[1], 12)
	tat := ls[2].tat
	h.sympathize(r, ls[2], sec(12.5))
	if want := r.Settle * 1.05; ls[2].l.pace != want || ls[2].l.hi != 1.05 {
		t.Errorf("after a second lane's 429 at 1.05/s: c pace %v hi %v, want %v under a ceiling of 1.05", ls[2].l.pace, ls[2].l.hi, want)
	}
	oldIv := 1e9 / 1.05
	if d := ls[2].tat - tat; d != int64(1e9/(r.Settle*1.05))-int64(oldIv) {
		t.Errorf("c's next send moved %v, want the difference of the two intervals", time.Duration(d))
	}
	h.sympathize(r, ls[3], sec(12.5))
	if ls[3].l.pace != 0.9 {
		t.Errorf("d, slower than what drew the 429s, went to %v", ls[3].l.pace)
	}

	// Far under the prior: that IP's own limit, not the host's.
	h, ls = newHost()
	ls[0].l.pace, ls[1].l.pace = 0.5, 0.5
	throttle(h, ls[0], 10)
	throttle(h, ls[1], 11)
	h.sympathize(r, ls[2], sec(12))
	if ls[2].l.pace != 1.05 {
		t.Errorf("429s at half the prior slowed c to %v", ls[2].l.pace)
	}
}

// TestReprobeHousekeeping: a re-probe that never steps up (its lane is not
// sent enough) ends after 4*ProbeEvery with the old ceiling back, the lead
// released and the next probe further off; a new probe forgets what earlier
// ones measured, so a smaller raise still reaches the other lanes; only a
// lane sent as fast as it may go starts one.
func TestReprobeHousekeeping(t *testing.T) {
	r := testRules(t, Config{})
	h := NewHostState()
	h.scope = ScopeExit
	a := &lane{exit: "a", idx: -1, l: learner{pace: 0.97, hi: 1}}
	h.lanes["a"] = a
	h.okSince = reprobeQuiet

	h.reprobe(r, a, sec(31))
	if a.l.reHi != 0 {
		t.Fatalf("a lane not sent at its pace started a re-probe")
	}
	a.hot = true
	h.raised = 19 // from a raise before the limit fell
	h.reprobe(r, a, sec(32))
	if a.l.reHi != 1 || a.l.hi != 0 || h.leader != "a" || h.raised != 0 {
		t.Fatalf("quiet host: reHi %v hi %v leader %q raised %v, want a re-probe led by a, old measures forgotten", a.l.reHi, a.l.hi, h.leader, h.raised)
	}
	h.reprobe(r, a, sec(32)+4*r.ProbeEvery+1)
	if a.l.reHi != 0 || a.l.hi != 1 || a.l.pace > r.Settle || h.leader != "" || h.probeFails != 1 || h.okSince != 0 {
		t.Errorf("stuck probe after 4*ProbeEvery: %+v leader %q fails %v okSince %v, want the old ceiling, no leader, one failure, quiet counted anew",
			a.l, h.leader, h.probeFails, h.okSince)
	}

	// A probe holding after its first 429 publishes the counted bound.
	h.leader, h.raised = "a", 0
	a.l = learner{pace: 12, hi: 14, reHi: 10, cumAt: sec(100), cumN: 30, quietAt: sec(100)}
	h.reprobe(r, a, sec(102))
	if h.raised != 14.5 || h.probeFails != 0 {
		t.Errorf("30 successes in 2 s after the first 429: raised %v fails %v, want 14.5 and the failures reset", h.raised, h.probeFails)
	}
}

// TestSympathyExpires: a sympathy event older than ProbeEvery moves no lane
// (a lane created hours later starts from the prior).
func TestSympathyExpires(t *testing.T) {
	r := testRules(t, Config{})
	h := NewHostState()
	h.scope, h.symHi, h.symAt = ScopeExit, 1, sec(10)
	c := &lane{exit: "c", idx: -1, l: learner{pace: 1.05, hi: 1.1}}
	h.sympathize(r, c, sec(10)+r.ProbeEvery+1)
	if c.l.pace != 1.05 || c.l.hi != 1.1 {
		t.Errorf("an old sympathy event moved c to pace %v hi %v", c.l.pace, c.l.hi)
	}
	h.sympathize(r, c, sec(11))
	if c.l.pace != r.Settle {
		t.Errorf("a fresh one left c at %v, want %v", c.l.pace, r.Settle)
	}
}

// TestRaiseSharedInfersScope: when lanes that followed a raise one lane's
// re-probe measured draw 429s at that pace, before any of their own since,
// the limit is shared: three of them within ScopeSpan put the host under
// its own rate. Lanes that had learned their own ceiling since do not count.
func TestRaiseSharedInfersScope(t *testing.T) {
	r := testRules(t, Config{})
	setup := func(quiet float64) (*HostState, []*lane) {
		h := NewHostState()
		h.scope, h.raised, h.raisedAt, h.leader = ScopeExit, 1, sec(10), "a"
		var ls []*lane
		for _, id := range []string{"a", "b", "c", "d"} {
			l := &lane{exit: id, idx: -1, hot: true, l: learner{pace: 1, hi: 1 / r.Settle, quietAt: sec(quiet)}}
			h.lanes[id] = l
			ls = append(ls, l)
		}
		return h, ls
	}
	h, ls := setup(5)
	for i, l := range ls[1:] {
		r.throttled(h, l, &Outcome{}, sec(20+float64(i)), sec(20+float64(i)), 0)
	}
	if !h.scope.shared() || !h.rated() {
		t.Errorf("three followers pushed back at the raised pace: scope %v rated %v, want host-wide", h.scope, h.rated())
	}
	h, ls = setup(15)
	for i, l := range ls[1:] {
		r.throttled(h, l, &Outcome{}, sec(20+float64(i)), sec(20+float64(i)), 0)
	}
	if h.scope.shared() {
		t.Errorf("lanes with their own 429s since the raise inferred a shared limit")
	}
}

// TestHostRatedFromLanes: when a host comes under its own rate, the lanes'
// ceilings (their shares of the host's limit) are forgotten, and the
// ceiling of the host rate is what the host was sent when pushed back, not
// the rate just cut from it.
func TestHostRatedFromLanes(t *testing.T) {
	r := testRules(t, Config{})
	h := NewHostState()
	h.scope, h.sendRate, h.prior, h.proven = ScopeExit, 4, 0.75, 0.7
	a := &lane{exit: "a", idx: -1, l: learner{pace: 0.7, hi: 0.75, lo: 0.6}}
	q := &lane{exit: "q", idx: -1, l: learner{pace: 1, hi: 1, fixed: true}}
	h.lanes["a"], h.lanes["q"] = a, q
	h.setScope(r, ScopeHost, sec(1))
	if a.l.hi != 0 || a.l.lo != 0 || q.l.hi != 1 || h.prior != 0 || h.proven != 0 {
		t.Errorf("after the host became rated: lane a hi %v lo %v, declared lane q hi %v; want a's forgotten, q's kept", a.l.hi, a.l.lo, q.l.hi)
	}
	if h.aimd != 2 {
		t.Fatalf("host rate started at %v, want half the 4/s sent", h.aimd)
	}
	r.hostDecrease(h, sec(1), sec(1))
	if h.aimdHi != 4 || h.aimd != 2 {
		t.Errorf("first pushback right after: ceiling %v rate %v, want the 4/s sent as the ceiling and the rate cut once to 2", h.aimdHi, h.aimd)
	}
	// The send rate is a ~10 s average and now stale: the next episode
	// is drawn by the host rate.
	r.hostDecrease(h, sec(3), sec(3))
	if h.aimdHi != 2 || h.aimd != 1 {
		t.Errorf("second pushback with a stale send rate: ceiling %v rate %v, want 2 and 1", h.aimdHi, h.aimd)
	}
}
