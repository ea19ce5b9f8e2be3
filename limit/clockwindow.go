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
//
// A Retry-After tells more: the window's end, the same for every lane and on
// the clock's grid; two ends a window apart read the window and its quota
// on any host without a declared quota (clockTold).

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
	// w is the window a Retry-After told (clockTold; 0: the quota's), told
	// the last reset a Retry-After told on the host (Unix ns) and toldRA
	// that Retry-After; passed counts the told test's requests that passed
	// after the window's end.
	w, told, toldRA int64
	passed          uint8
}

// clockW is the length of the window of the clock read or tested: the one
// Retry-Afters told, else the settled quota's.
func (c *capacity) clockW() int64 {
	if c.clock.w > 0 {
		return c.clock.w
	}
	return c.quotaW
}

// sendRing counts what a lane sent in each second of the clock over the
// last ringSecs seconds, whole from start on (the second after the host's
// first 429: a window of the clock read later began after it). A window of
// the clock of whole seconds then has its count, from any moment its length
// is known.
type sendRing struct {
	start, last int64 // Unix seconds: the first counted, the latest written
	n           [ringSecs]uint8
}

// ringSecs bounds the windows of the clock read: a minute and a few seconds.
const ringSecs = 64

// add counts a request sent in Unix second s.
func (g *sendRing) add(s int64) {
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
	// clockFront: the lanes of a proven window of the clock send at
	// clockFront/(clockFront-1) times their pace until a window's quota
	// is spent (clockSend).
	clockFront = 2
	// toldProof is how many requests the lane testing a window told by
	// Retry-After sends at once after its end, toldSpan how soon after it
	// they must have gone: all must pass. A window of the clock lets a
	// whole quota through there; a sliding counter on the clock's grid
	// that told its window's end, the last window weighing in whole, lets
	// one through at most (a simulated one that counts what it refuses,
	// 10 per 10 s, proven 8 per 10 s by one request: 26 429s where it
	// drew 5).
	toldProof = 3
	toldSpan  = time.Second
)

// clockSend counts request rec that lane l sends now, once the host was
// pushed back, in the lane's send ring, and sets its count in its window of
// the clock (rec.clk: 0 when no window is read, or not counted from the
// window's start). A lane that sent the quota of a window read as the
// clock's (proven or being tested) waits for the window's end.
func (r *rules) clockSend(h *host, l *lane, rec *ticketRec, now int64) {
	c := &h.cap
	if c.declared > 0 || h.led || c.clock.refuted {
		return
	}
	ramp := h.c.Throttled == 0 && h.exp.phase == expRamp && l.exit == h.exp.exit
	if h.c.Throttled == 0 && !ramp && (l.x == nil || l.x.sent == nil) {
		return
	}
	x := l.extra()
	if x.sent == nil {
		// Only the lanes of a host pushed back count, each from its
		// first send since the first 429: it sent nothing between, so
		// its count is whole from the second after that 429 on (a lane
		// resting a minute's Retry-After counts the next minute whole).
		// The ramp's explorer counts from its first request on: a
		// window of the clock its first run straddled is read from
		// what it sent in it (clockCut).
		from := h.thrAt/1e9 + 1
		if ramp {
			from = now / 1e9
		}
		x.sent = &sendRing{start: from, last: from - 1}
	}
	g := x.sent
	g.add(now / 1e9)
	rec.ring = true
	if s := now / 1e9; s == g.last && g.n[s%ringSecs] > 0 {
		rec.sec = g.n[s%ringSecs] - 1
	}
	w := c.clockW()
	if w <= 0 || c.clock.w == 0 && c.quotaN <= 0 || w%int64(time.Second) != 0 {
		return
	}
	if k := &c.clock; k.lane != "" && now > k.end+w {
		// The lane testing it sent nothing since (it left the pool).
		h.note(r, now, "clock", k.lane, "clock", k.n, 0, "the window of the clock went untested")
		*k = clockRead{refuted: true}
		return
	}
	at := now - now%w
	n, ok := g.sum(at/1e9, now/1e9)
	if !ok {
		return
	}
	rec.clk = n
	k := &c.clock
	if k.w > 0 && k.stage == 2 && l.exit == k.lane && now >= k.end {
		l.tat = min(l.tat, now) // the told test's requests go at once (toldProof)
	}
	q := k.laneQuota(l)
	if k.on && k.w > 0 && float64(n) < q {
		// A window told by Retry-After, proven: the lane front-loads
		// its quota, at twice its pace until it is spent, then the gate
		// holds it to the window's end. It sends as much a window as
		// evenly paced, and sooner: a crawl's last window is not cut
		// short of what it allowed (Rack::Attack's 40 per minute, proven
		// 16 s into a run whose last window lasted 44 s, sent 28 of 40
		// there). Not on a bare window's proof: a simulated sliding
		// counter of 10 per 10 s, proven a window of the clock of 9,
		// drew 27 429s where it drew 4 (96% → 83% after 30 s).
		l.tat -= rec.laneIv / clockFront
	}
	if k.n > 0 && float64(n) >= q {
		next := at + w + int64(clockSlack)
		switch {
		case l.exit == k.lane && k.stage == 1 && at+w == k.end:
			next = at + w - int64(clockLead) // the test's first request: the next past the quota, just before the end
		case k.lane != "" && at+w >= k.end:
			next = k.end + int64(clockHeld) // after the test's second request is answered
		}
		l.tat = max(l.tat, next)
	}
}

// clockUnsend takes back a request that never reached the server.
func (l *lane) clockUnsend(rec ticketRec) {
	if g := l.extra().sent; g != nil {
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
	r.clockHold(h, l, start, now)
	return true
}

// clockHold holds every lane but l, the test's, that sent the quota read in
// the window of the clock from start on until that window's end (the
// test's: until its second request is answered).
func (r *rules) clockHold(h *host, l *lane, start, now int64) {
	k := &h.cap.clock
	for _, o := range h.lanes {
		if o == l || o.x == nil {
			continue
		}
		if m, ok := o.x.sent.sum(start/1e9, now/1e9); ok && float64(m) >= k.n {
			o.tat = max(o.tat, min(start+h.cap.clockW(), k.end)+int64(clockHeld))
			r.rekey(h, o)
		}
	}
}

const (
	// toldLate and toldEarly are how far after and before a multiple of a
	// window a reset told by Retry-After may fall and be that window's
	// end: a Retry-After in whole seconds from the request's Unix second
	// (Rack::Attack's) tells an end up to a second late, plus the answer's
	// way back; a server's clock may be a little ahead.
	toldLate  = 1500 * time.Millisecond
	toldEarly = 500 * time.Millisecond
	// toldMaxW is the longest window read from Retry-Afters: the send
	// ring counts a little more than a minute.
	toldMaxW = time.Minute
)

// clockTold reads a window of the clock from what Retry-After tells. A
// window of the clock ends at the same moment for every client, on the
// clock's grid of its length (Rack::Attack's Retry-After is the seconds from
// the request's Unix second to its period's end), where a window opened by
// a client's first request ends wherever that request fell. So a reset told
// now (now plus Retry-After) a whole number w of seconds after the last
// reset told on the host, both on the grid of w, reads a window of the
// clock of w; unless the two Retry-Afters are the same (a fixed one tells
// no window: nginx's, haproxy's) or one is longer than w. What lane l sent
// in that window before its request rec, pushed back, is the window's
// quota. The lanes that sent it wait for the window's end, the others are
// held to it there (clockSend), and the lane's first toldProof requests
// after the end must pass, sent at once just after it (up to a second
// before the Retry-After, in whole seconds, runs out; a window opened by the
// lane's first request that ended on the grid only within the
// Retry-After's second pushes them back, and so does a sliding counter):
// then the host settles on the quota (clockTest). Without this,
// Rack::Attack's 40 per minute with its Retry-After was searched over the
// Retry-Afters' minutes, and every lane, paced at what a search passed over
// the first half of a minute, was pushed back at once (12 429s, 1.11%).
// On a host whose told window is proven, the 429 is clockOwn's to read. It
// reports whether it read one (the 429 is read; no other rule reads it).
func (r *rules) clockTold(h *host, l *lane, rec ticketRec, ra time.Duration, x float64, prevEp, now int64) bool {
	c := &h.cap
	k := &c.clock
	if k.on && k.w > 0 {
		return r.clockOwn(h, l, rec, now)
	}
	if c.declared > 0 || h.led || k.on || k.refuted || k.n > 0 {
		return false
	}
	reset, d := now+int64(ra), int64(ra)
	prev, prevD := k.told, k.toldRA
	if prev != 0 && reset > prev-int64(toldLate) && reset < prev+int64(toldLate) {
		return false // the same reset told again
	}
	k.told, k.toldRA = reset, d
	if prev == 0 || d-prevD < int64(2*time.Second) && prevD-d < int64(2*time.Second) {
		return false
	}
	w, end, ok := toldWindow(prev, reset)
	if !ok || max(d, prevD) > w+int64(time.Second) {
		return false
	}
	start := end - w
	if !rec.ring || rec.at < start || prevEp >= start {
		return false // sent in the window before, or pushed back in this one already
	}
	m, ok := l.x.sent.sum(start/1e9, rec.at/1e9-1)
	n := float64(m) + float64(rec.sec)
	if !ok || n < 2 {
		return false
	}
	*k = clockRead{n: n, x: x, w: w, end: end, lane: l.exit, stage: 2}
	h.note(r, now, "clock", l.exit, "clock", 0, n, fmt.Sprintf("pushed back after %.0f in a window of the clock of %v: Retry-Afters told resets %v apart, both on its grid; its first requests after the end must pass", n, time.Duration(w), time.Duration(w)))
	r.coolUntil(h, l, end+int64(clockSlack), now, "a window of the clock: its test's request goes just after the end")
	r.clockHold(h, l, start, now)
	return true
}

// laneQuota is what lane l may send in a window of the clock read: the
// host's quota, or the lane's own where it was pushed back under it.
func (k *clockRead) laneQuota(l *lane) float64 {
	if x := l.x; x != nil && x.clockN > 0 && float64(x.clockN) < k.n {
		return float64(x.clockN)
	}
	return k.n
}

// clockOwn reads a 429 on lane l in a window of the clock told and proven,
// after m sends in it, fewer than the lane may send there (and at least
// half of it): the lane's own quota is m, for another client behind its
// address spends the rest (a proxy pool's exits are shared), or the quota
// read was one too many. The lane is held to m a window from then on, the
// others keep theirs; without it such a lane drew a 429 every window. It
// reports whether it read one.
func (r *rules) clockOwn(h *host, l *lane, rec ticketRec, now int64) bool {
	k := &h.cap.clock
	q := k.laneQuota(l)
	m := float64(rec.clk - 1)
	if rec.clk == 0 || m >= q || m < 2 || m < q/2 {
		return false
	}
	h.note(r, now, "clock", l.exit, "quota", q, m, fmt.Sprintf("pushed back after %.0f in a window of the clock of %v: the lane's own quota (another client behind its address spends the rest)", m, time.Duration(k.w)))
	l.extra().clockN = int32(m)
	return true
}

// toldWindow is the window of whole seconds (2 s to toldMaxW) whose grid
// both ends told, prev and then reset, fall on, a whole window apart, and
// reset's end on it. Each end is told up to toldLate late, so their
// difference rounded may be a second off the window's length (Rack::Attack's
// ends of a minute told 0.16 s and 0.9 s late read 61 s): the lengths a
// second either side of it are tried too.
func toldWindow(prev, reset int64) (w, end int64, ok bool) {
	sec := int64(time.Second)
	near := (reset - prev + sec/2) / sec * sec
	for _, w := range []int64{near, near - sec, near + sec} {
		if w < 2*sec || w > int64(toldMaxW) {
			continue
		}
		end, ok := onGrid(reset, w)
		if _, ok2 := onGrid(prev, w); ok && ok2 && end-w <= prev+int64(toldEarly) {
			return w, end, true
		}
	}
	return 0, 0, false
}

// onGrid is the multiple of w that t falls on, within toldEarly before it
// and toldLate after it, and whether it does.
func onGrid(t, w int64) (int64, bool) {
	m := t % w
	switch {
	case m <= int64(toldLate):
		return t - m, true
	case w-m <= int64(toldEarly):
		return t - m + w, true
	}
	return 0, false
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
	w := time.Duration(c.clockW())
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
	case k.stage == 2 && k.w > 0 && sent > k.end+int64(toldSpan):
		why = "its requests went late after the window's end: nothing proven"
	case k.stage == 2 && k.w > 0 && sent >= k.end && !throttled && float64(k.passed+1) < min(toldProof, k.n):
		k.passed++
		return false
	case k.stage == 2 && sent >= k.end && !throttled:
		n := k.n
		k.lane, k.end, k.on = "", 0, true
		p := n / w.Seconds()
		for _, o := range h.lanes {
			// A new window of the clock began: what a lane sent in the
			// last one is no debt against the slower pace (setPace's),
			// which held the lanes at Rack::Attack's 40 per minute half
			// a minute into the next one.
			if o != l {
				o.serAt, o.serSent, o.serOK = now, 0, 0
			}
			if o.x != nil {
				o.x.clockN = 0 // a quota of its own belonged to the window read before
			}
		}
		if k.w > 0 {
			// Told by Retry-After: the window's quota, whatever a
			// search read.
			r.settleQuota(h, n, w, now, "clock", fmt.Sprintf("passed after the window's end: a window of the clock, %.0f per %v", n, w))
			c.lo = min(c.lo, p)
			return false
		}
		h.note(r, now, "clock", l.exit, "quota", c.quotaN/secs(c.quotaW), p, fmt.Sprintf("pushed back before the window's end and passed after it: a window of the clock, %.0f per %v", n, w))
		c.setQuota(n, int64(w))
		c.ceil(k.x, now)
		c.safe, c.pass, c.sent, c.lo = min(c.safe, p), min(c.pass, p), min(c.sent, p), min(c.lo, p)
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

// clockCut cuts the first run at the start of the window its 429 ended:
// where the end the Retry-After told (rec on) falls on the grid of the
// common window the run and the recovery fit, and the run began more than
// a second before that window did, the window is one of the clock
// (Rack::Attack's, the same for every client) that the crawl started part
// way into. The run's requests before the window's start counted in the
// window before, and its count over the whole run is more than a window
// holds (Rack::Attack's 40 per minute, the run begun 5.1 s before a
// minute's end, read 45 per minute, and every lane, paced at that, was
// pushed back near the next minute's end at once: 1.20% of 429s). The run
// is what the explorer's send ring counted from the window's start to the
// request the 429 answered, over the window less the recovery (the told
// end's lateness, up to a second of a Retry-After in whole seconds, taken
// off it): the rest of the first 429's reading reads that, a window's
// quota. A window opened by the run's first request (or a moving one)
// starts with the run, and a fixed Retry-After tells an end on the grid
// only by chance; nothing is cut there, nor to under half the run's count.
func (r *rules) clockCut(h *host, rec, now int64) {
	e := &h.exp
	ex := h.lanes[e.exit]
	if ex == nil || ex.x == nil || e.sent1At == 0 {
		return
	}
	w, fits := windowFit(e.t1, e.headD, rec)
	if !fits || w%time.Second != 0 {
		return
	}
	g, ok := onGrid(now+rec, int64(w))
	start, began := g-int64(w), now-e.t1-e.headD
	if !ok || began >= start-int64(time.Second) || e.sent1At < start || g-rec <= start {
		return
	}
	m, ok := ex.x.sent.sum(start/1e9, e.sent1At/1e9-1)
	n := m + int32(e.sent1Sec)
	q := e.n1 + e.headN
	if !ok || n >= q || n < minQuota || 2*n < q {
		return
	}
	h.note(r, now, "clock", e.exit, "run", float64(q), float64(n), fmt.Sprintf("the run began %.1fs before the window of %v whose end the Retry-After told on the clock's grid: the run is the %d it sent in that window", secs(start-began), w, n))
	e.n1, e.t1, e.headN, e.headD = n, g-rec-start, 0, 0
	// The followers straddled the window's start too: each one's series
	// is counted from it, all of what it sent charged to this window
	// (more than the server counts, never less), so a follower slowed to
	// the quota's pace waits out what it spent here (setPace's debt) and
	// sends no more than the quota before the window's end. Charged from
	// the series' own start instead, each of Rack::Attack's followers sent
	// the two requests it had sent before the minute again, and all nine
	// were pushed back together a second before the minute's end.
	for _, l := range h.lanes {
		if l != ex && l.serAt != 0 && l.serAt < start {
			l.serAt = start
		}
	}
}
