package limit

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A wall is a window's quota spent on a host that read no window: two
// limits at once, a second's under a minute's (flask-limiter's "3 per
// second;40 per minute", bare), push back first at the second's, and the
// lanes settle at a pace the second allows; twenty seconds on every lane
// has spent its minute and is pushed back where that pace had passed for
// long. Read as the limit falling, the search went down from there, and
// every retry into the spent minute cut the pace again, to 0.03/s by the
// time the minute freed (2.5% of the limit after 30 s). A rate that let a
// lane through for many seconds does not turn it away for many more; a
// window's quota spent does. So a 429 without Retry-After after a long run
// at a steady pace opens a wall (the longest run into it within wallSpan
// is its count), and the first success after it, if it came late, reads
// the quota as that count over the common window the run and the
// recovery fit (windowFit, as a first 429's recovery is read). Lanes that
// read budgets of their own from their retries into the wall lose them.

// wallRead is a host's wall: start is the first lane's 429 in it (0:
// none); exit is the lane with the longest run into it (n successes over
// t), pushed back at at, and last pushed back again lo after that (0: not
// yet). Its recovery is read on that lane alone: a lane that began its
// run earlier or later recovers earlier or later.
type wallRead struct {
	start, at, t, lo int64
	exit             string
	n                int32
}

const (
	// wallRunN and wallRunT are the shortest run, in successes and in
	// time, whose 429 opens a wall: a bucket's burst runs out within a
	// few seconds.
	wallRunN = 8
	wallRunT = int64(5 * time.Second)
	// wallSpan is how long after the first lane's 429 another's counts
	// into the same wall (lanes that started together meet it together).
	wallSpan = int64(5 * time.Second)
	// wallRecovery is the least recovery that reads as a window's: a
	// quicker one is a bucket's refill, or a limit that moved.
	wallRecovery = int64(3 * time.Second)
	// wallKeep is how long a wall whose lane never recovered is kept.
	wallKeep = int64(10 * time.Minute)
	// wallEvery is the longest the wall's lane waits between retries into
	// it: its recovery is read to within that (a backoff grown to 30 s
	// read a minute's window as two).
	wallEvery = int64(5 * time.Second)
)

// wallHit applies a 429 without Retry-After on lane l, after its run ser,
// to host h's wall.
func (r *rules) wallHit(h *host, l *lane, ser series, now int64) {
	c := &h.cap
	w := &c.wall
	if w.start != 0 && l.exit == w.exit && now > w.at {
		w.lo = now - w.at // a retry into the wall: the window still ran
		return
	}
	if c.declared > 0 || c.windowed || c.quotaN > 0 || h.exp.phase == expRamp || h.exp.awaitAt != 0 || h.led ||
		ser.ok < wallRunN || now-ser.at < wallRunT {
		// (While the explorer measures the first 429's recovery, that
		// reading is the one that holds and lets the lanes go.)
		return
	}
	if w.start == 0 || now-w.start > wallSpan {
		*w = wallRead{start: now, at: now, exit: l.exit, n: ser.ok, t: now - ser.at}
		return
	}
	if ser.ok > w.n {
		w.at, w.exit, w.n, w.t, w.lo = now, l.exit, ser.ok, now-ser.at, 0
	}
}

// wallOK applies a success on lane l of a request sent at sent to host h's
// wall: the wall's lane's first one sent after it ends it, and reads the
// window when it came late.
func (r *rules) wallOK(h *host, l *lane, sent, now int64) {
	c := &h.cap
	w := c.wall
	if w.start == 0 {
		return
	}
	if l.exit != w.exit || sent < w.at {
		if now-w.start > wallKeep {
			c.wall = wallRead{}
		}
		return
	}
	c.wall = wallRead{}
	rec := sent - w.at
	if rec < wallRecovery || c.declared > 0 || c.windowed || c.quotaN > 0 {
		return
	}
	win, fits := windowFit(w.t, 0, rec)
	if !fits && w.lo > 0 {
		win, fits = shortestWindow(w.t, 0, w.lo, rec, false)
	}
	if !fits || win < shortestCommon {
		return
	}
	if float64(w.n)/win.Seconds() >= float64(w.n)/secs(w.t) {
		return // no slower than the run that ran into it: nothing read
	}
	r.settleQuota(h, float64(w.n), win, now, "wall", fmt.Sprintf(
		"%d successes in %.1fs, pushed back, and through again %.1fs later: a window's quota spent, %d per %v", w.n, secs(w.t), secs(rec), w.n, win))
	// Lanes pushed back into the wall backed off further with each retry
	// (46 s by the time the minute freed): the window is over for them
	// too, and they go again now, in turn. Lanes pushed back alone into
	// it read budgets of their own from it (each retry under a slower
	// pace): the window explains them.
	var cooling []*lane
	for _, o := range h.lanes {
		if o.cool > now && o.epAt >= w.start-2*wallSpan {
			cooling = append(cooling, o)
		}
	}
	slices.SortFunc(cooling, func(a, b *lane) int { return strings.Compare(a.exit, b.exit) }) // a virtual run repeats exactly
	i := int64(0)
	for _, o := range cooling {
		at := now + i*int64(heldStagger)
		i++
		if o.cool > at {
			d := o.cool - at
			h.c.ThrottledNs -= min(d, h.c.ThrottledNs)
			o.c.coolMs -= uint32(min(d/1e6, int64(o.c.coolMs)))
			o.cool = at
			r.rekey(h, o)
		}
	}
	for _, o := range h.lanes {
		if xo := o.x; xo != nil && xo.own > 0 && xo.ownAt >= w.start-2*wallSpan {
			h.note(r, now, "wall", o.exit, "ceiling", xo.own, 0, "pushed back into the window's quota spent: no budget of its own")
			xo.own, xo.tpass = 0, 0
			if o.exit != h.exp.exit {
				r.setPace(h, o, h.followPace(r))
			}
		}
	}
}

// wallProbe keeps the wall's lane l, pushed back at now, retrying at least
// every wallEvery while the wall stands, so that its recovery is read to
// within that. (Holding the other lanes meanwhile saved half the wall's
// 429s on flask-limiter's two limits, but on httprate's bare sliding
// counter, whose lanes meet its edge together and are through again in a
// second, it held the explorer and handed the search on: 88.9% to 67.9%.)
func (r *rules) wallProbe(h *host, l *lane, now int64) {
	w := &h.cap.wall
	if w.start == 0 || l.exit != w.exit {
		return
	}
	// Neither its cooldown nor its pace, which the search cut with each
	// retry into the wall (to one request in 22 s, a minute's window read
	// as two), holds it longer.
	at := now + wallEvery
	l.cool = min(l.cool, at)
	l.tat = min(l.tat, at+r.tau(l.pace))
	r.rekey(h, l)
}
