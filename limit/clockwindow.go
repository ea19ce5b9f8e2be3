package limit

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A window of the clock. Some fixed windows are whole periods of the clock,
// the same for every client, not opened by the client's first request:
// Ruby's Rack::Attack counts per Time.now.to_i / period, Kong per calendar
// second or minute, and so does the INCR-per-minute recipe of many a
// home-grown limiter. A crawl starts part way into such a window, so the
// explorer's first run straddles a window's start, and its count (what a
// window opened by the run's first request held) is more than one window
// of the clock holds: Rack::Attack's 15 per 10 s behind ten exits was read
// as 18 per 10 s, and every lane, paced at that, was pushed back near the
// same window's end at once, then searched carefully (real, 120 s: 83.7%
// over the run, 85.9% after 30 s, 1.05% of 429s).
//
// Once a host has been pushed back, each lane counts what it sends in each
// second of the clock (sendRing, clockSend). On a host settled on a
// window's quota read without a header, the first lane pushed back at the
// quota's pace after n requests in the quota's window of the clock
// (clockQuota: ending within half a window, n under the quota and at least
// half of it, no more than a whole window passed on any lane) reads n as
// that window's quota, and tests it (clockTest):
// its next request, just before the window's end, must be pushed back, and
// the one after it, just after the end, must pass (a sliding counter lets
// the first through; a window of the lane's own opened elsewhere, one or
// the other). Meanwhile every lane that sent n in the window waits for its
// end. Proven, the host's quota is n per window and no lane sends more than
// n in one (the gate); refuted, nothing is read again on the host, and the
// pushback the test held is read as the other rules would have read it.

// clockRead is a window's quota read as a window of the clock.
type clockRead struct {
	// n is the quota a lane's count in one of the quota's windows of the
	// clock read (0: none), x the pace it was pushed back at.
	n, x float64
	// end is the end of the window of the clock that read n, and lane the
	// lane that tests it there (stage 1: its request before end must be
	// pushed back; stage 2: its request after end must pass). Proven: lane
	// "" and on.
	end   int64
	lane  string
	stage uint8
	on    bool
	// refuted: a test failed; nothing is read again on this host.
	refuted bool
}

// sendRing counts what a lane sent in each second of the clock over the
// last ringSecs seconds, from start on (the host's first 429: a window of the
// clock read later began after it). A window of the clock of whole seconds
// then has its count, from any moment the quota's window is known.
type sendRing struct {
	start, last int64 // Unix seconds: the first counted, the latest written
	n           [ringSecs]uint8
}

// ringSecs bounds the windows of the clock read: a minute and a few seconds.
const ringSecs = 64

// add counts a request sent in Unix second s.
func (g *sendRing) add(s int64) {
	if g.start == 0 {
		g.start, g.last = s, s
	}
	for t := g.last + 1; t <= s && t <= g.last+ringSecs; t++ {
		g.n[t%ringSecs] = 0
	}
	g.last = max(g.last, s)
	if i := s % ringSecs; g.n[i] < 255 && s > g.last-ringSecs {
		g.n[i]++
	}
}

// sum is what was sent in seconds [a, b], and whether the ring counted all
// of them (nil: a lane that counts nothing).
func (g *sendRing) sum(a, b int64) (int32, bool) {
	if g == nil || g.start == 0 || a < g.start || b-a >= ringSecs || a <= g.last-ringSecs {
		return 0, false
	}
	var n int32
	for t := a; t <= min(b, g.last); t++ {
		n += int32(g.n[t%ringSecs])
	}
	return n, true
}

const (
	// clockLead is how long before a window's end the test's first request
	// goes (pushed back if the window is the clock's), clockSlack how long
	// after it the second goes and a lane held for it sends again: a
	// request reaches the server a moment after it goes, and a server's
	// clock may be a little off the client's.
	clockLead  = 250 * time.Millisecond
	clockSlack = 100 * time.Millisecond
	// clockHeld is how long after the tested window's end the other lanes
	// held at its quota go on: its second request's answer first (or the
	// window is longer, and they all would be pushed back).
	clockHeld = 3 * clockSlack
)

// clockSend counts a request lane l sends now, once the host was pushed
// back, and returns its count in its window of the clock of the quota's
// length (0: not counted, or not from the window's start). A lane that sent
// the quota of a window read as the clock's (proven or being tested) waits
// for the window's end.
func (r *rules) clockSend(h *host, l *lane, now int64) int32 {
	c := &h.cap
	if h.c.Throttled == 0 || c.declared > 0 || h.led || c.clock.refuted {
		return 0
	}
	x := l.extra()
	if x.sent == nil {
		x.sent = new(sendRing) // only the lanes of a host pushed back count
	}
	g := x.sent
	g.add(now / 1e9)
	w := c.quotaW
	if w <= 0 || c.quotaN <= 0 || w%int64(time.Second) != 0 {
		return 0
	}
	if k := &c.clock; k.lane != "" && now > k.end+w {
		// The lane testing it sent nothing since (it left the pool).
		h.note(r, now, "clock", k.lane, "clock", k.n, 0, "the window of the clock went untested")
		*k = clockRead{refuted: true}
		return 0
	}
	at := now - now%w
	n, ok := g.sum(at/1e9, now/1e9)
	if !ok {
		return 0
	}
	if k := &c.clock; k.n > 0 && float64(n) >= k.n {
		next := at + w + int64(clockSlack)
		switch {
		case l.exit == k.lane && k.stage == 1 && at+w == k.end:
			next = at + w - int64(clockLead) // the test's first request: the next past the quota, just before the end
		case k.lane != "" && at+w >= k.end:
			next = k.end + int64(clockHeld) // after the test's second request is answered
		}
		l.tat = max(l.tat, next)
	}
	return n
}

// clockUnsend takes back a request that never reached the server.
func (l *lane) clockUnsend(rec ticketRec) {
	if g := l.extra().sent; rec.clk > 0 && g != nil {
		if s := rec.at / 1e9; s > g.last-ringSecs && s <= g.last && g.n[s%ringSecs] > 0 {
			g.n[s%ringSecs]--
		}
	}
}

// clockEdge applies a 429 on lane l of a request rec, sent at its pace x,
// to a host settled on a window's quota read without a header: the first
// such pushback after fewer than the quota in the quota's window of the
// clock, or no more than the quota in a longer one, is read as a window of
// the clock and tested; another lane's while the test runs is the same
// edge. It reports whether it applied (the 429 is read; no other rule
// reads it).
func (r *rules) clockEdge(h *host, l *lane, rec ticketRec, x float64, prevEp, now int64) bool {
	c := &h.cap
	w := c.quotaW
	if rec.clk == 0 || h.exp.phase != expSettled || c.clock.on || c.clock.refuted || w <= 0 {
		return false
	}
	if k := &c.clock; k.n > 0 {
		if rec.at < k.end && rec.at >= k.end-2*w {
			// Another lane at a window's end while the test runs: the
			// edge read, nothing more; it waits for the window's end.
			start := rec.at - rec.at%w
			r.coolUntil(h, l, min(start+w, k.end)+int64(clockHeld), now, "a window of the clock being tested: wait for its end")
			return true
		}
		return false
	}
	if !atLeast(x, c.follow) {
		return false
	}
	n, ok := r.clockQuota(h, l, rec, prevEp)
	if !ok {
		return false
	}
	k := &c.clock
	*k = clockRead{n: n, x: x, lane: l.exit, stage: 1}
	start := rec.at - rec.at%w
	k.end = start + w
	if k.end-int64(clockLead) <= now+int64(clockSlack) {
		// Too near the end for the test's first request: the lane tests
		// the next window, its first request there past the quota.
		k.end += w
	} else {
		r.coolUntil(h, l, k.end-int64(clockLead), now, "a window of the clock: its test goes just before the end")
		l.tat = k.end - int64(clockLead) // then, whatever its pace: one request
		r.rekey(h, l)
	}
	h.note(r, now, "clock", l.exit, "clock", 0, k.n, fmt.Sprintf("pushed back after %.0f in a window of the clock of %v: its quota if the window is the clock's; tested at the end of one", k.n, time.Duration(w)))
	for _, o := range h.lanes {
		if o == l || o.x == nil {
			continue
		}
		if m, ok := o.x.sent.sum(start/1e9, now/1e9); ok && float64(m) >= k.n {
			o.tat = max(o.tat, min(start+w, k.end)+int64(clockHeld))
			r.rekey(h, o)
		}
	}
	return true
}

// clockHold holds every lane but the test's that sent the quota in the
// window of the clock that ends at the test's end until the test's second
// request is answered.
func (r *rules) clockHold(h *host, l *lane, now int64) {
	k := &h.cap.clock
	for _, o := range h.lanes {
		if o == l || o.x == nil {
			continue
		}
		if m, ok := o.x.sent.sum((k.end-h.cap.quotaW)/1e9, now/1e9); ok && float64(m) >= k.n {
			o.tat = max(o.tat, k.end+int64(clockHeld))
			r.rekey(h, o)
		}
	}
}

// clockQuota is the quota lane l's 429 on rec reads in the quota's window of
// the clock: what the lane sent there before it, fewer than the quota read
// and at least half of it, the window's end no more than half a window on
// (the lane and those held with it idle until then, for nothing if the
// window is not the clock's: a host of the simulator's hundred, read as 3
// per 30 s, held its lanes 22 s), no 429 of the lane's before it in the
// window, and no whole window before that passed more on a lane. A longer
// window (one read too short) is not tried: flask-limiter's 40 per 15 s,
// read as 40 per 10 s and met near the end of a 20-s window of the clock,
// held every lane 6 s for a test that failed (92.9% → 82.7% after 60 s),
// and one tried after another, pushed back past its end, was proven by any
// limiter that lets a lane through after a long enough wait (a sliding
// counter that counts what it refuses read as 9 per 20 s of its 10 per 10
// s).
func (r *rules) clockQuota(h *host, l *lane, rec ticketRec, prevEp int64) (float64, bool) {
	c := &h.cap
	w := c.quotaW
	st := rec.at - rec.at%w
	n := float64(rec.clk - 1) // before the 429's request, in the window
	if prevEp >= st || n < 2 || n < c.quotaN/2 || n > c.quotaN-1 || st+w-rec.at > w/2 ||
		r.clockPassedMore(h, l, st, w, n, prevEp) {
		return 0, false
	}
	return n, true
}

// clockPassedMore reports whether a lane passed more than n in the whole
// window of the clock of w before the one that begins at st, with no 429 of
// its own since the window before it: the quota is not n there.
func (r *rules) clockPassedMore(h *host, l *lane, st, w int64, n float64, prevEp int64) bool {
	for _, o := range h.lanes {
		ep := o.epAt
		if o == l {
			ep = prevEp
		}
		if o.x == nil || ep >= st-w {
			continue
		}
		if m, ok := o.x.sent.sum((st-w)/1e9, (st-1)/1e9); ok && float64(m) > n {
			return true
		}
	}
	return false
}

// clockTest reads the answer to lane l's request rec (sent at sent,
// throttled or not) when it is the test's: the first, just before the
// window's end and past the quota in it, must be pushed back; the second,
// just after the end, must pass. A first request that went before the
// lane had sent the quota, and passed, tries again a window on. It reports
// whether the answer was the test's first (then no other rule reads it).
func (r *rules) clockTest(h *host, l *lane, rec ticketRec, sent int64, throttled bool, now int64) bool {
	c := &h.cap
	k := &c.clock
	if k.lane == "" || k.lane != l.exit || sent < k.end-int64(clockLead)-int64(clockSlack) {
		return false
	}
	w := time.Duration(c.quotaW)
	past := float64(rec.clk) > k.n // past the quota in its window
	var why string
	switch {
	case k.stage == 1 && sent < k.end && throttled && past:
		k.stage = 2
		l.epAt = now
		h.note(r, now, "clock", l.exit, "cooldown", 0, secs(k.end+int64(clockSlack)-now), "pushed back just before the window's end: the next request just after it")
		r.coolUntil(h, l, k.end+int64(clockSlack), now, "a window of the clock: its test's second request goes just after the end")
		return true
	case k.stage == 1 && sent < k.end && !throttled && !past:
		k.end += int64(w) // went before the lane sent the quota: the next window
		return false
	case k.stage == 2 && sent >= k.end && !throttled:
		n := k.n
		k.lane, k.end, k.on = "", 0, true
		h.note(r, now, "clock", l.exit, "quota", c.quotaN/secs(c.quotaW), n/w.Seconds(), fmt.Sprintf("pushed back before the window's end and passed after it: a window of the clock, %.0f per %v", n, w))
		c.setQuota(n, int64(w))
		c.ceil(k.x, now)
		p := n / w.Seconds()
		c.safe, c.pass, c.sent, c.lo = min(c.safe, p), min(c.pass, p), min(c.sent, p), min(c.lo, p)
		for _, o := range h.lanes {
			// A new window of the clock began: what a lane sent in the
			// last one is no debt against the slower pace (setPace's),
			// which held the lanes at Rack::Attack's 40 per minute half
			// a minute into the next one.
			if o != l {
				o.serAt, o.serSent, o.serOK = now, 0, 0
			}
		}
		r.updateFollow(h, now, "clock", "a window of the clock")
		if ex := h.lanes[h.exp.exit]; ex != nil {
			r.setExplorerPace(h, ex, c.follow, now, "settled", "the explorer paces with the others")
		}
		return false // a success as any other too
	case k.stage == 1 && sent < k.end && !throttled:
		why = "passed past the quota just before the window's end"
	case sent < k.end:
		why = "pushed back under the quota"
	case throttled:
		why = "pushed back just after the window's end"
		r.clockRelease(h, l, k.end, now)
	default:
		why = "its first request went after the window's end: nothing proven"
	}
	h.note(r, now, "clock", l.exit, "clock", k.n, 0, why+": not a window of the clock")
	x := k.x
	*k = clockRead{refuted: true}
	// The pushback the test absorbed is read now as the other rules would
	// have read it then: a sliding counter's edge, most likely (httprate's
	// bare 5 per 10 s met the same edge on five lanes ten seconds later,
	// 5 429s in the run → 11).
	r.quotaEdge(h, l, x, now)
	return false
}

// clockRelease lets the lanes a test held to its window's end go one at a
// time, an interval of the host's pace apart, once the test's second
// request was pushed back after that end: their windows, of whatever kind,
// may hold them still (flask-limiter's 40 per 15 s opened by each lane's
// first request 0.5 s after a 15-s window of the clock began: nine lanes
// let go together 0.2 s before their windows ended were pushed back
// together, read as the limit falling).
func (r *rules) clockRelease(h *host, l *lane, end, now int64) {
	var held []*lane
	for _, o := range h.lanes {
		if o != l && o.tat > now && o.tat <= end+int64(clockHeld) {
			held = append(held, o)
		}
	}
	slices.SortFunc(held, func(a, b *lane) int { return strings.Compare(a.exit, b.exit) })
	step := max(interval(h.cap.follow), 2*int64(clockSlack))
	for i, o := range held {
		o.tat = max(o.tat, now+int64(i+1)*step)
		r.rekey(h, o)
	}
}
