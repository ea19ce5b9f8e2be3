package limit

import (
	"fmt"
	"math"
)

// The proof of a window's quota read between two retries of the first
// recovery (firstEstimate): a bucket's refill, and a window that frees the
// first run's requests as they age, read the same there; the explorer
// tells them apart before the followers take the reading.

// proveQuota holds the followers half way (geometrically) from follow, the
// pace they held, until the explorer, settled on a window's quota read
// between two retries of its first recovery, passes proofRun more at its
// pace (updateFollow): the retry that passed may have been a bucket's
// refill, not a window's end (nginx's 10r/m with a burst of 10: 12 in 7.1 s,
// a retry pushed back 0.5 s after the 429 and one passed 8.1 s after it,
// read as 12 per 10 s, seven times its rate; every follower took it and
// was pushed back). A window's quota passes them at once; a bucket pushes
// the explorer back within them (refillRead). from is the 429's time, ok
// the recovering retry's.
func (e *explorer) proveQuota(follow float64, from, ok int64) {
	e.proof, e.proofN, e.proofFrom, e.proofOK, e.proofFollow = proofRun, 1, from, ok, follow
}

// proofPushed applies a 429 of the explorer l, sent at x, that proves a
// window's quota (proveQuota). A bucket's refill spent pushes back so, and
// so does a moving window, a sliding log or counter, whose count frees the
// first run's requests one by one as they age (flask-limiter's moving 15
// per 15 s read as 15 per 10 s: the retry that passed freed the run's first
// request only). The two readings lie far apart (five to seven times on
// nginx's per-minute buckets): the bucket's rate is under what passed
// since the 429, plus one, over the time since; the window's is about the
// first run over the time from its start to the recovery. Such a
// window frees the first run's requests at least as fast as the run sent
// them, and it began at the ramp's first pace: the explorer tests that
// pace, followers held. proofRun passed there is a window (windowRead);
// pushed back, a bucket (refillRead). Where the bucket's bound is not under
// it there is nothing to test: a bucket.
func (r *rules) proofPushed(h *host, l *lane, x float64, now int64) {
	e, c := &h.exp, &h.cap
	if e.suspect {
		r.refillRead(h, l, x, now)
		return
	}
	_, hi := e.refillBounds(now)
	p := r.startPace()
	if p <= hi*(1+tolerance) {
		r.refillRead(h, l, x, now)
		return
	}
	e.proof, e.suspect = proofRun, true
	h.note(r, now, "explore", l.exit, "ceiling", c.hi, x, fmt.Sprintf("pushed back after %d at the quota's pace since the 429: a bucket's refill spent (under %.3g/s), or a window freeing the first run's requests as they age; try %.3g/s, the ramp's first pace", e.proofN, hi, p))
	c.ceil(x, now)
	r.setExplorerPace(h, l, max(r.minLane, min(r.maxLane, p)), now, "settled", "the window's reading tells a bucket from a window")
	r.updateFollow(h, now, "settled", "a bucket or a window: the followers hold")
}

// windowRead ends the test of proofPushed: the explorer passed proofRun at
// the ramp's first pace, which the bucket's bound is under. The window is
// longer than the one read (its count frees the first run's requests as
// they age): its careful reading, the first run over the time from its
// start to the recovery, is the estimate (a window of that count that
// freed the run's first request no sooner is at least that), and the
// search bisects between what passed and the quota's pace pushed back.
func (r *rules) windowRead(h *host, l *lane, now int64) {
	e, c := &h.exp, &h.cap
	e.proof, e.suspect = 0, false
	h.note(r, now, "explore", l.exit, "floor", c.pass, l.pace, fmt.Sprintf("%d passed at %.3g/s after the quota's pace was pushed back: a window longer than read, freeing the first run's requests as they age, not a bucket", proofRun, l.pace))
	c.setQuota(0, 0)
	c.careful, c.windowed = true, true
	c.pass, c.sent, c.at = l.pace, l.pace, now
	c.safe = max(l.pace, e.wholeRun(e.rec1))
	r.setPhase(h, l, expBisect, now, "a window longer than read")
	r.nextBisect(h, l, now)
	r.updateFollow(h, now, "bisect", "a window longer than read")
}

// refillBounds bound a bucket's rate by the proof of a window's quota
// (proveQuota): since the 429 at proofFrom, which left it under a request,
// the bucket let proofN through, the last sent at proofOK, and pushed back
// the request of now. Its rate is under one more than passed over the time
// to now; over the time to the last that passed, it refilled what passed
// less what it held at the 429, half a request as likely as not (lo: an
// estimate, not a bound).
func (e *explorer) refillBounds(now int64) (lo, hi float64) {
	n := float64(e.proofN)
	lo = (n - 0.5) / secs(max(e.proofOK-e.proofFrom, 1))
	hi = (n + 1) / secs(max(now-e.proofFrom, 1))
	return lo, max(lo*refineStep, hi)
}

// refillRead applies the 429 of the explorer l, sent at x, that ended the
// proof of a window's quota (proveQuota, proofPushed): the recovery was a
// bucket's refill. The search starts between its bounds (refillBounds),
// carefully, with the burst the first run showed beyond the lower one.
func (r *rules) refillRead(h *host, l *lane, x float64, now int64) {
	e, c := &h.exp, &h.cap
	lo, hi := e.refillBounds(now)
	lo = max(r.minLane, lo)
	e.proof, e.suspect = 0, false
	r.count(h, l, now)
	h.note(r, now, "explore", l.exit, "ceiling", c.hi, min(x, hi), fmt.Sprintf("pushed back after %d since the 429: the recovery was a bucket's refill, about %.3g/s and under %.3g/s, not a window's end", e.proofN, lo, hi))
	c.ceil(min(x, hi), now)
	c.setQuota(0, 0)
	r.unwindow(h, now)
	// The estimate is the middle: the followers, who paced under the
	// rate until now, hold their burst in reserve, and the explorer, its
	// bucket just emptied, is pushed back within seconds where the middle
	// is above the rate.
	c.careful, c.pass, c.sent, c.safe = true, 0, 0, math.Sqrt(lo*hi)
	e.tight = false // the first run's, a window's reading
	if b := float64(e.n1+e.headN) - lo*secs(e.t1+e.headD); b > c.extra {
		h.note(r, now, "explore", l.exit, "burst", c.extra, b, "what the first run passed beyond the bucket's rate")
		c.extra = b
	}
	r.setPhase(h, l, expBisect, now, "a bucket, not a window")
	r.nextBisect(h, l, now)
	r.updateFollow(h, now, "explore", "a bucket's refill, not a window's quota")
	r.forgiveBurst(h, int32(c.extra), now)
}

// forgiveBurst takes a bucket's burst off the followers' series: what a
// follower sent beyond the rate since its series began is the burst the
// bucket held, not a debt to wait out at the new pace (a series of 20 at
// 0.16/s idled every follower of nginx's 10r/m with a burst of 20 for a
// hundred seconds, its burst spent long before).
func (r *rules) forgiveBurst(h *host, burst int32, now int64) {
	if burst < 1 {
		return
	}
	for _, o := range h.lanes {
		if o.exit == h.exp.exit || o.serSent <= 1 || o.pace <= 0 || o.tat == 0 {
			continue
		}
		o.serSent = max(1, o.serSent-burst)
		if tat := max(now, o.serAt+int64(float64(o.serSent)*1e9/o.pace)); tat < o.tat {
			o.tat = tat
			r.rekey(h, o)
		}
	}
}
