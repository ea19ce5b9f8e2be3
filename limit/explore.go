package limit

import (
	"fmt"
	"math"
	"time"
)

// A server that limits per IP gives every IP the same budget, as a rule. So
// one lane per host, the explorer, finds out how much one lane may send,
// and the others (the followers) pace at what it proved: learning costs the
// host one or two 429s, not one per exit, and the pool is not stampeded
// over a limit all at once. See the package doc for the whole story.

// capacity is what a host's lanes know about one lane's budget, in req/s.
type capacity struct {
	// lo is proven: a lane sustained it for a proof span without a 429.
	lo float64
	// hi is the lowest pace at which a lane was pushed back.
	hi float64
	// est is what the first 429 suggested one lane may send, not yet
	// proven; safe is the cautious reading of the same 429 (the successes
	// before it over the time they took plus the time to recover), which est
	// falls back to when it is contradicted. 0 = none yet.
	est, safe float64
	// trial is a pace the explorer sustained for a short run but not yet
	// for a proof span: the followers try it (at Settle under it), and fall
	// back to what is proven if it is pushed back. On a fast server a
	// proof takes many requests; trying early is what keeps the pool busy
	// meanwhile, at the price of a 429 or two when a trial fails.
	trial float64
	// declared is what the server declared (quota per window, the window
	// inferred from all lanes' resets when not declared); it overrides the
	// rest.
	declared float64
	win      quota
	// span is the proof span, ns.
	span int64
	// follow is the pace of the lanes that follow the explorer.
	follow float64
	// at is when lo or hi last changed: the age of the knowledge.
	at int64
}

// Explorer phases.
const (
	// expRamp: nothing has pushed back yet; the explorer doubles its pace
	// per run of successes, the followers trail at what it sustained.
	expRamp uint8 = iota
	// expProbe: the explorer brackets the limit between lo and hi, one step
	// per proof span; the followers hold what is proven.
	expProbe
	// expSettled: lo and hi agree within Settle twice over: every lane paces
	// at the settle point. After a long quiet the explorer re-probes.
	expSettled
)

var phaseNames = [...]string{expRamp: "ramp", expProbe: "probe", expSettled: "settled"}

// explorer is the host's one exploring lane.
type explorer struct {
	exit  string // "" = none yet: the next lane taken becomes the explorer
	phase uint8
	pace  float64
	// proven is the last pace the explorer sustained for a run in ramp.
	proven float64
	// awaitAt is the time of a 429 without Retry-After that ended the ramp:
	// until the lane is seen to recover, the recovery time is unknown.
	awaitAt int64
	tries   uint8 // tries since awaitAt
	// bursty: the server let the explorer send more than one request at the
	// pace that drew the first 429, or took longer to recover than two
	// intervals at the pace before: it allows bursts or counts windows, and
	// the paces the ramp sustained prove little.
	bursty  bool
	runFail int32 // successes at the pace that drew the first 429
	n1      int32 // successes before the first 429
	t1      int64 // and the time they took, ns
	// The host's last 429 and the successes since: a re-probe waits for a
	// quiet host.
	quietAt int64
	okSince int32
	run     run // the explorer's current run of successes
	fails   uint8 // failed re-probes in a row
	// A re-probe starts above the settled pace base and saves the settled
	// knowledge it may have to give back.
	reprobe               bool
	base, savedLo, saved float64
}

// startPace is the explorer's pace when a host starts.
func (r *rules) startPace() float64 { return min(r.maxLane, r.first) }

// followPace is the pace a follower lane gets now.
func (h *host) followPace(r *rules) float64 {
	switch c := &h.cap; {
	case c.declared > 0:
		return max(r.minLane, min(r.maxLane, r.settle*c.declared))
	case c.follow > 0:
		return c.follow
	}
	return max(r.minLane, min(r.maxLane, r.first*startShare))
}

// paceFor is the pace a new lane for exit starts at.
func (h *host) paceFor(r *rules, exit string) float64 {
	if h.exp.exit == exit && h.exploring() {
		return h.exp.pace
	}
	return h.followPace(r)
}

// exploring reports whether the host's lanes learn by exploring: not when
// the server declared a quota or limits site-wide (the host's rate governs).
func (h *host) exploring() bool { return h.cap.declared == 0 && !h.scope.shared() }

// adoptExplorer makes l the explorer if the host has none.
func (r *rules) adoptExplorer(h *host, l *lane, now int64) {
	e := &h.exp
	if e.exit != "" || !h.exploring() {
		return
	}
	if e.pace == 0 {
		e.pace = r.startPace()
	}
	e.exit = l.exit
	if e.phase == expSettled {
		e.pace = h.followPace(r)
	}
	h.note(r, now, "explore", l.exit, "pace", l.pace, e.pace, "this lane explores for the host")
	r.setPace(h, l, e.pace)
}

// updateFollow recomputes the followers' pace from what is known and applies
// it to every follower (a slower pace with the series debt of setPace).
func (r *rules) updateFollow(h *host, now int64, rule, why string) {
	c, e := &h.cap, &h.exp
	var f float64
	switch {
	case c.declared > 0:
		f = r.settle * c.declared
	case e.phase == expRamp:
		f = max(r.first*startShare, e.proven)
	default:
		f = max(c.lo, r.settle*c.est, r.settle*c.trial)
		if c.hi > 0 {
			f = min(f, r.settle*c.hi)
		}
	}
	f = max(r.minLane, min(r.maxLane, f))
	if f == c.follow {
		return
	}
	h.note(r, now, rule, "", "follow", c.follow, f, why)
	c.follow = f
	for _, l := range h.lanes {
		if l.exit == e.exit && h.exploring() {
			continue
		}
		p := f
		if l.own() > 0 {
			p = min(p, l.pace)
		}
		r.setPace(h, l, p)
	}
}

// exploreOK applies a success of the explorer lane l: slow start in ramp, a
// proven step in probe, the recovery a 429 without Retry-After waited for.
func (r *rules) exploreOK(h *host, l *lane, sent, now int64) {
	e, c := &h.exp, &h.cap
	if e.awaitAt != 0 && sent > e.awaitAt {
		// The lane recovered: the time it took bounds the recovery, and so
		// the estimate, much better than maxRecovery did.
		rec := sent - e.awaitAt
		e.awaitAt, e.tries = 0, 0
		e.bursty = r.bursty(e, rec)
		est, safe := r.estimate(e, rec)
		c.safe = safe
		h.note(r, now, "bracket", l.exit, "estimate", c.est, est,
			fmt.Sprintf("the lane recovered %.1fs after its 429: %d successes in %.1fs before it", secs(rec), e.n1, secs(e.t1)))
		c.est = est
		c.span = r.span(e, rec)
		if e.phase == expProbe {
			r.nextProbe(h, l, now)
		}
		r.updateFollow(h, now, "bracket", "the first 429's estimate")
	}
	el, saturated := e.run.add(sent, now, l.pace)
	switch e.phase {
	case expRamp:
		if e.run.n < rampRun || el < rampSpan || !saturated {
			return
		}
		e.proven = l.pace
		next := min(r.maxLane, l.pace*rampStep)
		if next <= l.pace {
			return
		}
		h.note(r, now, "ramp", l.exit, "pace", l.pace, next, "nothing pushed back over a run: slow start doubles")
		e.pace = next
		r.setPace(h, l, next)
		r.updateFollow(h, now, "ramp", fmt.Sprintf("the explorer sustained %.3g/s", e.proven))
	case expProbe:
		if e.run.n >= rampRun && el >= rampSpan && saturated && l.pace > c.trial && c.trial >= 0 {
			h.note(r, now, "bracket", l.exit, "trial", c.trial, l.pace, "sustained for a short run: the followers try it")
			c.trial = l.pace
			r.updateFollow(h, now, "bracket", "the followers try what the explorer sustained")
		}
		if e.run.n < rampRun || el < c.span || !saturated {
			return
		}
		if l.pace > c.lo {
			h.note(r, now, "bracket", l.exit, "floor", c.lo, l.pace, fmt.Sprintf("sustained for %.1fs without a 429", secs(el)))
			c.lo, c.at = l.pace, now
		}
		if e.reprobe && c.hi == 0 {
			// A re-probe that is not pushed back: the limit was raised.
			e.reprobe, e.fails = false, 0
		}
		r.nextProbe(h, l, now)
		r.updateFollow(h, now, "bracket", "a higher pace is proven")
	}
}

// estimate is the first 429's estimate of one lane's budget. When the
// server let no burst through at the pace that drew it, the pace the ramp
// sustained before is a rate it allows. Otherwise the ramp's paces prove
// little, and the safe estimate is the successes before the 429 over the
// time they took plus the time the lane needed to recover: for a window, at
// most its quota over its length; for a bucket, the refill plus the burst
// spread over a recovery. Never above what the ramp sustained.
func (r *rules) estimate(e *explorer, rec int64) (est, safe float64) {
	safe = float64(e.n1) / secs(e.t1+rec)
	if e.proven > 0 {
		safe = min(safe, e.proven)
	}
	safe = max(r.minLane, safe)
	est = safe
	if e.proven > 0 && !e.bursty {
		est = e.proven
	}
	return est, safe
}

// bursty judges the server by the first 429 (successes at the pace that
// drew it) and the time the lane took to recover from it.
func (r *rules) bursty(e *explorer, rec int64) bool {
	return e.runFail > 1 || e.proven == 0 || rec > 2*interval(e.proven)+int64(time.Second)/2
}

// span is the proof span: how long the explorer must sustain a pace for it
// to count as proven. A server that let no burst through pushes back within
// a few requests of a pace too high; one that does must be given the time
// its budget took to run out, and to come back.
func (r *rules) span(e *explorer, rec int64) int64 {
	d := e.t1 + rec
	if !e.bursty {
		d = min(d, rampRun*interval(e.proven)+rec)
	}
	return max(minSpan, min(maxSpan, d))
}

// explore429 applies a 429 on the explorer lane l in probe, sent at pace x,
// at now.
func (r *rules) explore429(h *host, l *lane, x float64, now int64) {
	e, c := &h.exp, &h.cap
	if e.reprobe && c.hi == 0 && x <= e.base*reprobeStep*(1+tolerance) {
		// A re-probe's first step above the settled pace was pushed back:
		// the limit was not raised. Give the settled knowledge back.
		e.reprobe = false
		e.fails = min(e.fails+1, maxProbeBackoff)
		h.note(r, now, "reprobe", l.exit, "ceiling", x, e.saved, "a re-probe was pushed back at its first step: the limit stands")
		c.lo, c.hi, c.at = e.savedLo, e.saved, now
		e.phase = expSettled
		e.pace = h.followPace(r)
		r.setPace(h, l, e.pace)
		return
	}
	if c.hi == 0 || x < c.hi {
		h.note(r, now, "bracket", l.exit, "ceiling", c.hi, x, "the explorer was pushed back")
		c.hi, c.at = x, now
	}
	if c.trial > 0 && atLeast(x, c.trial) {
		h.note(r, now, "bracket", l.exit, "trial", c.trial, 0, "the explorer was pushed back at the pace on trial")
		c.trial = 0
	}
	if c.lo < c.est && atLeast(c.est, x) {
		// Pushed back at the estimate it was verifying: the estimate was
		// wrong.
		r.contradict(h, l, x, now)
	}
	if c.lo > 0 && atLeast(c.lo, c.hi) {
		// Pushed back at what was proven: the limit moved. Start over from
		// the estimate under it.
		h.note(r, now, "bracket", l.exit, "floor", c.lo, 0, "pushed back at a proven pace: the limit moved")
		c.lo = 0
		c.est = min(c.est, followCut*x)
	}
	e.reprobe = false
	r.nextProbe(h, l, now)
	r.updateFollow(h, now, "bracket", "the explorer was pushed back")
}

// endRamp ends the slow start: the first 429 on the host, drawn by lane l at
// pace x after its series ser of successes. The explorer, or a follower that was
// pushed back first (the ramp's pace was a burst).
func (r *rules) endRamp(h *host, l *lane, x float64, ser series, ra time.Duration, now int64) {
	e, c := &h.exp, &h.cap
	e.phase = expProbe
	e.n1, e.t1 = ser.ok, max(now-ser.at, int64(time.Millisecond))
	e.runFail = ser.run
	if l.exit != e.exit {
		e.runFail = max(e.runFail, 2) // a follower: the ramp's pace let a burst through
	}
	if l.exit != e.exit {
		x = max(x, e.pace)
	}
	h.note(r, now, "bracket", l.exit, "ceiling", c.hi, x, "the first 429 ends slow start")
	c.hi, c.at = x, now
	rec := int64(ra)
	if rec <= 0 {
		// No Retry-After: until the lane is seen to recover, assume the
		// slowest usual window.
		rec = maxRecovery
		e.awaitAt = now
	}
	e.bursty = r.bursty(e, rec)
	est, safe := r.estimate(e, rec)
	c.safe = safe
	h.note(r, now, "bracket", l.exit, "estimate", c.est, est,
		fmt.Sprintf("%d successes in %.1fs, then a 429 (recovery %.0fs, burst %v)", e.n1, secs(e.t1), secs(rec), e.bursty))
	c.est = est
	c.span = r.span(e, rec)
	// The explorer probes from the estimate; while it waits to see how long
	// the server takes to recover, it keeps its pace (its cooldown decides
	// when it tries again, and the recovery sets the estimate it probes
	// from).
	if ex := h.lanes[e.exit]; ex != nil && e.awaitAt == 0 {
		r.nextProbe(h, ex, now)
	}
	r.updateFollow(h, now, "bracket", "the first 429's estimate")
}

// contradict handles a lane pushed back at the unproven estimate: fall back
// to the cautious reading of the first 429, or below the pace pushed back
// when that was the cautious reading already.
func (r *rules) contradict(h *host, l *lane, x float64, now int64) {
	c := &h.cap
	est := min(followCut*x, c.safe)
	if c.safe == 0 || atLeast(c.safe, x) {
		est = followCut * x
	}
	est = max(r.minLane, est)
	h.note(r, now, "bracket", l.exit, "estimate", c.est, est, fmt.Sprintf("pushed back at %.3g/s, the estimate not yet proven", x))
	c.est = est
}

// limitMoved handles a settled host whose lanes are pushed back at the pace
// they held: the server's limit went down. The knowledge is demoted to an
// estimate under the pace that was pushed back, and the explorer probes.
func (r *rules) limitMoved(h *host, l *lane, x float64, now int64) {
	e, c := &h.exp, &h.cap
	h.note(r, now, "bracket", l.exit, "ceiling", c.hi, x, "pushed back at the followers' pace: the limit moved down, or was never there")
	proven := c.lo > 0
	c.hi, c.lo, c.trial, c.at = x, 0, 0, now
	if proven {
		c.est = followCut * x
	} else {
		r.contradict(h, l, x, now)
	}
	e.phase, e.reprobe = expProbe, false
	if ex := h.lanes[e.exit]; ex != nil {
		r.nextProbe(h, ex, now)
	}
	r.updateFollow(h, now, "bracket", "the limit moved down")
}

// nextProbe sets the explorer's next pace in probe: halfway between what is
// known in log space, at most probeMax above it; or the settle point when
// lo and hi agree.
func (r *rules) nextProbe(h *host, l *lane, now int64) {
	e, c := &h.exp, &h.cap
	base := max(c.lo, c.est)
	var m float64
	switch {
	case c.hi == 0:
		m = base * reprobeStep // a re-probe above a raised limit: keep climbing
	case c.lo > 0 && atLeast(c.lo, r.settle*r.settle*c.hi):
		h.note(r, now, "bracket", l.exit, "phase", float64(e.phase), float64(expSettled), "the floor is within Settle of the ceiling: settled")
		e.phase = expSettled
		e.quietAt, e.okSince = now, 0
		m = max(r.minLane, min(c.lo, r.settle*c.hi))
		h.note(r, now, "bracket", l.exit, "pace", l.pace, m, "settled: the explorer paces with the others")
		e.pace = m
		r.setPace(h, l, m)
		return
	case c.lo < c.est:
		m = c.est // verify the estimate before probing above it
	default:
		m = min(math.Sqrt(base*c.hi), base*probeMax)
	}
	m = max(r.minLane, min(r.maxLane, m))
	h.note(r, now, "bracket", l.exit, "pace", l.pace, m, "the explorer probes the next step")
	e.pace = m
	r.setPace(h, l, m)
}

// reprobeDue starts a re-probe on a settled host after a long quiet, in case
// the limit was raised: the explorer climbs above the settled pace.
func (r *rules) reprobeDue(h *host, l *lane, now int64) {
	e, c := &h.exp, &h.cap
	if e.phase != expSettled || l.exit != e.exit || !h.exploring() {
		return
	}
	if e.okSince < math.MaxInt32 {
		e.okSince++
	}
	if now-e.quietAt < r.probeEvery || int64(e.okSince) < reprobeQuiet<<e.fails {
		return
	}
	e.reprobe, e.base, e.savedLo, e.saved = true, c.follow, c.lo, c.hi
	e.phase = expProbe
	c.lo = c.follow // every lane sustained it
	c.hi = 0
	h.note(r, now, "reprobe", l.exit, "ceiling", e.saved, 0, fmt.Sprintf("%d successes in %.0fs without a 429: probe above the settled pace", e.okSince, secs(now-e.quietAt)))
	r.nextProbe(h, l, now)
}

// hostPushedBack counts a 429 on any lane of the host for the re-probe's
// quiet.
func (h *host) hostPushedBack(now int64) {
	h.exp.quietAt, h.exp.okSince = now, 0
}
