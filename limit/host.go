package limit

import (
	"math"
	"time"
)

// lane is the state of one (host, exit) pair. It is kept small: an idle lane
// costs under 192 bytes with its map entry and heap slot (TestIdleLaneBytes).
type lane struct {
	exit     string
	idx      int32 // position in the host heap; -1 = not in it
	inFlight int16
	// rttMid is the lane's usual answer time lately (a running median),
	// in units of 100 µs (saturating at 6.5 s): an answer much slower
	// may have reached the server late by the difference.
	rttMid uint16
	key    int64 // heap key: earliest time this lane may go
	tat    int64 // GCRA theoretical arrival time
	cool   int64 // 429 cooldown until
	ban    int64 // quarantine until (block page, wave of forbidden)
	epAt   int64 // when the current 429 episode began
	pace   float64
	// The lane's series: since serAt (its first request, or its last 429,
	// when the server's budget for it was empty) it sent serSent requests
	// and had serOK successes. A 429 proves the server's budget empty, so
	// what the lane sent since bounds what it may send when its pace drops.
	serAt   int64
	serSent int32
	serOK   int32
	taken   uint32 // host sequence number of the last take: ties go to the least recently used
	eps     uint8  // consecutive 429 episodes, for backoff
	bans    uint8
	// hot: the last take came within one interval of the lane becoming
	// ready, so the lane is sent as fast as it may go.
	hot bool
	// moved: the lane's exit came from another Limiter a moment ago
	// (Exit.Since) and the lane has had no answer yet.
	moved bool
	q     *quota
	x     *laneExtra // what few lanes need; nil until one does
	c     laneCount
}

// laneExtra is the part of a lane that most lanes never need: kept behind a
// pointer so that an idle lane stays small.
type laneExtra struct {
	// own is this lane's own ceiling when it is below what the host's lanes
	// hold (an IP with a smaller budget); 0 = none.
	own   float64
	tpass float64 // what it passed under own: counted, or sustained
	run   run     // its current run at its own pace
	c     rareCount
	// ownAt is when own was set; a lane under an own ceiling that the
	// host's pace has left behind tries the host's pace again after
	// ownRetry, doubled per retry pushed back again (fails; retried: a
	// retry is out).
	ownAt   int64
	fails   uint8
	retried bool
	// epPace is the pace of the lane's last 429 (rule again).
	epPace float64
	// waveAt is when rule wave read a wave of Forbidden answers on the
	// lane as the limit's refusal: answers to what it sent before are the
	// same refusal. hold is how long it was held out last, while nothing
	// was let through since (0: it was, or it was never refused). banned:
	// it was banned and nothing let through since (no wave is a refusal).
	waveAt, hold int64
	banned       bool
	// held: the lane waits for the explorer's first recovery (awaitHold).
	// counted: held at the first run's count (awaitCount), released too
	// once another follower is let through past it.
	held, counted bool
	// toldEnd is where the wait a Retry-After told ended, when
	// seriesWindow held the lane past it on a window's reading (0: not
	// held); a reading withdrawn gives the rest back (unwindow).
	toldEnd int64
	// heldSer is the series seriesWindow held the lane for (when it
	// began, what it sent): a quota read later holds it again at that
	// quota's window instead (rewindow).
	heldSer series
	// echoed: another lane's echo lengthened this lane's wait since its
	// last 429; a later echo finds it waiting past the told end already
	// (echoOthers).
	echoed bool
	// ra is the last Retry-After the lane was told (ns): an echo of it,
	// or of a shorter one, doubles the wait; a longer one is waited as said.
	ra int64
	// edgeAt is the sliding counter's edge (capacity.edgeAt) this lane's
	// 429 was read as: each lane reaches an edge once (quotaEdge).
	edgeAt int64
	// sent counts what the lane sent per second once the host was pushed
	// back (clockSend).
	sent *sendRing
	// clockN is the lane's own quota in a window of the clock told and
	// proven, under the host's (clockOwn; 0: the host's).
	clockN int32
	// qo are the lane's quotas of the server's other limits (policies.go):
	// q is the one the last answer stated.
	qo []*quota
	// rem is what the lane's last X-RateLimit-Remaining alone said
	// (remaining.go): its state, the number (remN) and when (remAt).
	rem   remState
	remN  float32
	remAt int64
}

// run is a run of successes at one pace: since at, n; last is when the
// latest of them was sent.
type run struct {
	at, last int64
	n        int32
}

// idleGap is how many intervals at its pace a lane may go without sending
// before its run is over: it was idle (no work for it), not paced.
const idleGap = 3

// add counts one success of a request sent at sent and reports how long the
// run has lasted and whether the lane was sent at least runSaturation of
// pace over it. A success after the lane went idle (idleGap intervals
// without a request sent) starts a new run, and idle says so: a run that
// spanned the idle time would stay unsaturated for a long while after the
// work came back (three requests, ten seconds idle, and a ramp at 0.485/s
// needed forty seconds of full load to count a run again).
func (u *run) add(sent, now int64, pace float64) (el int64, saturated, idle bool) {
	idle = u.at != 0 && pace > 0 && float64(sent-u.last) > idleGap*float64(interval(pace))
	if u.at == 0 || idle {
		u.at, u.n = sent, 0
	}
	u.n++
	u.last = max(u.last, sent)
	el = now - u.at
	return el, u.n > 1 && float64(u.n-1)/secs(el) >= runSaturation*pace, idle
}

type laneCount struct {
	req, ok, thr uint32
	coolMs       uint32 // cooldown imposed after 429s, ms
}

type rareCount struct {
	err, ban, fail, forb uint32
}

func (l *lane) extra() *laneExtra {
	if l.x == nil {
		l.x = &laneExtra{}
	}
	return l.x
}

// learning429s is the 429s the host's own learning has drawn: every 429
// but those of lanes searching budgets of their own under its pace.
func (h *host) learning429s() uint64 { return h.c.Throttled - h.ownThrottled }

// own is the lane's own ceiling, 0 = none.
func (l *lane) own() float64 {
	if l.x == nil {
		return 0
	}
	return l.x.own
}

// cooled adds a cooldown of d ns to the lane's throttled time.
func (c *laneCount) cooled(d int64) {
	if d > 0 {
		c.coolMs = uint32(min(int64(c.coolMs)+d/1e6, math.MaxUint32))
	}
}

// host is all limiter state for one host: its lanes, gates and learning.
// Its table shard's mutex guards it.
type host struct {
	name    string
	lanes   map[string]*lane
	heap    []*lane
	tickets map[uint64]ticketRec
	seq     uint64

	poolVer  uint64
	cursor   int32
	passDone bool

	inFlight int32
	last     int64
	// okAt is when the host's last success came, on lane okExit, and
	// prevOKAt the last one before it on another lane: a 503 without
	// Retry-After while another lane succeeds is a per-IP limit's
	// (laneBusy), not an overload, whichever lane's success came last.
	okAt, prevOKAt int64
	okExit         string
	// busyAt is when the host's last 503 without Retry-After came that was
	// read as nothing yet (loneBusy).
	busyAt int64
	// mix is the host's last answers' 503s; busyTest tests a rate cut for
	// them; busyNoise is their share read as the pages' own errors (0:
	// none read): busymix.go.
	mix       busyMix
	busyTest  busyTest
	busyURLs  busyURLs
	busyNoise float64
	busyQuiet int64  // no reading of busyNoise before (0: none dropped yet)
	busy429   uint64 // 503s read as a lane's 429 (laneBusy), of c.Throttled
	pause     int64  // shared not-before (busy, host-scoped Retry-After)
	ceilTat   int64
	// thrAt is when the host's first 429 came (its lanes' send rings count
	// from then: clockSend).
	thrAt int64

	send sendMeter
	cap  capacity
	exp  explorer
	ev   evidence
	rate hostRate
	q    *quota // declared quota when the scope is shared
	// wall is a window's quota spent on a host that read no window
	// (wall.go; nil: none).
	wall *wallRead

	scope   Scope
	hinted  bool  // scope came from headers
	scopeAt int64 // last evidence for a shared scope
	// restored: the host's knowledge came from a learned state that read
	// its limit per IP (Limiter.Restore): a lane pushed back at its first
	// request was spent before it came, and is no evidence of a shared
	// limit either.
	restored bool
	// resumed: the restored search was settled and trusted (fresh); the
	// learning 429s it started with were spent where it was learned, so
	// it earns them again before it searches on (canProbe).
	resumed bool

	// led: another worker of the crawl searches this host's per-IP limit
	// (HostShare.Leads); this Limiter has no explorer, and its followers
	// hold ledPace, the pace the leading worker published (set at ledAt;
	// 0: none yet, the followers' start pace).
	// ledDeclared: ledPace is a declared quota's (HostView.Declared).
	// ledAwait: the leader's first run's count while its recovery is
	// measured (HostView.Await; 0: none, or a lane here was pushed back
	// meanwhile).
	led         bool
	ledDeclared bool
	ledPace     float64
	ledAt       int64
	ledAwait    int32
	// ledEdge: the newest sliding-window edge the leader read
	// (HostView.Edge), at which this worker's lanes skipped one request.
	ledEdge int64
	// ledWindow: the window the leader read the host counting over
	// (HostView.Window; 0: none).
	ledWindow int64
	// pubFollow is the followers' pace this Limiter last published as the
	// host's leader, pubDeclared whether it was a declared quota's, and
	// pubAwait the first run's count published with it (awaitN).
	pubFollow   float64
	pubDeclared bool
	pubAwait    int32
	pubWindow   int64
	// workers is how many Limiters share the host (HostShare.Workers; 0
	// or 1: this one alone). Each sees 1/workers of its successes and of
	// its lanes.
	workers int
	// othersExits is how many exits the other Limiters hold (the pool less
	// this one's, HostShare.Exits), -1 when the share does not say.
	othersExits int

	log changeLog
	c   Counters
	// ownThrottled counts the 429s of lanes under their own ceiling
	// (follow429's own budgets), which the host's learning does not pay
	// for (learning429s).
	ownThrottled uint64
	// wake is closed when a lane's pace rises, for Wait calls sleeping
	// out an interval at the slower pace (nil: nobody waits); raised
	// says a pace rose since the last release (which reads and clears
	// it: most rises come from a success).
	wake   chan struct{}
	raised bool
	// waves holds the recent Forbidden answers of lanes that have some
	// (wave.go); nil until the host answers one. waveHold is the longest
	// hold after which a lane refused in a wave was let through (rule
	// wave; 0: none yet).
	waves    map[*lane]*wave
	waveHold int64
}

type ticketRec struct {
	l                    *lane
	at                   int64
	laneIv, ceilIv, rtIv int64
	// hold: the explorer's retry while it measures a recovery holds the
	// lane this much longer, until its answer (probeHold).
	hold int64
	// clk is the request's count in its lane's window of the clock
	// (clockSend; 0: not counted); sec what the lane sent before it in its
	// second of the clock, ring whether its send ring counted it. (The
	// small fields last: the record is 64 bytes, copied in and out of the
	// host's map once a request.)
	clk              int32
	sec              uint8
	ring             bool
	quota, hostQuota bool
	// first: the lane's first request since its last 429 (an echo, if
	// pushed back again with Retry-After).
	first bool
	// over: a follower's request past the first run's count while the
	// first 429's recovery is unknown (awaitCount): its answer is read.
	over bool
}

func newHost(name string) *host {
	return &host{name: name, lanes: make(map[string]*lane), tickets: make(map[uint64]ticketRec), othersExits: -1}
}

// idle reports whether h has nothing in flight and has not been used since
// now-ttl, so the table may drop it.
func (h *host) idle(now, ttl int64) bool {
	return h.inFlight == 0 && now-h.last > ttl
}

// sendMeter measures a host's send rate over sendWindow spans.
type sendMeter struct {
	at   int64
	n    int32
	rate float64 // req/s over the last complete span
}

// current is the send rate: over the last complete span, or, before one has
// passed, what was sent so far over at least a second.
func (m *sendMeter) current(now int64) float64 {
	if m.rate > 0 || m.at == 0 {
		return m.rate
	}
	return float64(m.n) / secs(max(now-m.at, int64(time.Second)))
}

func (m *sendMeter) sent(now int64) {
	if now-m.at >= sendWindow {
		if m.at != 0 {
			m.rate = float64(m.n) / secs(now-m.at)
		}
		m.at, m.n = now, 0
	}
	m.n++
}

func secs(ns int64) float64 { return float64(ns) / 1e9 }

// interval is the even spacing at pace, in ns.
func interval(pace float64) int64 {
	if pace <= 0 {
		return int64(time.Hour)
	}
	return int64(1e9 / pace)
}

// tau is the GCRA burst tolerance: LaneBurst back-to-back requests, plus
// slop.
func (r *rules) tau(pace float64) int64 {
	iv := interval(pace)
	return int64((r.laneBurst-1)*float64(iv)) + slop(iv, 1-r.settle)
}

// laneReady is the earliest instant l may send, from its own state alone.
func (r *rules) laneReady(l *lane) int64 {
	t := max(l.tat-r.tau(l.pace), l.cool, l.ban)
	if l.q != nil {
		t = max(t, l.q.readyAt())
	}
	if l.x != nil {
		for _, q := range l.x.qo {
			t = max(t, q.readyAt()) // what remains of every limit stops the lane
		}
	}
	return t
}

// lastUse approximates when l was last taken (its theoretical arrival time
// less one interval, or its series start), for idle expiry: a lane keeps no
// clock of its own, to stay small.
func (l *lane) lastUse() int64 { return max(l.tat-interval(l.pace), l.serAt, l.cool) }

func (r *rules) rekey(h *host, l *lane) {
	if l.idx < 0 {
		return
	}
	l.key = r.laneReady(l)
	h.fix(l)
}

func (h *host) newLane(r *rules, exit string, since, now int64) *lane {
	l := &lane{exit: exit, idx: -1, serAt: now, pace: h.paceFor(r, exit)}
	if since > 0 && now-since < movedFor {
		// The exit was another Limiter's until since: it goes first as if
		// it had sent then, and its first answer is read with care.
		l.moved, l.tat = true, since+interval(l.pace)
	}
	l.key = r.laneReady(l)
	h.lanes[exit] = l
	h.push(l)
	return l
}

func (h *host) dropLane(l *lane) {
	h.remove(l)
	h.endWave(l)
	delete(h.lanes, l.exit)
	h.passDone = false
	if h.exp.exit == l.exit {
		h.exp.exit = ""
	}
	if h.cap.room.exit == l.exit {
		h.cap.room.exit = "" // a lane back on this exit starts at the host's pace: no check
	}
}

// setPace changes l's pace. The lane's next send moves with it: GCRA's
// theoretical arrival time is the last send plus one interval, so the old
// interval is swapped for the new one. A slower pace also holds the next
// send back so that, over its series (since its last 429 or first request),
// the lane has sent no more than the new pace allows: a lane that sent fast
// at a pace now known to be too high has used its budget ahead of time, and
// sending at the new pace at once would draw the 429 the slowdown is meant
// to avoid.
func (r *rules) setPace(h *host, l *lane, pace float64) {
	pace = max(r.minLane, min(r.maxLane, pace))
	if pace == l.pace {
		return
	}
	if pace > l.pace {
		h.raised = true
	}
	if l.tat != 0 {
		l.tat += interval(pace) - interval(l.pace)
		if pace > l.pace && l.serAt != 0 {
			// Faster: a hold-back computed for a slower pace is lifted to
			// what the new one allows over the series, an empty one too
			// (the lane was pushed back since: what it sent before counts
			// no more).
			l.tat = min(l.tat, max(l.serAt+int64(float64(l.serSent)*1e9/pace), h.last)+interval(pace))
		}
	}
	l.pace = pace
	if h.exp.exit == l.exit {
		h.exp.run = h.exp.pairRun(&h.cap)
	}
	if l.x != nil {
		l.x.run = run{}
	}
	if l.serSent > 0 && !l.remLeft() {
		// (A lane told by Remaining alone that its budget holds more
		// owes nothing: it goes until told 0, read as its 429.)
		l.tat = max(l.tat, l.serAt+int64(float64(l.serSent)*1e9/pace))
	}
	r.rekey(h, l)
}
