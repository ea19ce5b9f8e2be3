package limit

import (
	"fmt"
	"math"
)

// What the followers do when they are pushed back themselves: one lane alone
// is its IP's own budget (a smaller tier, or noise) and slows alone; two
// lanes within sympathySpan at the pace the host holds mean the host's
// knowledge is wrong, and every follower slows at once instead of each
// drawing its own 429.

// evidence is a host's recent 429s: which lane, when, at what pace, and
// whether the lane was under the pace the host had proven (a shared limit
// shows as lanes pushed back while under what one lane may send). Its ring
// holds twice Config.ScopeLanes and manyLanes entries, so either threshold
// can be met (it grows with the pool: sized from ScopeLanes alone, 20 lanes
// pushed back at once read as 20 IPs with budgets of their own).
type evidence struct {
	ring []evEntry
	n    int
}

type evEntry struct {
	exit  string
	at    int64
	pace  float64
	under bool
}

// add records e in a ring of at least need entries.
func (ev *evidence) add(e evEntry, need int) {
	if len(ev.ring) < need {
		grown := make([]evEntry, need)
		n := copy(grown, ev.ring)
		ev.ring, ev.n = grown, n
	}
	ev.ring[ev.n%len(ev.ring)] = e
	ev.n++
}

// addEvidence records a 429 of the host's.
func (h *host) addEvidence(r *rules, e evEntry) {
	h.ev.add(e, max(2*r.scopeLanes, 4, h.manyLanes()))
}

// lanes counts the distinct lanes with an entry since since that match.
func (ev *evidence) lanes(since int64, match func(evEntry) bool) int {
	var seen []string
	for _, e := range ev.ring {
		if e.exit == "" || e.at < since || !match(e) {
			continue
		}
		dup := false
		for _, s := range seen {
			if s == e.exit {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, e.exit)
		}
	}
	return len(seen)
}

// follow429 applies a 429 on lane l (a follower, or the settled explorer)
// sent at pace x. One lane pushed back while the explorer holds as much is
// that IP's own smaller budget: it slows alone. Many lanes at once
// (manyLanes, within sympathySpan) mean the host's knowledge is wrong, and
// every follower slows at once instead of each drawing its own 429.
func (r *rules) follow429(h *host, l *lane, x float64, ser series, now int64) {
	if r.quotaEdge(h, l, x, now) || r.awaitPushed(h, l, x, now) {
		return
	}
	f := h.cap.follow
	atHost := atLeast(x, f)
	many := atHost && h.manyAtFollow(now)
	switch {
	case many && h.exp.phase == expRamp:
		// The ramp's pace let a burst through: the first 429s end it.
		return // the caller ends the ramp
	case many:
		r.fallBack(h, l, x, now, fmt.Sprintf("followers pushed back at %.3g/s, several at once", x))
		return
	case f > 0 && !atLeast(f, x):
		// Sent above the followers' pace: the host's pace fell after the
		// request went (the explorer's first 429 a moment before it), and
		// the 429 is that limit, read already, not a budget of this IP's
		// own (nginx's 12 per minute: two lanes pushed back at the
		// start's 0.25/s 2 ms after the explorer was, each read as its
		// own budget, held the first 429's 0.108/s for the whole run
		// while the others rose to 0.188/s).
		h.note(r, now, "follow", l.exit, "pace", x, l.pace, "pushed back above the host's pace, which fell after it went: the host's limit, not this lane's own")
		return
	}
	// This lane alone: its IP's own budget is under the host's pace. The
	// lane searches its own, as the explorer does the host's: own is where
	// it was pushed back, tpass what it counted since its last 429 or
	// sustained, and it tries the middle until the two are within
	// bisectDone.
	x2 := l.extra()
	own := x
	if x2.own > 0 {
		own = min(own, x2.own)
	}
	h.note(r, now, "tier", l.exit, "ceiling", x2.own, own, fmt.Sprintf("pushed back alone at %.3g/s: its own budget", x))
	x2.setOwn(own, now)
	if b := counted(ser.ok, ser.at, now); b > 0 && (x2.tpass == 0 || b > x2.tpass || x2.tpass >= own) {
		x2.tpass = min(b, own)
	} else if x2.tpass >= own {
		x2.tpass = 0
	}
	r.tierNext(h, l)
}

// setOwn sets the lane's own ceiling at now; a retry of the host's pace
// pushed back again doubles the wait before the next.
func (x *laneExtra) setOwn(own float64, now int64) {
	if x.retried {
		x.fails, x.retried = min(x.fails+1, maxProbeBackoff), false
	}
	x.own, x.ownAt = own, now
}

// tierNext sets a lane with its own ceiling to the middle of what it passed
// and where it was pushed back (or a cut under the latter when it passed
// nothing yet), never above the host's pace.
func (r *rules) tierNext(h *host, l *lane) {
	x := l.x
	p := tierCut * x.own
	if x.tpass > 0 {
		p = x.tpass
		if x.tpass*bisectDone < x.own {
			p = math.Sqrt(x.tpass * x.own)
		}
	}
	r.setPace(h, l, max(r.minLane, min(p, h.followPace(r))))
}

// manyAtFollow reports whether manyLanes lanes were pushed back at the
// followers' pace or above within sympathySpan.
func (h *host) manyAtFollow(now int64) bool {
	f := h.cap.follow
	return h.ev.lanes(now-sympathySpan, func(e evEntry) bool { return atLeast(e.pace, f) }) >= h.manyLanes()
}

// manyLanes is how many lanes pushed back at the host's pace within
// sympathySpan show that the host's knowledge is wrong rather than some
// IPs' budgets smaller: two, or half the lanes on larger pools (a pool
// whose IPs differ in reputation has lanes with smaller budgets, and they
// must not drag the others down; when the knowledge is wrong the explorer,
// sent at it longest, is pushed back too and everyone falls back then).
func (h *host) manyLanes() int {
	// The evidence is the fleet's (HostShare): so are the lanes. Past
	// manyMax lanes at once, no pool is that many smaller budgets.
	return min(manyMax, max(2, (len(h.lanes)+h.othersLanes()+1)/2))
}

// manyMax caps manyLanes: 32 lanes pushed back at the host's pace within
// sympathySpan are the host's knowledge being wrong on any pool, and the
// evidence ring that must hold them stays small.
const manyMax = 32

// tierOK counts a success of a lane with its own ceiling: a pace sustained
// over a careful span passes, and the lane tries the next middle; once what
// it passes reaches the host's pace it is an ordinary follower again.
func (r *rules) tierOK(h *host, l *lane, sent, now int64) {
	x := l.x
	if x == nil || x.own == 0 {
		return
	}
	f := h.followPace(r)
	if !atLeast(x.own, f) && now-x.ownAt >= ownRetry<<x.fails {
		// An own ceiling the host's pace has left behind is tried again
		// after a while: one 429 on a jittery path, or while the IP's
		// budget was cut for a spell, must not hold the lane under the
		// others for good. Pushed back again, the wait doubles.
		h.note(r, now, "tier", l.exit, "ceiling", x.own, 0, fmt.Sprintf("its own ceiling is %.0fs old and under the host's %.3g/s: try the host's pace again", secs(now-x.ownAt), f))
		x.own, x.tpass, x.retried, x.run = 0, 0, true, run{}
		r.setPace(h, l, f)
		return
	}
	el, saturated, _ := x.run.add(sent, now, l.pace)
	if x.run.n < rampRun || el < max(h.cap.span, carefulIntervals*interval(l.pace)) || !saturated {
		return
	}
	x.tpass = max(x.tpass, l.pace)
	if atLeast(x.tpass, f) || atLeast(r.settle*x.own, f) && x.tpass*bisectDone >= x.own {
		h.note(r, now, "tier", l.exit, "ceiling", x.own, 0, "its own budget is no smaller than the host's pace")
		x.own, x.tpass = 0, 0
		r.setPace(h, l, f)
		return
	}
	if x.tpass*bisectDone >= x.own {
		return // settled at what it passed
	}
	h.note(r, now, "tier", l.exit, "floor", 0, x.tpass, fmt.Sprintf("sustained %.3g/s for %.1fs", l.pace, secs(el)))
	r.tierNext(h, l)
}
