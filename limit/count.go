package limit

// What the explorer counts between its 429s, and the burst it reads from
// them: a lower bound on a lane's budget whatever the burst, exact when the
// budget cannot have overflowed between.

import "fmt"

// sinceEmpty is what the explorer's successes since its last 429 prove of
// its budget where a burst may carry a run (c.careful or c.extra: a pace
// passed was pushed back, or a burst was seen): one less than it passed
// over the time since, when the budget was known empty. It holds the first
// run to pass after the 429, the one a cooldown's refill carries; later
// runs are held to it no more, since the average over a long slow spell
// lags far behind a limit that was raised (the simulated limit-change, 0.5/s
// raised to 2/s, was under a third of it 170 s later, where it had reached
// it in 90 s). 0 where it proves
// nothing more (no 429 of this explorer yet, or a window: a reset just after
// the 429 gives a whole quota back at once), or where it is too weak to
// tell: a 429 before the search last settled (the lane held the settled
// pace since, and a re-probe looking for a raised limit would be held to
// that average).
func (e *explorer) sinceEmpty(c *capacity, now int64) float64 {
	if !e.fresh || e.cAt < e.settledAt || e.reprobe || !c.careful && c.extra <= 0 {
		return 0
	}
	return e.emptySince(c, now)
}

// emptySince is a lower bound on the explorer's budget whatever the burst:
// what it passed since its last 429, less one, over the time since (0 with
// no 429 of this explorer yet, or on a window).
func (e *explorer) emptySince(c *capacity, now int64) float64 {
	if e.cAt == 0 || c.windowed {
		return 0
	}
	return counted(e.cN, e.cAt, now)
}

// paceStep is a pace the explorer held from at on.
type paceStep struct {
	pace float64
	at   int64
}

// maxCountSteps bounds the paces recorded over one count's interval: a
// bisection changes pace a few times between two 429s.
const maxCountSteps = 12

// startCount begins a count at the explorer's 429 at now: its budget is
// empty, and it waits out its cooldown first (a pace of 0 until its first
// success after).
func (e *explorer) startCount(now int64) {
	e.cAt, e.cN, e.fresh = now, 0, true
	e.cK, e.cLost = 0, false
	e.countStep(0, now)
}

// countStep records that the explorer holds pace from now on, in the
// interval of the count under way.
func (e *explorer) countStep(pace float64, now int64) {
	if int(e.cK) == len(e.cSteps) {
		e.cLost = true
		return
	}
	e.cSteps[e.cK] = paceStep{pace, now}
	e.cK++
}

// lastCountStep is when the latest pace recorded in the count began.
func (e *explorer) lastCountStep() int64 {
	if e.cK == 0 {
		return e.cAt
	}
	return e.cSteps[e.cK-1].at
}

// countSlack is how far, in requests, the explorer's lane fell behind rate
// over the count's interval up to now: what a bucket of that rate would
// have gathered while the lane went slower (or waited out its cooldown).
// A bucket that could not hold it overflowed, and the count is under the
// rate by what was lost.
func (e *explorer) countSlack(rate float64, now int64) float64 {
	var slack float64
	if e.cK == 0 || e.cSteps[0].at > e.cAt {
		// Nothing recorded from the 429 on: the lane waited out its
		// cooldown (a first 429's retries start the count before it).
		first := now
		if e.cK > 0 {
			first = e.cSteps[0].at
		}
		slack += rate * secs(first-e.cAt)
	}
	for i := range int(e.cK) {
		st, end := e.cSteps[i], now
		if i+1 < int(e.cK) {
			end = e.cSteps[i+1].at
		}
		slack += max(0, rate-st.pace) * secs(end-st.at)
	}
	return slack
}

// burstSeen reads a burst from a run of k successes evenly paced at x, the
// (k+1)-th pushed back, by a server whose rate is at least rlo: a bucket
// whose burst lets extra requests through beyond its rate passes about
// extra/(1-rate/x) of them, so extra is at most k*(1-rlo/x).
func (r *rules) burstSeen(h *host, l *lane, x float64, k int32, rlo float64, now int64) {
	c := &h.cap
	if k < 1 || x <= 0 || rlo <= 0 || rlo >= x || c.pair {
		return // (a pace limit with no burst: the first request at a pace went at the old spacing)
	}
	if b := float64(k) * (1 - rlo/x); b > c.extra*(1+tolerance) {
		h.note(r, now, "explore", l.exit, "burst", c.extra, b, fmt.Sprintf("%d successes at %.3g/s before the 429, at least %.3g/s sustained", k, x, rlo))
		c.extra = b
	}
}

// count takes what the explorer sent between its last two 429s: less one,
// over the time between, a lower bound on one lane's budget whatever the
// burst. Over two spans and more (and with the interval before, which is
// tighter) a window's fresh quota cannot inflate it much.
func (r *rules) count(h *host, l *lane, now int64) {
	e, c := &h.exp, &h.cap
	if e.cAt == 0 {
		// Nothing counted on this lane yet (a new explorer): the count
		// starts at this 429, when its budget is known to be empty.
		e.prevN, e.prevT = 0, 0
		e.fall = fallCount{}
		e.startCount(now)
		return
	}
	n, t := e.cN, now-e.cAt
	prevN, prevT := e.prevN, e.prevT
	// Exact (preciseCount): n successes between two empty budgets are the
	// rate within 1/n, unless the budget overflowed between: the lane's
	// slack under the count's upper bound fits in the burst known, with
	// a whole request to spare (a burst of one overflows at any slack:
	// simulated tiers, a lane held at 0.97/s for 52 s on an IP of 1/s,
	// counted its own pace).
	exact := n >= preciseCount && !e.cLost && t > 0
	var slack float64
	if exact {
		slack = e.countSlack(max(float64(n+1)/secs(t), c.pass), now)
	}
	e.prevN, e.prevT = n, t
	e.startCount(now)
	if t <= 0 || e.prevT == 0 {
		return
	}
	// A count over less than two careful spans proves nothing: a window
	// refills its quota at once, and successes on both sides of a reset
	// (ten of a 10-per-10-s window in 8.4 s) read faster than its rate.
	var b float64
	if t >= 2*c.span {
		// A bucket full at both 429s: what it let through less one
		// drained by the last success (nginx's 10r/m with a burst of 10:
		// 6 between two 429s 39.8 s apart, the last 34.1 s after the
		// first: 0.147/s at least, not 0.126/s, of 0.167/s). A window
		// may have reset between, and counts to the second 429.
		end := now
		if !c.windowed && e.cLast > now-t {
			end = e.cLast
		}
		b = counted(n, now-t, end)
	}
	if prevN >= rampRun && t+prevT >= 2*c.span {
		if b2 := float64(n+prevN-2) / secs(t+prevT); b2 > b {
			b, exact = b2, false // over two intervals: the steps of the first are gone
		}
	}
	if b <= c.lo {
		r.countFell(h, l, n, t, now)
		return
	}
	h.note(r, now, "count", l.exit, "count", c.lo, b, fmt.Sprintf("%d successes in %.1fs between two 429s", n, secs(t)))
	c.lo = b
	e.fall = fallCount{}
	r.rampBurst(h, l, now)
	if exact && slack <= c.extra-1 {
		e.exactAt, e.exactN = now, n
	}
}

// rampRunRec is one run of the ramp that passed: n successes in d at pace.
// A follower record (follower) is what the explorer's lane passed in the
// same series before it came to explore, at the followers' paces (pace 0):
// n successes in the d from its first request to the ramp's first success.
type rampRunRec struct {
	pace     float64
	n        int32
	d        int64
	follower bool
}

// maxRampSteps bounds the record: doubling from the slowest lane rate to
// the fastest takes fewer steps.
const maxRampSteps = 24

// rampBurst reads the burst again once the count bounds the rate: the
// explorer's lane began its ramp with a full bucket (its first run), and
// every step above the rate spent the burst by what it passed beyond the
// rate in its span; the step the first 429 ended did so too. burstSeen, at
// the first 429, had only the ramp's own last pass for the rate, which a
// burst had carried: nginx's 5r/s with a burst of 10 read as a burst of 5
// from 10 at 15.5/s "with 7.76/s sustained"; with the count's 4.9/s the
// 7.76/s step spent 3.4 of it and the last one 6.8, and a re-probe's first
// step held for the span a burst of 5 covers ran 8 s on a burst of 10 and
// led every follower above the rate.
func (r *rules) rampBurst(h *host, l *lane, now int64) {
	e, c := &h.exp, &h.cap
	if l.exit != e.rampExit || e.k1 < 0 || e.x1 <= 0 || c.lo <= 0 || c.windowed {
		return
	}
	spent := float64(e.k1) * max(0, 1-c.lo/e.x1)
	for _, st := range e.steps {
		spent += max(0, float64(st.n)-c.lo*secs(st.d))
	}
	if spent > c.extra*(1+tolerance) && spent < float64(e.n1) {
		h.note(r, now, "count", l.exit, "burst", c.extra, spent, fmt.Sprintf("the ramp's steps above the counted %.3g/s spent a burst of %.1f", c.lo, spent))
		c.extra = spent
	}
}

// settledOnCount reports whether the search settled on an exact count
// (preciseCount): short of its ceiling, but not for want of a 429.
func (e *explorer) settledOnCount() bool { return e.exactAt != 0 && e.exactAt == e.settledAt }

// countFell lowers the count's bound once the explorer's counts since fall
// well under it: over fallCounts intervals between its 429s it passed, one
// more counted, less than fallShare of the bound, though a bucket of the
// burst seen would have held what each interval's rate refilled. The budget
// fell since: a second, longer limit's burst ran out under the short one
// (nginx's two zones per address, 5r/s with a burst of 5 and 60r/m with a
// burst of 20: 4 successes in 0.8 s, then 2 in 0.6 s, 1 in 0.7 s and none
// in 0.4 s, and the search settled at the first count's 4.66/s, its
// followers held there until every one was pushed back within a second),
// or the limit was lowered. Not on a window (a reset gives a quota back at
// once) nor a pace limit with no burst (pairLimit).
func (r *rules) countFell(h *host, l *lane, n int32, t int64, now int64) {
	e, c := &h.exp, &h.cap
	if c.lo <= 0 || c.windowed || c.pair || t <= 0 {
		return
	}
	f := &e.fall
	f.n, f.t, f.k = f.n+n, f.t+t, f.k+1
	if f.k < fallCounts {
		return
	}
	if c.extra < c.lo*secs(f.t)/float64(f.k) {
		return // a burst too small to hold an interval's refill: it overflowed, and the counts are short by that
	}
	if float64(f.n+1)/secs(f.t) >= c.lo*fallShare {
		return
	}
	fell := max(r.minLane, float64(f.n)/secs(f.t)) // what they passed: a lower bound, as a count is
	h.note(r, now, "count", l.exit, "count", c.lo, fell, fmt.Sprintf("%d successes in %.1fs over %d intervals between 429s since: the budget fell", f.n, secs(f.t), f.k))
	c.lo = fell
	c.pass = min(c.pass, fell)
	c.safe = min(c.safe, fell)
	e.fall = fallCount{}
	r.updateFollow(h, now, "count", "the counts fell")
}

// fallCount is n successes in t over k intervals between the explorer's
// 429s (countFell).
type fallCount struct {
	t    int64
	n, k int32
}

// fallCounts and fallShare: three intervals between the explorer's 429s
// whose counts together, one more counted, stay under three quarters of
// the bound read before tell a budget that fell; fewer, or closer, are
// the noise of a count of few.
const (
	fallCounts = 3
	fallShare  = 0.75
)
