package limit

import (
	"math"
	"slices"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// lane is the state of one (host, exit) pair. It is kept small: an idle lane
// costs about 200 bytes with its map entry and heap slot (see memstore's
// TestIdleLaneBytes).
type lane struct {
	exit     string
	idx      int32 // position in the host heap; -1 = not in it
	inFlight int32
	key      int64  // heap key: earliest time this lane may go
	tat      int64  // GCRA theoretical arrival time
	cool     int64  // 429 cooldown until
	ban      int64  // Banned quarantine until
	epAt     int64  // when the current 429 episode began
	last     int64  // last acquire or release, for idle expiry
	taken    uint64 // host sequence number of the last take: ties go to the least recently used
	l        learner
	q        *quota
	c        laneCount
	// Last, to share laneCount's tail padding (a lane fits a 192-byte
	// allocation; see memstore's TestIdleLaneBytes).
	hot  bool // the last take came within one interval of the lane becoming ready
	bans uint8
}

type laneCount struct {
	req, ok, thr, err, ban, fail uint32
	coolMs                       uint32 // cooldown imposed after 429s, ms
}

// cooled adds a cooldown of d ns to the lane's throttled time.
func (c *laneCount) cooled(d int64) {
	if d > 0 {
		c.coolMs = uint32(min(int64(c.coolMs)+d/1e6, math.MaxUint32))
	}
}

// HostState is all limiter state for one host: its lanes, its gates and its
// learning. A Store keeps one per host and runs AcquireHost and ReleaseHost on
// it atomically; it is not safe for concurrent use on its own.
type HostState struct {
	lanes   map[string]*lane
	heap    []*lane
	tickets map[uint64]ticketRec
	seq     uint64

	poolVer  uint64
	cursor   int32
	passDone bool

	inFlight int32
	last     int64
	pause    int64 // shared not-before (busy, host-scoped Retry-After)
	busyEps  int16
	ceilTat  int64

	scope   Scope
	hinted  bool  // scope came from headers
	scopeAt int64 // last evidence for a shared scope
	aimd    float64
	aimdTat int64
	// aimdHi is the host rate that last drew a host-level 429 or 503
	// (req/s; 0 = none yet): additive increase stops at Settle times it, so
	// the host rate settles under the limit instead of saw-toothing. It
	// creeps up slowly so that a raised limit is found again.
	aimdHi float64
	// aimdLo is a proven lower bound on the host's capacity (req/s; 0 =
	// none): between two pushback episodes the server's bucket was empty
	// at both ends, so it refilled at least the successes in between. A cut
	// restarts no lower than Settle times it, and above it the rate climbs
	// slowly, so the host settles instead of halving on every episode.
	aimdLo    float64
	aimdCumAt int64 // start of the current pushback series
	aimdCumN  int32 // successes since aimdCumAt
	// overloaded: a busy verdict (503 overload) put the host under its AIMD
	// rate, whatever the scope of its 429s.
	overloaded bool
	epAt       int64 // host-scoped 429 episode start
	hostEps    int16
	ev         [8]scopeEv
	evN        uint8
	q          *quota // declared quota when the scope is shared

	winAt    int64
	winN     int32
	sendRate float64

	// prior is what this host's lanes have learned about one lane's
	// capacity (an average of their ceilings, req/s; 0 = nothing yet). A
	// server that limits per IP usually gives every IP the same budget, so
	// a new lane starts there instead of at the first guess, and a lane
	// still probing stops at it instead of overshooting into its own 429.
	prior float64
	// While nothing has pushed back, one lane at a time (the leader) probes
	// above the highest pace some lane has sustained (proven); the others
	// follow once it is proven. A site that limits per IP then costs one
	// overshoot 429 per host at the start, not one per exit.
	proven   float64
	leader   string
	leaderAt int64
	// thrAt is the host's last lane 429. After ProbeEvery and
	// reprobeQuiet<<probeFails successes without one (okSince, saturating),
	// a lane leads a re-probe above its ceiling (probeAt when) in case the
	// limit was raised; raised is the lower bound on the new limit that its
	// counting proved (raisedAt when), which the other lanes follow. A
	// failed re-probe costs the host a 429 or two, not one per exit, and
	// doubles the quiet the next one waits for (probeFails, reset by a
	// raise), so a stable limit costs fewer and fewer probes.
	thrAt      int64
	okSince    int32
	probeFails uint8
	probeAt    int64
	raised     float64
	raisedAt   int64
	// symHi is the pace at which two lanes drew the host's latest typical
	// 429s (symAt when): lanes sending as fast will be pushed back next,
	// so they slow down without waiting for their own 429.
	symHi    float64
	symAt    int64
	lastTyp  scopeEv // the latest typical 429 and its pace
	lastTypX float64

	// waves holds the recent Forbidden answers of lanes that have some
	// (see wave.go); nil until a host answers one.
	waves map[*lane]*wave

	c Counters
}

type scopeEv struct {
	exit string
	at   int64
}

type ticketRec struct {
	l                    *lane
	at                   int64
	laneIv, ceilIv, aiIv int64
	quota, hostQuota     bool
}

// NewHostState returns empty state for one host.
func NewHostState() *HostState {
	return &HostState{lanes: make(map[string]*lane), tickets: make(map[uint64]ticketRec)}
}

// Idle reports whether h has nothing in flight and has not been used since
// now-ttl, so a store may drop it.
func (h *HostState) Idle(now time.Time, ttl time.Duration) bool {
	return h.inFlight == 0 && now.UnixNano()-h.last > int64(ttl)
}

// Lanes is the number of lanes h holds.
func (h *HostState) Lanes() int { return len(h.lanes) }

// --- heap of lanes keyed by the time they may next go ---

// laneReady is the earliest instant l may send, from its own state alone.
func (r *Rules) laneReady(l *lane) int64 {
	t := max(l.tat-r.tau(&l.l), l.cool, l.ban)
	if l.q != nil {
		t = max(t, l.q.readyAt(l.last))
	}
	return t
}

func (r *Rules) rekey(h *HostState, l *lane) {
	l.key = r.laneReady(l)
	h.fix(l)
}

func (h *HostState) newLane(r *Rules, exit string, now int64) *lane {
	l := &lane{exit: exit, idx: -1, last: now, l: learner{pace: r.First}}
	h.adoptPrior(r, &l.l)
	l.key = r.laneReady(l)
	h.lanes[exit] = l
	h.push(l)
	return l
}

func (h *HostState) dropLane(l *lane) {
	h.endWave(l)
	h.remove(l)
	delete(h.lanes, l.exit)
	h.passDone = false
}

// ExitReadyFunc reports when an exit may next be used on any host (health,
// quarantine, provider limits) and whether taking it needs a separate exit
// operation (the exit has provider limits or is due a recovery probe).
type ExitReadyFunc func(exit string, now int64) (ready int64, gated bool)

// maxScan bounds the lanes one Acquire examines, so a decision stays O(log n)
// in the pool size even when many exits are blocked.
const maxScan = 32

// AcquireHost decides whether one request to host h may go at req.Now and on
// which lane, taking its tokens and slots if so. It is the host-level half of
// Limiter.Acquire; a Store runs it atomically on one host's state.
func AcquireHost(r *Rules, h *HostState, pool *Pool, req *AcquireRequest, exitReady ExitReadyFunc) AcquireResult {
	now := req.Now.UnixNano()
	h.last = now
	if h.scope.shared() && !h.hinted && now-h.scopeAt > r.ScopeRevert {
		h.scope = ScopeExit
	}
	if h.overloaded && now-h.epAt > r.ScopeRevert {
		h.overloaded = false
	}

	// Host gates: shared pause, politeness ceiling, AIMD rate when the
	// server limits host-wide.
	gate := h.pause
	if r.Ceiling > 0 {
		gate = max(gate, h.ceilTat-hostSlop(int64(1e9/r.Ceiling)))
	}
	if h.rated() {
		gate = max(gate, h.aimdTat-hostSlop(int64(1e9/h.aimd)))
	}
	if h.scope.shared() {
		if h.q != nil {
			gate = max(gate, h.q.readyAt(now))
		}
	}

	var (
		l      *lane
		ready  int64
		gated  bool
		soonst int64 = math.MaxInt64
	)
	if pin := req.Want.Pin; pin != "" {
		l = h.lanes[pin]
		if l == nil {
			l = h.newLane(r, pin, now)
		}
		er, g := exitReady(pin, now)
		ready, gated = max(r.laneReady(l), er), g
	} else {
		l, ready, gated, soonst = h.pick(r, pool, req.Want.Avoid, now, exitReady)
	}
	if l == nil {
		next := max(gate, soonst)
		if soonst == math.MaxInt64 {
			next = max(gate, now+r.Recheck)
		}
		return AcquireResult{Next: time.Unix(0, next)}
	}
	ready = max(ready, gate)
	if h.inFlight >= int32(r.HostConc) {
		ready = max(ready, now+r.Recheck)
	}
	if ready > now {
		return AcquireResult{Next: time.Unix(0, ready)}
	}

	// Take: lane token, host ceiling, AIMD, quota and slots.
	rec := ticketRec{l: l, at: now}
	iv := r.interval(&l.l)
	before := r.laneReady(l)
	l.hot = now-before <= iv
	l.tat = max(l.tat, now) + iv
	rec.laneIv = iv
	if l.q != nil && l.q.reset != 0 {
		l.q.take(now)
		rec.quota = true
	}
	if r.Ceiling > 0 {
		rec.ceilIv = int64(1e9 / r.Ceiling)
		h.ceilTat = max(h.ceilTat, now) + rec.ceilIv
	}
	if h.rated() {
		rec.aiIv = int64(1e9 / h.aimd)
		h.aimdTat = max(h.aimdTat, now) + rec.aiIv
	}
	if h.scope.shared() {
		if h.q != nil && h.q.reset != 0 {
			h.q.take(now)
			rec.hostQuota = true
		}
	}
	l.inFlight++
	l.last = now
	h.inFlight++
	h.seq++
	l.taken = h.seq
	h.tickets[h.seq] = rec
	if now-h.winAt >= int64(10*time.Second) {
		if h.winAt != 0 {
			h.sendRate = float64(h.winN) / secs(now-h.winAt)
		}
		h.winAt, h.winN = now, 0
	}
	h.winN++
	r.rekey(h, l)
	return AcquireResult{
		OK:        true,
		ExitGated: gated,
		Ticket:    Ticket{Host: req.Host, Exit: l.exit, At: req.Now, Seq: h.seq},
	}
}

// pick chooses the lane for an unpinned request: a never-used pool exit
// first (it has been idle longest), else the heap's earliest lane. It returns
// the lane and when it may go, or nil and the soonest time one might.
func (h *HostState) pick(r *Rules, pool *Pool, avoid []string, now int64, exitReady ExitReadyFunc) (*lane, int64, bool, int64) {
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
			id := pool.exits[h.cursor].ID
			h.cursor++
			if h.lanes[id] != nil || slices.Contains(avoid, id) {
				continue
			}
			er, g := exitReady(id, now)
			l := h.newLane(r, id, now)
			if er <= now {
				return l, now, g, 0
			}
			// Blocked everywhere for now: the lane waits in the heap.
			l.key = er
			h.fix(l)
		}
	}
	var aside [maxScan]*lane
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
			if _, ok := pool.idx[top.exit]; !ok || now-top.last > r.IdleTTL {
				// Gone from the pool, or idle past the TTL: forget it. A
				// later pass of the cursor may bring the exit back fresh.
				h.dropLane(top)
				continue
			}
		}
		if slices.Contains(avoid, top.exit) {
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
		return top, top.key, g, 0
	}
	soon := int64(math.MaxInt64)
	if len(h.heap) > 0 {
		soon = h.heap[0].key
	}
	return nil, 0, false, soon
}

// ReleaseHost settles one ticket on host h: Done with req.Outcome, or Cancel.
// It reports false when the ticket was unknown or already settled, so every
// ticket releases its slots exactly once.
func ReleaseHost(r *Rules, h *HostState, req *ReleaseRequest) bool {
	rec, ok := h.tickets[req.Ticket.Seq]
	if !ok || rec.l.exit != req.Ticket.Exit {
		return false
	}
	delete(h.tickets, req.Ticket.Seq)
	now := req.Now.UnixNano()
	l := rec.l
	l.inFlight--
	h.inFlight--
	l.last, h.last = max(l.last, now), max(h.last, now)
	o := &req.Outcome
	if req.Cancel || o.Verdict == verdict.ProxyFailure {
		// Never reached the server: give back exactly what was taken.
		l.tat -= rec.laneIv
		if rec.quota {
			l.q.rem++
		}
		h.ceilTat -= rec.ceilIv
		h.aimdTat -= rec.aiIv
		if rec.hostQuota {
			h.q.rem++
		}
		if req.Cancel {
			h.c.Canceled++
		} else {
			h.c.Requests++
			h.c.ProxyFailures++
			l.c.fail++
		}
		r.settle(h, l)
		return true
	}
	h.c.Requests++
	l.c.req++
	sent := rec.at
	if !o.SentAt.IsZero() {
		sent = o.SentAt.UnixNano()
	}
	if o.Scope != ScopeUnknown {
		h.hinted = true
		h.setScope(r, o.Scope, now)
	}
	switch o.Verdict {
	case verdict.OK:
		h.c.OK++
		l.c.ok++
		h.endWave(l)
		before := l.l.pace
		r.onOK(&l.l, now)
		h.leadProbe(r, l, before, now)
		h.adoptPrior(r, &l.l)
		h.reprobe(r, l, now)
		h.sympathize(r, l, now)
		if h.rated() {
			h.hostEps = 0
			r.hostIncrease(h, now)
		}
		h.busyEps = 0
	case verdict.Throttled:
		h.c.Throttled++
		l.c.thr++
		r.throttled(h, l, o, sent, now, req.Jitter)
	case verdict.Busy:
		h.c.Busy++
		h.busyEps++
		// An overloaded site has one capacity for all exits: the host rate
		// takes over, and each overload episode cuts it.
		if !h.rated() {
			h.startRate(r)
			h.overloaded = true
		}
		r.hostDecrease(h, sent, now)
		d := int64(o.RetryAfter)
		if d <= 0 {
			d = int64(fullJitter(req.Jitter, time.Duration(r.BackoffBase), time.Duration(r.BackoffCap), int(h.busyEps)-1))
		}
		if until := now + d; until > h.pause {
			h.c.ThrottledNs += until - max(h.pause, now)
			h.pause = until
		}
	case verdict.Retryable:
		h.c.Errors++
		l.c.err++
	case verdict.Banned:
		h.c.Banned++
		r.ban(l, now)
	case verdict.Forbidden:
		h.c.Forbidden++
		if h.forbidden(l, o.URLHash, now) {
			r.ban(l, now)
		}
	default:
		h.c.Fatal++
	}
	if o.Quota > 0 || (o.HasRemaining && o.ResetIn > 0) {
		if h.scope.shared() {
			if h.q == nil {
				h.q = &quota{}
			}
			h.q.update(o, now, h.inFlight)
		} else {
			if l.q == nil {
				l.q = &quota{}
			}
			l.q.update(o, now, l.inFlight)
			if l.q.limit > 0 && l.q.window > 0 && r.Policy == Adaptive {
				// A declared quota sets the capacity exactly.
				l.l.pace = max(r.MinLane, l.q.limit/secs(l.q.window))
				l.l.fixed = true
			}
		}
	}
	r.settle(h, l)
	return true
}

// ban quarantines lane l, for longer with each ban.
func (r *Rules) ban(l *lane, now int64) {
	l.c.ban++
	if l.bans < 62 {
		l.bans++
	}
	d := min(r.BanMax, r.BanBase<<min(l.bans-1, 30))
	l.ban = max(l.ban, now+d)
}

func (r *Rules) settle(h *HostState, l *lane) {
	if l.idx >= 0 {
		r.rekey(h, l)
	}
}

// throttled handles a 429 on lane l.
func (r *Rules) throttled(h *HostState, l *lane, o *Outcome, sent, now int64, u float64) {
	if h.scope.shared() {
		r.hostThrottled(h, o, sent, now, u)
		return
	}
	if l.epAt != 0 && sent < l.epAt {
		// Sent before this lane's episode began: the same event, already
		// counted. Only a longer Retry-After is news.
		if o.RetryAfter > 0 {
			if until := now + int64(o.RetryAfter); until > l.cool {
				d := until - max(l.cool, now)
				h.c.ThrottledNs += d
				l.c.cooled(d)
				l.cool = until
			}
		}
		return
	}
	l.epAt = now
	if !l.hot {
		// The lane was under its learned capacity: this 429 is evidence
		// of a shared limit, not of this lane's size.
		if h.scopeEvidence(r, l.exit, now) {
			r.hostThrottled(h, o, sent, now, u)
			return
		}
		l.l.eps++
		d := r.cooldown(&l.l, o.RetryAfter, u)
		h.c.ThrottledNs += d
		l.c.cooled(d)
		l.cool = now + d
		return
	}
	if h.raisedAt > 0 && h.leader != l.exit && l.l.quietAt < h.raisedAt && l.l.pace <= h.raised*1.001 {
		// Pushed back at the pace a re-probe measured on another lane,
		// with no 429 of its own since: what that lane measured was its
		// share of a limit the lanes share (or its IP has a larger budget
		// than theirs; three such lanes within ScopeSpan are taken as the
		// former).
		if h.scopeEvidence(r, l.exit, now) {
			r.hostThrottled(h, o, sent, now, u)
			return
		}
	}
	if h.scope == ScopeUnknown {
		h.scope = ScopeExit
	}
	h.thrAt, h.okSince = now, 0
	re, x, prior := l.l.reHi, l.l.pace, h.prior
	r.on429(&l.l, now)
	if re == 0 && r.Policy == Adaptive && prior > 0 && x >= sympathyShare*prior {
		// One lane's 429 may be timing noise; a second lane's soon after
		// at a like pace is the limit.
		if h.lastTyp.exit != "" && h.lastTyp.exit != l.exit && now-h.lastTyp.at <= r.ScopeSpan {
			h.symHi, h.symAt = min(x, h.lastTypX), now
		}
		h.lastTyp, h.lastTypX = scopeEv{exit: l.exit, at: now}, x
	}
	h.learnPrior(r, l.l.hi)
	if re > 0 && l.l.reHi == 0 && l.l.lo <= re {
		h.probeOver(l, now, true) // the limit was not raised
	}
	if h.leader == l.exit && l.l.reHi == 0 && l.l.lo > h.raised {
		// The lane leading a raise measured more: the others follow.
		h.publishRaise(l.l.lo, now)
	}
	if h.leader == l.exit && l.l.hi != 0 && l.l.reHi == 0 && h.raisedAt < h.leaderAt {
		h.leader = "" // start-up slow start: the probe is over
	}
	d := r.cooldown(&l.l, o.RetryAfter, u)
	h.c.ThrottledNs += d
	l.c.cooled(d)
	l.cool = now + d
}
