package limit

import (
	"math"
	"time"
)

// A quota is what a server declared: a limit per window and what remains of
// the current one. A known limit and window set one lane's pace exactly
// (Settle times limit/window, like every other pace); what remains is a
// hard stop, never a pace: on a sliding or moving window little remains
// just after each boundary (the previous window still weighs in), and
// spreading it over the rest of the window slowed lanes to a third of their
// limit. Only while nothing is known of the window (no reset seen yet) is
// the remainder spread until the reset, which is safe whatever the window.
//
// A sliding-window counter (go-chi/httprate) rejects once its estimate,
// rounded, reaches the limit less one: with a small limit N even pacing
// must keep half a request of headroom per window, so a declared pace is
// at most 1-0.6/N of the limit (0.94 for 10 per minute) unless the window
// is known fixed or the limit a rate (declaredRate).
//
// A fixed window (flask-limiter's, express-rate-limit's) is paced at its
// declared rate exactly, without Settle's margin: what remains is a hard
// stop until the reset the server states, so an even pace a little fast
// only waits at the window's end, and nothing of the window is wasted
// (Settle's 5% and the sliding headroom cost 6 per minute 10% of its
// limit). A window is known fixed once a new one began with most of it
// remaining after the lane had used most of the last; a 429 on the host
// then (a reset stated early) brings the margin back for good.
type quota struct {
	limit  float64 // declared requests per window; 0 = unknown
	window int64   // declared window, ns; 0 = unknown
	// Without a declared window (X-RateLimit-Limit alone) it is inferred:
	// a window is at least as long as the longest time to its reset seen
	// (wMax), and a window that rolls on a grid (fixed, sliding counter)
	// moves its reset by whole windows (step: the smallest move seen). A
	// moving window's reset moves with each hit instead, by less than wMax.
	wMax, step int64
	rem        float64 // remaining before reset; valid while now < reset
	reset      int64
	seen       int64 // when the last answer came
	// sliding: right after a reset the server said little remained, so
	// the window that ended still counts (a sliding-window counter).
	sliding bool
	// fixed: a new window began with most of it remaining after the lane
	// used most of the one just before (used counts the takes in the
	// current window by the lane's clock, prevUsed in the one before when
	// it directly preceded, else 0): a fixed window, whose reset frees all
	// of it. An idle window between tells nothing (a sliding counter's
	// previous window is empty then too).
	fixed          bool
	used, prevUsed float64
	answered       int64 // the reset the last answer said (take may move reset on)
	// ansLow is the lowest Remaining answered for the window whose reset
	// is answered: the server's own count of how busy it was, whatever the
	// lane's clock (moved).
	ansLow float64
	first  int64 // when the first answer with a reset came
	// known: the host saw the window roll on another lane (a lane that
	// joins later keeps no reserve).
	known bool
	// opened is when the answer to the current window's first hit came
	// (Remaining one short of the limit), openedAns the reset it said: a
	// fixed window ends at most a window after it, whatever its reset
	// says. flask-limiter states its reset as whole epoch seconds, one
	// added: on its 10 per second, lanes that waited for it after the
	// tenth hit sent half of the limit.
	opened, openedAns int64
	nextAt            int64 // even spread of rem until reset, while the window is unknown
	// bucket: the declared limit is a bucket's capacity, not a count per
	// window (bucketCheck): Remaining is its tokens, the reset the time
	// until it is full again; neither paces nor stops a lane.
	bucket bool
	check  bucketCheck
	// free: a lane paced at the declared rate without the headroom was not
	// pushed back (roomCheck): no sliding counter's headroom.
	free bool
	// strict is how many requests a window the server was seen to allow
	// less than it declares (declared429), strictAt when that last grew.
	strict   float64
	strictAt int64
	// probe: this lane goes at the first roll's reset (rollProbe), the
	// others of its host a little after it (firstRoll).
	probe bool
	// earlyRead is its host's cap.early (earlyProbe); earlyProbe: this
	// lane may send before its reset with nothing remaining while that
	// is unknown; earlyAt: when it last did, its answer unread.
	earlyRead  int8
	earlyProbe bool
	earlyAt    int64
}

// bucketCheck watches whether Remaining moves as a count per window would:
// over a window (span) in which the lane sent most of the limit, a window's
// Remaining falls under half of it at least once, whatever kind of window
// it is (fixed: by the window's end; sliding or moving: the requests of the
// last window count). A bucket that refills faster than its capacity per
// window keeps it high (github.com/throttled/throttled declares its burst,
// 4, with resets of a second at 5/s: read as 4 per second, the lanes sat
// at 68%). Two such windows in a row: the limit is a capacity. A Remaining
// above the limit (tollbooth sends its tokens, up to its burst, under a
// limit that is its rate per second) is a rate, read right: never a bucket.
type bucketCheck struct {
	at       int64   // start of the window watched; 0 = none yet
	sent     float64 // requests taken since
	low      float64 // the lowest Remaining answered since
	runs     uint8   // windows in a row that kept Remaining high
	overFull bool    // Remaining above the limit was seen
}

// bucketWindows is how many windows in a row must keep Remaining high for a
// declared limit to read as a bucket's capacity.
const bucketWindows = 2

// watch records an answer's Remaining at now and reports whether the quota
// is seen to be a bucket's capacity.
func (q *quota) watch(rem float64, now int64) bool {
	c := &q.check
	switch {
	case q.limit <= 0:
		return false // no limit known yet: nothing to compare Remaining with
	case c.overFull || rem > q.limit:
		c.overFull = true
		return false
	case q.limit < 2:
		return false // one request per window leaves nothing to watch
	}
	w := q.span()
	if w <= 0 {
		return false
	}
	if c.at == 0 {
		c.at, c.sent, c.low = now, 0, rem
		return false
	}
	c.low = min(c.low, rem)
	if now-c.at < w {
		return false
	}
	if c.sent >= 0.75*q.limit && c.low >= q.limit/2 {
		c.runs++
	} else {
		c.runs = 0
	}
	c.at, c.sent, c.low = now, 0, rem
	return c.runs >= bucketWindows
}

// span is the window in ns: declared, or inferred (0 = unknown). The
// window is at least the longest time to a reset seen: the first usual
// window that long (limits are written per 10 s or per minute, and the
// first answer comes some way into a window). On a grid it is at most the
// smallest move of a reset: a window opened by a client's first request
// (flask-limiter's fixed window, express-rate-limit) moves by its length
// plus the wait before that request.
func (q *quota) span() int64 {
	switch {
	case q.window > 0:
		return q.window
	case q.grid() && q.wMax > 0:
		// A reset told in whole seconds, rounded up, overstates the last
		// answer's by up to a second, so the move to the next window's
		// is up to a second short of the window: @fastify/rate-limit's 8
		// per 10 s moved by 9.47 s, and the lanes paced exactly at 8 per
		// 9.47 s drew a 429 in every window.
		u := usualWindow(q.wMax)
		if q.step >= u-int64(time.Second) {
			return u
		}
		return q.step
	case q.grid():
		return q.step
	}
	return usualWindow(q.wMax)
}

// usualWindows are the windows limits are written in.
var usualWindows = [...]time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	15 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 24 * time.Hour}

// usualWindow is the shortest usual window of at least w ns, less a second
// (resets are often whole seconds, and a moving window's is its newest
// hit's expiry plus one); w itself beyond a day, 0 for 0. A w that is a
// usual window to the nanosecond is that window: a reset told in whole
// seconds from now (throttled's 2 s at 1 per 2 s, read as 1 per second
// before), not an instant rounded up.
func usualWindow(w int64) int64 {
	if w <= 0 {
		return 0
	}
	for i, u := range usualWindows {
		if w <= int64(u)+int64(time.Second) {
			if i+1 < len(usualWindows) && w == int64(usualWindows[i+1]) {
				return w
			}
			return int64(u)
		}
	}
	return w
}

// moving reports whether the resets were seen to move with each hit (a
// moving window), not by whole windows; unknown until they moved once.
func (q *quota) moving() bool { return q.step > 0 && !q.grid() }

// grid reports whether the resets move by whole windows (fixed windows and
// sliding-window counters), allowing a second for resets rounded up to
// whole seconds; a declared window counts as one.
func (q *quota) grid() bool {
	return q.window > 0 || q.step > 0 && q.step >= q.wMax-int64(time.Second)
}

// rate is the declared rate in req/s, 0 while limit or window is unknown.
func (q *quota) rate() float64 {
	if q == nil || q.limit <= 0 {
		return 0
	}
	w := q.span()
	if w <= 0 {
		return 0
	}
	return q.limit / secs(w)
}

// readyAt is when what remains lets the lane go: at once, at the spread
// instant, or at the reset when nothing remains (an instant that may have
// passed already).
func (q *quota) readyAt() int64 {
	if q == nil || q.reset == 0 {
		return 0
	}
	if q.bucket {
		// The declared limit is a bucket's capacity: its Remaining is no
		// stop. The lanes pace at what passed, and the explorer must be
		// pushed back to learn the bucket's rate (stopped whenever its
		// tokens ran out, it never was, and sent at its rate, not at its
		// pace).
		return 0
	}
	if q.rem < q.reserve() {
		if rate := q.rate(); rate > 0 && (q.moving() || q.sliding) {
			// A moving window frees a slot when its oldest hit expires,
			// which its reset does not say (flask-limiter's is the newest
			// hit's); a sliding-window counter frees one as the previous
			// window's weight falls, and a reset at its window's end frees
			// nothing at once (the window just ended weighs in whole):
			// one interval at the declared rate after the last answer.
			// On a moving window a reset nearer than two intervals is
			// when the next request fits. A sliding counter's near reset
			// is no such instant: waiting for it cost httprate's 10 per
			// minute a request per lane per window (a 10 s gap, not 6 s).
			// Unless, on a moving window, a request sent so was seen
			// refused: a window that begins again at each request let
			// through (gin-rate-limit's) says its reset at each answer as
			// a moving window's newest hit does, and gives nothing back
			// before it; until one such request is answered, only the
			// probe sends it (earlyProbe).
			// (Read sliding too, from the reset's moves: a sliding
			// counter's resets move by whole windows, not moving.)
			iv := int64(1e9 / rate)
			early := q.sliding && !q.moving() || q.earlyRead > 0 || q.earlyRead == 0 && q.earlyProbe
			if early && (q.sliding || q.reset-q.seen > 2*iv) {
				return q.seen + iv
			}
		}
		if q.firstRoll() && !q.probe {
			// Nothing has rolled yet on any lane of the host: its window
			// may be fixed (the reset frees all of it) or a sliding
			// counter's, which weighs the window just ended in whole at
			// the next one's start, so a lane that spent all of it is
			// pushed back at the reset. Lanes started together reach their
			// resets together: gofiber's sliding 12 per 10 s pushed back
			// all ten at the first roll, each for a 10-s Retry-After. A
			// second later (resets are told in whole seconds) or an
			// interval, if longer, the window just ended weighs a request
			// less. One lane, the probe (rollProbe), goes at its reset: a
			// fixed window passes it, and the others go as soon as its
			// answer says so.
			wait := int64(time.Second)
			if rate := q.rate(); rate > 0 {
				wait = max(wait, int64(1e9/rate))
			}
			return q.reset + wait
		}
		if q.fixed && q.opened > 0 && q.answered-q.openedAns < q.newWindowMove() {
			// The window that ran out opened at its first hit, no later
			// than the answer to it: it ends within a window of that
			// answer (a fiftieth more for the clocks), before a late
			// reset.
			w := q.span()
			if end := q.opened + w + w/50; w > 0 && end < q.reset {
				return end
			}
		}
		return q.reset
	}
	if q.span() > 0 {
		return 0 // a known window: the pace is set from it, what remains a stop
	}
	return q.nextAt
}

// firstRoll reports whether the lane waits for a window's first roll of its
// host with nothing known of the window's kind: no move of a reset seen (so
// no moving window either), neither sliding nor fixed, on this lane or
// another (known), and no short guess, whose reserve sends one request at
// the reset to tell.
func (q *quota) firstRoll() bool {
	return q.step == 0 && !q.sliding && !q.fixed && !q.known && q.reserve() <= 1
}

// reserve is how much of what remains stops a lane: the last request,
// and guessReserve more while the window is a short guess (under
// guessReserveSpan, from the first reset alone: the lane and its host saw
// nothing roll, nothing declared) and the limit above twice that (two of
// four would be half of it; held back by one, httprate's twin of 5 per
// 10 s drew 429s in 135 of the 160 phases TestTwinStartPhases runs, by
// two in 114, where the headroom check pays one). A first reset 1.2 s away reads as a window of a second;
// httprate's is 10 s, its reset whole seconds rounded down (up to a second
// early), and its sliding counter weighs the window just ended in whole at
// the next one's start. Lanes that spent all of it and went at the stated
// reset drew a 429 and Retry-After: 10 s on every lane, at 37% of start
// phases (the twin over 160 phases). Held back, the first request past the
// stated reset passes (one), the answer tells that the reset came early
// (quota.early), and the first request after the real roll passes too
// (one more), whose answer tells the window. A window guessed 10 s or
// longer was read right in every phase: a second early is a tenth of it
// at most, and there the reserve cost fixed windows per minute a third of
// their first window (6 per minute, 100 to 83% over 120 s).
//
// A guess that has not rolled by its longest time to a reset and two
// seconds more from the lane's first answer (a reset told up to a second
// early, and the answer after it) is no grid window: a moving one, whose
// reset moves with each hit by less than a second. flask-limiter's 5 per
// second, held back for good, lost 2.5 points over a minute.
func (q *quota) reserve() float64 {
	guess := q.step == 0 && !q.fixed && !q.sliding && !q.known && q.window == 0
	if !guess || q.limit <= 2*guessReserve || q.seen-q.first >= q.wMax+2*int64(time.Second) {
		return 1
	}
	if w := q.span(); w <= 0 || w >= int64(guessReserveSpan) {
		return 1
	}
	return 1 + guessReserve
}

func (q *quota) take(now int64) {
	if q == nil || q.reset == 0 {
		return
	}
	if now >= q.reset {
		if q.limit <= 0 || q.span() <= 0 {
			// The window ended and its size is unknown: the next response
			// says what the new one holds (and, from how far its reset
			// moved, how long windows are).
			return
		}
		// A new window of the declared size began; the next response
		// corrects it.
		w, n := q.span(), 0
		for ; q.reset <= now; n++ {
			q.reset += w
		}
		prev := q.used
		q.prevUsed, q.used = 0, 0
		if n == 1 {
			q.prevUsed = prev // the window just before: a busy one, or not
		}
		q.rem = q.limit
		if r := q.reserve(); r > 1 {
			// A guessed window: one request goes, and its answer tells
			// whether the window rolled. At a full window's pace, a round
			// trip's worth went before the first answer came back (at 200
			// ms, httprate drew a 429 on every lane in 36 of 160 phases).
			q.rem = r
		}
	}
	if q.rem < 1 && now < q.reset && q.moving() {
		q.earlyAt = now // sent before the reset with nothing remaining
	}
	q.rem--
	q.used++
	q.check.sent++
	q.spread(now)
}

func (q *quota) spread(now int64) {
	q.nextAt = q.reset
	if q.rem >= 1 {
		q.nextAt = now + (q.reset-now)/int64(q.rem+1)
	}
}

// update applies a response's quota fields. inFlight is the number of this
// scope's requests still out: they may not be counted in Remaining yet.
func (q *quota) update(o *Outcome, now int64, inFlight int32) {
	if o.Quota > 0 {
		q.limit = o.Quota
		if o.Window > 0 {
			q.window = int64(o.Window)
		}
	}
	if !o.HasRemaining {
		return
	}
	reset := now + int64(o.ResetIn)
	if o.ResetIn <= 0 {
		// The stated reset has passed. Told in whole seconds of the clock
		// (as the last one was), it is the second this answer came in:
		// the first answer that states it is its window's first hit, as
		// it is before the reset, and what remains tells the window's
		// kind. Otherwise it is some instant before now: the move is
		// seen, maybe at a later hit (go-limiter's 3 per second, windows
		// opened 0.8 s into a second: a lane's third hit of a window,
		// with one remaining, read it a sliding counter's), and tells
		// nothing of the kind.
		at, kind := reset, false
		if wholeSecond(q.answered) && now >= q.answered {
			// (Whole seconds on from the last, which carries the few
			// milliseconds between receipt and outcome.)
			at, kind = q.answered+(now-q.answered)/int64(time.Second)*int64(time.Second), true
		}
		if o.ResetIn > -time.Second && q.answered != 0 && q.moved(o, at, kind) {
			// A reset told in whole seconds rounded down, on a window of a
			// second: most answers state a second already begun, and
			// their moves are the windows' (httprate's 10 per second,
			// whose windows start with the server: read as a guess of a
			// window for good, each lane held a second for the guess's
			// reserve, 10% of the limit at most start phases).
			q.answered, q.ansLow = at, o.Remaining
		}
		q.early(o, now, inFlight)
		return
	}
	if q.first == 0 {
		q.first = now
	}
	if q.answered == 0 || q.moved(o, reset, true) {
		q.ansLow = o.Remaining
	} else {
		q.ansLow = min(q.ansLow, o.Remaining)
	}
	if o.Window <= 0 {
		q.wMax = max(q.wMax, int64(o.ResetIn))
	}
	q.answered = reset
	if q.limit > 0 && o.Remaining >= q.limit-1 {
		q.opened, q.openedAns = now, reset
	}
	q.rem = math.Max(0, math.Floor(o.Remaining)-float64(inFlight))
	q.reset, q.seen = reset, now
	q.spread(now)
}

// wholeSecond reports whether the instant t (ns since the epoch) is a whole
// second of the clock, within the few milliseconds between a response's
// receipt and its outcome's.
func wholeSecond(t int64) bool {
	r := t % int64(time.Second)
	return r < int64(10*time.Millisecond) || r > int64(990*time.Millisecond)
}

// moved reports whether an answer's reset moved from the last answer's by a
// new window's, and reads what the move tells: the window's step, and, when
// kind (the move is seen at the window's first hit: its reset still to
// come, or passed and told in whole seconds, update), its kind from what
// remains. Otherwise the answer, its stated reset passed, came anywhere up
// to a second before its window's real end: on a window of a second, late
// in it, where little remains of a fixed window too (go-limiter's 3 per
// second, windows opened 0.8 s into a second: a lane's third request of a
// window, after its stated reset, read the window as a sliding counter's,
// and the lanes lost the exact pace for the headroom check's 12 s).
func (q *quota) moved(o *Outcome, reset int64, kind bool) bool {
	d := reset - q.answered
	if d < q.newWindowMove() {
		return false
	}
	if o.Window <= 0 && (q.step == 0 || d < q.step) {
		q.step = d // keep the smallest move seen: a skipped window shows a multiple
	}
	// Busy: the window that ended held most of the limit, by the lane's
	// own count of the window just before or by the server's (the lowest
	// Remaining it answered for the window that ended, one window back: an
	// idle one between tells nothing). The lane's clock rolls at the
	// stated reset, up to a second early on resets told in whole seconds
	// rounded down: go-limiter's 3 per second, windows opened 0.3 s into a
	// second, had each lane's third request of a window go after the
	// stated reset, counted in the lane's next window, where the server's
	// 0 remaining then held the lane until the second after; its own count
	// of the window before was one request, the window never read as
	// fixed, and the lanes sent two a window for good (66.7%, no 429).
	busy := q.prevUsed >= q.limit/2 || q.ansLow <= q.limit/2 && d < q.span()*3/2
	switch {
	case q.limit <= 0:
	case kind && o.Remaining < q.limit/2:
		q.sliding, q.fixed = true, false // and little remains of it: the last one still counts
	case !q.sliding && busy && (kind || o.Remaining >= q.limit-1):
		// A busy window ended and freed all of it. Past its stated reset,
		// only a first hit tells it (all of the limit but itself remains:
		// nothing of the last window weighs in); a later hit may have
		// spent it.
		q.fixed = true
	}
	return true
}

// early applies an answer whose reset is now or past while the server
// still counts: a reset told in whole seconds rounded down (httprate's
// X-RateLimit-Reset, its windows starting with the server, not on a
// second) says a time up to a second before its window ends. What remains
// is still what remains, and the window ends within the second. Dropped,
// a lane that had begun the next window by its own clock at the stated
// reset sent on at the pace of a full one and drew a 429 and Retry-After:
// 10 s on every lane.
func (q *quota) early(o *Outcome, now int64, inFlight int32) {
	if q.reset == 0 || now < q.answered || now-q.answered > int64(time.Second) {
		// No window seen yet (the next answer says when it ends), or the
		// last reset stated has not passed, or passed over a second ago:
		// an answer without a Reset (ResetIn is zero then too), which
		// says nothing of when what remains comes back (a lane with half
		// an hour to go took a fresh window a second later).
		return
	}
	q.ansLow = min(q.ansLow, o.Remaining) // the window answered last, still counting
	q.rem = math.Max(0, math.Floor(o.Remaining)-float64(inFlight))
	if end := now + int64(time.Second); q.reset <= now || q.reset > end {
		q.reset = end // not a guessed window later (take moved it on)
	}
	q.seen = now
	q.spread(now)
}

// newWindowMove is how far the reset must move from one answer to the
// next to tell that a new window began: a second (a window of a second
// moves it by that), or half of a declared window. A reset told in whole
// seconds moves by up to a second within one window as answers cross a
// second, and by a few milliseconds more as answers take longer on the
// way back: express's 30 per minute moved by 1.000 s with 2 remaining, was
// read as a sliding counter's new window and lost its exact pace.
func (q *quota) newWindowMove() int64 {
	return max(int64(time.Second), q.window/2)
}
