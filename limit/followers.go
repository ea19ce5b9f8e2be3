package limit

// The followers' pace: what every lane but the explorer goes at (the
// explorer's search is in explore.go), and how followers are held while the
// explorer measures its first 429's recovery.

import (
	"fmt"
	"math"

	"github.com/exitgate/exitgate/verdict"
)

// followPace is the pace a follower lane gets now.
func (h *host) followPace(r *rules) float64 {
	switch c := &h.cap; {
	case c.declared > 0 && !h.byLeader():
		return max(r.minLane, min(r.maxLane, h.declaredPace(r)))
	case c.follow > 0:
		return c.follow
	}
	return max(r.minLane, min(r.maxLane, r.first*startShare))
}

// byLeader reports whether the followers hold the pace another worker that
// leads the host published (followLead): unless this worker read a declared
// quota and the leader's pace is no declared quota's. A declared quota's
// pace, the leader's, stands over what this worker read of the quota
// itself: the leader alone checks its headroom (roomDue).
func (h *host) byLeader() bool {
	return h.led && h.ledPace > 0 && (h.ledDeclared || h.cap.declared == 0)
}

// declaredPace is a lane's pace under a declared quota: Settle under it,
// or nearly exactly it on a fixed window (exactPace).
func (h *host) declaredPace(r *rules) float64 {
	if h.cap.exact {
		return h.exactPace(r)
	}
	return r.settle * h.cap.declared
}

// exactPace is the pace of a fixed window's rate that still leaves
// exactSlack between a window's first request and the one after its
// quota: paced at the rate itself, that one is due at the very instant
// the window ends. A window opened by the client's first request
// (ulule/limiter's) ends there at every window, and the arrival's jitter
// decides: its 5 per second, every lane at 200 ms, drew a 429 on 9 lanes
// of 10 in one second, each a window's sixth request 2 ms early. Never
// under Settle's pace: a slack that would be (answers through slow
// proxies, a window of a second) is more than the pace may lose.
func (h *host) exactPace(r *rules) float64 {
	w := float64(h.cap.win.span())
	if w <= 0 {
		return r.settle * h.cap.declared
	}
	return h.cap.declared * max(r.settle, w/(w+float64(h.cap.exactSlack)))
}

// paceFor is the pace a new lane for exit starts at.
func (h *host) paceFor(r *rules, exit string) float64 {
	if h.exp.exit == exit && h.exploring() {
		return h.exp.pace
	}
	return h.followPace(r)
}

// heldPace is the pace followers may hold below what the explorer passed:
// Settle under it; but a careful pass already counts a request less than
// was sent over its span, itself a margin (9% for 11 requests), so Settle
// applies to the pace sent, not on top of that. Not where a burst was seen
// (it lets a pace above the rate run a careful span), unless the server
// counts over a window (the careful span covers its first allowance).
func (r *rules) heldPace(c *capacity) float64 {
	if c.careful && c.burstCovered() && c.sent > c.pass && !c.refuses {
		return min(c.pass, r.settle*c.sent)
	}
	return r.settle * c.pass
}

// updateFollow recomputes the followers' pace from what is known and applies
// it to every follower (a slower pace with the series debt of setPace).
func (r *rules) updateFollow(h *host, now int64, rule, why string) {
	c, e := &h.cap, &h.exp
	var f float64
	switch {
	case h.byLeader():
		f = h.ledPace
	case c.declared > 0:
		f = h.declaredPace(r)
	case e.phase == expRamp:
		// One step behind what the explorer passed: a ramp's run is a
		// quick proof (a window's quota or a bucket's burst passes it),
		// and a follower at the explorer's own pace would be pushed back
		// as soon as the explorer is, all followers at once.
		f = max(r.first*startShare, c.pass/rampStep)
	case e.phase == expSettled:
		f = r.settledPace(h)
	default:
		f = max(c.lo, r.heldPace(c), r.settle*c.safe)
		if e.qtry && e.run.n > e.n1 && e.pace > f {
			// The quota's try passed a request more than its quota at
			// its pace: a window of that quota longer than the try's
			// would have pushed it back there (one of haproxy's
			// two-period estimates may still, a window or two on). The
			// followers go half way to it meanwhile, not all the way;
			// past twice its quota, all the way.
			if e.run.n > 2*e.n1 {
				f = e.pace
			} else {
				f = math.Sqrt(f * e.pace)
			}
		}
		if c.hi > 0 {
			f = min(f, r.settle*c.hi)
		}
	}
	switch {
	case e.suspect:
		f = min(f, e.proofFollow)
	case e.proof > 0 && f > e.proofFollow:
		// The explorer proves the quota first; the followers go half
		// way meanwhile. A bucket the reading mistook pushes the
		// explorer back within a few seconds, and a follower that
		// paced under its rate until now has its burst to spend.
		f = math.Sqrt(f * e.proofFollow)
	}
	f = max(r.minLane, min(r.maxLane, f))
	if f == c.follow {
		return
	}
	h.note(r, now, rule, "", "follow", c.follow, f, why)
	if f < c.follow*(1-tolerance) {
		e.fslow.record(c.follow, now, h.countedWindow())
	}
	c.follow, c.followAt = f, now
	r.paceFollowers(h)
}

// slowing is a slowing of a lane's pace (or the followers'): when it last
// came, and the fastest pace slowed from within a counted window before.
type slowing struct {
	at   int64
	from float64
}

// record notes a slowing from pace at now, on a host counting over w: one
// more within w keeps the fastest pace slowed from.
func (s *slowing) record(pace float64, now, w int64) {
	if now-s.at >= w {
		s.from = 0
	}
	s.at, s.from = now, max(s.from, pace)
}

// slowedFrom is the slowing lane l, pushed back at x, went through within
// the host's counted window before now, as the explorer or with the
// followers, with no 429 of its own since (the faster one when both did;
// zero: none, or no window counted). Only a pace it sent at counts (its
// series, since its last 429 or first request, holds at least half what the
// pace sends over a window up to the slowing, less what it sent at x since:
// a lane that waited out a cooldown there sent nothing at it), and only
// where it put a request more into the window than x would have (a settled
// margin's 3% less is no news).
func (h *host) slowedFrom(l *lane, x float64, now int64) slowing {
	w := h.countedWindow()
	if w <= 0 {
		return slowing{}
	}
	sent := func(s slowing) bool {
		if now-s.at >= w || l.epAt >= s.at || s.at <= l.serAt {
			return false
		}
		span := min(s.at-l.serAt, s.at-(now-w))
		// What the series sent before the slowing: the requests since go
		// at x (the explorer's first 429 recovered at the slower pace
		// and its slower requests passed for the faster one's).
		before := float64(l.serSent) - x*secs(now-s.at)
		return before >= s.from*secs(min(s.at-l.serAt, w))/2 && (s.from-x)*secs(span) >= 1
	}
	e := &h.exp
	var got slowing
	if e.slowExit == l.exit && sent(e.slow) {
		got = e.slow
	}
	if sent(e.fslow) && e.fslow.from > got.from {
		got = e.fslow
	}
	return got
}

// settledPace is the pace every lane of a settled host holds: Settle under
// what was passed, the margin jitter needs. Where no burst or window was
// seen, a quick run's pass is exact: what was passed then, if Settle under
// where the explorer was pushed back.
func (r *rules) settledPace(h *host) float64 {
	c, e := &h.cap, &h.exp
	f := r.heldPace(c)
	if c.hi > 0 && !c.careful && c.extra < 1 {
		f = min(c.pass, r.settle*c.hi)
	}
	if e.roundHeld || r.atRoundLimit(h) != "" {
		// Settled at a round limit: the pace sent sits Settle under
		// it already, the margin jitter needs.
		f = max(f, c.sent)
	}
	return max(c.lo, f)
}

// paceFollowers sets every follower's pace to the followers' (a slower pace
// with the series debt of setPace).
func (r *rules) paceFollowers(h *host) {
	e, f := &h.exp, h.cap.follow
	for _, l := range h.lanes {
		if l.exit == e.exit && h.exploring() || r.roomHeld(h, l) {
			continue
		}
		p := f
		if l.own() > 0 {
			p = min(p, l.pace)
		} else if h.awaitHolds(l) {
			p = max(p, l.pace)
		}
		r.setPace(h, l, p)
	}
}

// awaitHolds reports whether follower l keeps its pace while the first
// 429's recovery is unknown (the followers read it cautiously, as if the
// window were a minute long): the explorer fitted n1 successes into its
// window before it, so a window holds at least that many, and a follower
// that has sent fewer since it began cannot have spent its own. It slows
// to the cautious pace when its next request would be its n1-1th
// (awaitSpent). haproxy's 20 per 10 s: the explorer's recovery took 8.6 s,
// and the followers, at 0.29/s instead of 1.94/s meanwhile, cost 5% of
// the run. Not for a first run of fewer than awaitMin: a window that
// small is most likely a minute's, whose budget a follower would only
// spend sooner (flask-limiter's bare 6 per minute: the same 100% over the
// run, 96.7% → 86.7% from 30 s on).
//
// On a host another worker leads, the count is the leader's (ledAwait): a
// fleet's lanes hold as one Limiter's do.
func (h *host) awaitHolds(l *lane) bool {
	n := h.awaitN()
	return n > 0 && l.exit != h.exp.exit && l.serSent < n-2
}

// awaitsLong reports whether the explorer's first run is a long one
// (longRun) whose count the followers do not hold to: unless the host tells
// X-RateLimit-Remaining alone, whose fall to 0 tells each follower its own
// budget spent (rule remaining) before it sends past it. Varnish's bucket
// of 40 per 20 s so told: its followers, slowed while the explorer's
// recovery was measured, 99.8% → 88.2% of the limit over the run.
func (h *host) awaitsLong() bool {
	x := h.lanes[h.exp.exit]
	return h.exp.longRun() && (x == nil || !x.remRead())
}

// awaitN is the first run's count the followers hold to while its
// recovery is measured (awaitHolds), 0 when they hold none: this
// Limiter's, or on a host another worker leads, the leader's (which it
// publishes only at awaitMin or more).
func (h *host) awaitN() int32 {
	if h.led {
		return h.ledAwait
	}
	if e := &h.exp; e.awaitAt != 0 && !e.awaitBroke && e.n1 >= awaitMin && !h.awaitsLong() {
		return e.n1
	}
	return 0
}

// awaiting reports whether some follower may hold its pace by the first
// run's count (awaitHolds): this Limiter's search, or the leader's.
func (h *host) awaiting() bool {
	if h.led {
		return h.ledAwait > 0
	}
	return h.exp.awaitAt != 0
}

// awaitPushed handles a follower l pushed back at pace x while the
// explorer's first 429's recovery is measured: the first run's count is no
// window a follower may spend (the ramp's run crossed a window's end:
// flask-limiter's fixed 80 per 10 s passed 134 at up to 50/s), so no
// follower holds its pace any longer (awaitHolds), and nothing is read of
// the host's limit or of the lane's own budget before the recovery is: the
// followers were pushed back one at a time, their windows opened by their
// own first requests, each read as that lane's smaller budget, searched
// down to a tenth of the limit for the rest of the run. It reports whether
// it applied.
//
// A lane of a host another worker leads, pushed back while it held the
// leader's count, does the same here: the lanes take the leader's pace
// (its cautious reading). The leader hears of it as evidence
// (othersPushedBack's adoptLocked) and stops its own.
func (r *rules) awaitPushed(h *host, l *lane, x float64, now int64) bool {
	if h.led && h.ledAwait > 0 {
		h.note(r, now, "follow", l.exit, "count", float64(h.ledAwait), 0, "pushed back while the leader measures its first 429's recovery: the lanes hold its cautious reading")
		h.ledAwait = 0
		r.paceFollowers(h)
		return true
	}
	e := &h.exp
	if e.awaitAt == 0 || l.exit == e.exit || h.led {
		return false
	}
	if !e.awaitBroke {
		e.awaitBroke = true
		h.note(r, now, "follow", l.exit, "pace", x, h.followPace(r), "a follower pushed back while the first 429's recovery is measured: the followers hold the cautious reading")
		r.paceFollowers(h)
	}
	return true
}

// awaitMin is the smallest first run whose count the followers hold to
// while its recovery is unknown (awaitHolds).
const awaitMin = 10

// awaitSpent slows follower l to the followers' pace once it no longer
// holds its own (awaitHolds).
// It runs on every take (where the count grows), so it asks whether a
// recovery is awaited at all first.
func (r *rules) awaitSpent(h *host, l *lane) {
	if !h.awaiting() || l.exit == h.exp.exit || l.own() > 0 || h.awaitHolds(l) {
		return
	}
	if f := h.followPace(r); l.pace > f {
		r.setPace(h, l, f)
	}
}

// awaitCount holds the followers at the first run's count while its
// recovery is unknown: the explorer's window held n1 when it was pushed
// back, and a follower that began with it has as many in its own once it
// has sent n1. One follower goes on past the count (over); the others
// wait for its answer (overAnswered). Passed, the followers' windows end
// within what they sent and all go on; pushed back, they wait for the
// explorer's recovery, as awaitHold's do. flask-limiter's bare 20 per
// 2 minutes: the nine followers, slowed to the cautious reading of a
// minute's window, each sent a 21st request 70 s on, nine 429s at once.
// It runs on every take, after the count grew, and reports whether l's
// request just taken is the one past the count.
func (r *rules) awaitCount(h *host, l *lane, now int64) bool {
	e := &h.exp
	if !e.overOn || e.overRead || e.awaitAt == 0 || l.serSent < e.n1 || e.n1 < awaitMin ||
		h.led || !h.exploring() || l.exit == e.exit || l.own() > 0 {
		return false
	}
	if p := h.lanes[e.over]; p == nil || e.overAt != 0 && now-e.overAt > maxRecovery {
		// None yet, or it was lost or never answered: this one goes on.
		e.over, e.overAt = l.exit, 0
		h.note(r, now, "follow", l.exit, "count", 0, float64(e.n1), fmt.Sprintf("a follower sent the %d the first run held while its recovery is unknown: it goes on, the others wait for its answer", e.n1))
	}
	if e.over == l.exit {
		if l.serSent > e.n1 && e.overAt == 0 {
			e.overAt = now
			return true
		}
		return false
	}
	until := now + maxRecovery
	if ex := h.lanes[e.exit]; ex != nil && ex.cool > now {
		until = ex.cool + maxRecovery
	}
	x := l.extra()
	x.held, x.counted = true, true
	r.holdUntil(h, l, until, now)
	return false
}

// overAnswered reads the answer to the follower's request past the first
// run's count (awaitCount): passed, the followers held at the count go on;
// pushed back, they wait for the explorer's recovery; neither (an error),
// they go on and the next past the count asks again.
func (r *rules) overAnswered(h *host, l *lane, v verdict.Verdict, now int64) {
	e := &h.exp
	if e.over != l.exit || !e.overOn {
		return
	}
	switch v {
	case verdict.OK:
		e.overRead = true
		h.note(r, now, "follow", l.exit, "count", float64(e.n1), 0, fmt.Sprintf("passed past the %d the first run held: the followers' windows end within what they sent; they go on", e.n1))
		r.releaseLanes(h, now, true)
	case verdict.Throttled:
		h.note(r, now, "follow", l.exit, "count", float64(e.n1), float64(e.n1), fmt.Sprintf("pushed back past the %d the first run held: the followers wait for the explorer's recovery", e.n1))
	default:
		e.over, e.overAt = "", 0
		r.releaseLanes(h, now, true)
	}
}
