package limit

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A wall is a window's quota spent on a host that read no window: two
// limits at once, a second's under a minute's (flask-limiter's "3 per
// second;40 per minute", bare, its default), push back first at the
// second's, and the lanes settle at a pace the second allows; twenty
// seconds on, every lane has spent its minute and is pushed back at once
// where that pace had passed for long. Read as the limit falling, the
// search went down from there, every lane's retry into the spent minute
// cut the pace again, to 0.03/s by the time the minute freed, and two
// minutes did not bring it back (2.5% of the limit after 30 s).
//
// What tells a wall from a rate pushed back: the lanes' retries. Lanes
// paced over a sliding counter's edge or a bucket's rate are through
// again within a second (httprate's 30 per 10 s, x/time/rate's 20/s,
// nginx's leaky buckets: no lane ever pushed back twice a second apart
// with nothing between), while a window's quota spent turns every lane
// away until the window moves. So a wall opens when several lanes are
// pushed back within wallSpan after long runs at a steady pace, and stands
// once wallStuck of them (manyLanes) are pushed back again wallStuck or
// more after that with no success between. Then nothing in those 429s
// reads a pace: the lanes pushed back into it are held, the one with the
// longest run retries alone, ever more sparsely, and its first success
// reads the quota as its run's count over the common window the run and
// the recovery fit (as a first 429's recovery is read). A first try that
// opened walls on any long run pushed back, and probed at once, drew
// httprate's search down from 88.9% to 58.8% of its limit.

// wallRead is a host's wall: start is the first lane's 429 in it, and last
// the latest; lanes are the lanes pushed back into it. Once it stands, exit is the stuck
// lane with the longest run (n successes over t, pushed back at at), which
// probes, and lo is how long after at it was last pushed back again (0:
// not yet).
//
// capN is the count the lane that opened it (capExit) had spent since
// capFrom, its earlier runs a window would still hold counted: until that
// lane is through again, a lane whose series began with it waits at that
// count (wallCount), 0: none.
//
// Once read as n per win, the wall stays until grace, the end of the
// window the lanes' runs into it filled: a moving window frees their
// requests only as fast as they were sent, the ramp's head slowly, and a
// lane that meets what is left of its run before then reads nothing
// (wallGrace). headEnd is when that window has let the ramp's head go,
// the runs' start at the read pace (0: no head).
type wallRead struct {
	start, last int64
	at, t, lo   int64
	grace, win  int64
	exit        string
	n           int32
	stands      bool
	lanes       []wallLane
	capN        int32
	capFrom     int64
	capExit     string
	headEnd     int64
}

// wallLane is a lane pushed back into a wall at at after a run of n
// successes over t, or held at its count at at (capped: wallCount):
// through (a success since, or let go), or stuck stuckN times (pushed back
// again wallStuck or more on, nothing between).
type wallLane struct {
	exit    string
	at, t   int64
	n       int32
	stuckN  uint8
	through bool
	capped  bool
}

const (
	// wallRunN and wallRunT are the shortest run, in successes and in
	// time, that a wall turns away: a bucket's burst runs out within a
	// few seconds.
	wallRunN = 8
	wallRunT = int64(5 * time.Second)
	// wallSpan is how long after the latest lane's 429 another's joins
	// the same wall (lanes that started together meet it together, the
	// explorer, stepping above them, a little earlier).
	wallSpan = int64(5 * time.Second)
	// wallStuck is how long after its 429 a lane pushed back again, with
	// no success between, is stuck in a wall: a bucket has refilled a
	// request and a sliding counter's estimate has dropped by then.
	wallStuck = int64(time.Second)
	// wallStands is how long after the wall opened its lanes may prove it
	// stuck.
	wallStands = maxRecovery
	// wallFirst is the wall's lane's first wait between retries; each is
	// as long as the wall stood so far, up to wallEvery (or a sixth of
	// it, on a window of an hour): its recovery is read to within that.
	wallFirst = int64(3 * time.Second)
	wallEvery = int64(10 * time.Second)
	// wallPast is how long after a common window's end the wall's lane
	// probes: the clocks of client and server differ by a little.
	wallPast = int64(200 * time.Millisecond)
	// wallKeep is how long a wall whose lane never recovered is kept.
	wallKeep = int64(time.Hour + 10*time.Minute)
)

// wallLong reports whether a run ser, pushed back at now on host h, is one
// a wall turns away: long, on a host that read no window.
func (r *rules) wallLong(h *host, ser series, now int64) bool {
	c := &h.cap
	return ser.ok >= wallRunN && now-ser.at >= wallRunT && c.declared == 0 && !c.windowed && c.quotaN == 0 && c.block == 0 &&
		h.exp.phase != expRamp && h.exp.awaitAt == 0 && !h.led
}

// wallThrottled applies a 429 without Retry-After on lane l, sent at sent
// after its run ser, to host h's wall. It reports whether the wall stands
// for the lane: the 429 reads nothing, and the lane waits for the wall's
// probe (held) or probes on.
func (r *rules) wallThrottled(h *host, l *lane, ser series, sent, now int64) bool {
	w := h.wall
	if w != nil && w.grace > 0 {
		return r.wallGrace(h, l, now)
	}
	if w != nil && (now-w.start > wallKeep || w.stands && h.lanes[w.exit] == nil) {
		h.wall, w = nil, nil
	}
	in := w.lane(l.exit)
	if in != nil && !in.through {
		w.last = now // still pushed back: lanes meeting it now meet the same wall
		if !w.stands {
			if now-in.at >= wallStuck && now-w.start <= wallStands {
				in.stuckN = min(in.stuckN+1, 255)
				r.wallStuck(h, now)
			}
			if !w.stands {
				r.capWait(h, l, now)
				r.capHold(h, now)
			}
			return w.stands
		}
		if l.exit == w.exit {
			w.lo = max(w.lo, sent-w.at)
			r.wallProbe(h, l, now)
		}
		r.wallHold(h, now)
		return true
	}
	if !r.wallLong(h, ser, now) {
		return false
	}
	if w == nil || !w.stands && now-w.last > wallSpan {
		w = &wallRead{start: now, capExit: l.exit, capN: ser.ok, capFrom: ser.at}
		if e := &h.exp; e.okExit == l.exit {
			if n, from := e.headOf(l.exit); n > 0 {
				w.capN, w.capFrom = ser.ok+n, from
			}
		}
		if w.passed(h, l) {
			w.capN = 0
		}
		h.wall = w
	}
	w.last = now
	x := wallLane{exit: l.exit, at: now, t: now - ser.at, n: ser.ok}
	if in != nil {
		*in = x // through before, pushed back after another long run
	} else {
		w.lanes = append(w.lanes, x)
	}
	if w.stands {
		// A lane that started later meets the wall later: it waits for the
		// probe with the others.
		r.wallHold(h, now)
	}
	return w.stands
}

// wallStuck makes h's wall stand once manyLanes of its lanes (at least
// two) are stuck, or, on a host of one lane (a direct crawl, one exit),
// once that lane is stuck twice: the stuck lane with the longest run
// probes, and the others wait for it.
func (r *rules) wallStuck(h *host, now int64) {
	w := h.wall
	stuck, capped := 0, 0
	var p *wallLane
	for i := range w.lanes {
		x := &w.lanes[i]
		if h.lanes[x.exit] == nil {
			continue
		}
		if x.capped && !x.through && x.stuckN == 0 {
			capped++
		}
		if x.stuckN > 0 {
			stuck++
			if p == nil || x.n > p.n {
				p = x
			}
		}
	}
	alone := len(h.lanes) == 1 && h.sharedBy() <= 1 && p != nil && p.stuckN >= 2
	// Lanes held at the count stand in for lanes pushed back at it, the
	// lane whose count it is stuck: each would have drawn its 429 to prove
	// it.
	counted := capped > 0 && p != nil && p.exit == w.capExit && stuck+capped >= max(2, h.manyLanes())
	if stuck < max(2, h.manyLanes()) && !alone && !counted {
		return
	}
	w.stands = true
	w.exit, w.at, w.t, w.n = p.exit, p.at, p.t, p.n
	if counted {
		h.note(r, now, "wall", w.exit, "wall", 0, float64(stuck+capped), fmt.Sprintf(
			"pushed back after a long run (%d successes in %.1fs) and again %v or more on, nothing between, while %d lanes reached its count: a window's quota spent; the lanes wait, this one retries",
			w.n, secs(w.t), time.Duration(wallStuck), capped))
	} else {
		h.note(r, now, "wall", w.exit, "wall", 0, float64(stuck), fmt.Sprintf(
			"%d lanes pushed back after long runs (%d successes in %.1fs) and again %v or more on, nothing between: a window's quota spent; the lanes wait, this one retries",
			stuck, w.n, secs(w.t), time.Duration(wallStuck)))
	}
	r.wallProbe(h, h.lanes[w.exit], now)
	r.wallHold(h, now)
}

// wallProbe sets the wall's lane l, pushed back at now, to retry next:
// after as long as the wall stood so far, within [wallFirst, wallEvery]
// (a sixth of it past a minute), or at the end of a common window begun
// with its run when that comes first or up to half that wait later. Neither its backoff nor its pace, which
// the search cut with each retry before the wall stood, holds it longer.
func (r *rules) wallProbe(h *host, l *lane, now int64) {
	w := h.wall
	stood := now - w.at
	at := now + max(wallFirst, min(stood, max(wallEvery, stood/6)))
	// Sooner where a common window begun with the run would end: its first
	// request leaves the window then (a fixed window opened by it ends).
	from := w.at - w.t
	if w.capExit == w.exit && w.capN > 0 {
		from = min(from, w.capFrom)
	}
	// A retry due shortly before that end waits for it.
	for _, win := range slices.Backward(commonWindows[:]) {
		if b := from + int64(win) + wallPast; b > now+wallStuck && b < at+(at-now)/2 {
			at = b
			break
		}
	}
	if l.cool < at {
		r.holdUntil(h, l, at, now)
	} else {
		r.releaseAt(h, l, at)
	}
	l.tat = min(l.tat, at+r.tau(l.pace))
	r.rekey(h, l)
}

// wallHold holds the lanes pushed back into h's wall, but its lane, past
// its lane's next retry by as long as that answer may take: they go once
// it is through (wallOK).
func (r *rules) wallHold(h *host, now int64) {
	w := h.wall
	at := now + wallEvery + maxRecovery
	if p := h.lanes[w.exit]; p != nil && p.cool > now {
		at = p.cool + maxRecovery
	}
	for _, x := range w.lanes {
		if o := h.lanes[x.exit]; o != nil && x.exit != w.exit && !x.through {
			r.holdUntil(h, o, at, now)
		}
	}
}

// wallOK applies a success on lane l, of a request sent at sent, to host h's
// wall: a lane through before the wall stands is no evidence of it; the
// wall's lane through again reads the window and lets the others go.
func (r *rules) wallOK(h *host, l *lane, sent, now int64) {
	w := h.wall
	if w == nil || w.grace > 0 {
		return
	}
	x := w.lane(l.exit)
	if x == nil || sent < x.at {
		return
	}
	if !w.stands || l.exit != w.exit {
		x.through = true
		if !w.stands && l.exit == w.capExit {
			r.capRelease(h, now)
		}
		return
	}
	h.wall = nil
	rec := sent - w.at
	// The explorer's runs before the one the wall pushed back, each cut
	// by a 429 it recovered from quickly (a second's limit), count too
	// when the window holds them (rereadWindow's head).
	var headN int32
	var headD int64
	if e := &h.exp; e.lastExit == w.exit && e.endAt == w.at && e.histN > 0 {
		headN, headD = e.histN, w.at-w.t-e.histAt
	}
	win, fits := windowFit(w.t, headD, rec)
	if !fits && w.lo > 0 {
		win, fits = shortestWindow(w.t, headD, w.lo, rec, false)
	}
	n := runHeld(win, w.n, w.t, headN, headD)
	c := &h.cap
	read := fits && win >= shortestCommon && float64(n)/win.Seconds() < float64(w.n)/secs(w.t) &&
		c.declared == 0 && !c.windowed && c.quotaN == 0
	if read {
		// A rate counted from runs before the wall (lo) bounds nothing:
		// the window's quota is what holds.
		c.lo = 0
		r.settleQuota(h, float64(n), win, now, "wall", fmt.Sprintf(
			"%d successes in %.1fs, pushed back, and through again %.1fs later: a window's quota spent, %d per %v", n, secs(w.t+headD), secs(rec), n, win))
		h.wall = &wallRead{grace: w.at + int64(win), n: n, win: int64(win)}
		if headN > 0 {
			h.wall.headEnd = w.at - w.t + int64(win)
			// Its head, the ramp's slow steps, frees slower than the
			// quota's pace in a moving window: the lane goes on once the
			// window has let it all go. Pushed back before, it waited
			// for the grace (simulated, one exit: 81.2% of the limit
			// against 95.0%); with the grace's headEnd alone it draws
			// one 429 more (simulated, ten exits: 1.04% against 0.91%
			// of 429s), while a fixed window, all free at once, loses
			// the head's span (simulated, one exit: 95.0% against
			// 98.8%).
			r.holdUntil(h, l, h.wall.headEnd, now)
		}
	} else {
		h.note(r, now, "wall", l.exit, "wall", 1, 0, fmt.Sprintf("through again %.1fs after the wall: no common window fits; nothing read", secs(rec)))
	}
	// The lanes held go again now, in turn; those that took budgets of
	// their own from their retries into the wall, before it stood, lose
	// them: the window explains them.
	// A lane held at the count spent it later than this lane met the wall,
	// by as much as its window frees later: it goes as long after it was
	// held as this lane took to be through again.
	type heldLane struct {
		l    *lane
		from int64 // not before
	}
	held := make([]heldLane, 0, len(w.lanes))
	for _, x := range w.lanes {
		if o := h.lanes[x.exit]; o != nil && o != l && !x.through {
			hl := heldLane{l: o}
			if x.capped && read {
				hl.from = x.at + rec
			}
			held = append(held, hl)
		}
	}
	slices.SortFunc(held, func(a, b heldLane) int { return strings.Compare(a.l.exit, b.l.exit) }) // in their exits' order, as releaseLanes
	for i, hl := range held {
		r.releaseAt(h, hl.l, max(now+int64(i)*int64(heldStagger), hl.from))
	}
	for _, hl := range append(held, heldLane{l: l}) {
		o := hl.l
		if xo := o.x; read && xo != nil && xo.own > 0 && xo.ownAt >= w.start {
			h.note(r, now, "wall", o.exit, "ceiling", xo.own, 0, "pushed back into the window's quota spent: no budget of its own")
			xo.own, xo.tpass = 0, 0
			if o.exit != h.exp.exit {
				r.setPace(h, o, h.followPace(r))
			}
		}
	}
}

// wallGrace applies a 429 on lane l, until the end of the window the lanes'
// runs into h's wall filled, to the quota the wall read: it is what is left
// of the lane's run (a moving window frees it as fast as it was sent), not
// the quota read; the lane waits for the window's end, nothing read. (Read
// as a fall, flask-limiter's "5 per second;100 per minute" moving windows
// drew the lanes released at 100 per minute down to a sixth of it.) It
// reports whether the 429 was the wall's.
func (r *rules) wallGrace(h *host, l *lane, now int64) bool {
	w, c := h.wall, &h.cap
	if now >= w.grace || !c.windowed || c.quotaN != float64(w.n) || c.quotaW != w.win {
		h.wall = nil // over, or the quota read since is another
		return false
	}
	// Before the ramp's slow head has gone, it is what the lane meets:
	// from then on its run frees at least at the quota's pace.
	end := w.grace
	if now < w.headEnd {
		end = w.headEnd
	}
	h.note(r, now, "wall", l.exit, "cooldown", 0, secs(end-now), "pushed back while the window still holds its run before the wall: wait for its end; nothing read")
	r.coolUntil(h, l, end, now, "the window still holds the run before the wall")
	return true
}

// wallCount holds lane l at the count of the lane that opened h's wall,
// until that lane is through again or the wall stands and reads the
// window: a lane whose series began with it has spent as much of the same
// window once it has sent as many. flask-limiter's bare "3 per second;40
// per minute": the explorer, ahead of the followers, met its minute 5 s
// before them, and each of nine followers then drew its 429 and a retry
// into the spent minute (20 429s of 28). It runs on every take, after the
// count grew.
func (r *rules) wallCount(h *host, l *lane, now int64) {
	w := h.wall
	if w == nil || w.grace > 0 || w.capN == 0 || l.serSent < w.capN || !w.beganWith(l) || w.lane(l.exit) != nil {
		return
	}
	// Only once the lane that opened it is stuck: a bucket or a sliding
	// count lets its retry through (a re-probe pushed back above the
	// settled pace, on GCRA, its followers a request short of its count).
	if p := w.lane(w.capExit); p == nil || p.stuckN == 0 {
		return
	}
	// (at is just after the request it takes now: that one's success is
	// no lane through.)
	w.lanes = append(w.lanes, wallLane{exit: l.exit, at: now + 1, t: now - l.serAt, n: l.serOK, capped: true})
	h.note(r, now, "wall", l.exit, "count", 0, float64(w.capN), fmt.Sprintf(
		"sent the %d the lane pushed back after its long run had spent: waits for it to be through", w.capN))
	if !w.stands {
		r.wallStuck(h, now)
	}
	if w.stands {
		r.wallHold(h, now)
	} else {
		r.capHold(h, now)
	}
}

// lane is exit's entry in wall w (nil: none, or no wall).
func (w *wallRead) lane(exit string) *wallLane {
	if w == nil {
		return nil
	}
	for i := range w.lanes {
		if w.lanes[i].exit == exit {
			return &w.lanes[i]
		}
	}
	return nil
}

// beganWith reports whether lane l's series began with the one whose count
// w holds (within wallSpan before it): it has spent of the same window.
func (w *wallRead) beganWith(l *lane) bool { return l.serAt >= w.capFrom-wallSpan }

// passed reports whether a lane of h other than l, the opener, whose series
// began with l's, has passed w's count already: no window's quota of that
// count turned it away (a re-probe pushed back above the settled pace, on a
// bucket, while the others held it).
func (w *wallRead) passed(h *host, l *lane) bool {
	for _, o := range h.lanes {
		if o != l && o.serOK >= w.capN && w.beganWith(o) {
			return true
		}
	}
	return false
}

// capWait holds lane l, the stuck opener of h's wall, until enough lanes
// will have reached its count for the wall to stand (wallStuck), up to
// wallEvery: its retries before then are 429s that prove nothing more
// (flask-limiter's minute, bare: a fourth at the wall, 2.1 s before the
// followers reached the count).
func (r *rules) capWait(h *host, l *lane, now int64) {
	w := h.wall
	if p := w.lane(l.exit); w.capN == 0 || l.exit != w.capExit || p == nil || p.stuckN == 0 {
		return
	}
	need := max(2, h.manyLanes()) - 1
	due := make([]int64, 0, len(h.lanes))
	for _, o := range h.lanes {
		if o == l || !w.beganWith(o) || o.pace <= 0 {
			continue
		}
		if x := w.lane(o.exit); x != nil && x.capped {
			need--
			continue
		}
		left := int64(max(w.capN-o.serSent, 0))
		due = append(due, max(now, r.laneReady(o))+left*interval(o.pace))
	}
	if need <= 0 || len(due) < need {
		return
	}
	slices.Sort(due)
	if at := due[need-1] + wallPast; at <= now+wallEvery {
		r.holdUntil(h, l, at, now)
	}
}

// waiting reports whether the host's lanes wait on wall w: it stands, or
// its opener is stuck and the others wait at its count. The opener's 429s
// there are the window's, not its exit's: read as its own, the monitor
// flagged the explorer of flask-limiter's bare "3 per second;40 per
// minute" as a bad exit (an early reputation warning) 2 s before the wall
// stood.
func (w *wallRead) waiting() bool {
	if w.stands {
		return true
	}
	if w.capN == 0 || w.grace > 0 {
		return false
	}
	p := w.lane(w.capExit)
	return p != nil && p.stuckN > 0 && !p.through
}

// capHold holds the lanes at h's wall's count past the next retry of the
// lane that opened it, by as long as a retry proves it stuck: each of its
// 429s holds them again, its success lets them go (capRelease).
func (r *rules) capHold(h *host, now int64) {
	w := h.wall
	at := now + wallStuck
	if p := h.lanes[w.capExit]; p != nil && p.cool > now {
		at = p.cool + wallStuck
	}
	for _, x := range w.lanes {
		if o := h.lanes[x.exit]; o != nil && x.capped && !x.through {
			r.holdUntil(h, o, at, now)
		}
	}
}

// capRelease lets the lanes held at h's wall's count go, in turn, and drops
// the count: the lane that opened the wall is through, so no window's quota
// was spent.
func (r *rules) capRelease(h *host, now int64) {
	w := h.wall
	w.capN = 0
	i := int64(0)
	for j := range w.lanes {
		x := &w.lanes[j]
		if o := h.lanes[x.exit]; o != nil && x.capped && !x.through {
			x.through = true
			r.releaseAt(h, o, now+i*int64(heldStagger))
			i++
		}
	}
}
