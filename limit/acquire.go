package limit

import (
	"cmp"
	"math"
	"slices"

	"github.com/exitgate/exitgate/verdict"
)

// exitReadyFunc reports when an exit may next be used on any host (health,
// quarantine, provider limits) and whether taking it needs the exit table
// too (the exit has provider limits or is due a recovery probe).
type exitReadyFunc func(exit string, now int64) (ready int64, gated bool)

// acquireResult is one host-level admission decision.
type acquireResult struct {
	ok     bool
	ticket Ticket
	gated  bool  // the chosen exit needs takeExit before the request goes
	next   int64 // when not ok: the earliest instant anything could go
}

// acquire decides whether one request to h may go at now and on which lane,
// taking its tokens and slots if so. The caller holds h's shard lock.
func (r *rules) acquire(h *host, pool *exitPool, name string, want Want, now int64, exitReady exitReadyFunc) acquireResult {
	h.last = now
	if h.scope.shared() && !h.hinted && now-h.scopeAt > r.scopeRevert {
		r.setScope(h, ScopeExit, now, "no site-wide pushback for a long time")
		h.rate.on = h.rate.overloaded
	}
	if h.rate.overloaded && now-h.rate.epAt > r.scopeRevert {
		h.rate.overloaded = false
		h.rate.on = h.scope.shared()
	}

	// Host gates: shared pause, politeness ceiling, the host's own rate,
	// a declared site-wide quota.
	gate := h.pause
	if r.ceiling > 0 {
		gate = max(gate, h.ceilTat-hostSlop(int64(1e9/r.ceiling)))
	}
	if h.rated() {
		gate = max(gate, h.rate.tat-hostSlop(int64(1e9/h.rate.now)))
	}
	if h.scope.shared() && h.q != nil {
		gate = max(gate, h.q.readyAt())
	}

	var (
		l      *lane
		ready  int64
		gated  bool
		soonst int64 = math.MaxInt64
	)
	if pin := want.Pin; pin != "" {
		l = h.lanes[pin]
		if l == nil {
			l = h.newLane(r, pin, pool.since(pin), now)
		}
		er, g := exitReady(pin, now)
		ready, gated = max(r.laneReady(l), er), g
	} else {
		l, ready, gated, soonst = h.pick(r, pool, want.Avoid, now, exitReady)
	}
	if l == nil {
		next := max(gate, soonst)
		if soonst == math.MaxInt64 || next <= now {
			// (Nothing ready now although something said so: lanes of
			// exits no longer in the pool, dropped a few at a time. A
			// "next" in the past read as 1970.)
			next = max(gate, now+r.recheck)
		}
		return acquireResult{next: next}
	}
	ready = max(ready, gate)
	if h.inFlight >= int32(r.hostConc) {
		ready = max(ready, now+r.recheck)
	}
	if ready > now {
		if h.led {
			// A lane held back for what it sent at a faster pace learns
			// of the leader's next pace only when asked: ask again soon.
			ready = min(ready, now+ledRecheck)
		}
		return acquireResult{next: ready}
	}
	if l.inFlight == math.MaxInt16 {
		// 32767 requests out on one lane: a server that never answers.
		return acquireResult{next: now + interval(l.pace)}
	}
	l.hot = now-r.laneReady(l) <= interval(l.pace)+hotSlack
	r.adoptExplorer(h, l, now)

	// Take: lane token, host ceiling, host rate, quota and slots.
	rec := ticketRec{l: l, at: now}
	iv := interval(l.pace)
	if e := &h.exp; e.awaitAt != 0 && l.exit == e.exit {
		// A retry measuring the first 429's recovery is one request:
		// the next waits for its answer. A lane idle since its 429
		// reconnects, and at the explorer's pace a second request went
		// before the first was answered: on a server that counts what
		// it rejects, every retry counted twice (haproxy's 100 per
		// minute still rejected a retry a window after the run).
		rec.hold = probeHold
		iv += probeHold
	}
	l.tat = max(l.tat, now) + iv
	rec.laneIv = iv
	if l.q != nil && l.q.reset != 0 {
		l.q.take(now)
		rec.quota = true
	}
	if l.x != nil {
		for _, q := range l.x.qo {
			q.take(now)
		}
	}
	if r.ceiling > 0 {
		rec.ceilIv = int64(1e9 / r.ceiling)
		h.ceilTat = max(h.ceilTat, now) + rec.ceilIv
	}
	if h.rated() {
		rec.rtIv = int64(1e9 / h.rate.now)
		h.rate.tat = max(h.rate.tat, now) + rec.rtIv
	}
	if h.scope.shared() && h.q != nil && h.q.reset != 0 {
		h.q.take(now)
		rec.hostQuota = true
	}
	if l.serAt == 0 || now-l.serAt > maxSeries || l.serSent == 0 && l.serOK == 0 && l.epAt == 0 {
		// A lane's first series begins with its first request, not when
		// the lane was made: a lane made as a worker joined a fleet sent
		// nothing until the leader published a pace, a second or four
		// later, and a series that began earlier spread too little of
		// a fall's debt (haproxy's 10 per 30 s: each such lane sent its
		// 11th request inside 30 s of its first), and stretched an
		// explorer's first run (22 successes over 12.2 s read as 22 per
		// 20 s where 8.2 s of requests were 20 per 10 s).
		l.serAt, l.serSent, l.serOK = now, 0, 0
	}
	rec.first = l.eps > 0 && l.serSent == 0
	l.serSent++
	r.clockSend(h, l, &rec, now)
	rec.over = r.awaitCount(h, l, now)
	r.wallCount(h, l, now)
	l.inFlight++
	h.inFlight++
	h.seq++
	l.taken = uint32(h.seq)
	h.tickets[h.seq] = rec
	h.send.sent(now)
	r.awaitSpent(h, l) // (rekeys the lane when it slows it)
	r.rekey(h, l)
	return acquireResult{ok: true, gated: gated, ticket: Ticket{Host: name, Exit: l.exit, Seq: h.seq}}
}

// pick chooses the lane for an unpinned request: a never-used pool exit
// first (it has been idle longest), else the heap's earliest lane. It returns
// the lane and when it may go, or nil and the soonest time one might.
func (h *host) pick(r *rules, pool *exitPool, avoid []string, now int64, exitReady exitReadyFunc) (*lane, int64, bool, int64) {
	if h.poolVer != pool.ver {
		h.poolVer, h.cursor, h.passDone = pool.ver, 0, false
	}
	// Lazy cursor over pool exits this host has no lane for. Bounded steps
	// per call; a full pass is amortised over many calls.
	if !h.passDone && len(h.lanes) < pool.Len() {
		for range maxScan {
			if int(h.cursor) >= pool.Len() {
				h.cursor, h.passDone = 0, true
				break
			}
			id, since := pool.exits[h.cursor].ID, pool.exits[h.cursor].Since
			h.cursor++
			if h.lanes[id] != nil || slices.Contains(avoid, id) {
				continue
			}
			er, g := exitReady(id, now)
			l := h.newLane(r, id, unixNano(since), now)
			if er <= now && l.key <= now {
				return l, now, g, 0
			}
			// Blocked everywhere for now, or just moved here: the lane
			// waits in the heap.
			l.key = max(er, l.key)
			h.fix(l)
		}
	}
	var aside [maxScan]*lane
	var fallback *lane // the first lane over its share (laneShare)
	n := 0
	defer func() {
		for _, l := range aside[:n] {
			h.push(l)
		}
	}()
	for range maxScan + len(avoid) {
		if len(h.heap) == 0 {
			break
		}
		top := h.heap[0]
		if top.inFlight == 0 {
			if _, ok := pool.idx[top.exit]; !ok || now-top.lastUse() > r.idleTTL {
				// Gone from the pool, or idle past the TTL: forget it. A
				// later pass of the cursor may bring the exit back fresh.
				explorer := top.exit == h.exp.exit
				h.dropLane(top)
				if explorer && len(h.heap) > 0 {
					// The search goes on at once, on the lane due
					// first, at the explorer's pace, not when that
					// lane's follower pace lets it: a worker that
					// joined a fleet took the explorer's exit at
					// nginx's 12 per minute, the search went on 2 s
					// later with every follower's second request, and
					// all four drew a 429.
					r.adoptExplorer(h, h.heap[0], now)
				}
				continue
			}
		}
		full := !slices.Contains(avoid, top.exit) && top.inFlight >= r.laneShare(pool)
		if full && fallback == nil {
			// A lane over its share of the host's requests in flight goes
			// only when no other lane can go now: a server that slows one
			// address down held all 16 of a host's requests on that lane
			// while the other nine waited (express-slow-down, met blind).
			// With the others cooling or banned it still takes them all.
			fallback = top
		}
		if full || slices.Contains(avoid, top.exit) {
			if n == len(aside) {
				break
			}
			h.remove(top)
			aside[n] = top
			n++
			continue
		}
		er, g := exitReady(top.exit, now)
		if er > top.key {
			// The exit is blocked everywhere (quarantine, provider limit):
			// sink the lane until then instead of scanning it again.
			top.key = er
			h.fix(top)
			continue
		}
		if top.key > now && fallback != nil {
			if l, at, g, ok := readyFallback(fallback, now, exitReady); ok {
				return l, at, g, 0
			}
		}
		return top, top.key, g, 0
	}
	if fallback != nil {
		if l, at, g, ok := readyFallback(fallback, now, exitReady); ok {
			return l, at, g, 0
		}
	}
	soon := int64(math.MaxInt64)
	if len(h.heap) > 0 {
		soon = h.heap[0].key
	}
	return nil, 0, false, soon
}

// release settles one ticket on h: done with o, or canceled. It reports
// false when the ticket was unknown or already settled, so every ticket
// releases its slots exactly once.
func (r *rules) release(h *host, t Ticket, kind releaseKind, o *Outcome, now int64, u float64) bool {
	rec, ok := h.tickets[t.Seq]
	if !ok || rec.l.exit != t.Exit {
		return false
	}
	delete(h.tickets, t.Seq)
	l := rec.l
	l.inFlight--
	h.inFlight--
	h.last = max(h.last, now)
	if kind == relAbandoned {
		// Sent, its answer never heard: what it took stays spent, and
		// nothing is read of it.
		h.c.Requests++
		h.c.Abandoned++
		l.c.req++ // (the exit's count too)
		r.rekey(h, l)
		return true
	}
	cancel := kind == relCanceled
	if cancel || o.Verdict == verdict.ProxyFailure {
		// Never reached the server: give back exactly what was taken.
		l.tat -= rec.laneIv
		l.serSent--
		if rec.ring {
			l.clockUnsend(rec)
		}
		if rec.quota {
			l.q.rem++
		}
		h.ceilTat -= rec.ceilIv
		h.rate.tat -= rec.rtIv
		if rec.hostQuota {
			h.q.rem++
		}
		if cancel {
			h.c.Canceled++
		} else {
			h.c.Requests++
			h.c.ProxyFailures++
			l.extra().c.fail++
			r.explorerLost(h, l, now)
		}
		r.rekey(h, l)
		return true
	}
	if rec.hold > 0 {
		l.tat = max(now, l.tat-rec.hold) // the retry is answered: the lane's pace again
	}
	was := l.key
	r.outcome(h, l, rec, o, now, u)
	answered := now
	if !o.AnsweredAt.IsZero() {
		answered = min(now, o.AnsweredAt.UnixNano())
	}
	r.spaceAfter(l, rec, answered)
	r.rekey(h, l)
	if l.key < was && was > now {
		// The answer brought the lane's next send forward (a reset told
		// early: quota.early): a caller holding the host until the old
		// instant asks again. Without it, the lanes that waited for httprate's
		// window guessed at 5 s slept 4 s past the second they were told.
		h.raised = true
	}
	return true
}

// spaceAfter keeps the lane's next request at least one interval after
// this one reached the server, as far as the client can tell: an answer
// slower than the lane's usual by more than the slop its pace allows may
// have arrived late by the difference (a busy client, a proxy slow to
// forward), and a limiter that times arrivals with no burst (nginx
// limit_req) rejects the next request sent on schedule. The usual answer
// time is a running median: against the quickest answer instead, nearly
// every answer counted as late, and lanes at 20/s went 3% under their
// pace (x/time/rate at 20/s, burst 1: 57.8 ms apart at a pace of 56.1 ms).
func (r *rules) spaceAfter(l *lane, rec ticketRec, answered int64) {
	const unit = rttUnit
	rtt := min((answered-rec.at)/unit, math.MaxUint16)
	if rtt < 0 {
		return
	}
	m := int64(l.rttMid)
	if m == 0 {
		l.rttMid = uint16(max(rtt, 1))
		return
	}
	// A sixteenth of the way to this answer, at least a unit: a median
	// for answers near the usual, an average for ones far from it. A
	// server that delays what comes faster than its rate (nginx with a
	// burst and no nodelay) answers late for a while on purpose, and the
	// usual must follow it there: moved a sixteenth of the usual at a time
	// instead, it lagged, every delayed answer held the next request back,
	// and the twin of nginx 2r/s burst 4 fell from 88% to 83%. One very
	// slow answer (2 s among 5 ms) leaves answers 30 ms late held back by
	// less than that for about 75 answers while the usual comes back down.
	d := rtt - m
	step := d / 16
	if step == 0 {
		step = int64(cmp.Compare(d, 0))
	}
	l.rttMid = uint16(min(max(m+step, 1), math.MaxUint16))
	if late := d * unit; rec.laneIv > 0 && late > slop(rec.laneIv, 1-r.settle) {
		// One interval, at the lane's pace now if it rose since the
		// request was taken: the ramp's doubling must not be held to the
		// slower one. (A pace that fell has moved tat on already.)
		l.tat = max(l.tat, rec.at+late+min(rec.laneIv, interval(l.pace)))
	}
}

// laneShare is how many requests one lane of a host may hold in flight
// when others could go (pick): twice its even share of HostConcurrency
// over the pool, two at least. It binds only where the lanes are loaded
// unevenly; one or two exits may hold all of a host's.
func (r *rules) laneShare(pool *exitPool) int16 {
	n := max(pool.Len(), 1)
	return int16(min(max(2, 2*((r.hostConc+n-1)/n)), math.MaxInt16))
}

// readyFallback returns lane l, set aside by pick for holding its share of
// the host's requests in flight, when it may go at now: no other lane
// could.
func readyFallback(l *lane, now int64, exitReady exitReadyFunc) (*lane, int64, bool, bool) {
	er, g := exitReady(l.exit, now)
	if at := max(l.key, er); at <= now {
		return l, at, g, true
	}
	return nil, 0, false, false
}
