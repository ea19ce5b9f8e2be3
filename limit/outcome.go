package limit

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/exitgate/exitgate/backoff"
	"github.com/exitgate/exitgate/verdict"
)

// The rules a response runs through, in this order (package doc, Learning).
// The names are the Rule of the Change records each one makes.
//
//  1. scope      a header's scope hint decides where the limit applies.
//  2. host-rate  on a success, the host's own rate (when it governs) climbs.
//     headroom   a declared quota's sliding-counter headroom is tried
//                without on one lane; a 429 on it ends the check
//                (headroom.go).
//  3. ramp, refine, bisect, reprobe, explore
//                the explorer's search (explore.go, firstread.go,
//                count.go, reprobe.go), on its successes and its 429s (a burst it
//                measures, a window test, a stale ceiling tried again);
//                tier: a follower with a budget of its own climbs back on
//                its successes (follow.go).
//  4. episode    a 429 for a request sent before its lane's current episode
//                began is the same event: only a longer Retry-After counts.
//     echo       a 429 with Retry-After on the lane's first request since its
//                last 429 (no success between) reads nothing of its pace;
//                the lane waits twice the Retry-After (up to 8 times).
//     again      a 429 without one on a follower's first request since its
//                last 429, sent slower than that one, before the host's
//                counted window could end, reads nothing either; the lane
//                waits the rest of the window.
//     wall       lanes pushed back together after long runs, on a host
//                that read no window, and again a second or more on with
//                nothing between: a window's quota spent; the lanes wait
//                while the one with the longest run retries, and its
//                recovery reads the window; lanes whose series began with
//                the first one's wait at its count (wallCount, at each
//                take) and stand in for their 429s (wall.go).
//     clock      the answer to a test of a window of the clock: the
//                request before the window's end pushed back, the one
//                after it passed, proves it; a window told by Retry-After,
//                three passed at once after its end (clockwindow.go).
//  5. scope      429s on ScopeLanes lanes under their pace within ScopeSpan:
//                the host limits site-wide, its own rate governs (hostrate.go).
//  6. clock      on a host settled on a bare window's quota, a lane pushed
//                back after fewer than it in its window of the clock reads
//                that count and tests it; on any host, resets told by
//                Retry-After a window apart on the clock's grid read that
//                window, and the lane's count in it (clockwindow.go).
//     follow, tier
//                a follower pushed back: alone, its own budget; several at
//                once, everyone falls back (follow.go).
//  7. cooldown   a 429 rests its lane: Retry-After, else backoff; an
//                explorer resting long hands the search to another lane;
//                a follower pushed back while the explorer waits to retry
//                its first 429 waits for it (awaitHold).
//  8. busy       a 503 pauses the host and cuts its own rate; one without
//                Retry-After while another lane succeeds is this lane's 429
//                (laneBusy).
//  9. ban        a block page quarantines the lane; so does a wave of
//                Forbidden answers on a lane that never had a success, or
//                none since its last ban.
//     wave       a wave of Forbidden answers on a lane that had successes
//                is the limit refusing its pace: read as a 429 with a
//                penalty's wait, the lane held out as long as the block
//                (12 s, or the host's longest hold that let one through;
//                twice as long when refused again, a ban past 96 s)
//                (wave.go).
//     remaining  a success whose X-RateLimit-Remaining alone fell to 0 is
//                read as the 429 its next request would draw (remaining.go).
// 10. declared   a declared quota sets every lane's pace (declared.go).
// 11. spacing    every answer: a lane whose answer came late is held back
//                by as much (acquire.go, spaceAfter).

// settle applies one released ticket's outcome o on lane l of host h. sent is
// when the request went out; u is a uniform draw for backoff jitter.
func (r *rules) outcome(h *host, l *lane, rec ticketRec, o *Outcome, now int64, u float64) {
	defer func() { l.moved = false }() // read with care once: the first answer since the exit moved here
	sent := rec.at
	if !o.SentAt.IsZero() {
		sent = o.SentAt.UnixNano()
	}
	h.c.Requests++
	l.c.req++
	if o.Scope != ScopeUnknown {
		h.hinted = true
		r.setScope(h, o.Scope, now, "the response's headers say where the limit applies")
	}
	spent := l.remainingSpent(o, now) // (before the rules: the recovery's reading reads it)
	switch o.Verdict {
	case verdict.OK:
		r.mixAnswer(h, false, now)
		r.urlAnswer(h, o.URLHash, false, now)
		h.c.OK++
		l.c.ok++
		l.serOK++
		l.eps = 0
		h.endWave(l)
		h.letThrough(r, l, sent, now)
		if h.okExit != l.exit {
			h.prevOKAt = h.okAt
		}
		h.okAt, h.okExit = now, l.exit
		r.clockTest(h, l, rec, sent, false, now)
		r.wallOK(h, l, sent, now)
		r.okRules(h, l, sent, now)
	case verdict.Throttled:
		r.mixAnswer(h, false, now)
		h.count429(l, now)
		r.throttled(h, l, rec, o, sent, now, u)
	case verdict.Busy:
		r.mixAnswer(h, o.RetryAfter == 0, now)
		r.urlAnswer(h, o.URLHash, o.RetryAfter == 0, now)
		// A 503 that says nothing of a wait or a quota spent: load, a
		// per-IP limit's, or a page's own error (busymix.go).
		bare := o.RetryAfter == 0 && !(o.HasRemaining && o.Remaining < 1)
		if bare && h.busyNoiseStands(now) {
			// The site's pages' own error, by the share of them read
			// (busymix.go), whatever lane it came on.
			h.c.Errors++
			l.extra().c.err++
			break
		}
		if r.laneBusy(h, l, o, now) {
			if bare {
				h.busy429++
				h.busyTestStart(now)
			}
			h.count429(l, now)
			r.throttled(h, l, rec, o, sent, now, u)
			break
		}
		if r.loneBusy(h, o, now) {
			h.c.Errors++
			l.extra().c.err++
			break
		}
		h.c.Busy++
		r.busy(h, o, sent, now, u)
	case verdict.Retryable:
		h.c.Errors++
		l.extra().c.err++
	case verdict.Banned:
		h.c.Banned++
		r.banned(h, l, now, "a block page")
	case verdict.Forbidden:
		h.c.Forbidden++
		x2 := l.extra()
		x2.c.forb++
		switch {
		case sent <= x2.waveAt:
			// The refusal rule wave read already: its requests still out.
		case l.refusedStill(sent):
			if !r.refusedAgain(h, l, now) {
				r.banned(h, l, now, "refused again after its longest hold")
			}
		default:
			pace := float64(1e9) / float64(max(rec.laneIv, 1))
			if wave, x := h.forbidden(r, l, o.URLHash, pace, now); wave && !r.limitWave(h, l, x, rec, o, sent, now, u) {
				r.banned(h, l, now, fmt.Sprintf("a wave of %d forbidden URLs", r.banWave))
			}
		}
	default:
		h.c.Fatal++
	}
	if spent {
		r.remainingRun(h, l, rec, sent, now, u)
	}
	if rec.over {
		r.overAnswered(h, l, o.Verdict, now)
	}
	r.declared(h, l, o, now)
}

// count429 counts a 429 (or a busy answer read as one) on lane l.
func (h *host) count429(l *lane, now int64) {
	if h.c.Throttled == 0 {
		h.thrAt = now
	}
	h.c.Throttled++
	l.c.thr++
}

// okRules runs the rules that learn from a success.
func (r *rules) okRules(h *host, l *lane, sent, now int64) {
	if h.rated() {
		r.hostIncrease(h, now)
	}
	r.roomOK(h, l, now)
	if !h.exploring() {
		return
	}
	if l.exit == h.exp.exit {
		r.exploreOK(h, l, sent, now)
		r.reprobeDue(h, l, now)
		return
	}
	if h.exp.okSince < 1<<30 {
		h.exp.okSince++
	}
	r.tierOK(h, l, sent, now)
}

// throttled runs the rules for a 429 on lane l.
func (r *rules) throttled(h *host, l *lane, rec ticketRec, o *Outcome, sent, now int64, u float64) {
	if w := emptyUntil(o); w > 0 {
		// A 429 without Retry-After whose headers say nothing remains
		// until a reset they tell: that reset is the server's word on
		// when, read as its Retry-After. Read as a bare 429, the lanes
		// of gin-rate-limit's 30 per minute (X-Rate-Limit-Remaining: 0,
		// the reset a minute after the last request let through) were
		// retried every 4 s into it: 75 429s in 375 requests.
		o.RetryAfter = w
		h.note(r, now, "cooldown", l.exit, "retry-after", 0, secs(int64(w)), "a 429 without Retry-After, nothing remaining until the reset its headers tell: that reset is its Retry-After")
	}
	if h.scope.shared() {
		r.hostThrottled(h, o, sent, now, u)
		return
	}
	if l.epAt != 0 && sent < l.epAt {
		// Rule episode: sent before this lane's episode began, so the same
		// event, already counted. Only a longer Retry-After is news.
		if o.RetryAfter > 0 {
			r.coolUntil(h, l, now+min(int64(o.RetryAfter), int64(maxRetryAfter)), now, "a longer Retry-After from a request already out")
		}
		return
	}
	if r.clockTest(h, l, rec, sent, true, now) {
		return
	}
	// Rule echo: pushed back again at its first request since its last
	// 429, with no success between: the server remembers longer
	// than it said (haproxy counting the denied requests over two periods
	// with a fixed Retry-After). Nothing in it reads the lane's pace, and
	// the lane waits twice as long each time.
	echo := o.RetryAfter > 0 && rec.first && l.eps > 0
	// Rule spent: pushed back before the lane ever had a success, its
	// first 429: the IP's budget was spent before the lane came (a crawl
	// stopped a moment ago, another client behind the same exit). One
	// request has no pace, so nothing is read of the lane's pace (a crawl
	// resumed at once after another read such a 429 as the settled pace
	// falling, and fell to a third of it); the lane waits as told. It
	// still counts as evidence of a shared limit (lanes pushed back at
	// their first requests, several at once, are one), unless the host
	// was restored knowing its limit per IP: a crawl resumed on 10 exits
	// whose budgets the last run had just spent read as a site-wide limit
	// and crawled at 15/min for the half hour scope takes to revert. The
	// ramp reads such a 429 its own way (firstEstimate).
	spent := l.c.ok == 0 && l.c.thr == 1 && h.exp.phase != expRamp && !echo
	// Rule again: the bare echo. On a host that counts over a window, a
	// lane pushed back at its first request since its last 429, before
	// that window could have ended: the window still holds what the lane
	// sent before, so nothing in it reads the pace it goes at now, and
	// the lane waits the rest of the window. Read as a fall, each such
	// 429 cut the host again: flask-limiter's bare 40 per 15 s, read as
	// 40 per 10 s, had all ten lanes overshoot together, and their
	// retries half a second on cut the host from 3.9/s to 0.2/s in three
	// seconds (7% of the limit for the rest of the run).
	x := float64(1e9) / float64(max(rec.laneIv, 1)) // the pace it was sent at
	again := o.RetryAfter == 0 && !echo && !spent && rec.first && l.eps > 0 && l.epAt != 0 &&
		now-l.epAt < h.countedWindow() && (h.led || h.exp.phase != expRamp) && l.exit != h.exp.exit &&
		l.x != nil && l.x.epPace > x*(1+tolerance)
	// Rule slowed: again's case on a lane's first 429 since it slowed. On
	// a host that counts over a window, a lane pushed back at x within
	// that window of slowing from a pace above it (exploring, or with the
	// followers), with no 429 of its own since: the window still holds
	// what it sent faster, so nothing reads x, and the lane waits until
	// the window holds only its slower requests. Read as x too fast,
	// flask-limiter's bare 40 per 15 s (read as 40 per 10 s, the followers
	// pushed back at 3.88/s together) took a follower's 429 at 1.84/s, a
	// second after it took the search over from 3.88/s, as the ceiling,
	// and settled at 1.73/s, 65% of the limit, for the rest of the run; a
	// follower's, read as the followers falling again, held them at
	// 1.2/s. Not where the lane slowed for a 429 of its own (its retries
	// read the window: the first 429's recovery, the bisection after it).
	var slow slowing
	if o.RetryAfter == 0 && !echo && !spent && !again && h.exp.phase != expRamp && h.exp.awaitAt == 0 {
		slow = h.slowedFrom(l, x, now)
	}
	slowed := slow.from > x*(1+tolerance)
	if now-h.exp.quietAt <= burstGap && l.epAt >= h.exp.burstAt {
		h.exp.repeat = true // pushed back twice in one burst of the host's
	}
	prevEp := l.epAt
	l.epAt = now
	if h.countedWindow() > 0 && o.RetryAfter == 0 {
		l.extra().epPace = x
	}
	if o.RetryAfter == 0 && !echo && !spent && r.wallThrottled(h, l, series{at: l.serAt, ok: l.serOK}, sent, now) {
		// Rule wall: a window's quota spent; the lane waits for the
		// wall's probe, or is it (wall.go). Nothing read of its pace.
		h.readsNothing(l, now)
		return
	}
	if again {
		h.readsNothing(l, now)
		d := max(prevEp+h.countedWindow()-now, int64(r.backoffBase))
		h.note(r, now, "again", l.exit, "cooldown", 0, secs(d), "pushed back again before the window could end: it still holds what the lane sent before; nothing read")
		r.coolUntil(h, l, now+d, now, "pushed back again before the window could end: wait the rest of it")
		r.handOff(h, l, now)
		return
	}
	if slowed {
		h.readsNothing(l, now)
		d := max(slow.at+h.countedWindow()-now, int64(r.backoffBase))
		h.note(r, now, "slowed", l.exit, "cooldown", 0, secs(d), fmt.Sprintf("pushed back within a window of slowing from %.3g/s: the window still holds what it sent faster; nothing read", slow.from))
		r.coolUntil(h, l, now+d, now, "pushed back within a window of slowing: wait until it holds only the slower requests")
		r.handOff(h, l, now)
		return
	}
	told := o.RetryAfter > 0 && !echo && r.clockTold(h, l, rec, o.RetryAfter, x, prevEp, now)
	checked := r.room429(h, l, now)
	if h.cap.exact && !spent {
		// Paced exactly at a fixed window's rate and still pushed back:
		// its reset came early, or it is not fixed. Settle's margin is
		// back for good.
		d := r.declaredRate(&h.cap.win, false)
		h.note(r, now, "declared", l.exit, "ceiling", h.cap.declared, d, "a 429 on a fixed window paced exactly: just under it again")
		h.cap.declared, h.cap.exact, h.cap.inexact = d, false, true
		r.updateFollow(h, now, "declared", "just under the declared quota")
	}
	if !spent && !echo && !checked {
		// (The headroom check's lane was sent above the declared pace on
		// purpose: its 429 is the check's answer.)
		r.declared429(h, l, x, now)
	}
	// Under what one lane may send: evidence that the budget is not the
	// lane's own, unless the lane already has a smaller one of its own.
	// A lane whose exit came from another Limiter a moment ago was maybe
	// sent through by it: its first 429 says nothing of the scope.
	under := l.own() == 0 && !l.moved && (!l.hot || (h.cap.lo > 0 && x < h.cap.lo*(1-tolerance))) && !(spent && h.restored)
	if !echo {
		h.addEvidence(r, evEntry{exit: l.exit, at: now, pace: x, under: under})
	}
	if l.own() > 0 && x < h.cap.follow*(1-tolerance) {
		// A lane searching its own smaller budget, under the host's pace:
		// its 429s say nothing of the host's limit. They neither break the
		// host's quiet nor spend its learning allowance (ownThrottled), or
		// a host whose explorer's IP has the smaller budget never
		// re-probes with another lane while the lanes of the smallest
		// budgets search theirs (simulated tiers: held at 1/s, half of
		// what most of its IPs may send, for the whole run).
		h.ownThrottled++
	} else {
		h.hostPushedBack(now)
	}
	// A new series: the server's budget for this lane is empty now, so what
	// it sent before no longer counts against a slower pace.
	ser := series{at: l.serAt, ok: l.serOK, sent: l.serSent}
	if l.exit == h.exp.exit {
		ser.run = h.exp.run.n
		h.exp.run = run{}
		h.exp.chain = chain{}
		h.exp.runEnded(l.exit, now)
	}
	l.serAt, l.serSent, l.serOK = now, 0, 0
	if r.inferScope(h, now) {
		r.hostThrottled(h, o, sent, now, u)
		return
	}
	if h.scope == ScopeUnknown {
		h.scope = ScopeExit
	}
	switch {
	case told:
		// A window of the clock read from the Retry-Afters: nothing else
		// to read in it (clockTold).
	case echo:
		// (A note needs a change to record: from no wait to the wait told.)
		h.note(r, now, "echo", l.exit, "cooldown", 0, secs(int64(o.RetryAfter)), fmt.Sprintf("pushed back again after waiting the Retry-After of %v: the server remembers longer; nothing read", o.RetryAfter))
	case spent:
		h.note(r, now, "spent", l.exit, "cooldown", 0, max(secs(int64(o.RetryAfter)), 1e-3), "pushed back before its first success: its budget was spent before it came; nothing read")
	case !l.hot && l.exit != h.exp.exit:
		// Under its pace: evidence of a shared limit, not of this lane's
		// size. Nothing to learn about the lane. (The explorer's 429s are
		// always read: its pace changes under requests already timed at
		// the old one, and a request sent late after a speed-up is not
		// under its pace.)
	case !h.exploring():
	case h.led:
		// Another worker searches the host's limit: this lane is a
		// follower of its search, nothing here ends a ramp.
		r.follow429(h, l, x, ser, now)
	case h.exp.phase == expRamp && l.exit != h.exp.exit:
		r.follow429(h, l, x, ser, now)
		if h.manyAtFollow(now) {
			r.endRamp(h, l, x, ser, o.RetryAfter, now)
		}
	case h.exp.phase == expRamp:
		h.exp.sent1At, h.exp.sent1Sec = 0, 0
		if rec.ring {
			h.exp.sent1At, h.exp.sent1Sec = rec.at, rec.sec
		}
		r.endRamp(h, l, x, ser, o.RetryAfter, now)
	case o.RetryAfter == 0 && r.clockEdge(h, l, rec, x, prevEp, now):
	case l.exit == h.exp.exit && r.bareRetry(h, l, o, rec.first, now):
	case l.exit == h.exp.exit && h.exp.phase != expSettled:
		r.explore429Series(h, l, x, ser, now)
	case l.exit == h.exp.exit && (h.exp.proof > 0 || h.exp.suspect):
		r.proofPushed(h, l, x, now)
	case l.exit == h.exp.exit && atLeast(x, h.cap.follow):
		// The settled explorer pushed back at the pace everyone holds:
		// what it passed was a burst, or the limit moved down; unless the
		// others hold that pace untouched (its own budget is smaller).
		if !r.quotaEdge(h, l, x, now) && !r.explorerOutlier(h, l, x, now) {
			r.fallBack(h, l, x, now, "the explorer was pushed back at the settled pace")
		}
	default:
		r.follow429(h, l, x, ser, now)
	}
	// (A wave of refusals read as a 429, rule wave, costs its lane the
	// hold, not the penalty's wait the reading takes: not costly.)
	if l.exit == h.exp.exit && o.Verdict != verdict.Forbidden && int64(o.RetryAfter) >= costlyIntervals*interval(x) && !h.cap.costly {
		h.note(r, now, "explore", l.exit, "ceiling", h.cap.hi, h.cap.hi, fmt.Sprintf("a 429 costs a lane %v: the search stops within %.0f%%", o.RetryAfter, 100*(costlyDone-1)))
		h.cap.costly = true
	}
	if l.x != nil {
		l.x.toldEnd, l.x.echoed = 0, false // the holds of the wait before are over
	}
	if c := &h.cap; c.block > 0 && c.block < int64(maxBlock) && o.RetryAfter == 0 && rec.first && l.eps > 0 && (c.blockAt == 0 || now-c.blockAt >= c.block) {
		// Pushed back at its first request after waiting a block out: the
		// block is longer (vsthrottle blocking longer than the bare
		// retries read). Without it the lane would wait the same block
		// and be pushed back again, for good.
		// Once a block: the lanes that waited the shorter one out meanwhile
		// are pushed back by the same block (doubled by each of them, a
		// block of 5 minutes read 16 in 15 s).
		b := min(2*c.block, int64(maxBlock))
		h.note(r, now, "cooldown", l.exit, "cooldown", secs(c.block), secs(b), "pushed back at its first request after waiting the block out: the block is longer")
		c.block, c.blockAt = b, now
	}
	r.cooldown(h, l, x, o.RetryAfter, echo, now, u)
	if o.RetryAfter > 0 && !echo && !told {
		r.seriesWindow(h, l, ser, now)
	}
	if k := &h.cap.clock; k.lane == l.exit && k.stage == 1 && l.cool > k.end-int64(clockLead) {
		l.cool = k.end - int64(clockLead) // the test's first request goes before the window's end, whatever the backoff
	} else if k.lane == l.exit && k.w > 0 && l.cool > k.end+int64(clockSlack) {
		// A window told: its test's requests go just after the end, up
		// to a second before the Retry-After in whole seconds runs out
		// (clockTold).
		l.cool = k.end + int64(clockSlack)
	}
	r.handOff(h, l, now)
}

// readsNothing counts a 429 on lane l at now that reads nothing of its
// pace (rules again and wall): the host's quiet ends, the lane's budget is
// empty as after any 429 (and the explorer's run with it), and its
// episode counts.
func (h *host) readsNothing(l *lane, now int64) {
	h.hostPushedBack(now)
	l.serAt, l.serSent, l.serOK = now, 0, 0
	if l.exit == h.exp.exit {
		h.exp.run, h.exp.chain = run{}, chain{}
		h.exp.runEnded(l.exit, now)
	}
	if l.eps < 255 {
		l.eps++
	}
}

// series is what a lane sent since its last 429 (or first request): since at,
// sent requests, ok successes, the last run of them at its latest pace.
type series struct {
	at            int64
	ok, run, sent int32
}

// cooldown rests lane l, pushed back at pace x, after the first 429 of an
// episode: Retry-After, else full-jitter backoff but at least two intervals
// at x (a server that also charges rejected requests stays limited while a
// client keeps sending). The explorer that ended slow start without a
// Retry-After measures how long the server takes to recover: its first try
// comes after two intervals at the rate its successes came (a bucket has
// refilled by then), and if it is pushed back again it waits for the longest
// usual window instead of doubling its way there one 429 at a time.
func (r *rules) cooldown(h *host, l *lane, x float64, ra time.Duration, echo bool, now int64, u float64) {
	if l.eps < 255 {
		l.eps++
	}
	d := min(int64(ra), int64(maxRetryAfter))
	why := sayRetryAfter(ra)
	var told int64 // the Retry-After the lane waited out before this 429
	if d > 0 {
		x2 := l.extra()
		told, x2.ra = x2.ra, d
	}
	if d > 0 && echo && d <= told {
		d <<= min(l.eps-1, 3) // the Retry-After was not enough
		why = fmt.Sprintf("%s was not enough: %v", why, time.Duration(d))
		r.echoOthers(h, l, told, d-told, now)
	} else if d > 0 && echo {
		// Pushed back again, now told to wait longer than before (1 s,
		// then an hour): what it says now is the server's word, waited
		// as said (it was doubled too: the host held 2 h while every
		// message, and the parked URLs' due time, said an hour).
		why = fmt.Sprintf("%s, longer than the %v waited", why, time.Duration(told))
	} else if d >= handOffWait && l.pace > 0 && x > 2*l.pace {
		// The lane drew the 429 sent at more than twice the pace it
		// goes at now (the explorer's ramp, a step far above the
		// limit): the server's window still holds that burst, and at
		// some the 429 too, and a request at the very end of a fixed
		// Retry-After is pushed back again and doubles the wait. It
		// ends where the new pace puts the next request, a quarter
		// more at most.
		d += min(interval(l.pace), d/4)
		why = fmt.Sprintf("%s, then an interval at the new pace (%.3g/s)", sayRetryAfter(ra), l.pace)
	}
	if e := &h.exp; d > 0 && l.exit == e.exit && e.awaitAt != 0 {
		// The explorer measures its first 429's recovery, told to wait
		// (endRamp): the Retry-After is the least its retry waits. Where
		// the retries' schedule comes later, it holds; where earlier, the
		// retry waits the Retry-After, or after one success at the first
		// pace (a pace limit: each IP's requests are counted apart),
		// another lane, free to send, takes it at the schedule's spacing
		// (handAwait) while this one waits.
		db, whyb := r.awaitRetry(h, x, 0, now)
		pace := e.firstPaceRefused() // another lane can take the retry
		// The spacing one request a Retry-After tests, Settle under it.
		s := int64(float64(ra)/r.settle) - e.t1
		switch {
		case pace && e.tries == 2 && e.recLo > 0 && s > e.recLo && s < e.recLo+db && r.handAwait(h, l, d, s, now):
			// The first retry was pushed back, and the Retry-After names
			// a spacing between it and the schedule's next: one request
			// a Retry-After is tried there first (nginx's 6r/m told 10 s:
			// its interval, settled at 13 s, where the schedule read 16 s
			// and climbed to it at a 429 a step).
			why += ": one request per it goes on another lane"
		case db >= d:
			d, why = db, fmt.Sprintf("%s (told %s)", whyb, sayRetryAfter(ra))
		case pace && r.handAwait(h, l, d, db, now):
			why += ": the retry that measures the recovery goes on another lane"
		}
	}
	if d <= 0 {
		d = max(int64(fullJitter(u, r.backoffBase, r.backoffCap, int(l.eps)-1)), 2*interval(x))
		why = "a 429 without a Retry-After to read: backoff"
		if e := &h.exp; l.exit == e.exit && e.awaitAt != 0 {
			d, why = r.awaitRetry(h, x, d, now)
			r.extendHeld(h, now, now+d)
		} else if w := r.awaitHold(h, l, now); w > d {
			l.extra().held = true
			d, why = w, "a 429 without Retry-After while the explorer measures the first recovery: wait for it"
		} else if c := &h.cap; c.block > 0 {
			// A block read (noWindow): retries within it only prolong it
			// where the server counts them, and read nothing.
			d = max(d, c.block+windowEndSlack)
			why = fmt.Sprintf("a 429 without Retry-After on a host that blocks a lane for %v: wait it out", time.Duration(c.block))
		} else if e, c := &h.exp, &h.cap; l.exit == e.exit && c.windowed && !e.reprobe && e.phase != expSettled {
			// The explorer searching a host that counts over a window (its
			// first 429 took long to recover from), pushed back: its next
			// request comes a window later, when what the server counted
			// of the pace pushed back, and of its rejected requests, has
			// aged out. Two intervals at the old pace are pushed back
			// again by a server that counts rejected requests (haproxy's
			// 2 per 10 s without a header: the bisection fell to 0.057/s,
			// 29% of the limit, each step read from a retry still
			// counted against the window).
			w := int64(e.quotaW)
			if w <= 0 {
				w = c.span * 4 / 5 // the recovery the span was made of
			}
			if w = min(w, maxRecovery); w > d {
				d = w
				why = fmt.Sprintf("a 429 without Retry-After on a host that counts over a window: wait the window (%v)", time.Duration(w).Round(time.Millisecond))
			}
		}
	}
	r.coolUntil(h, l, now+d, now, why)
}

// echoOthers lengthens by more the waits of the other lanes of h waiting
// out the same Retry-After told as lane l, whose wait was not enough: a
// server that counts the requests it refuses (haproxy tracking before its
// deny) still holds each of them over its limit when that Retry-After ends
// (haproxy's 10 per 30 s with Retry-After: 15: a second lane pushed back
// the same way met the same echo 6 s later, a 429 more in 378 requests).
// Once per lane's wait: a lane lengthened by one echo waits past the told
// end already, and the next echo says no more of it (haproxy's 30 per
// minute told 20 s: nine lanes pushed back together, lengthened by one
// echo to 40 s, were lengthened again by the next, 20 s later, and idled a
// third of the run).
func (r *rules) echoOthers(h *host, l *lane, told, more int64, now int64) {
	n := 0
	for _, o := range h.lanes {
		if o == l || o.x == nil || o.x.ra != told || o.x.echoed || o.cool <= now || o.cool-now > told+told/2 {
			continue
		}
		o.x.echoed = true
		h.lengthenCool(o, o.cool+more, now)
		r.rekey(h, o)
		n++
	}
	if n > 0 {
		h.note(r, now, "echo", "", "cooldown", secs(told), secs(told+more), fmt.Sprintf("%d lanes waiting out the same Retry-After of %v wait %v more", n, time.Duration(told), time.Duration(more)))
	}
}

// blockEnd puts the retry d from now, a window's from the run's start, where
// a block of w from the 429 ends if that is within blockPutOff of it, so that
// passed there its recovery fits both (blockTry: penaltyTest tells them
// apart); it reports whether it does. vsthrottle's 15 per 10 s blocking 30
// s without a header: 18 in 7.9 s, the half minute's retry 34 ms before the
// block's end, read 18 per minute, a fifth of the rate (real, 1.1 s after
// it: 18 per 30 s, two fifths).
func (e *explorer) blockEnd(w time.Duration, d, now int64) (int64, bool) {
	b := e.awaitAt + int64(w) + windowEndSlack - now
	if d < b-blockPutOff || d > b+blockPutOff {
		return d, false
	}
	e.blockTry = w
	return max(d, b), true
}

// awaitRetry is when the explorer measuring its first 429's recovery (awaitAt)
// tries again, pushed back at pace x at now, at least d (the backoff) on:
// the retries' schedule, one try after another, and why.
func (r *rules) awaitRetry(h *host, x float64, d, now int64) (int64, string) {
	e := &h.exp
	why := "a 429 without a Retry-After to read: backoff"
	if e.tries > 0 {
		e.recLast = max(now-e.awaitAt, 0)
	}
	if e.tries > 0 && !e.secTry {
		// A retry pushed back: not recovered by then. (Not the
		// one a second's window on, nor the pace held after it:
		// they test for a window of a second, and a count over
		// two periods (haproxy's) still rejects a moment after
		// a longer window ends, so the window the run's
		// recovery fits read as none: 50 per 10 s, pushed back
		// 1.25 s after a run of 9.7 s, searched for a minute.)
		e.recLo = max(now-e.awaitAt, 0)
	}
	e.secTry, e.secAt, e.blockTry = false, 0, 0
	e.pushed = min(e.pushed+1, math.MaxUint8)
	var ok bool // the retry tests a block's end too (blockEnd)
	switch e.tries++; e.tries {
	case 1:
		iv := e.t1 / int64(max(e.n1, 1))
		if e.ramped > 0 {
			iv = interval(e.ramped)
		}
		d = max(2*interval(x), windowRecovery/2*iv) // no jitter: the retry measures
		why = "a 429 without Retry-After: try again when a bucket would have refilled"
	case 2:
		if since := now - e.awaitAt; e.x1 >= 2 && float64(e.k1) < e.x1 && e.n1 >= fewRun && e.t1 > int64(time.Second) && since < secondWindow {
			// Not a bucket: its refill would have let that retry
			// through. The pace that drew the 429 ran a second's
			// window of two or more out, in fewer successes than
			// a second of that pace (a window of a second that
			// held them all would have held the pace), and the
			// run outlasted one: once a window of a second has
			// surely ended, a retry tells it from a longer one
			// (before haproxy's 20 per 10 s pushed back, 8 passed
			// at 7.76/s; before flask-limiter's 10 per second, 11
			// at 15.5/s). Without it, the run that spanned many
			// windows read as one (flask-limiter's 10 per second
			// without headers: 32 in 8.9 s read as 32 per 10 s, a
			// third of it).
			d = secondWindow - since // no jitter: the retry measures
			e.secTry = true
			why = "pushed back again: try again when a window of a second has ended"
			e.tries-- // the retries after it keep their schedule
			break
		}
		// A window as long as the first run. After a run of few
		// successes, at least the shortest common window: a
		// server that counts rejected requests (haproxy) still
		// holds the run and the first retry against the lane a few
		// seconds on (the retry is a fifth of such a quota and
		// more), and a retry then was pushed back too and read the
		// window as a minute (5 per 10 s read as 5 per minute, 17%
		// of it). A longer run recovers within its own length
		// (haproxy's 20 per 10 s: 8.6 s after its 429). A run
		// of the shortest common window or longer outlasted it:
		// the next common window is half a minute.
		if e.t1 < int64(shortestCommon) {
			d = max(d, e.t1)
			why = "pushed back again: try again after a window as long as the first successes took"
			if e.n1 < fewRun {
				d = max(d, int64(shortestCommon))
				why = "pushed back again: try again after a window as long as the first successes took, at least the shortest common window after a short run"
			} else if at := e.runStart() + int64(shortestCommon) + windowEndSlack; at-now > d {
				// A run of many that took under half the shortest
				// common window: a window as long again would not
				// have ended it, so the retry goes where one opened by
				// the run's first request ends (a window read again
				// after a quick recovery, rereadWindow: flask-limiter's
				// fixed 50 per 10 s ran its new window out in 3.6 s,
				// and the next try, half a minute on, held every
				// follower at the cautious reading for 24 s).
				d = at - now
				why = "pushed back again: try again when the shortest common window from the run's start has ended"
			}
			break
		}
		e.tries++
		fallthrough
	case 3:
		// A third of a minute from the run's first success first (with
		// the same slack), unless the run outlasted it: a limit written
		// per 20 s (haproxy's 15 per 20 s without a header), pushed back
		// at 16 s and tried next at half a minute, read as 15 per 30 s,
		// 58% of it for the rest of the run. On a longer window it costs
		// one more 429, which a run of few cannot spare (a 429 is a
		// quarter to a half of a percent of what 6 per half a minute
		// or per minute let ten lanes send in two minutes).
		if at := e.runStart() + int64(thirdWindow) + countedSlack(thirdWindow, e.n1, e.pushed); !e.thirdTry && e.n1 >= fewRun && e.t1+e.headD < int64(thirdWindow) && at-now > int64(time.Second) {
			e.thirdTry = true
			d = max(d, at-now)
			why = "pushed back again without Retry-After: wait for a window of a third of a minute from the run's start"
			e.tries-- // the half minute's retry comes next
			if d, ok = e.blockEnd(thirdWindow, d, now); ok {
				why += ", and a block as long from the 429"
			}
			break
		}
		// Half a minute from the run's first success, and the
		// slack a count over two periods (haproxy's) needs to let
		// go of enough of the run and its 429s (countedSlack): a
		// window of 30 s the run ran out has ended by then.
		// Without this try, 10 per 30 s read as 10 per minute; on
		// a longer window it costs one more 429 (haproxy's 6 per
		// minute without a header: 3.67% -> 4.55% of 429s, real and
		// twin).
		if at := e.runStart() + int64(halfWindow) + countedSlack(halfWindow, e.n1, e.pushed); e.t1+e.headD < int64(halfWindow) && at-now > int64(time.Second) {
			d = max(d, at-now)
			why = "pushed back again without Retry-After: wait for a window of half a minute from the run's start"
			if d, ok = e.blockEnd(halfWindow, d, now); ok {
				why += ", and a block as long from the 429"
			}
			break
		}
		e.tries++
		fallthrough
	case 4:
		// The longest usual window from the run's first success:
		// a window the run ran out has ended by then, whatever
		// its kind (a fixed one opened by the run's first
		// request, a moving one whose oldest hit is the run's
		// first). From the 429, the lane idled a whole run
		// longer (express's 60 per minute without headers: 10 s
		// more of one lane in ten, and every follower at the
		// cautious reading meanwhile). A twenty-fourth more (2.5
		// s): a count over two periods (haproxy's) that the run
		// and its retries took a few percent over the limit
		// still rejects about that long after the window. After a
		// run the ramp's head was left out of, the retry at the
		// run's own length tested a window of 10 s, one 429 more
		// such a count holds: its slack, up to a twelfth
		// (haproxy's 100 per minute without a header: the retry
		// at 62.5 s was pushed back, and the lane idled to 71 s).
		slack := maxRecovery / 24
		if e.headN > 0 {
			slack = min(countedSlack(time.Duration(maxRecovery), e.n1+e.headN, e.pushed), maxRecovery/12) // (a twenty-fourth at least)
		}
		d = max(d, e.runStart()+maxRecovery+slack-now)
		why = "pushed back again without Retry-After: wait for the longest usual window from the run's start"
	case 5:
		if rest := e.awaitAt + maxRecovery - now; rest > int64(time.Second) && e.n1 >= fewRun {
			// Pushed back a window after the run's start, less
			// after its 429: the window opened within the run,
			// or a count over two periods still holds the run
			// and its retries (haproxy's 100 per minute, pushed
			// back at 62.5 s, passed at 71 s). Either has ended
			// a longest window after the 429. A short run's
			// retries weigh too much in such a count for that
			// (six per minute: 40% of a period more), and the
			// whole window goes on below.
			d = rest // no backoff's jitter: the retry measures (one 429 more grew it past the window's end)
			why = "pushed back a window after the run's start: wait for the longest usual window from the 429"
			e.blockTry = time.Duration(maxRecovery) // where a block as long from the 429 ends too
			why += ", or a block as long"
			break
		}
		fallthrough
	default:
		// Pushed back after the longest usual window: the server
		// counts the requests it rejects (haproxy tracking before
		// its deny), and each short retry kept the lane limited
		// (six per minute: five more 429s in 40 s). The whole
		// window again, from now.
		d = max(d, maxRecovery)
		why = "pushed back after the longest usual window: the server counts rejected requests; wait a whole window from now"
	}
	return d, why
}

func (r *rules) coolUntil(h *host, l *lane, until, now int64, why string) {
	was := l.cool
	if h.lengthenCool(l, until, now) == 0 {
		return
	}
	h.note(r, now, "cooldown", l.exit, "cooldown", secs(max(was-now, 0)), secs(until-now), why)
}

// lengthenCool moves lane l's cooldown on to until, if that is later, and
// counts the wait it adds as time throttled; it returns the wait added.
func (h *host) lengthenCool(l *lane, until, now int64) int64 {
	if until <= l.cool {
		return 0
	}
	d := until - max(l.cool, now)
	h.c.ThrottledNs += d
	l.c.cooled(d)
	l.cool = until
	return d
}

// inferScope is the scope rule: once ScopeLanes distinct lanes were pushed
// back within ScopeSpan while under what one lane may send, and no header
// said otherwise, the server limits site-wide. It reports whether the host
// is shared now.
func (r *rules) inferScope(h *host, now int64) bool {
	if h.hinted {
		return false
	}
	n := h.ev.lanes(now-r.scopeSpan, func(e evEntry) bool { return e.under })
	if n < r.scopeLanes {
		return false
	}
	r.setScope(h, ScopeHost, now, fmt.Sprintf("%d lanes pushed back within %v while under their pace", n, time.Duration(r.scopeSpan)))
	return true
}

// banned quarantines lane l, doubling with each ban.
func (r *rules) banned(h *host, l *lane, now int64, why string) {
	x2 := l.extra()
	x2.c.ban++
	x2.banned, x2.hold = true, 0 // (rule wave: no refusal until it is let through again)
	if l.bans < 62 {
		l.bans++
	}
	d := min(r.banMax, r.banBase<<min(l.bans-1, 30))
	until := max(l.ban, now+d)
	h.note(r, now, "ban", l.exit, "ban", secs(max(l.ban-now, 0)), secs(until-now), why)
	l.ban = until
}

// fullJitter is backoff's full jitter for a uniform draw u in [0,1).
func fullJitter(u float64, base, cap int64, attempt int) time.Duration {
	return backoff.Policy{Base: time.Duration(base), Cap: time.Duration(cap)}.At(u, attempt)
}

// sayRetryAfter words a Retry-After for a change record, beyond
// maxRetryAfter with what a lane honours.
func sayRetryAfter(ra time.Duration) string { return backoff.SayRetryAfter(ra, maxRetryAfter) }

// countedSlack is how long after a window w a server that counts what it
// rejects over two periods (haproxy's http_req_rate) lets a retry through,
// after a first run of n1 successes and pushed 429s: its estimate, the
// previous period's count weighted by what is left of it, falls to n1-1
// once a fraction (pushed+1)/(n1+pushed) of the period has gone. At least a
// twenty-fourth, at most half of w: 10 per 30 s after three 429s, 9.2 s;
// 50 per 30 s after four, 2.8 s; 6 per 30 s, 15 s (real haproxy: 80% over
// 120 s, not 50%: at a fixed third it still rejected the retry, and half a
// minute read as a minute).
func countedSlack(w time.Duration, n1 int32, pushed uint8) int64 {
	f := float64(pushed+1) / float64(n1+int32(pushed))
	return int64(float64(w) * min(0.5, max(1.0/24, f)))
}

// countedWindow is the window a host that counts over one (capacity's
// windowed) counts a lane's requests over: its quota's window when read,
// else the recovery the careful span was made of; 0 when it counts none.
//
// On a host another worker leads it is the leader's (HostView.Window): a led
// lane pushed back again inside its spent window reads nothing either.
func (h *host) countedWindow() int64 {
	c := &h.cap
	if h.led {
		return h.ledWindow
	}
	if !c.windowed {
		return 0
	}
	w := c.quotaW
	if w <= 0 {
		w = c.span * 4 / 5
	}
	return min(w, maxRecovery)
}

// awaitHold is how long follower l, pushed back without a Retry-After while
// the explorer waits to retry its first 429, waits (0: not held): until
// the explorer's retry and a longest usual window more, or less once the
// explorer recovers (releaseHeld). Its own window is spent, and a retry of
// its own tells no more than the explorer's, each one a 429 (and one more
// counted against it by a server that counts what it rejects): a bare
// 30 per 5 minutes held the followers at the cautious 30 per minute, and
// each, its window spent, retried every 5 s for four minutes (30% of 429s).
func (r *rules) awaitHold(h *host, l *lane, now int64) int64 {
	e := &h.exp
	if e.awaitAt == 0 || l.exit == e.exit || h.led || !h.exploring() {
		return 0
	}
	ex := h.lanes[e.exit]
	if ex == nil || ex.cool <= now {
		return 0
	}
	return ex.cool - now + maxRecovery
}

// extendHeld keeps the followers held by awaitHold past the explorer's next
// retry, at, pushed back again at now: they go once it recovers
// (releaseHeld), not with it. A lane whose hold ran out is held no more.
func (r *rules) extendHeld(h *host, now, at int64) {
	for _, l := range h.heldLanes() {
		if l.cool <= now {
			l.x.held, l.x.counted = false, false
			continue
		}
		r.holdUntil(h, l, at+maxRecovery, now)
	}
}

// holdUntil keeps held lane l cooling until at, from now, counted as
// throttled (no note: the rule that holds the lanes says why, once for
// all of them).
func (r *rules) holdUntil(h *host, l *lane, at, now int64) {
	if l.cool >= at {
		return
	}
	d := at - max(l.cool, now)
	h.c.ThrottledNs += d
	l.c.cooled(d)
	l.cool = at
	r.rekey(h, l)
}

// releaseHeld lets the followers held by awaitHold go once the explorer's
// first recovery is read: each tries again within a second, in turn, and
// the time it was held beyond that is no longer counted as throttled.
func (r *rules) releaseHeld(h *host, now int64) { r.releaseLanes(h, now, false) }

// releaseLanes lets the held followers go (only those held at the first run's
// count: counted), as releaseHeld says.
func (r *rules) releaseLanes(h *host, now int64, counted bool) {
	i := int64(0)
	for _, l := range h.heldLanes() {
		if counted && !l.x.counted {
			continue
		}
		l.x.held, l.x.counted = false, false
		r.releaseAt(h, l, now+i*int64(heldStagger))
		i++
	}
}

// releaseAt lets lane l, cooling, go at at: the time it was held beyond that
// is no longer counted as throttled.
func (r *rules) releaseAt(h *host, l *lane, at int64) {
	if l.cool <= at {
		return
	}
	d := l.cool - at
	h.c.ThrottledNs -= min(d, h.c.ThrottledNs)
	l.c.coolMs -= uint32(min(d/1e6, int64(l.c.coolMs)))
	l.cool = at
	r.rekey(h, l)
}

// heldLanes returns the lanes awaitHold holds, in their exits' order (a
// map's is random, and a virtual run must repeat exactly).
func (h *host) heldLanes() []*lane {
	var held []*lane
	for _, l := range h.lanes {
		if l.x != nil && l.x.held {
			held = append(held, l)
		}
	}
	slices.SortFunc(held, func(a, b *lane) int { return strings.Compare(a.exit, b.exit) })
	return held
}

// heldStagger spaces the held followers' first tries after their release.
const heldStagger = 50 * time.Millisecond

// seriesWindow holds lane l, pushed back with a Retry-After on a host that
// reads a window, until the series the 429 ended is spent at the window's
// pace, when that comes after the Retry-After: a window's budget, once
// empty, stays empty until the window that held the series ends, whatever
// the server tells (haproxy with a fixed Retry-After: 15 on 10 per 30 s,
// whose rate estimate weighs the period before and counts the refused
// requests: the lane's retry at the told end was pushed back again, and
// the whole series and one more at 10 per 30 s was when it passed). Only
// where the told wait ends a second or more before the window that began
// with the series (a Retry-After that tells the window's end is waited as
// told). The series counts what the lane sent, refused requests too (a
// server that counts them holds the lane that much longer), and one more,
// the retry itself. Not on a window of the clock, which ends for every
// series at once (the gate, clockwindow.go).
func (r *rules) seriesWindow(h *host, l *lane, ser series, now int64) {
	c, e := &h.cap, &h.exp
	if !c.windowed || c.clock.on || ser.at == 0 || ser.sent <= 0 {
		return
	}
	n, w := c.quotaN, c.quotaW
	if n <= 0 || w <= 0 {
		n, w = float64(e.n1), e.readW
	}
	if n < fewRun || w <= 0 {
		// (A quota of a few read from a long Retry-After is as often a
		// penalty longer than the window, haproxy's 2 per 10 s with
		// Retry-After: 30 read as 2 per minute, and a request of the
		// series is a long wait there: 30 s each.)
		return
	}
	if l.cool+int64(time.Second) >= ser.at+w {
		// The Retry-After tells the window's end, as most that tell one
		// do (flask-limiter's, fastify's): it is waited as told.
		return
	}
	end := seriesEnd(ser, n, w)
	if end <= l.cool {
		return
	}
	l.extra().toldEnd, l.x.heldSer = l.cool, ser
	r.coolUntil(h, l, end, now, fmt.Sprintf("the Retry-After ends inside the window the lane spent: %d sent since %.1fs ago, at %.3g per %v", ser.sent, secs(now-ser.at), n, time.Duration(w)))
}

// seriesEnd is when a window of n per w that began with series ser has
// let through all it sent and one more, the retry.
func seriesEnd(ser series, n float64, w int64) int64 {
	return ser.at + int64(float64(ser.sent+1)*float64(w)/n)
}

// rewindow holds again, at the quota of n per w the host has read since,
// the lanes seriesWindow held past a told Retry-After on an earlier
// reading, and gives back what that reading held them beyond it (haproxy's
// 12 per minute with a fixed Retry-After: 60: the first run and its
// recovery read as 12 per 2 minutes held the first explorer 133 s, to
// 140.5 s, and the quota read 2 s later as 12 per minute left it idle
// there, a tenth of the pool for a minute; 12 per minute ends its series
// at 70.5 s). A lane
// the new reading holds longer keeps its wait: a Retry-After told is not
// shortened, and a longer hold is for the next 429 to tell.
func (r *rules) rewindow(h *host, n float64, w int64, now int64) {
	if n < fewRun || w <= 0 {
		return
	}
	for _, l := range slices.Clone(h.heap) {
		if l.x == nil || l.x.toldEnd == 0 {
			continue
		}
		end := max(seriesEnd(l.x.heldSer, n, w), l.x.toldEnd, now)
		if end >= l.cool {
			continue
		}
		if end == l.x.toldEnd {
			l.x.toldEnd = 0 // no hold past the told end any more
		}
		h.note(r, now, "cooldown", l.exit, "cooldown", secs(l.cool-now), secs(end-now), fmt.Sprintf("the series of %d held again at %.3g per %v", l.x.heldSer.sent, n, time.Duration(w)))
		r.releaseAt(h, l, end)
	}
}

// unwindow withdraws the host's window reading (c.windowed), and with it
// the waits seriesWindow added past a told Retry-After on that reading (a
// test passed more than a window of it holds: vsthrottle's 5/s blocking a
// minute, read as 16 per 2 minutes and then refuted, held its explorer the
// whole run). The time given back is no longer counted as throttled.
func (r *rules) unwindow(h *host, now int64) {
	h.cap.windowed = false
	for _, l := range slices.Clone(h.heap) {
		if l.x == nil || l.x.toldEnd == 0 {
			continue
		}
		end := max(l.x.toldEnd, now)
		l.x.toldEnd = 0
		if l.cool <= end {
			continue
		}
		h.note(r, now, "cooldown", l.exit, "cooldown", secs(l.cool-now), secs(end-now), "the window read is withdrawn: the Retry-After's wait alone")
		r.releaseAt(h, l, end)
	}
}

// emptyUntil is how long a 429 without Retry-After says to wait when its
// headers tell nothing remaining and when that ends (rlheader's
// Signal.Wait: a spent quota's reset), a reset told in whole seconds
// given windowEndSlack more; 0 when it says no such thing.
func emptyUntil(o *Outcome) time.Duration {
	if o.RetryAfter > 0 || !o.HasRemaining || o.Remaining >= 1 || o.ResetIn <= 0 {
		return 0
	}
	return min(o.ResetIn, maxRetryAfter) + time.Duration(windowEndSlack)
}
