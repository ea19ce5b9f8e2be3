package limit

import "testing"

func TestRoundLimit(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1, "1 per second"},
		{2, "2 per second"},
		{0.5, "5 per 10s"},
		{0.1, "1 per 10s"},
		{1.0 / 6, "10 per minute"},
		{20.0 / 3600, "20 per hour"},
		{35.0 / 60, ""},        // 35 per minute is not a figure limits are written in
		{0.15, ""},             // 1.5 per 10 s: not a whole count (9 per minute is not round either)
		{0.2, "2 per 10s"},     // nginx's 12r/m
		{1.5, "15 per 10s"},    // not 1.5 per second
		{8, ""},                // the ramp's 8/s from a first guess of 30/min
		{10.787 / 0.97, ""},    // a pace the bisection reached: 40,037 per hour is not 40,000
		{0.5 * (1 + 1e-4), ""}, // a hundredth of a percent off is another limit
		{0, ""},
	} {
		if got := roundLimit(c.x); got != c.want {
			t.Errorf("roundLimit(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

// TestRoundSettle: nginx 30r/m with its fixed Retry-After: 60. The ramp's
// 0.485/s (Settle under 30 per minute) passed and the refine step above it,
// 0.582/s, was pushed back: the search settles there instead of spending a
// third 429 (and a lane's minute) on the 9% between. A pace that passed
// without sitting under a round limit goes on bisecting.
func TestRoundSettle(t *testing.T) {
	r := testRules(t, Config{})
	for _, c := range []struct {
		pass    float64
		settled bool
	}{{0.485, true}, {0.5, false}} {
		h := hostWith(r, "e", "f")
		h.exp.phase = expBisect
		h.cap.pass, h.cap.sent, h.cap.safe = c.pass, c.pass, 0.03
		h.cap.ceil(0.582, sec(0))
		r.nextBisect(h, h.lanes["e"], sec(1))
		if got := h.exp.phase == expSettled; got != c.settled {
			t.Errorf("%v passed, 0.582 pushed back: settled %v, want %v", c.pass, got, c.settled)
		}
		if c.settled {
			if f := h.lanes["f"].pace; !near(f, 0.485) {
				t.Errorf("settled follower at %v, want 0.485", f)
			}
			// A settled host does not resume the search at its next
			// quiet success: the round limit is what it found.
			h.c.OK = 1000
			r.reprobeDue(h, h.lanes["e"], sec(2))
			if h.exp.phase != expSettled {
				t.Error("the search resumed between a round limit and the step above it")
			}
		}
	}
}

// TestRoundHold: nginx 6r/m. One success, a 429 and a 10-s recovery read
// as 1 per 10 s; the explorer proved Settle under it. A step above draws a
// 429 at likely odds, and on 120 requests in two minutes a second 429 is
// 1.7%: the explorer holds until the host has sent a hundred successes per
// 429, then steps.
func TestRoundHold(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	h.exp.phase = expRefine
	h.cap.ceil(0.485, sec(0))
	r.setExplorerPace(h, e, r.settle*0.1, sec(0), "refine", "test")
	h.c.OK, h.c.Throttled = 60, 1
	if !r.holdRound(h, e, sec(40)) {
		t.Fatal("60 successes and a 429: stepped above 1 per 10 s, want a hold")
	}
	if c, ok := lastChange(h, "hold"); !ok || c.To != round3(e.pace) {
		t.Errorf("hold recorded %+v (found %v), want a hold record at the pace", c, ok)
	}
	h.c.OK = 200
	if r.holdRound(h, e, sec(80)) {
		t.Error("200 successes and a 429: held, want the step")
	}
	r.setExplorerPace(h, e, 0.2, sec(80), "refine", "test")
	h.c.OK = 60
	if r.holdRound(h, e, sec(90)) {
		t.Error("held at 0.2/s, which is not Settle under a round limit")
	}
}

// TestRoundCostly: nginx 30r/m with its fixed Retry-After: 60 (a 429 there
// idles its lane for 30 requests). The ramp's 0.485/s, Settle under 30 per
// minute, passed and 0.97/s was pushed back: the search settles at once
// rather than step above a round limit, and does not resume its search at
// the next success; only a re-probe goes above, after half the quiet a
// costly host waits after a pushback (nothing was pushed back above this
// pace yet) and a quarter of the usual time.
func TestRoundCostly(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	h.exp.phase = expRefine
	h.cap.costly = true
	h.cap.pass, h.cap.sent = 0.485, 0.485
	h.cap.ceil(0.97, sec(0))
	r.setExplorerPace(h, e, 0.485, sec(0), "refine", "test")
	h.c.OK, h.c.Throttled = 1000, 1 // affordable: the cost is the lane's minute, not the ratio
	if !r.holdRound(h, e, sec(15)) || h.exp.phase != expSettled || !h.exp.roundHeld {
		t.Fatalf("costly, 0.485 passed under 30 per minute: phase %s roundHeld %v, want settled", phaseNames[h.exp.phase], h.exp.roundHeld)
	}
	if f := h.lanes["f"].pace; !near(f, 0.485) {
		t.Errorf("follower at %v, want 0.485", f)
	}
	for i := range 10 {
		r.reprobeDue(h, e, sec(16+float64(i)))
	}
	if h.exp.phase != expSettled || h.exp.reprobe {
		t.Errorf("10 successes after settling: phase %s reprobe %v, want settled until a re-probe's quiet", phaseNames[h.exp.phase], h.exp.reprobe)
	}
	// The first re-probe comes a quarter of a minute after the round
	// hold, once the host has the quiet's successes: the round limit is
	// one guess of several between what passed and the ramp's 429.
	h.exp.okSince = reprobeQuiet * costlyQuiet / 2
	r.reprobeDue(h, e, sec(29))
	if h.exp.reprobe {
		t.Error("re-probed 14 s after settling at a round limit, want 15 s")
	}
	r.reprobeDue(h, e, sec(31))
	if !h.exp.reprobe {
		t.Error("no re-probe 16 s after settling at a round limit with the quiet's successes: a limit between 30 and 60 per minute would wait a minute")
	}
}
