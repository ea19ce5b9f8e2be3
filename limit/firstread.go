package limit

// The first 429's reading: what the explorer's first run and its recovery
// say of the limit (firstEstimate), the windows that reading may fit
// (windowFit, shortestWindow, the usual and common windows), a window's
// quota tried and read (tryQuota, tryShorter, quotaKnown), and how the ramp
// ends at the first 429 (endRamp) or at its first pace (pairLimit).

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// firstEstimate reads the first 429 once its recovery time rec is known
// (told: the server's Retry-After, else the lane was seen to recover):
// successes n1 in t1, then rec to recover. A recovery long against the
// pace (a window, or a server that penalises) makes the reading close
// enough to refine from, and the search careful.
func (r *rules) firstEstimate(h *host, l *lane, rec int64, told bool, now int64, why string) {
	e, c := &h.exp, &h.cap
	r.releaseHeld(h, now)
	if e.n1 == 0 {
		// Pushed back at its very first request: the IP's budget was spent
		// before (an earlier run, another client behind the same exit),
		// and nothing here reads the limit. The followers keep the pace
		// they started at; the explorer starts again lower when its wait
		// is over (endRamp), and the next 429 is read.
		safe := max(r.minLane, min(r.first*startShare, e.x1/rampStep))
		h.note(r, now, "explore", l.exit, "estimate", c.safe, safe, "pushed back at its first request: no reading of the limit")
		c.safe, e.awaitAt = safe, 0
		r.updateFollow(h, now, "explore", "the followers keep their pace")
		return
	}
	if told {
		r.clockCut(h, rec, now)
	}
	safe := e.wholeRun(rec) // the whole run: the cautious reading
	if e.awaitAt != 0 && rec >= maxRecovery && e.longRun() {
		// A long run read as a minute's window from its first request,
		// not a minute after its last (longRun): recovered at the end of
		// the minute the run began.
		safe = e.wholeRun(max(maxRecovery-e.t1-e.headD, 0))
	}
	if e.ramped > 0 {
		safe = min(safe, e.ramped)
	}
	safe = max(r.minLane, safe)
	e.rec1, e.readW = rec, 0
	h.note(r, now, "explore", l.exit, "estimate", c.safe, safe, fmt.Sprintf("%d successes in %.1fs before the first 429, %s", e.n1, secs(e.t1), why))
	c.safe = safe
	if r.pairLimit(h, l, rec, now) {
		return
	}
	if e.awaitAt != 0 {
		// The recovery is not known yet: followers hold the cautious
		// reading meanwhile, and nothing else is decided.
		r.updateFollow(h, now, "explore", "the first 429, read cautiously until the lane recovers")
		return
	}
	if !told && r.refillTold(h, l, rec, now) {
		return
	}
	// A recovery of a second or two is what a whole-second Retry-After or
	// a first backoff reads as, whatever the limit: only a longer one, and
	// long against the pace, tells a window.
	windowed := rec > windowRecovery*interval(max(e.ramped, safe)) && rec > minWindow
	usual := int64(0) // the usual window the careful reading is over, if one
	if windowed {
		// A window (or a penalty): a pace must hold over one of them.
		c.span = max(minSpan, min(maxSpan, rec+rec/4))
		c.windowed = true
		// The first run fit into one window, and that window lasted at
		// least the run and the recovery: limits are written per usual
		// windows, so it is the first usual one that long, with
		// usualWindow's second of slack (a Retry-After rounded up to
		// whole seconds, or a retry a moment late, must not double it).
		// haproxy's 10 per 30 s with Retry-After: 15: 10 in 6.7 s and
		// 15 s read as 0.46/s, above the limit, and every follower was
		// pushed back at once; 10 per 30 s is the limit. A window's quota
		// that fits is read exactly below (quotaKnown).
		if u := usualWindow(e.t1 + rec); u > e.t1+rec && e.n1 >= minQuota {
			if w := max(r.minLane, float64(e.n1)/secs(u)); w < safe {
				h.note(r, now, "explore", l.exit, "estimate", c.safe, w, fmt.Sprintf("%d per %v: the first usual window as long as the run and its recovery", e.n1, time.Duration(u)))
				safe, c.safe = w, w
				usual = u
				if told {
					e.readW = u
				}
			}
		}
	}
	if windowed && e.n1 >= 2 {
		// A window holds what the first run fitted into it: over the time
		// the run took, the rate was at least the window's.
		e.tight = e.n1 >= 8 && rec <= e.t1+e.t1/4
		if hi := float64(e.n1) / secs(e.t1); hi < c.hi {
			h.note(r, now, "explore", l.exit, "ceiling", c.hi, hi, "a window holds no more than the first run fitted into it")
			c.ceil(hi, now)
		}
	}
	// A test at the ramp's pace: of a pace limit (one or two at a faster
	// pace after a handful), or of a penalty (penaltyTest).
	testable := windowed && e.k1 >= 0 && e.ramped > safe*refineStep
	paceTest := testable && e.k1 <= 1 && e.n1 <= windowTestMax
	penalty := testable && !paceTest && r.penaltyTest(h, told, rec, now)
	paceTest = paceTest || penalty
	w, fits := windowFit(e.t1, e.headD, rec)
	fitted := fits // (fits comes to mean "read at once" below)
	how := "the window its recovery fits"
	bracket := false
	if !fits && e.recLo > 0 {
		bracket = true
		// The retry that recovered came after one pushed back: the
		// recovery took between the two, and the window is the shortest
		// usual one in there (haproxy's 20 per 10 s without a header: 20
		// successes in 8.2 s, a retry pushed back 0.6 s after the 429,
		// the next passed 8.7 s after it).
		w, fits = shortestWindow(e.t1, e.headD, e.recLo, rec, e.thirdTry)
		how = fmt.Sprintf("the shortest usual window between a retry pushed back %.1fs after the 429 and one passed %.1fs after it", secs(e.recLo), secs(rec))
	}
	readable := fits // the window read, if a penalty's test is pushed back
	fits = fits && !paceTest && !c.careful
	if fits && windowed && e.n1 >= minQuota {
		if bracket && !told {
			e.proveQuota(c.follow, e.okAt-rec, e.okAt)
		}
		r.quotaKnown(h, w, now, fmt.Sprintf("%d per %v: the first run's quota over %s", e.quotaN(w), w, how))
		if told && !bracket && e.phase == expSettled {
			e.shortFits = slices.ContainsFunc(usualWindows[:], func(u time.Duration) bool {
				return u < w && int64(u) > rec && int64(u) < e.t1+e.headD
			}) // (reprobeDue)
		}
		if ex := h.lanes[e.exit]; bracket && ex != nil {
			e.shortLo = e.recLo
			if held := e.proof > 0; r.tryShorter(h, ex, w, now) && held {
				// The try is the proof (a bucket pushes it back at once),
				// and it ended the quota's (setPhase).
				r.updateFollow(h, now, "bisect", fmt.Sprintf("%d per %v", e.quotaN(w), w))
			}
		}
		return
	}
	if c.careful || windowed {
		// A window (or a penalty): between its careful reading and what the
		// first run fitted into it, the search bisects, one window a step.
		c.careful = true
		c.pass, c.sent = safe, safe
		if ex := h.lanes[e.exit]; ex != nil && e.phase == expRefine {
			r.setPhase(h, ex, expBisect, now, "a long recovery reads as a window")
			if paceTest {
				// Pushed back at the first request or two of a faster pace
				// (the first may still go at the old spacing), after a
				// handful of successes: a pace limit with no burst (and a
				// fixed Retry-After), or a window of a tiny quota that ran
				// out just there. The ramp's pace, held for two requests
				// more than the first run fitted in, tells: a window of
				// that quota cannot pass them.
				e.wtest = e.n1 + 2
				why := fmt.Sprintf("pushed back at the first request at %.3g/s: %d more at %.3g/s tell a window from a pace", e.x1, e.wtest, e.ramped)
				if penalty {
					// Twice the run and two more: passed, a bucket as
					// large as the whole run could hide no more than
					// half of them (penaltyTest).
					e.wtest, e.ptest, e.ptestW, e.ptestU, e.ptestEnd, e.ptestPre = 2*e.n1+2, true, 0, usual, now+rec, 0
					if fitted {
						e.ptestW = w
					}
					why = fmt.Sprintf("a window, or a penalty %v long: %d at %.3g/s, twice the run and two more, tell", time.Duration(rec).Round(time.Second), e.wtest, e.ramped)
				}
				pace := e.ramped
				if penalty && !told && readable {
					pace = r.bareBlockTest(h, w, rec, now)
					why = fmt.Sprintf("a window of %d per %v from the run's start, or a block of %v from the 429: %d at %.3g/s, twice the window's pace, tell", e.quotaN(w), w, e.blockTry, e.wtest, pace)
				}
				r.setExplorerPace(h, ex, pace, now, "explore", why)
			} else {
				r.windowStep(h, ex, usual, told, now)
			}
		}
	} else if c.extra >= burstMin && safe < e.ramped {
		// A quick recovery, but the first run let a burst through: a
		// bucket, or a window whose budget the ramp's one-second runs had
		// not spent yet (httprate's 30 per 10 s passes 7.8/s for a second).
		// What the ramp passed proves nothing of the rate; the count does.
		// The followers hold it, and the explorer bisects up from it with
		// runs long enough for such a burst to run out.
		if q := 1 / secs(rec); q < safe && !told && e.recLo == 0 {
			// The first retry passed, rec after the 429: a request the
			// bucket refilled, emptied by the run, so its rate is at
			// least one per rec, and the run's count, which held the
			// burst, may be far above it (nginx's 1r/s with a burst of 5:
			// 11 in 8 s, 1.38/s, and every follower pushed back at it).
			// (Not after a retry pushed back: the one that passed a
			// second's window on read a window's reset, not a refill.)
			safe = q
			h.note(r, now, "explore", l.exit, "estimate", c.safe, q, fmt.Sprintf("the retry %.2fs after the 429 passed: a bucket's rate is at least one request per that, the run's count held its burst", secs(rec)))
			c.safe = q
		}
		c.pass, c.sent = safe, safe
		if ex := h.lanes[e.exit]; ex != nil && e.phase == expRefine {
			r.setPhase(h, ex, expBisect, now, fmt.Sprintf("a burst of %.1f let the ramp through: search from the count", c.extra))
			r.nextBisect(h, ex, now)
		}
	} else {
		c.pass, c.sent = e.ramped, e.ramped // no burst, a quick recovery: what the ramp passed holds
		if n := e.n1 + e.headN; n <= rampRun && n > 1 {
			// Unless the ramp passed no more than a run of its first
			// step: a bucket of a burst of two passes that at any pace,
			// and the run's count, less the one its burst held, is all
			// that is read (nginx's 10r/m with a burst of 1 passed
			// 0.485/s, read 2 in 7.2 s, and every follower, at either,
			// was pushed back).
			q := max(r.minLane, float64(n-1)/secs(e.t1+e.headD+rec))
			h.note(r, now, "explore", l.exit, "estimate", c.safe, q, fmt.Sprintf("the ramp passed only its first step's run of %d: a burst of two passes that at any pace; one of them over the run and its recovery", n))
			c.safe, c.pass, c.sent = q, q, q
		}
	}
	if ex := h.lanes[e.exit]; fits && ex != nil && e.phase == expRefine {
		// One success, then a 429 and a wait that fit a window: a quota
		// of one per window, or a pace limit that the network's jitter
		// fooled at the second request (nginx's 30r/m with its fixed
		// Retry-After: 60 reads as one a minute; since endRamp measures
		// the recovery after such a 429, pairLimit reads it unless the
		// retry passed a minute or more on). Refine from the
		// quota, not settle at it, and only from within three ramp
		// steps of the pace that drew the 429: a slower start would
		// take minutes to prove if the reading was the jitter's.
		if q := r.settle * e.quota(w); q < ex.pace && q*rampStep*rampStep*rampStep >= e.x1 {
			e.quotaW = w
			r.setExplorerPace(h, ex, max(q, r.minLane), now, "refine", fmt.Sprintf("%d per %v: the window the first 429's recovery fits; one success proves no quota", e.quotaN(w), w))
		}
	}
	if ex := h.lanes[e.exit]; !fits && ex != nil && e.phase == expRefine && e.n1 == 1 && e.k1 >= 0 && !c.careful && rec > minWindow {
		// One success, then a 429 whose wait fits no common window: a
		// pace limit, whose Retry-After often names its interval (nginx's
		// 12r/m with Retry-After: 5 read as one in 7.1 s, 71% of it, and
		// refined a fifth at a time, four intervals of 5-8 s a step: 74.6%
		// over two minutes; since endRamp measures the recovery after such
		// a 429, pairLimit reads it unless the retry passed a minute or
		// more on). The explorer tries one per that wait: pushed back, the
		// search goes on under it, as from any pace.
		if w := usualWindow(rec); w > e.t1 {
			if q := r.settle / secs(w); q > ex.pace && q > c.safe && q < e.x1 {
				e.quotaW = time.Duration(w)
				r.setExplorerPace(h, ex, q, now, "refine", fmt.Sprintf("one success, then a 429 %.1fs later and a wait of %v: try one per %v", secs(e.t1), time.Duration(rec), time.Duration(w)))
			}
		}
	}
	r.updateFollow(h, now, "explore", "the first 429's estimate")
}

// windowFit reports the common window the first 429 reads as, if any: the
// first run took t1 and the lane recovered rec later, so a window opened by
// its first request is t1+rec long (a sliding or moving one too: its oldest
// hit expired then). A limit is written in a round window, so t1+rec a
// little over one (up to a quarter: a fixed Retry-After counts from the
// 429, not from the window's start) is that window, and the run ran its
// quota out inside it. head is the ramp's head left out of t1 (rampHead):
// a window as long as the whole run counts it.
func windowFit(t1, head, rec int64) (time.Duration, bool) {
	if rec <= minWindow {
		return 0, false // a whole-second Retry-After or a first backoff, whatever the limit
	}
	for _, w := range commonWindows {
		if w == thirdWindow {
			continue // tried by the bare retries, not read from a recovery alone
		}
		t := runFor(int64(w), t1, head)
		if d := t + rec; int64(w) <= d {
			slack := int64(w) / 4
			if w == halfWindow {
				// Half a minute only as the window's end, a Retry-After
				// rounded up to whole seconds: a fixed one of 30 s is as
				// often a penalty after a run of a few seconds (haproxy's
				// 2 per 10 s with Retry-After: 30).
				slack = secondWindow
			}
			return w, d <= int64(w)+slack && t < int64(w)
		}
	}
	return 0, false
}

// shortestWindow is the shortest common window a first run of t1 (and the
// ramp's head left out of it) and a recovery of rec can be: the run fitted
// inside it (the 429 came while its first request still counted), and it
// had ended when the lane recovered. recLo is when the lane was last pushed
// back while recovering (0: not since the first 429): the window was still
// running then. third: the retries tried a third of a minute
// (thirdWindow), which is read only then.
func shortestWindow(t1, head, recLo, rec int64, third bool) (time.Duration, bool) {
	if rec <= minWindow {
		return 0, false
	}
	for i := len(commonWindows) - 1; i >= 0; i-- {
		if commonWindows[i] == thirdWindow && !third {
			continue // not tried: the retries went from under it to past half a minute
		}
		if inBracket(commonWindows[i], t1, head, recLo, rec) {
			return commonWindows[i], true
		}
	}
	if recLo < maxRecovery {
		return 0, false
	}
	// Pushed back a longest usual window on: the retries go a minute
	// apart from then, and the usual windows longer than that are few
	// and far apart (2, 5, 10 minutes...), so the one between two retries
	// is the window (a bare 30 per 5 minutes, recovered between 4 and 5
	// minutes after its 429, read as 30 per 10 minutes: half of it).
	for _, u := range usualWindows {
		if int64(u) > maxRecovery && inBracket(u, t1, head, recLo, rec) {
			return u, true
		}
	}
	return 0, false
}

// shortestUsual is the shortest usual window (usualWindows) a first run of
// t1 (and the ramp's head) and a recovery of rec can be, as shortestWindow
// is of the common ones.
func shortestUsual(t1, head, rec int64) (time.Duration, bool) {
	if rec <= minWindow {
		return 0, false
	}
	for _, u := range usualWindows {
		if inBracket(u, t1, head, 0, rec) {
			return u, true
		}
	}
	return 0, false
}

// inBracket reports whether a window w could be the one a first run of t1
// (and the ramp's head) ran out: still running recLo after the 429, ended
// rec after it.
func inBracket(w time.Duration, t1, head, recLo, rec int64) bool {
	t := runFor(int64(w), t1, head)
	return int64(w) > t+recLo && int64(w) <= t+rec
}

// runFor is the length of the first run a window of w held: the whole run
// if it fits, else the run less the ramp's head (which a shorter window,
// sliding over the run's last seconds, had let go of).
func runFor(w, t1, head int64) int64 {
	if t1+head <= w {
		return t1 + head
	}
	return t1
}

// windowStep starts the bisection from a window's careful reading, the
// first run's quota over the usual window usual (0: none) that its
// recovery completed.
func (r *rules) windowStep(h *host, ex *lane, usual int64, told bool, now int64) {
	e, c := &h.exp, &h.cap
	if step := (float64(e.n1) + 1) / secs(usual) * (1 - tolerance); usual > 0 && told && !e.tight && c.hi > 0 && step < math.Sqrt(c.pass*c.hi) {
		// The reading is the first run's quota over a usual window that
		// a Retry-After completed, most likely the limit itself: the
		// first step above it is one request more a window, not the
		// middle up to what the run fitted into it. Pushed back there,
		// it is the quota (quotaConfirmed): haproxy's 10 per 30 s with
		// Retry-After: 15 spent four 429s, each idling a lane 15 s,
		// bisecting down from 0.70/s. (A recovery seen, not told, may be
		// far longer than the window: httprate's 30 per 10 s recovered
		// 11 s after 32 in 10.8 s.)
		e.quotaW = time.Duration(usual)
		r.setExplorerPace(h, ex, step, now, "bisect", fmt.Sprintf("%d per %v read: try one request more a window", e.n1, time.Duration(usual)))
		return
	}
	r.nextBisect(h, ex, now)
}

// penaltyTest reports whether a first 429's long recovery, told by
// Retry-After, is worth testing as a penalty rather than read as a
// window's end: a server that blocks a client for a while once it ran out
// (Varnish's vsthrottle with a block, Cloudflare's rate-limiting rules with
// a mitigation timeout) tells a block's length, and the first run's quota
// over a window that long holds the lanes to a fraction of the rate
// (vsthrottle's 4/s with a 10-s block: 15 in 7.5 s, read as 15 per 20 s,
// a fifth of it; the bisection up from there took the run; with a block of
// a minute, read as 20 per minute, a fifteenth). The test, the ramp's pace
// held for twice the run and two more, costs a window's server a 429 and
// nothing of its quota (the lane spends it sooner); pushed back, the window
// is read as it would have been. So it is run when the host has a 429 to
// spare, after a run of at least penaltyRun: on a quota of a few a window
// (haproxy's 6 per minute with Retry-After: 60, 120 requests in two
// minutes) the one 429 more is 0.8% of them, and its lane, counted over,
// waited two minutes.
//
// Without a Retry-After, the test is run where the retry that recovered came
// where a block of a usual length from the 429 ends (blockTry), so that the
// recovery fits that block as well as a window from the run's start
// (bareBlockTest), whatever 429s are left to spend: the retries that
// measured the recovery spent them (vsthrottle's 15 per 10 s blocking 30 s:
// five 429s; blocking a minute, seven), and a block read as a window holds
// the lanes to a fraction of the rate for good, where the test costs a
// window one 429.
func (r *rules) penaltyTest(h *host, told bool, rec, now int64) bool {
	e := &h.exp
	if !told {
		return e.blockTry > 0 && rec >= int64(e.blockTry) && e.n1 >= fewRun
	}
	if clockEnd(now+rec, e.t1+e.headD+rec) {
		return false
	}
	return rec%int64(penaltyRound) == 0 && e.n1 >= penaltyRun && h.canProbe()
}

// bareBlockTest sets up the penalty's test of a bare recovery rec after the
// 429 that fits a window w from the run's start and a block from the 429
// alike, and returns its pace: twice the window's quota, which a window
// holds to its count within half of it (the test ends before the window
// the recovery opened ends: a run quicker than half a window), where the
// ramp's pace would run any bucket's burst out, whatever its rate, and a
// block would read as the window again (vsthrottle adds a token only after
// a token's time: 3.88/s refilled nothing of a bucket refilled at 1.5/s).
// The followers hold the window's quota meanwhile, as they would once it is
// read; the test passes its twice the run and two more only where it is not
// a window.
func (r *rules) bareBlockTest(h *host, w time.Duration, rec, now int64) float64 {
	e, c := &h.exp, &h.cap
	start := now - rec - e.t1 - e.headD                    // the run's (awaitAt is cleared at the recovery)
	e.ptestEnd = start + int64(w)*((now-start)/int64(w)+1) // the end of the window the recovery is in
	e.ptestW = w                                           // pushed back, the window as read
	q := e.quota(w)
	if q > c.safe {
		h.note(r, now, "explore", e.exit, "estimate", c.safe, q, fmt.Sprintf("%d per %v: the window's reading, held while the test runs", e.quotaN(w), w))
		c.safe, c.pass, c.sent = q, q, q
	}
	return min(e.ramped, 2*q)
}

// ptestRefutes reports whether a penalty's test refutes the window read,
// its lane's series having had ok successes, run of them in the test: more
// than the run's count and one passed before the told recovery ended (a
// window that ends there, a window of the clock, lets what comes after it
// through afresh).
func (e *explorer) ptestRefutes(ok, run int32) bool {
	return ok-(run-e.ptestPre) > e.n1+1
}

// penaltyLate ends a penalty's test that passed the run's count only after
// the told recovery ended: a window that ends there (Rack::Attack's minute
// of the clock, its Retry-After round by chance) let it through afresh, so
// it refutes nothing, and the window's reading stands (windowStep).
func (r *rules) penaltyLate(h *host, l *lane, now int64) {
	e := &h.exp
	e.wtest, e.ptest, e.run = 0, false, run{}
	h.note(r, now, phaseNames[e.phase], l.exit, "estimate", h.cap.safe, h.cap.safe, "the penalty's test outlasted the told recovery: a window ending there lets it through; the reading stands")
	r.windowStep(h, l, e.ptestU, true, now)
	r.updateFollow(h, now, phaseNames[e.phase], "the penalty's test outlasted the told recovery")
}

// penaltyRound: a block's length is configured, a round number of seconds,
// and told whole at its first 429; a window's end told by Retry-After is
// wherever the window stands (Rack::Attack's minute of the clock told 42 s
// at the first 429: tested as a penalty, its window was read late, 1.23% of
// 429s and 80% after 30 s).
const penaltyRound = 5 * time.Second

// clockEnd reports whether a told recovery that ends at t may be a window
// of the clock's end (Rack::Attack's 40 per minute, its Retry-After round
// at one start in five: tested as a penalty, its window was read late,
// 1.0-1.4% of 429s at those starts): such a window holds the run and the
// recovery, d, so it is a common window at least d long, and t is on its
// own grid. A block's end falls there by chance. On the grid of every
// common window's greatest common divisor (10 s) it fell at one first 429
// in five, which read vsthrottle's block of a minute as a window (5.3% of
// the limit, 68% tested); a block of a minute and its run fit only an
// hour's, whose ends it meets at one first 429 in 1,800. A block of 10 s
// after a run of 8 s fits windows of 20 s and 30 s, whose ends are four
// marks of a minute's six of the grid of 10 s (:10 and :50 end neither):
// two first 429s in fifteen rather than one in five.
func clockEnd(t, d int64) bool {
	for _, w := range commonWindows {
		if int64(w) >= d {
			if _, ok := onGrid(t, int64(w)); ok {
				return true
			}
		}
	}
	return false
}

// tryQuota follows a window test pushed back within the first run's count
// (n1 successes at the ramp's pace, then a 429, twice): a window of n1
// requests, not a pace limit. Its length is between the first run and the
// first run plus its recovery: a penalty longer than the window (haproxy
// with Retry-After: 30 on a 10-s rate) hides it. The explorer tries the
// quota over the shortest common window in there; passed over a few of
// those windows it is the limit (quotaKnown), pushed back the bisection
// goes on under it. The followers keep the careful reading meanwhile: a
// wrong guess costs one lane a 429, not the pool.
func (r *rules) tryQuota(h *host, l *lane, x float64, now int64) bool {
	e, c := &h.exp, &h.cap
	w, ok := shortestWindow(e.t1, e.headD, 0, e.rec1, false)
	if !ok {
		// None of the common windows fits between them: the shortest usual
		// one that does is tried (haproxy's 4 per 5 s told a fixed 5 s: 4
		// in 4.6 s and the wait fit no common window, the careful search
		// climbed from 4 per 10 s 20 intervals a step, 69% over 120 s).
		// A try, not a reading: pushed back, it costs its lane a 429.
		w, ok = shortestUsual(e.t1, e.headD, e.rec1)
	}
	if !ok || e.n1 < minQuota {
		return false
	}
	q := r.settle * e.quota(w)
	if q <= max(c.pass, c.safe) || q >= x {
		return false
	}
	if c.hi == 0 || x < c.hi {
		h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, x, "the window test was pushed back")
		c.ceil(x, now)
	}
	if e.phase == expRefine {
		r.setPhase(h, l, expBisect, now, "a window, not a pace limit")
	}
	e.quotaW, e.qtry, e.run = w, true, run{}
	r.setExplorerPace(h, l, q, now, "bisect", fmt.Sprintf("pushed back within %d again: a window of %d; try %d per %v, the shortest usual window between the first run and its recovery", e.n1, e.n1, e.quotaN(w), w))
	r.updateFollow(h, now, phaseNames[e.phase], "the window test was pushed back")
	return true
}

// tryShorter starts the explorer l on the first run's quota over the next
// usual window shorter than w (and not ended at shortLo), the window the
// host settled on, read
// between two retries of the first recovery (the shortest common window in
// there; shortestWindow) or a shorter try that passed. A limit written in
// an uncommon window (haproxy's 15 per 20 s, or 15 per 15 s whose counted
// retries pushed the recovery past 16 s) read as the next common one kept
// half to three quarters of it for the rest of the run. Passed over the
// quota's try span (proofSpan), the shorter window is read and the next
// shorter tried; pushed back, the host settles on w again at the cost of
// the try's one 429 (the followers hold w's quota meanwhile, and go half
// way to the try's once it passed a request more than its quota). Not a
// window shorter than the first run, which fitted inside one, nor after a
// run of few (fewRun).
func (r *rules) tryShorter(h *host, l *lane, w time.Duration, now int64) bool {
	e := &h.exp
	if e.n1 < fewRun {
		return false // a 429 is too much of what a run of few lets the lanes send (the third of a minute's retry, awaitRetry)
	}
	var u time.Duration
	for _, c := range usualWindows {
		if c >= w {
			break
		}
		if inBracket(c, e.t1, e.headD, e.shortLo, math.MaxInt64/2) {
			u = c
		}
	}
	if u == 0 {
		return false
	}
	q := r.settle * e.quota(u)
	if q <= h.cap.safe*(1+tolerance) {
		return false
	}
	r.setPhase(h, l, expBisect, now, fmt.Sprintf("%d per %v read between two retries: try a shorter window", e.quotaN(w), w))
	e.quotaW, e.qtry, e.run, e.longW = u, true, run{}, w
	r.setExplorerPace(h, l, q, now, "bisect", fmt.Sprintf("try %d per %v, the next usual window under %v", e.quotaN(u), u, w))
	return true
}

// longRun reports whether the first run took longRunLen or more, its head
// included: a run that long most often spent a minute's quota in the
// minute's first seconds, its window no shorter than the run. The
// followers, one ramp step behind, had spent a third to half of theirs;
// held to the run's count (awaitHolds) they spent the rest by the 429's
// next few seconds and idled until the minute's end, and read as the run
// over a minute after its last request they paced under the quota until the
// recovery was seen, 50 s on: 55-61% of the limit from 30 s on, real and
// twin alike (haproxy's bare 50 and 100 per minute, flask-limiter's bare
// fixed 60 per minute, mod_qos's 100 per minute). Read as a minute's window
// from the run's first request and not held, they spread the rest of their
// quota until the recovery: 91-94% from 30 s on, real (86-89% in a build,
// not kept, that released the count alone). A shorter window ends within
// seconds of the 429, where the explorer's retries find it, the followers
// slower meanwhile (haproxy's bare 100 per 10 s over the run: 92.4% → 87.5%
// on its twin, 86.2% on the real server; 98-99% from 30 s on either way).
//
// Only the ramp's own run (k1 ≥ 0): a run counted between two 429s
// (rereadWindow) or drawn by followers was paced at the followers' pace,
// not a step ahead of it, and the count they hold to stops them at the
// window's quota (flask-limiter's bare moving 3 per second and 40 per
// minute, several workers, simulated only: 89.3% → 82.8% over the run,
// 0.70% → 1.78% of 429s, every led lane pushed back at once a minute on,
// when it counted).
func (e *explorer) longRun() bool { return e.k1 >= 0 && e.t1+e.headD >= longRunLen }

// wholeRun is the first run's cautious reading with the recovery rec: its
// successes (the ramp's head too) over the time they took and rec.
func (e *explorer) wholeRun(rec int64) float64 {
	return float64(e.n1+e.headN) / secs(max(e.t1+e.headD+rec, 1))
}

// quota is the first run's successes over the window w, in req/s: what a
// window of that length holds if the run ran its quota out inside it.
func (e *explorer) quota(w time.Duration) float64 { return float64(e.quotaN(w)) / w.Seconds() }

// quotaN is how many of the first run's successes a window w that ended
// it held: the ramp's head too if the whole run fits in w.
func (e *explorer) quotaN(w time.Duration) int32 { return runHeld(w, e.n1, e.t1, e.headN, e.headD) }

// runHeld is how many of a run of n successes over t, after a head of
// headN over headD before it, a window w that ended the run held: the
// head too if all of it fits in w.
func runHeld(w time.Duration, n int32, t int64, headN int32, headD int64) int32 {
	if int64(w) >= t+headD {
		return n + headN
	}
	return n
}

// runStart is when the first run's first request went (the head's too).
func (e *explorer) runStart() int64 { return e.awaitAt - e.t1 - e.headD }

// quotaKnown settles the host at the first run's quota over the window w
// its recovery fits: n1 passed inside one window and the next was pushed
// back, so n1 per w is the limit and nothing between it and n1+1 per w
// sends more a window. The followers take it at once, without a careful
// span per step of a slow window and a 429 and a lane's recovery per
// failed one; a re-probe after a quiet spell finds a raised limit.
func (r *rules) quotaKnown(h *host, w time.Duration, now int64, why string) {
	r.settleQuota(h, float64(h.exp.quotaN(w)), w, now, "explore", why)
}

// settleQuota settles host h on a window's quota of n per w, read without a
// header (by rule, in a change record saying why).
func (r *rules) settleQuota(h *host, n float64, w time.Duration, now int64, rule, why string) {
	e, c := &h.exp, &h.cap
	ex := h.lanes[e.exit]
	lane := ""
	if ex != nil {
		lane = ex.exit
	}
	c.setQuota(n, int64(w))
	r.readWindow(h, n, w, now, rule, lane, why)
	if c.hi > 0 {
		h.note(r, now, rule, lane, "ceiling", c.hi, 0, "a window's quota: nothing above it to search")
		c.hi = 0
	}
	if ex == nil {
		r.updateFollow(h, now, rule, "a window's quota")
		return
	}
	r.settleHere(h, ex, now, fmt.Sprintf("%.0f per %v", n, w))
}

// readWindow takes n per w as what host h lets through (by rule, on lane,
// in a change record saying why): the estimate, the pace passed and the
// followers' at once, each step of a search from there proven over one of
// its windows, and the lanes held on an earlier reading held again on it
// (rewindow).
func (r *rules) readWindow(h *host, n float64, w time.Duration, now int64, rule, lane, why string) {
	c := &h.cap
	q := max(r.minLane, n/w.Seconds())
	h.note(r, now, rule, lane, "estimate", c.safe, q, why)
	c.safe, c.pass, c.sent, c.at = q, q, q, now
	c.careful, c.windowed = true, true
	c.span = max(minSpan, min(maxSpan, int64(w)+int64(w)/4))
	r.rewindow(h, n, int64(w), now)
}

// asBucket withdraws host h's window reading: a bucket's proofs from now
// on (no careful span), no quota, and the waits held on the reading given
// back (unwindow).
func (r *rules) asBucket(h *host, now int64) {
	c := &h.cap
	c.careful, c.span = false, 0
	c.setQuota(0, 0)
	r.unwindow(h, now)
}

// endRamp ends the slow start: the first 429 on the host, drawn by lane l at
// pace x after its series ser of successes (the explorer, or followers that
// were pushed back first: the ramp's pace let a burst through).
func (r *rules) endRamp(h *host, l *lane, x float64, ser series, ra time.Duration, now int64) {
	e, c := &h.exp, &h.cap
	e.n1, e.t1 = ser.ok, max(now-ser.at, int64(time.Millisecond))
	e.headN, e.headD = 0, 0
	e.k1, e.x1 = ser.run, x
	if l.exit != e.exit {
		e.k1 = -1
		x = max(x, e.pace)
		c.careful = true // followers were pushed back at what the ramp passed
	} else if l.exit == e.rampExit {
		if n, d, ok := e.rampHead(); ok {
			h.note(r, now, "ramp", l.exit, "run", float64(e.n1), float64(e.n1-n), fmt.Sprintf("the ramp's first %d successes took %.1fs of the run's %.1fs: the run is the %d after them", n, secs(d), secs(e.t1), e.n1-n))
			e.n1, e.t1, e.headN, e.headD = e.n1-n, e.t1-d, n, d
		}
	}
	h.note(r, now, "ramp", l.exit, "ceiling", c.hi, x, "the first 429 ends slow start")
	c.ceil(x, now)
	ramped := c.pass
	if l.exit == e.exit {
		r.burstSeen(h, l, x, ser.run, c.pass, now)
	}
	e.ramped, c.pass = ramped, 0 // what the ramp passed (nothing, if its first pace failed)
	r.setPhase(h, l, expRefine, now, "the first 429")
	e.cAt, e.cN, e.prevN = 0, 0, 0
	if ex := h.lanes[e.exit]; ex != nil {
		if ex == l {
			e.cAt, e.fresh = now, true
		}
		// Start again from what the ramp passed, in smaller steps (from
		// two steps back when the server showed no burst: its quick runs
		// were exact).
		start := max(e.ramped, x/rampStep/rampStep)
		if ex == l && e.firstPaceRefused() && ra <= time.Duration(maxRecovery) {
			// Pushed back at the first pace's second request: the retry
			// that measures the recovery goes at its cooldown, not an
			// interval of a quarter of the pace later (pairLimit).
			start = x / rampStep
		}
		r.setExplorerPace(h, ex, max(r.minLane, start), now, "refine", "start again below the first 429, in smaller steps")
	}
	// A Retry-After longer than the longest usual window is a penalty or a
	// URL's own wait, not a window: the lane honours it (and hands the
	// search on), the estimate reads it as saying nothing of the window,
	// as a quick recovery would.
	rec := int64(ra)
	if rec > maxRecovery {
		rec = int64(time.Second)
	}
	if rec > 0 && l.exit == e.exit && e.firstPaceRefused() {
		// Pushed back at the first pace's second request, told to wait:
		// a pace limit with no burst whose Retry-After is most often a
		// fixed header that says nothing of its interval (nginx's
		// add_header): 6r/m told 1 s drew 27% of 429s, every follower
		// sent at one request per the wait and pushed back at once; 20r/m
		// told 10 s held one per 10 s, 30% of it. The recovery is
		// measured as without one (pairLimit), the Retry-After the least
		// each retry waits; a retry the Retry-After would hold past its
		// time goes on another lane (handAwait).
		rec = 0
	} else if rec > 0 && rec <= quickTold && l.exit == e.exit && h.cap.extra >= burstMin {
		// A short Retry-After after a run that let a burst through: a
		// bucket's refill, whose rate the retry that passes bounds
		// (firstEstimate) where the run's count held the burst (nginx's
		// 1r/s with a burst of 5 told 1 s: 14 learning 429s). The
		// Retry-After is the least the retry waits.
		rec = 0
	}
	told := ra > 0 && rec == int64(ra)
	if rec <= 0 {
		// No Retry-After: the recovery time is unknown until the lane is
		// seen to recover; meanwhile assume the slowest usual window. A
		// quick retry that succeeds reads as a bucket (the wait is only an
		// upper bound on the recovery); one pushed back again, as a window.
		e.awaitAt, e.awaitBroke, e.thirdTry, e.recLast = now, false, false, 0
		e.overOn, e.over, e.overAt, e.overRead = true, "", 0, false
		rec, told = maxRecovery, false
	}
	r.firstEstimate(h, l, rec, told, now, fmt.Sprintf("recovery %v", time.Duration(rec)))
}

// rampHead reports the ramp's slow first steps, n successes over d, when
// they are no part of the run a window counted: the ramp doubles its pace
// every second or two, so a first run that ran a quota of 100 or more out
// took ten seconds or more, its first requests at half a request a second
// and nearly all of it in the last few (haproxy's 100 per 10 s: 107
// successes in 11.1 s, 103 of them in the last 6.4). A window of 10 s held
// the run less its head, and the run's length read the window as half a
// minute (34% of the limit). The head is the leading steps that together
// hold at most headShare of the run, on a run as long as most of the
// shortest common window; the steps must account for the whole run. What
// the lane passed as a follower before it came to explore leads the steps
// (a follower record) and is a head too, whatever its share: one request 4 s
// before the ramp was a tenth of fiber's 10 per 10 s, and the run of 10 in
// 10.4 s read as 10 per 20 s.
func (e *explorer) rampHead() (n int32, d int64, ok bool) {
	if e.k1 < 0 || e.t1 < longRunLen || len(e.steps) == 0 {
		return 0, 0, false
	}
	total := e.k1
	for _, st := range e.steps {
		total += st.n
	}
	if total != e.n1 {
		return 0, 0, false
	}
	i, first := 0, true // first: the next step's first success comes at d
	for ; i < len(e.steps) && (e.steps[i].follower || float64(n+e.steps[i].n) <= headShare*float64(e.n1)); i++ {
		st := e.steps[i]
		n += st.n
		if st.follower {
			d += st.d // measured up to the ramp's first success
			continue
		}
		k := st.n
		if first {
			k-- // the run's first success starts its time
			first = false
		}
		d += int64(float64(k) * 1e9 / st.pace)
	}
	if i == 0 {
		return 0, 0, false
	}
	if !first {
		next := e.x1 // the first success kept comes an interval of its pace later
		if i < len(e.steps) {
			next = e.steps[i].pace
		}
		d += interval(next)
	}
	if d >= e.t1 {
		return 0, 0, false
	}
	return n, d, true
}

// headShare is the most of a first run the ramp's head may hold.
const headShare = 0.05

// firstPaceRefused reports whether the first 429 came at the explorer's
// second request, from the ramp's first pace: nothing passed to read a
// limit from but one success and the time to the 429.
func (e *explorer) firstPaceRefused() bool { return e.n1 == 1 && e.k1 == 1 && e.ramped == 0 }

// pairLimit reads a first 429 at the ramp's second request, from its first
// pace, once a lane recovered (rec after the 429; a Retry-After is only the
// least each retry waited, endRamp): a pace limit with no burst (nginx's
// limit_req at 20r/m: one request per 3 s), or a quota of one a window. The
// request that drew it came t1 after the one that passed, the retry that
// passed t1+rec after it (and one pushed back t1+recLo after it, if any):
// the interval the server wants is between. Two requests at a pace prove
// it (proofSpan; the first of them the success before, pairRun), so the
// search climbs from the slower spacing from one round limit to the next
// (pairRung), a step an interval long, and settles at its first failed
// step (nextBisect), as each costs a 429 where few requests go. Before, the
// retry read as a window of 10 s, and the lanes held 1 per 10 s: 30% of
// 20r/m.
func (r *rules) pairLimit(h *host, l *lane, rec int64, now int64) bool {
	e, c := &h.exp, &h.cap
	if !e.firstPaceRefused() || e.awaitAt != 0 || rec >= maxRecovery || l.exit != e.exit {
		return false
	}
	lo := 1 / secs(e.t1+rec)
	hi := e.x1
	if e.recLo > 0 {
		hi = min(hi, 1/secs(e.t1+e.recLo))
	}
	if lo*costlyDone >= hi {
		hi = lo * costlyDone // jitter: the two spacings a step apart
	}
	c.pair, c.careful, c.span = true, false, 0
	r.unwindow(h, now)
	h.note(r, now, "explore", l.exit, "floor", c.pass, lo, fmt.Sprintf("one success, a 429 %.1fs after it, a retry %.1fs after it passed: a pace limit with no burst, one request per %.1f-%.1fs", secs(e.t1), secs(e.t1+rec), 1/hi, 1/lo))
	c.pass, c.sent, c.safe, c.at = lo, lo, lo, now
	c.ceil(hi, now)
	c.pairHi = hi
	r.nextBisect(h, l, now)
	r.updateFollow(h, now, "explore", "the retry's spacing passed")
	return true
}

// noWindow ends a window test that passed: the first 429 was a pace limit
// pushed back at the first request of a faster pace, its Retry-After a
// fixed penalty. What the ramp passed holds, the search refines above it
// in quick steps, up to the pace that drew the 429.
func (r *rules) noWindow(h *host, l *lane, now int64) {
	h.exp.chain = chain{}
	e, c := &h.exp, &h.cap
	n := e.wtest
	e.wtest, e.run = 0, run{}
	r.asBucket(h, now)
	c.pass, c.sent, c.at = l.pace, l.pace, now
	h.note(r, now, "explore", l.exit, "ceiling", c.hi, e.x1, fmt.Sprintf("%d in a row at %.3g/s: not a window", n, l.pace))
	if e.ptest {
		// A penalty's test: the run's count may have been a bucket's
		// burst, which held at most the run; the rest came at the rate.
		e.ptest = false
		if e.blockTry > 0 {
			c.block = int64(e.blockTry)
			h.note(r, now, "explore", l.exit, "cooldown", 0, secs(c.block), fmt.Sprintf("a block of %v, not a window: a lane pushed back waits it out", e.blockTry))
		}
		c.pass = max(r.minLane, l.pace*float64(n-e.n1)/float64(n))
		h.note(r, now, "explore", l.exit, "floor", l.pace, c.pass, fmt.Sprintf("a bucket as large as the run's %d would have let %d of them through: at least %.3g/s", e.n1, e.n1, c.pass))
	}
	c.ceil(e.x1, now)
	r.setPhase(h, l, expRefine, now, "a pace limit: refine above what the ramp passed")
	r.updateFollow(h, now, "explore", "the ramp's pace holds")
	if r.holdRound(h, l, now) {
		return
	}
	r.setExplorerPace(h, l, min(l.pace*refineStep, math.Sqrt(l.pace*c.hi)), now, "refine", "a step up")
}

// commonWindows are the commonest of the usual windows (quota.go), longest
// first, that windowFit matches a first 429's reading to: few on purpose, as
// a reading matched to the wrong window settles the host at the wrong pace.
// Half a minute is one (haproxy's and flask-limiter's 10 per 30 s without a
// header read as 10 per minute: 48% of the limit), and the bare retries test
// for it (halfWindow).
var commonWindows = [...]time.Duration{time.Hour, time.Minute, halfWindow, thirdWindow, shortestCommon}

// shortestCommon is the shortest of commonWindows.
const shortestCommon = 10 * time.Second

// halfWindow is the common window between the shortest and a minute.
const halfWindow = 30 * time.Second

// thirdWindow is the common window between the shortest and half a minute:
// tried by the bare retries only, not matched to a recovery on its own
// (windowFit).
const thirdWindow = 20 * time.Second
