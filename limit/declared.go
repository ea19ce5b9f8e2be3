package limit

// The rules that apply a declared quota (quota.go tracks one) to a host and
// its lanes: the pace it sets (declaredRate), the server seen to count
// stricter than it declares (declared429), every answer's quota fields
// (declared), the lane that probes a window's first roll (rollProbe), and
// a declared limit that turns out a bucket's capacity (bucketQuota).

import (
	"fmt"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// declaredRate is the rate a declared quota q allows lanes: its rate, less
// a sliding counter's headroom unless the window is known fixed (paced
// exactly, or Settle under it once a 429 showed its resets come early:
// ulule/limiter's fixed 5 per second, its resets whole epoch seconds, sat
// at 88% with the headroom) or the limit a rate (a Remaining above it: a
// token bucket's tokens, as tollbooth sends them under a limit that is its
// rate per second; its 1/s with a burst of 3 sat at 40%) or the window
// moving (its resets move with each hit: a log of the last window's hits,
// flask-limiter's moving window, which an even pace under its quota never
// fills; its 5 per 10 s sat at 88% with the headroom). A window of
// unknown kind keeps the headroom: a sliding counter's lanes at Settle
// under its limit all run out of it at its first boundary, where the last
// window still weighs in (httprate's 10 per minute drew a 429 with
// Retry-After: 60 on every lane).
func (r *rules) declaredRate(q *quota, exact bool) float64 {
	d := q.rate()
	if q.earlyRead < 0 && q.moving() {
		// A window begun again at each request let through (earlyProbe:
		// its reset moves with each hit, and nothing comes back before
		// it): an even pace spends the quota over one window and then
		// idles a whole window more for it, half the quota's rate at most
		// (gin-rate-limit's 30 per minute: 50%); spent in a fraction of
		// the window, the lane waits about one window a quota.
		return d * restartSpend
	}
	if q.limit > 0 && !exact && !q.fixed && !q.moving() && !q.check.overFull && !q.free {
		d *= min(1, (1-slidingRoom/q.limit)/r.settle)
	}
	if q.limit > 0 && q.strict > 0 {
		d *= max(strictFloor, 1-q.strict/q.limit)
	}
	return d
}

// declared429 reads a 429 on host h's lane l, sent at pace x, while the
// host follows a declared quota whose window is not known fixed (a fixed
// one paced exactly gets Settle's margin back instead, and then keeps it):
// sent at the declared pace, the lane was pushed back where the server's
// own headers said there was room, so the server counts stricter than they
// say. gofiber's sliding window weighs the last window by whole seconds to
// go (up to a tenth more of a 10-s window) and counts refused requests: its
// 12 per 10 s lets an even pace through at 88-91% of that, and the lanes
// at 95% drew a 429 every 20 s, each idling the lane for the 10-s
// Retry-After. Only a window known (declared, or seen to roll) counts: a
// window guessed short is pushed back too. Each such push-back (one a
// window: lanes in lock step are pushed back together) takes another
// strictStep of the limit, at least a request a window, off every lane's
// pace, for good (and kept in learned.json). It reports whether it cut.
func (r *rules) declared429(h *host, l *lane, x float64, now int64) bool {
	c := &h.cap
	q := &c.win
	if c.declared <= 0 || c.bucket || c.exact || q.fixed || q.limit <= 0 || h.scope.shared() || !atLeast(x, c.declared*r.settle) {
		return false
	}
	if x > c.declared*(1+tolerance) {
		// Sent faster than the declared pace is now: the window was read
		// short when it went (a first reset 2.1 s away read as 2 s) and an
		// answer that came back while it was out told the real one. That
		// says nothing of the server.
		return false
	}
	if !q.grid() {
		// The window is a guess from the longest reset seen (a minute's
		// first answers said 20 s): the 429 says the guess is short,
		// which the next answers correct, not that the server is strict.
		return false
	}
	w := q.span()
	if w <= 0 || q.strictAt != 0 && now-q.strictAt < w {
		return false
	}
	if 1-q.strict/q.limit <= strictFloor {
		return false
	}
	q.strict += max(1, strictStep*q.limit)
	q.strictAt = now
	d := r.declaredRate(q, false)
	h.note(r, now, "declared", l.exit, "ceiling", c.declared, d, fmt.Sprintf(
		"pushed back at the declared pace of %g per %v: the server counts stricter than it declares; %g a window less",
		q.limit, time.Duration(w).Round(time.Millisecond), q.strict))
	c.declared = d
	r.updateFollow(h, now, "declared", "the declared quota, stricter")
	return true
}

// declared applies an outcome's quota fields to lane l (or, when the host
// limits site-wide, to the host's quota). A known per-lane limit and window
// set the lane's pace and become the host's declared capacity, which every
// lane follows: a server that declares a per-IP quota gives each IP the
// same one.
func (r *rules) declared(h *host, l *lane, o *Outcome, now int64) {
	if !(o.Quota > 0 || (o.HasRemaining && o.ResetIn > 0)) {
		return
	}
	if h.scope.shared() {
		if h.q == nil {
			h.q = &quota{}
		}
		h.q.update(o, now, h.inFlight)
		h.q.probe = true // one quota for every lane: no lock step to break
		return
	}
	if l.q == nil {
		l.q = &quota{}
	}
	if o.Quota > 0 && l.q.limit > 0 && o.Quota != l.q.limit {
		l.switchPolicy(o.Quota, now)
	}
	early := l.q.earlyAt
	l.q.earlyAt = 0
	l.q.update(o, now, int32(l.inFlight))
	r.earlyProbe(h, l, o, early, now)
	if h.cap.bucket {
		l.q.bucket = true // every lane's quota is the same bucket's
		return
	}
	if o.HasRemaining && l.q.watch(o.Remaining, now) {
		r.bucketQuota(h, l, now)
		return
	}
	// Every lane sees the same window: what one lane inferred about it
	// holds for all (the longest reset, the smallest move).
	hq := h.cap.policy(l.q.limit)
	wasKnown := hq.step > 0 || hq.sliding || hq.fixed
	hq.limit, hq.window, hq.seen = l.q.limit, l.q.window, now
	hq.wMax = max(hq.wMax, l.q.wMax)
	if l.q.step > 0 && (hq.step == 0 || l.q.step < hq.step) {
		hq.step = l.q.step
	}
	hq.sliding = hq.sliding || l.q.sliding
	hq.check.overFull = hq.check.overFull || l.q.check.overFull
	hq.fixed = (hq.fixed || l.q.fixed) && !hq.sliding
	l.q.known = hq.step > 0 || hq.sliding || hq.fixed
	r.rollProbe(h, l, wasKnown)
	h.cap.bind(now)
	hq = &h.cap.win
	exact := hq.fixed && hq.grid() && !h.cap.inexact
	d := r.declaredRate(hq, exact)
	if d <= 0 || d == h.cap.declared && exact == h.cap.exact {
		return
	}
	why := fmt.Sprintf("the server declared %g per %v", hq.limit, time.Duration(hq.span()).Round(time.Millisecond))
	if exact {
		h.cap.exactSlack = h.arrivalSlack()
		why += fmt.Sprintf(", a fixed window: paced at its rate (%v left for the arrivals' jitter a window)", time.Duration(h.cap.exactSlack).Round(time.Millisecond))
	}
	h.note(r, now, "declared", l.exit, "ceiling", h.cap.declared, d, why)
	// (at: when the host last learned, which Learned saves; a declared
	// quota left it zero, saved as 1970, and Restore dropped the host as
	// 56 years old.)
	h.cap.declared, h.cap.exact, h.cap.at = d, exact, now
	r.roomRestart(h, now) // a headroom check waits on the new pace
	h.exp.exit = ""
	r.updateFollow(h, now, "declared", "a declared quota sets every lane's pace")
}

// arrivalSlack is how much a request's arrival at the server may vary
// from its send, as far as host h's lanes tell: half their usual answer
// time (the way there), at least exactMargin. Through a proxy pool
// answers take a second, and a request's way there varies by hundreds of
// milliseconds.
func (h *host) arrivalSlack() int64 {
	var rtt int64
	for _, l := range h.lanes {
		rtt = max(rtt, int64(l.rttMid)*rttUnit)
	}
	return max(int64(exactMargin), rtt/2)
}

// rollProbe chooses the lane that goes at the first roll's reset
// (quota.firstRoll): of those whose quota ran out before anything rolled,
// the one whose reset comes first.
// Its answer tells the window's kind (or its 429 tells a sliding counter's,
// one 429 where every lane started with it drew one); once the kind is
// known the lanes held past their resets go.
func (r *rules) rollProbe(h *host, l *lane, wasKnown bool) {
	if l.q.known {
		if !wasKnown {
			for _, o := range h.lanes {
				if o.q != nil && !o.q.known {
					o.q.known = true
					r.rekey(h, o)
					h.raised = true // a lane held past its reset may go now
				}
			}
		}
		return
	}
	c := &h.cap
	if l.q.probe || l.q.rem >= l.q.reserve() || !l.q.firstRoll() || c.roll != "" && l.q.reset >= c.rollAt {
		return
	}
	// The lane whose reset comes first probes: lanes that started
	// together run out in any order, and a later probe held the others
	// past their resets (fastify's 20 per minute lost a request a lane).
	if p := h.lanes[c.roll]; p != nil && p.q != nil {
		p.q.probe = false
		r.rekey(h, p)
	}
	c.roll, c.rollAt, l.q.probe = l.exit, l.q.reset, true
}

// bucketQuota handles a declared limit seen to be a bucket's capacity
// (quota.watch): the rate it gave is no ceiling, only a pace proven without
// a 429. The host explores from it as a settled host re-probes: a first
// step above it pushed back gives it back.
func (r *rules) bucketQuota(h *host, l *lane, now int64) {
	c, e := &h.cap, &h.exp
	pace := h.declaredPace(r)
	h.note(r, now, "declared", l.exit, "ceiling", c.declared, 0, fmt.Sprintf(
		"Remaining stayed above half of the declared %g over %d windows in which a lane sent most of it: a bucket's capacity, not a count per window; explore above it",
		c.win.limit, bucketWindows))
	c.declared, c.exact, c.bucket = 0, false, true
	c.room = roomCheck{done: true} // the explorer's search takes the lane that checked
	for _, o := range h.lanes {
		if o.q != nil {
			o.q.bucket = true
		}
	}
	// Known so far: the reading passed, and a step above it is the
	// ceiling a re-probe pushed back at its first step gives back.
	c.pass, c.sent, c.follow, c.hi, c.at = pace, pace, pace, pace*reprobeStep, now
	if h.led {
		// Another worker leads the host's search: it reads the bucket
		// too and explores above it, and the lanes here hold the pace
		// it publishes. Each led worker that read it became an
		// explorer of its own, above the bucket's rate for the whole
		// run: throttled's 5/s with a burst of 3, three workers, 146
		// 429s (2.66%), where one worker draws two.
		r.updateFollow(h, now, "declared", "the pace the declared reading proved; the worker that leads the search explores above it")
		return
	}
	e.exit, e.run, e.chain, e.awaitAt = l.exit, run{}, chain{}, 0
	r.releaseHeld(h, now)
	e.quietAt, e.okSince = now, 0
	h.reprobeFrom(pace)
	r.setPhase(h, l, expBisect, now, "a declared bucket: explore above its reading")
	r.updateFollow(h, now, "declared", "the pace the declared reading proved")
	r.setExplorerPace(h, l, pace*reprobeStep, now, "reprobe", "climb above the declared reading")
}

// earlyProbe reads the answer to lane l's request sent at early (0: none)
// before its reset with nothing remaining, on a moving window's reading
// (quota.readyAt): let through, a moving window's oldest hit aged out and
// every lane may send so; refused, the reset its answers tell holds and
// every lane waits for it. Until one such answer, one lane (the first to
// run out) sends so and the others wait: lanes paced alike run out
// together, and gin-rate-limit's 30 per minute, whose window begins again
// at each request let through, pushed back all ten at once.
func (r *rules) earlyProbe(h *host, l *lane, o *Outcome, early, now int64) {
	c := &h.cap
	if early != 0 && c.early == 0 {
		switch o.Verdict {
		case verdict.OK:
			c.early = 1
		case verdict.Throttled:
			c.early = -1
		}
		if c.early != 0 {
			why := "a request before the reset told, nothing remaining, was let through: a moving window, each lane sends as its oldest hit ages out"
			if c.early < 0 {
				why = "a request before the reset told, nothing remaining, was pushed back: the reset holds, every lane waits for it"
			}
			h.note(r, now, "declared", l.exit, "early", 0, float64(c.early), why)
			c.win.earlyRead = c.early
			for i := range c.others {
				c.others[i].earlyRead = c.early
			}
			for _, o := range h.lanes {
				if o.q != nil {
					o.q.earlyRead = c.early
					r.rekey(h, o)
				}
			}
			h.raised = true
		}
	}
	l.q.earlyRead = c.early
	if c.early == 0 && l.q.moving() && l.q.rem < 1 {
		// The probe is the lane that runs out while the one before it
		// has quota again (or none was chosen): lanes in step run out
		// together and one goes for all, but on a window a lane runs out
		// of only now and then (flask-limiter's moving 5 per second,
		// paced under it), the first to have done so waited for a run
		// out that never came, and every other lane that ran out waited
		// its whole reset (90.4 / 92.0% where 92.9 / 95.2% before).
		if p := h.lanes[c.earlyLane]; p == nil || p.q == nil || p.q.rem >= 1 {
			if p != nil && p.q != nil && p != l {
				p.q.earlyProbe = false
				r.rekey(h, p)
			}
			c.earlyLane = l.exit
		}
	}
	l.q.earlyProbe = c.earlyLane == l.exit
}
