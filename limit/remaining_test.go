package limit

import (
	"testing"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// TestRemainingSpent: X-RateLimit-Remaining alone falling to 0 on a success
// is read as the 429 its next request would draw; a 0 after a 0 or after a
// 429 reads nothing, and neither does a Remaining sent with a limit or a
// reset (declared.go reads those).
func TestRemainingSpent(t *testing.T) {
	ok := func(rem float64) Outcome { return Outcome{Verdict: verdict.OK, Remaining: rem, HasRemaining: true} }
	for _, tc := range []struct {
		name string
		seq  []Outcome
		want []bool
	}{
		{"counted down to 0", []Outcome{ok(2), ok(1), ok(0)}, []bool{false, false, true}},
		{"0 at the first answer", []Outcome{ok(0)}, []bool{true}},
		{"0 after 0: a refill's token taken", []Outcome{ok(1), ok(0), ok(0), ok(0)}, []bool{false, true, false, false}},
		{"0 after a 429", []Outcome{ok(3), {Verdict: verdict.Throttled, Remaining: 0, HasRemaining: true}, ok(0)}, []bool{false, false, false}},
		{"0 after a bare 429", []Outcome{ok(3), {Verdict: verdict.Throttled}, ok(0)}, []bool{false, false, false}},
		{"a bare 429 before any reading", []Outcome{{Verdict: verdict.Throttled}, ok(0)}, []bool{false, true}},
		{"refilled, then spent again", []Outcome{ok(0), ok(5), ok(0)}, []bool{true, false, true}},
		// A bucket's size told with it (Shopify's used/size): still
		// nothing of when it refills.
		{"with a limit", []Outcome{{Verdict: verdict.OK, Quota: 10, Remaining: 0, HasRemaining: true}}, []bool{true}},
		{"with a limit and a window", []Outcome{{Verdict: verdict.OK, Quota: 10, Window: time.Minute, Remaining: 0, HasRemaining: true}}, []bool{false}},
		{"with a reset told as now", []Outcome{{Verdict: verdict.OK, Remaining: 0, HasRemaining: true, HasReset: true}}, []bool{false}},
		{"with a reset", []Outcome{{Verdict: verdict.OK, Remaining: 0, HasRemaining: true, HasReset: true, ResetIn: time.Second}}, []bool{false}},
		{"none", []Outcome{{Verdict: verdict.OK}}, []bool{false}},
	} {
		l := &lane{}
		for i, o := range tc.seq {
			if got := l.remainingSpent(&o, 0); got != tc.want[i] {
				t.Errorf("%s: answer %d (%+v) read as spent %v, want %v", tc.name, i, o, got, tc.want[i])
			}
		}
	}
}

// TestRemainingRun: the explorer told its budget spent ends its ramp there
// as at a 429 (the ceiling is the pace it went at, the lane rests), and
// nothing counts a 429 the server never sent.
func TestRemainingRun(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	pace := 8.0
	r.setPace(h, e, pace)
	for i := range 20 {
		at := 0.125 * float64(i+1)
		o := Outcome{Verdict: verdict.OK, Remaining: float64(19 - i), HasRemaining: true}
		r.outcome(h, e, ticketRec{l: e, at: sec(at - 0.05), laneIv: int64(float64(time.Second) / pace)}, &o, sec(at), 0.5)
	}
	if h.exp.phase == expRamp || h.cap.hi <= 0 {
		t.Errorf("told 0 left after 20 at %v/s: phase %v, ceiling %v; want the ramp ended at a ceiling", pace, phaseNames[h.exp.phase], h.cap.hi)
	}
	if e.cool <= sec(2.5) {
		t.Errorf("told 0 left at 2.5 s: resting until %.2f s, want it resting", secs(e.cool-at0))
	}
	if h.c.Throttled != 0 || e.c.thr != 0 || h.c.OK != 20 {
		t.Errorf("counted %d 429s (lane %d), %d successes; want none and 20", h.c.Throttled, e.c.thr, h.c.OK)
	}
}

// TestWindowGivesBack: a common window the run opened that ended before the
// recovery gives some of the run back as it slides on or ages out; where it
// could give back as few as were told left, the recovery is no bucket's
// refill.
func TestWindowGivesBack(t *testing.T) {
	s := func(x float64) int64 { return int64(x * 1e9) }
	for _, tc := range []struct {
		name   string
		n      int32
		t, rec float64
		got    float64
		want   time.Duration
	}{
		// vsthrottle 30 per minute: 31 in 8.8 s, 4 back 9.8 s on. A 10-s
		// window ended 8.6 s before: it gives back 27 or more.
		{"a bucket's refill", 31, 8.8, 9.8, 4, 0},
		// gofiber's sliding 30 per minute: 30 in 8.7 s, 1 back 53.8 s on,
		// 2.5 s past the minute.
		{"a sliding minute just ended", 30, 8.7, 53.8, 1, time.Minute},
		// No common window between the run and its recovery.
		{"no window in reach", 30, 3, 5, 2, 0},
	} {
		if got := windowGivesBack(tc.n, s(tc.t), s(tc.rec), tc.got); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRefillTold: the explorer's first 429 recovered with Remaining alone
// told: a few back is a bucket's refill, its rate bracketed by them; the
// run's count back (or near it) is a window's reset, and as few back as a
// window just ended gives is not read.
func TestRefillTold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		left   float32
		t1     float64
		rec    float64
		recLo  float64
		read   bool
		lo, hi float64
	}{
		// The upper bound counts from the last retry pushed back: the
		// refill read may have started no sooner.
		{"vsthrottle 30 per minute", 3, 8.8, 9.8, 1.05, true, 4 / 9.8, 5 / (9.8 - 1.05)},
		{"no retry pushed back", 3, 8.8, 9.8, 0, true, 4 / 9.8, 5 / 9.8},
		{"a window's reset", 29, 8.8, 9.8, 1.05, false, 0, 0},
		{"a sliding minute just ended", 0, 8.7, 53.8, 26.4, false, 0, 0},
	} {
		r := testRules(t, Config{})
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		h.exp.phase, h.exp.n1, h.exp.t1, h.exp.ramped = expRefine, 31, int64(tc.t1*1e9), 7.76
		h.exp.recLast = int64(tc.recLo * 1e9)
		now := sec(tc.t1 + tc.rec)
		e.extra().rem, e.x.remN, e.x.remAt = remLeft, tc.left, now
		got := r.refillTold(h, e, int64(tc.rec*1e9), now)
		if got != tc.read {
			t.Errorf("%s: read as a bucket %v, want %v", tc.name, got, tc.read)
			continue
		}
		if !got {
			if h.cap.refill {
				t.Errorf("%s: not read, yet runs are to be proven by Remaining", tc.name)
			}
			continue
		}
		if !h.cap.refill {
			t.Errorf("%s: read, yet runs are not to be proven by Remaining", tc.name)
		}
		if !near(h.cap.safe, tc.lo) || !near(h.cap.hi, tc.hi) {
			t.Errorf("%s: rate between %.4g and %.4g, want %.4g and %.4g", tc.name, h.cap.safe, h.cap.hi, tc.lo, tc.hi)
		}
		if h.exp.phase != expBisect || h.exp.pace <= tc.lo || h.exp.pace >= tc.hi {
			t.Errorf("%s: phase %s, explorer at %.4g/s; want the search between the bounds", tc.name, phaseNames[h.exp.phase], h.exp.pace)
		}
		if f := h.cap.follow; f > tc.lo {
			t.Errorf("%s: followers at %.4g/s, above the lower bound %.4g", tc.name, f, tc.lo)
		}
	}
}

// TestRemPassed: a run proven by Remaining alone at its start and end: held
// (a 0 held too), the pace passes whatever burst was seen; fallen, the
// refill is the pace less the fall over the run.
func TestRemPassed(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e")
	e := h.lanes["e"]
	r.setPace(h, e, 0.5)
	now := sec(20)
	for _, tc := range []struct {
		start, end float32
		want       float64
	}{
		{3, 5, 0.5}, {0, 0, 0.5}, {10, 6, 0.5 - 4.0/20},
	} {
		h.exp.runRem, h.exp.runRemOK = float64(tc.start), true
		e.extra().rem, e.x.remN, e.x.remAt = remLeft, tc.end, now
		if got := h.exp.remPassed(e, sec(20)-at0, now); !near(got, tc.want) {
			t.Errorf("Remaining %v then %v over 20 s at 0.5/s: passed %.4g, want %.4g", tc.start, tc.end, got, tc.want)
		}
	}
}
