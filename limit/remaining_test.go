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
		{"with a limit", []Outcome{{Verdict: verdict.OK, Quota: 10, Remaining: 0, HasRemaining: true}}, []bool{false}},
		{"with a reset", []Outcome{{Verdict: verdict.OK, Remaining: 0, HasRemaining: true, ResetIn: time.Second}}, []bool{false}},
		{"none", []Outcome{{Verdict: verdict.OK}}, []bool{false}},
	} {
		l := &lane{}
		for i, o := range tc.seq {
			if got := l.remainingSpent(&o); got != tc.want[i] {
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
