package limit

import (
	"fmt"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// X-RateLimit-Remaining alone (no limit, no reset: Varnish's
// vsthrottle.remaining sent as its README writes it) says how many more
// requests a lane's budget lets through now, never when it refills, so it
// sets no pace by itself (declared.go needs a reset or a limit). Four
// things are read from it here:
//
//   - rule remaining: its fall to 0 on a success is the run's end told one
//     request early, read as the 429 the next request would draw, which is
//     never sent (remainingSpent, remainingRun). A 0 after a 0 (a refill's
//     token taken as soon as it came) or after a 429 reads nothing.
//   - the first recovery's count: a bucket's refill, its rate bracketed,
//     unless a window explains it (refillTold, windowGivesBack).
//   - a run's proof, on a host read so: the bucket's level at the run's
//     start and end (remPassed).
//   - no debt for a lane told its budget holds more (remLeft, setPace).
//
// Read as a pace from one answer to the next, whole tokens mislead:
// vsthrottle drops the fraction of a token a request lets through, so a
// lane faster than the refill counts none of it. Before these, vsthrottle's
// bucket of 30 refilled once per 2 s, read from its 429s as 31 per 10 s,
// drew 20 429s in 120 s (one per lane that spent its bucket at the
// followers' pace) and held 81% of its rate after 30 s.

// remainingAlone reports whether o carries X-RateLimit-Remaining with
// nothing that says when it refills: no reset, no window. A limit may come
// with it, a bucket's size or a window's quota (X-RateLimit-Limit, or
// Shopify's X-Shopify-Shop-Api-Call-Limit: used/size): it sets no pace
// without a window either.
func remainingAlone(o *Outcome) bool {
	return o.HasRemaining && !o.HasReset && o.ResetIn == 0 && o.Window <= 0
}

// remainingSpent records the lane's Remaining reading from o, answered at
// now, and reports whether it told the lane's budget spent: a success whose
// Remaining alone fell to 0 from more (or from no reading yet). A 429
// spends it too, with the header or without (servers that send it on
// requests let through only).
func (l *lane) remainingSpent(o *Outcome, now int64) bool {
	if o.Verdict == verdict.Throttled {
		if l.remRead() {
			l.x.rem = remSpent
		}
		return false
	}
	if !remainingAlone(o) || o.Verdict != verdict.OK {
		return false
	}
	x := l.extra()
	x.remN, x.remAt = float32(max(0, o.Remaining)), now
	if o.Remaining >= 1 {
		x.rem = remLeft
		return false
	}
	fell := x.rem != remSpent
	x.rem = remSpent
	return fell
}

// remState is what a lane's last Remaining alone said.
type remState uint8

const (
	remUnread remState = iota // nothing yet
	remLeft                   // 1 or more
	remSpent                  // 0, or a 429 since
)

// remainingRun reads lane l's budget told spent by the answer to rec as
// the 429 its next request would have drawn: the throttled rules run as
// for one, and nothing counts it as a 429 (the server sent none).
func (r *rules) remainingRun(h *host, l *lane, rec ticketRec, sent, now int64, u float64) {
	h.note(r, now, "remaining", l.exit, "remaining", 1, 0,
		"X-RateLimit-Remaining fell to 0: the next request would be pushed back; read as its 429, which is not sent")
	r.throttled(h, l, rec, &Outcome{Verdict: verdict.Throttled}, sent, now, u)
}

// refillTold reads the recovery of the explorer l's first 429 (rec after
// it, the lane quiet meanwhile) where the answer that recovered, at now,
// told X-RateLimit-Remaining alone: R left. A window's reset gives back
// its whole quota, what the first run took or near it; a bucket gives back
// what it refilled in rec, R+1 whole tokens and fewer than R+2, so its rate
// lies between (R+1)/rec and (R+2)/rec, or (R+2)/(rec-recLast) where a
// retry was pushed back recLast after the 429. The followers take the
// lower bound and the explorer searches up to the upper one; a pace above
// the rate shows as Remaining falling to 0, read as a 429 not sent (rule
// remaining). It reports whether it read the recovery so.
//
// Read as a window, vsthrottle's bucket of 30 refilled at 0.5/s, 31
// successes then 9.8 s to recover, was 31 per 10 s, six times its rate, and
// every follower spent its bucket at that pace before falling back.
func (r *rules) refillTold(h *host, l *lane, rec, now int64) bool {
	e, c := &h.exp, &h.cap
	x := l.x
	if x == nil || x.remAt != now || rec <= 0 || e.n1 < 2 {
		return false
	}
	left := float64(x.remN)
	if 2*(left+1) >= float64(e.n1) {
		return false // a window's reset (or a bucket that refills as fast)
	}
	if w := windowGivesBack(e.n1+e.headN, e.t1+e.headD, rec, left+1); w > 0 {
		h.note(r, now, "explore", l.exit, "estimate", c.safe, c.safe, fmt.Sprintf(
			"X-RateLimit-Remaining told %g left %.1fs after the 429: a window of %v the run opened gives back as few by then; not read as a bucket's refill", left, secs(rec), w))
		return false
	}
	// The R+1 came over rec at most, and over rec less the last retry
	// pushed back at least: the refill the reading sees may have started
	// after the 429 (vsthrottle's 40 per 20 s gave back 12 tokens 7.5 s
	// after it, where 2/s refills 15, as from the last retry, 1.1 s on;
	// counted from the 429 the bounds, 1.60-1.73/s, held the lanes at 83%).
	lo, hi := (left+1)/secs(rec), (left+2)/secs(rec-e.recLast)
	if (e.ramped > 0 && lo >= e.ramped) || hi <= lo {
		return false
	}
	h.note(r, now, "explore", l.exit, "estimate", c.safe, lo, fmt.Sprintf(
		"X-RateLimit-Remaining told %g left %.1fs after the 429, the lane quiet: a bucket's refill of %g whole tokens, not a window's reset of %d; its rate between %.3g/s and %.3g/s",
		left, secs(rec), left+1, e.n1, lo, hi))
	c.safe, c.pass, c.sent = lo, lo, lo
	c.careful, c.refill = false, true
	r.unwindow(h, now)
	c.extra = max(c.extra, float64(e.n1)-lo*secs(e.t1)) // the bucket's burst
	if c.hi == 0 || hi < c.hi {
		c.ceil(hi, now)
	}
	if ex := h.lanes[e.exit]; ex != nil && e.phase == expRefine {
		r.setPhase(h, ex, expBisect, now, "a bucket's refill, told by Remaining: search within its bounds")
		r.nextBisect(h, ex, now)
	}
	r.updateFollow(h, now, "explore", "a bucket's refill, told by Remaining")
	return true
}

// remNow is the X-RateLimit-Remaining alone lane l's answer at now told,
// and whether it told one.
func (l *lane) remNow(now int64) (float64, bool) {
	if !l.remRead() || l.x.remAt != now {
		return 0, false
	}
	return float64(l.x.remN), true
}

// remRead reports whether lane l was ever told Remaining alone.
func (l *lane) remRead() bool { return l.x != nil && l.x.rem != remUnread }

// remTold reports whether lane l's answer at now told Remaining alone.
func (l *lane) remTold(now int64) bool {
	_, ok := l.remNow(now)
	return ok
}

// remPassed is what the explorer's run on lane l, el long and ended by
// the answer at now, proves where Remaining alone was told at its start
// and end: the bucket's level says it, whatever its burst. Held (a 0 held
// included: every request found the token it needed), the pace is within
// the refill; fallen, the refill is the pace less the fall over the run.
// (Proven by the burst's discount instead, vsthrottle's 0.455/s held a
// minute over a burst of 27 proved nothing, and was read as a ceiling
// under its rate of 0.5/s.)
func (e *explorer) remPassed(l *lane, el, now int64) float64 {
	end, _ := l.remNow(now)
	return max(0, l.pace-max(0, e.runRem-end)/secs(el))
}

// windowGivesBack is a common window that explains got requests given back
// rec after a run of n in t ended, as a bucket's refill would: one the run
// opened and that ended by then, whose count of the run weighs in less as
// it slides on (a sliding counter's, the last window weighted by what is
// left of it: n·(T−W)/W, T the run and the recovery) or ages out hit by hit
// (a moving window's, the run's hits older than T−W: n·(T−W)/t if evenly
// spread, and fewer where a ramp's first steps were slow), within a factor
// of two of got; 0 for none. A fixed window gives back all of the run.
// A sliding counter of 30 per minute (simulated), its retry passed 54 s
// after the 429, just past the minute, told 0 left: a bucket of that would
// refill one request a minute.
func windowGivesBack(n int32, t, rec int64, got float64) time.Duration {
	end := t + rec
	for _, w := range commonWindows {
		if int64(w) < t || int64(w) > end {
			continue
		}
		past := float64(end - int64(w))
		g := min(float64(n)*past/float64(w), float64(n)*past/float64(max(t, 1)))
		if g <= 2*got {
			return w
		}
	}
	return 0
}

// remLeft reports whether lane l's last Remaining alone said 1 or more: its
// budget is not spent, so a slower pace holds nothing it sent before as a
// debt (setPace). A token bucket of 60 a minute, its followers' series
// spent at the ramp's pace, held nine lanes of ten idle for 50 s once the
// pace fell to its refill, their buckets full and unused.
func (l *lane) remLeft() bool { return l.x != nil && l.x.rem == remLeft }
