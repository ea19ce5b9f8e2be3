package limit

import "fmt"

// What the followers do when they are pushed back themselves: one lane alone
// is its IP's own budget (a smaller tier, or noise) and slows alone; two
// lanes within sympathySpan at the pace the host holds mean the host's
// knowledge is wrong, and every follower slows at once instead of each
// drawing its own 429.

// evidence is a host's recent 429s: which lane, when, at what pace, and
// whether the lane was under the pace the host had proven (a shared limit
// shows as lanes pushed back while under what one lane may send). Its ring
// is sized from Config.ScopeLanes, so any threshold can be met.
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

func (ev *evidence) add(r *rules, e evEntry) {
	if ev.ring == nil {
		ev.ring = make([]evEntry, max(2*r.scopeLanes, 4))
	}
	ev.ring[ev.n%len(ev.ring)] = e
	ev.n++
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
func (r *rules) follow429(h *host, l *lane, x float64, now int64) {
	f := h.cap.follow
	atHost := atLeast(x, f)
	many := atHost && h.ev.lanes(now-sympathySpan, func(e evEntry) bool { return atLeast(e.pace, f) }) >= h.manyLanes()
	switch {
	case many && h.exp.phase == expRamp:
		// The ramp's pace let a burst through: the first 429s end it.
		return // the caller ends the ramp
	case many:
		r.fallBack(h, l, x, now, fmt.Sprintf("followers pushed back at %.3g/s, several at once", x))
		return
	}
	// This lane alone: its IP's own budget is under the host's pace.
	own := x
	if o := l.own(); o > 0 {
		own = min(own, o)
	}
	p := max(r.minLane, tierCut*x)
	h.note(r, now, "tier", l.exit, "ceiling", l.own(), own, fmt.Sprintf("pushed back alone at %.3g/s: its own budget", x))
	l.extra().own = own
	r.setPace(h, l, min(p, h.followPace(r)))
}

// manyLanes is how many lanes pushed back at the host's pace within
// sympathySpan show that the host's knowledge is wrong rather than some
// IPs' budgets smaller: two, or a third of the lanes on larger pools (a
// pool whose IPs differ in reputation has a few lanes with smaller
// budgets, and they must not drag the others down).
func (h *host) manyLanes() int {
	return max(2, (len(h.lanes)+2)/3)
}

// tierOK climbs a lane with its own ceiling back toward the settle point
// under it, halving the gap per saturated run; once that reaches the host's
// pace the lane is an ordinary follower again.
func (r *rules) tierOK(h *host, l *lane, sent, now int64) {
	if l.own() == 0 {
		return
	}
	el, saturated := l.x.run.add(sent, now, l.pace)
	if l.x.run.n < rampRun || el < max(minSpan, h.cap.span) || !saturated {
		return
	}
	f := h.followPace(r)
	target := r.settle * l.x.own
	if atLeast(target, f) {
		h.note(r, now, "tier", l.exit, "ceiling", l.x.own, 0, "its own ceiling is no lower than the host's pace")
		l.x.own = 0
		r.setPace(h, l, f)
		return
	}
	p := min(target, (l.pace+target)/2)
	h.note(r, now, "tier", l.exit, "pace", l.pace, p, "a run at its own pace: closer to its settle point")
	r.setPace(h, l, p)
}
