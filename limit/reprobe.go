package limit

// After the search: a settled host re-probes above its pace now and then,
// and the search passes to another lane when its explorer must wait or
// leaves.

import (
	"fmt"
	"math"
)

// spare429s is how many 429s the host may still spend on learning, given
// a start of them: it earns one per earnEvery successes, and every 429 it
// drew costs one.
func (h *host) spare429s(start float64) float64 {
	return start + float64(h.c.OK)/earnEvery - float64(h.learning429s())
}

// canProbe reports whether the host may spend a 429 on learning, starting
// with learnAllowance; a resumed search starts with none (its allowance was
// spent where it was learned: a worker killed and run again took a search
// handed over through Redis, settled for want of a 429, and searched on at
// once with a fresh allowance, five 429s on nginx's 5 r/s).
func (h *host) canProbe() bool {
	start := float64(learnAllowance)
	if h.resumed {
		start = 0
	}
	return h.spare429s(start) >= 1
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
	if !h.canProbe() {
		return
	}
	if c.hi > 0 && max(c.pass, c.sent)*c.done() < c.hi && !c.clock.on && !r.quotaConfirmed(h) && r.atRoundLimit(h) == "" && !e.roundHeld && !e.settledOnCount() && !c.pairDone() && r.settlesAt(h, now) == "" {
		// Settled short of the ceiling for want of a 429 to spend: the
		// search goes on where it stopped, if a step is left there.
		r.setPhase(h, l, expBisect, now, "a 429 to spend again: the search goes on")
		r.nextBisect(h, l, now)
		return
	}
	// Each failed probe doubles both the time and the successes the
	// next one waits for (ProbeEvery: a fast host earns reprobeQuiet
	// successes in seconds, so the time alone had paced its probes).
	quiet := int64(reprobeQuiet) << e.fails
	every := r.probeEvery << e.fails
	switch {
	case c.clock.on:
		// A window of the clock proven: a probe above it pushes its lanes
		// back until the window ends (Rack::Attack's 15 per 10 s: a
		// minute after the proof, four steps each idled a lane for the
		// rest of its window), so it comes at the costly quiet, and as
		// seldom.
		quiet *= costlyQuiet
		every *= costlyQuiet
	case c.costly && e.roundHeld:
		// Settled at a round limit for the cost of a 429 alone: nothing
		// but a probe finds a limit between it and where the ramp was
		// pushed back, so it comes at half the costly quiet (800
		// successes), and the first after the search's hold a quarter
		// of the usual time on (15 s) if it has them by then: the
		// round limit is a guess among several the gap holds
		// (vsthrottle's 5/s blocking a minute, held at 3.88/s under 4
		// per second, went on at 78% of its limit for a minute before
		// the probe that found 4.85/s).
		quiet *= costlyQuiet / 2
		if e.fails == 0 && e.roundSoon {
			every /= 4
		}
	case e.fails == 0 && e.shortFits:
		// The quota read may be two shorter windows' as one: its
		// first re-probe comes a quarter of the usual time on, and
		// after a quarter of the usual successes
		// (rate-limiter-flexible's 10 per 5 s told 3 s after 15 in
		// 7.5 s, read as 15 per 10 s, 75% of it, re-probed 111 s on;
		// with the time alone quartered, 28 s on, the host's 400
		// successes at 14.6/s, and 81.4 / 87.6% real: 83.5 / 90.3%
		// with both, real and simulated; an eighth of each tipped the
		// bans scenario over, 96 → 87% and 8 learning 429s).
		// Even where the ramp's 429 made the host costly: the wait a
		// re-probe's 429 costs is the told recovery, shorter than the
		// shorter window (shortFits says so), not a block.
		every /= 4
		quiet /= 4
	case c.costly:
		quiet *= costlyQuiet // a failed probe idles its lane for a long Retry-After too
	}
	if now-e.quietAt < every || int64(e.okSince) < quiet {
		return
	}
	if e.settledOnCount() && r.settlesAt(h, now) == "" {
		// Settled on a count between two 429s short of the ceiling: an
		// ordinary bucket's rate within 5%, but where a bucket adds only
		// whole tokens since a key's last use (Varnish's vsthrottle) a
		// lane paced under the rate gains one a request and the count
		// is only the pace it sent (9.15/s of 10/s, the ceiling at
		// 9.98/s). At the re-probe's time the search goes on between
		// the two, for the 429 the re-probe above would spend, if a
		// step is left there (else nextBisect would settle again at
		// once and start the quiet over, and no re-probe would come).
		r.setPhase(h, l, expBisect, now, "re-probe: a count is a lower bound; the search goes on under the ceiling")
		r.nextBisect(h, l, now)
		return
	}
	h.reprobeFrom(c.follow)
	e.roundSoon, e.shortFits = false, false // a hold the re-probe finds waits the usual time
	if c.clock.on {
		// The gate holds every lane to the quota a window: a probe above
		// it is one only without it (read again if pushed back the same).
		c.clock = clockRead{}
	}
	h.note(r, now, "reprobe", l.exit, "ceiling", e.savedHi, 0, fmt.Sprintf("%d successes in %.0fs without a 429: probe above the settled pace", e.okSince, secs(now-e.quietAt)))
	// Another lane probes each time: if the explorer's IP has a smaller
	// budget than others (a reputation tier), the host is not held to it.
	if ch := h.challenger(l, now); ch != nil {
		h.note(r, now, "reprobe", ch.exit, "pace", ch.pace, ch.pace, "this lane explores for the host now")
		e.exit, e.run, e.chain = ch.exit, run{}, chain{}
		l = ch
	}
	r.setPhase(h, l, expBisect, now, "re-probe")
	r.setExplorerPace(h, l, c.follow*reprobeStep, now, "reprobe", "climb above the settled pace")
}

// reprobeFrom starts a re-probe from the pace base: what the host knows
// (ceiling, pass, pace sent) is kept to give back if the first step above
// base is pushed back (explore429), and the search climbs from base with no
// ceiling.
func (h *host) reprobeFrom(base float64) {
	e, c := &h.exp, &h.cap
	e.reprobe, e.retest, e.base, e.savedHi, e.savedPass, e.savedSent = true, false, base, c.hi, c.pass, c.sent
	c.hi, c.pass, c.sent = 0, base, base
}

// handOff passes the exploring to another lane when the explorer l must sit
// out a long cooldown (a Retry-After of 30 s or a minute, often a fixed
// value unrelated to the limit): the search goes on at the pace it had
// reached instead of waiting. A lane measuring its own recovery (no
// Retry-After) keeps it: its retry is the measurement.
func (r *rules) handOff(h *host, l *lane, now int64) {
	e := &h.exp
	if l.exit != e.exit || !h.exploring() || e.awaitAt != 0 || e.phase == expSettled {
		return
	}
	if l.cool-now <= max(handOffWait, 2*interval(e.pace)) {
		return
	}
	if ch := h.challenger(l, now); ch != nil {
		r.passSearch(h, l, ch, now, fmt.Sprintf("the explorer must wait %.0fs: this lane explores for the host now", secs(l.cool-now)))
	}
}

// handAwait passes the retry that measures the first 429's recovery from the
// explorer l, told to wait (wait) longer than the retries' schedule, to another
// lane: one that sent and was not pushed back since, free of a cooldown. Its
// next request goes d after the 429 would have, counted from its own last
// request, and tests the same spacing: a pace limit counts each IP's
// requests apart (endRamp). It reports whether a lane took it.
func (r *rules) handAwait(h *host, l *lane, wait, d, now int64) bool {
	e := &h.exp
	var ch *lane
	var last int64
	for _, c := range h.heap {
		if c == l || c.own() != 0 || c.cool > now || c.serOK == 0 || c.tat == 0 || c.inFlight > 0 {
			continue
		}
		at := c.tat - interval(c.pace)
		if at+e.t1+d <= now {
			continue // its spacing has passed already: it would test a longer one
		}
		if ch == nil || at < last {
			ch, last = c, at
		}
	}
	if ch == nil {
		return false
	}
	// The lane's request that passed stands for the explorer's first
	// success: the retry's recovery is counted from t1 after it.
	e.awaitAt, e.awaitBroke, e.overOn = last+e.t1, false, false
	r.passSearch(h, l, ch, now, fmt.Sprintf("the explorer must wait %.0fs: another lane tries %.1fs after its last request", secs(wait), secs(e.t1+d)))
	r.setExplorerPace(h, ch, 1/secs(e.t1+d), now, "explore", "the retry that measures the recovery")
	return true
}

// passSearch moves the search from the explorer l to lane ch (nil: to the
// next lane taken), at the pace it had reached; l follows.
func (r *rules) passSearch(h *host, l, ch *lane, now int64, why string) {
	e := &h.exp
	e.exit, e.run, e.retest, e.okAt = "", run{}, false, 0
	e.proof, e.suspect = 0, false // a proof is the lane's own
	e.cAt, e.cN, e.prevN, e.prevT = 0, 0, 0, 0
	r.setPace(h, l, h.followPace(r))
	if ch == nil {
		h.note(r, now, phaseNames[e.phase], l.exit, "explorer", 1, 0, why)
		return
	}
	h.note(r, now, phaseNames[e.phase], ch.exit, "pace", ch.pace, e.pace, why)
	e.exit = ch.exit
	r.setExplorerPace(h, ch, e.pace, now, phaseNames[e.phase], "the search goes on on this lane")
}

// explorerLost gives up the explorer lane l when its exit failed as a
// proxy: the pool quarantines the exit for every host, and a search that
// waited on it held every follower at the first guess's pace for good (one
// dead proxy among three good ones: 0.9 successes a second against 51
// without it; a proxy killed mid-search held its host at 1.9/s). Another
// lane (a challenger, else the next taken) explores from the pace the
// search had reached; a recovery
// still awaited on the lost lane is given up, and the first 429's careful
// reading (its recovery taken as maxRecovery) stands.
func (r *rules) explorerLost(h *host, l *lane, now int64) {
	e := &h.exp
	if l.exit != e.exit || !h.exploring() {
		return
	}
	if e.awaitAt != 0 {
		e.awaitAt, e.tries, e.recLo, e.recLast, e.pushed = 0, 0, 0, 0, 0
		r.releaseHeld(h, now)
		r.updateFollow(h, now, "explore", "the explorer's recovery will not be seen: the first 429's careful reading stands")
	}
	r.passSearch(h, l, h.challenger(l, now), now, "the explorer's exit failed as a proxy: another lane explores for the host")
}

// challenger picks a lane other than the explorer l to take the search on:
// one with no smaller budget of its own and not waiting out a cooldown of
// its own (a lane pushed back a moment ago would carry the search into
// another wait); one sent at its pace if there is one, else any (a worker
// of a fleet may hold two or three lanes, not yet all in use: a run proves
// nothing until the lane is sent at its pace, so an idle one costs nothing).
func (h *host) challenger(l *lane, now int64) *lane {
	var hot, idle *lane // the first of each in the heap's order, whatever its layout
	for _, c := range h.heap {
		if c == l || c.own() != 0 || c.cool > now || c.ban > now || h.refusing(c) {
			continue
		}
		if c.hot && (hot == nil || before(c, hot)) {
			hot = c
		}
		if idle == nil || before(c, idle) {
			idle = c
		}
	}
	if hot != nil {
		return hot
	}
	return idle
}
