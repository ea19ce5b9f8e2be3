package limit

import (
	"fmt"
	"time"
)

// Sharing host-level state between limiters.
//
// Many workers crawling one site each run a Limiter. Lanes are not shared:
// the workers split the pool's exits between them, so each lane lives in
// one Limiter and its decisions cost no round trip. What belongs to the
// host across all exits is shared through a HostShare (Config.Shared): the
// politeness ceiling and the host's own rate are one schedule for every
// worker; a pause, the scope and a cut of the host rate that one worker
// learns, the others adopt; a 429 that one worker's lane draws counts as
// scope evidence in every worker. The learning math stays here, in Go: a
// HostShare stores and hands over its results, it does not compute them.

// HostShare is host-level state shared with other Limiters, typically in
// other processes. The Limiter calls it outside its locks; implementations
// must be safe for concurrent use and should not block long (a shared
// store that cannot be reached answers from what it knows, conservatively,
// rather than fail open or stall).
type HostShare interface {
	// Admit is asked before a request to host goes, when the host has a
	// politeness ceiling (ceil req/s, 0 = none) or its own rate governs it
	// (rate req/s, 0 = not): one request on the shared schedule, and the
	// shared pause. It reports whether the request may go now, else when
	// to ask again.
	Admit(host string, ceil, rate float64, now time.Time) (ok bool, next time.Time)
	// Publish records what this Limiter just learned about host that the
	// others must know (the fields of v that changed; Evidence holds only
	// the new entries).
	Publish(host string, v HostView, now time.Time)
	// View returns the latest shared view of host that can be had without
	// waiting (a cache), and false when there is none.
	View(host string) (HostView, bool)
	// Workers reports how many Limiters share the hosts' state (at least
	// 1). Each counts only its own successes, so the host rate's additive
	// increase steps Workers times as far on each: the fleet's rate climbs
	// as one Limiter's would.
	Workers() int
	// Leads reports whether this Limiter searches host's per-IP limit for
	// every worker: one worker explores a host, the others' lanes hold the
	// pace its followers hold (HostView.Follow), so that a fleet spends a
	// search's 429s once, not once per worker. It must not block.
	Leads(host string) bool
	// A HostShare may also have a method Down() bool reporting that it
	// has lost its store (shareDown): its views are a cache then; and a
	// method Exits() int, the exits of every Limiter sharing the hosts
	// (the fleet's pool), which counts the others' lanes (othersLanes)
	// where Workers alone, times this Limiter's, would not: the fleet's
	// leader holds more than its fair share.
}

// poolSized is a HostShare that knows the fleet's pool (HostShare).
type poolSized interface{ Exits() int }

// HostView is the shared state of one host.
type HostView struct {
	// Pause is the host's shared not-before (a 503's or a site-wide 429's
	// Retry-After).
	Pause time.Time
	// Scope is where the host limits; ScopeHost or ScopeCredential move
	// control to the host's rate.
	Scope Scope
	// Rate is the host's own rate while it governs, and RateCeiling and
	// RateFloor what it learned (req/s, 0 = none). Cut is when it was last
	// cut: a Limiter adopts a cut newer than its own.
	Rate, RateCeiling, RateFloor float64
	Cut                          time.Time
	// Evidence lists recent 429s on lanes of the host (any worker's).
	Evidence []Evidence
	// Follow is the pace the leading worker's followers hold (req/s, 0 =
	// none published), set at FollowAt: the other workers' lanes hold it.
	// Declared: it is the pace of a per-IP quota the server declared, which
	// the other workers hold over their own reading of the quota (a lane
	// sent slower than the quota's window cannot read its window, and only
	// the leader checks a declared quota's headroom).
	Follow   float64
	FollowAt time.Time
	Declared bool
	// Await is, while the leader measures its first 429's recovery, the
	// count of the run before it (0 = none): the leader's followers hold
	// their pace until they have sent nearly as many, since a window held
	// that many (awaitHolds), and so do the other workers' lanes.
	Await int32
	// Edge is when the leader read a sliding-window counter's edge at
	// the followers' pace (quotaEdge; zero: none), published with the
	// pace it slowed to: every lane, the other workers' too, skips one
	// request, since its counter still holds what it sent at the pace
	// pushed back.
	Edge time.Time
	// Window is the window the leader read the host counting over
	// (0 = none): a lane of any worker pushed back again inside it, sent
	// slower than at its last 429, reads nothing (rule again).
	Window time.Duration
}

// Merge returns w with what v says added: a later pause, a shared scope, a
// newer cut of the host rate, a newer follow pace, v's evidence after w's
// (the newest 32 kept). A HostShare keeps its views with it.
func (w HostView) Merge(v HostView) HostView {
	if v.Pause.After(w.Pause) {
		w.Pause = v.Pause
	}
	if v.Scope != ScopeUnknown {
		w.Scope = v.Scope
	}
	if v.Cut.After(w.Cut) {
		w.Rate, w.RateCeiling, w.RateFloor, w.Cut = v.Rate, v.RateCeiling, v.RateFloor, v.Cut
	}
	if v.FollowAt.After(w.FollowAt) {
		w.Follow, w.FollowAt, w.Declared, w.Await, w.Edge, w.Window = v.Follow, v.FollowAt, v.Declared, v.Await, v.Edge, v.Window
	}
	w.Evidence = append(w.Evidence, v.Evidence...)
	if n := len(w.Evidence); n > maxSharedEvidence {
		w.Evidence = w.Evidence[n-maxSharedEvidence:]
	}
	return w
}

// maxSharedEvidence is how many 429s a shared view keeps: the scope rules
// read those of the last scope span, a few per lane.
const maxSharedEvidence = 32

// Evidence is one 429 on a lane: when, at what pace the lane was sent, and
// whether it was under what one lane may send (evidence that the budget is
// shared, not the lane's).
type Evidence struct {
	Exit  string    `json:"exit"`
	At    time.Time `json:"at"`
	Pace  float64   `json:"pace"`
	Under bool      `json:"under,omitempty"`
}

// sharedMark is what a host's shared state was before an outcome, to tell
// what the outcome changed.
type sharedMark struct {
	pause   int64
	scope   Scope
	rate    float64
	rateEp  int64
	evCount int
}

func (h *host) mark() sharedMark {
	return sharedMark{pause: h.pause, scope: h.scope, rate: h.rate.now, rateEp: h.rate.epAt, evCount: h.ev.n}
}

// changed returns what changed on h since m, as a view to publish.
func (h *host) changed(m sharedMark, now int64) (HostView, bool) {
	var v HostView
	pub := false
	if h.pause > m.pause {
		v.Pause, pub = time.Unix(0, h.pause), true
	}
	if h.scope != m.scope && h.scope.shared() {
		v.Scope, pub = h.scope, true
	}
	if h.rated() && h.rate.epAt != m.rateEp {
		// A cut: increases stay each worker's own, on its own successes.
		v.Scope = h.scope
		v.Rate, v.RateCeiling, v.RateFloor, v.Cut = h.rate.now, h.rate.hi, h.rate.lo, time.Unix(0, h.rate.epAt)
		pub = true
	}
	if f, ok := h.followChanged(now); ok {
		v.Follow, v.FollowAt, v.Declared, v.Await, v.Edge, v.Window, pub = f.Follow, f.FollowAt, f.Declared, f.Await, f.Edge, f.Window, true
	}
	if n := h.ev.n; n > m.evCount && len(h.ev.ring) > 0 {
		for i := max(m.evCount, n-len(h.ev.ring)); i < n; i++ {
			e := h.ev.ring[i%len(h.ev.ring)]
			v.Evidence = append(v.Evidence, Evidence{Exit: e.exit, At: time.Unix(0, e.at), Pace: e.pace, Under: e.under})
		}
		pub = true
	}
	return v, pub
}

// followChanged returns the followers' pace to publish when this worker
// leads the host's search and the pace moved since it last told the
// others' lanes, whatever moved it: an outcome, taking the lead, or other
// workers' 429s read in an Acquire. (Published only from outcomes, a fall
// read in an Acquire waited for the leader's next answer; with its lanes
// held back by that very fall, the others' followers held a pace 50% over
// nginx's limit for 18 s after a Redis restart and drew 27 429s.)
//
// A declared quota's pace is published too (Declared): a worker that joined
// after the leader read the quota had no pace from it at all, and its lanes,
// sent at the followers' start of 0.25/s, too slow to read a window of a
// second, held it for the whole run (go-limiter's 3 per second: 62% of the
// limit); and the leader's headroom check (roomDue) is for every worker.
//
// So is the first run's count while its recovery is measured (Await): the
// other workers' lanes held the cautious reading at once while the
// leader's own went on to that count, and sat out 9 s of haproxy's 20 per
// 10 s (84% of the limit over the run with three workers, 90% with one).
func (h *host) followChanged(now int64) (HostView, bool) {
	if h.led || h.scope.shared() || h.cap.follow <= 0 {
		return HostView{}, false
	}
	decl, aw, win := h.cap.declared > 0, h.awaitN(), h.pubWindowNow()
	if h.cap.follow == h.pubFollow && decl == h.pubDeclared && aw == h.pubAwait && win == h.pubWindow {
		return HostView{}, false
	}
	h.pubFollow, h.pubDeclared, h.pubAwait, h.pubWindow = h.cap.follow, decl, aw, win
	v := HostView{Follow: h.cap.follow, FollowAt: time.Unix(0, now), Declared: decl, Await: aw, Window: time.Duration(win)}
	if e := h.cap.edgeAt; e != 0 {
		v.Edge = time.Unix(0, e)
	}
	return v, true
}

// othersNews reports whether another worker's 429 at pace p is news of the
// followers' pace: at or above it, and under the ceiling the search holds.
// At or above that ceiling, the lane held a pace from before the fall the
// ceiling came with (its worker hears of a fall at its next refresh, and
// after a Redis restart not before the leader answers again): the fall
// already counted it. Read as news, each such 429 was a fall of its own,
// and the leader cut a 7.5/s pace to 0.7/s in five steps on the 429s of
// followers that had not heard of the first. So is one above the pace the
// followers hold now, wherever the ceiling is: a led lane slowed under
// the old pace to a budget of its own, and pushed back there after the
// fall, had not heard of it either (the twin of flask-limiter's bare 40
// per 15 s on the simulated fleet: the leader fell six times in 3 s on
// such 429s, from 3.9/s to 0.27/s). As one limiter's own followers are,
// pushed back above the followers' pace after it fell (follow429).
func (h *host) othersNews(p float64) bool {
	c := &h.cap
	stale := c.hi > c.follow && atLeast(p, c.hi) || !atLeast(c.follow, p)
	return atLeast(p, c.follow) && !stale
}

// pubWindowNow is the window the followers' lanes count over, published
// with their pace (HostView.Window): the leader's countedWindow once its
// search is past the ramp, as rule again reads it.
func (h *host) pubWindowNow() int64 {
	if h.exp.phase == expRamp {
		return 0
	}
	return h.countedWindow()
}

// adoptLocked applies the shared view of host to h: a later pause, a
// shared scope, a newer cut of the host rate, other workers' evidence.
// The caller holds h's shard lock; nothing here waits.
func (l *Limiter) adoptLocked(h *host, name string, now int64) {
	v, ok := l.share.View(name)
	h.workers = max(1, l.share.Workers())
	h.othersExits = -1
	if ps, sized := l.share.(poolSized); sized && h.workers > 1 {
		if n := ps.Exits(); n > 0 {
			h.othersExits = max(0, n-l.pool.Load().Len())
		}
	}
	l.followLead(h, name, v, now) // before anything is shared too: one explorer from the start
	if !ok {
		return
	}
	r := l.rules
	if p := v.Pause.UnixNano(); !v.Pause.IsZero() && p > h.pause && p > now {
		r.hostPause(h, p, now, "another worker's pause")
	}
	if v.Scope.shared() && !h.scope.shared() && !h.hinted {
		r.setScope(h, v.Scope, now, "another worker found that the host limits site-wide")
		h.scopeAt = now
	}
	if c := v.Cut.UnixNano(); v.Rate > 0 && h.rated() && !v.Cut.IsZero() && c > h.rate.epAt {
		rate := min(h.rate.now, v.Rate)
		why := "another worker cut the host rate"
		if c-h.rate.epStart < sameEpisode {
			// A cut for the same overload, this worker's own or another's
			// adopted, a moment before: each halved the fleet's rate as it
			// measured it, once; halving again would count one episode
			// twice (three workers drew a 12/s site down to 3/s). The
			// milder reading stands. The episode counts from its first
			// cut: measured from the last one adopted, cuts that came
			// each within 2 s of the one before were one episode for
			// good, and none was adopted (the simulated fleet on a
			// credential's 2/s: six cuts in 13 s, the workers' rates
			// apart from 0.6/s to 4.8/s, the lowest ceiling holding the
			// fleet at 58% of the limit for the rest of the run).
			rate, why = max(h.rate.now, v.Rate), "another worker cut the host rate for the same episode"
		} else {
			h.rate.epStart = c
		}
		h.note(r, now, "host-rate", "", "host-rate", h.rate.now, rate, why)
		h.rate.now, h.rate.epAt = rate, c
		if v.RateCeiling > 0 {
			h.rate.hi = v.RateCeiling
		}
		h.rate.lo = max(h.rate.lo, v.RateFloor)
		h.rate.cumAt, h.rate.cumN = c, 0
	}
	seen := l.sharedSeen(name)
	newest, added, atFollow, inAwait := *seen, false, false, ""
	for _, e := range v.Evidence {
		at := e.At.UnixNano()
		if at <= *seen || now-at > r.scopeSpan || l.pool.Load().lookup(e.Exit) {
			continue // seen, stale, or this Limiter's own lane (already counted)
		}
		newest = max(newest, at)
		h.addEvidence(r, evEntry{exit: e.Exit, at: at, pace: e.Pace, under: e.Under})
		added = true
		atFollow = atFollow || h.othersNews(e.Pace)
		if a := h.exp.awaitAt; a != 0 && at >= a && inAwait == "" {
			inAwait = e.Exit
		}
	}
	*seen = newest
	if inAwait != "" && h.awaitN() > 0 && !h.led {
		// Another worker's lane pushed back while the recovery is
		// measured: as one of this Limiter's own (awaitPushed), no
		// lane holds the first run's count any longer.
		h.exp.awaitBroke = true
		h.note(r, now, "follow", inAwait, "count", float64(h.exp.n1), 0, "another worker's lane pushed back while the first 429's recovery is measured: the followers hold the cautious reading")
		r.paceFollowers(h)
	}
	if added && !h.scope.shared() {
		r.inferScope(h, now) // a 429 seen by any worker counts
	}
	if atFollow && !h.scope.shared() {
		r.othersPushedBack(h, now)
	}
}

// sharedBy is how many Limiters share the host (HostShare.Workers).
func (h *host) sharedBy() float64 { return float64(max(1, h.workers)) }

// othersLanes is how many lanes the other Limiters sharing the host have on
// it at most: their exits, where the HostShare knows the pool, else this
// Limiter's lanes times their number (a fair share each).
func (h *host) othersLanes() int {
	if h.workers <= 1 {
		return 0
	}
	if h.othersExits >= 0 {
		return h.othersExits
	}
	return len(h.lanes) * (h.workers - 1)
}

// othersHolding is, on the worker that leads a fleet's search, how many of
// the other workers' lanes hold the followers' pace: theirs
// (othersLanes), less those pushed back at that pace or above within
// sympathySpan (their 429s reach the leader as evidence; the lanes that
// hold send no word), once they have held it that long: a 429 of theirs
// reaches the leader up to a view's refresh after its own (a real fleet of
// 8 on flask-limiter's bare 50 per 10 s, its first reading 67 per 10 s
// over a window's edge, read the explorer's 429 7.5 s after the pace was
// published as its own budget, until the others' came 0.16 s later).
// explorerOutlier counts them with its own followers:
// the leader's explorer pushed back at the settled pace while the fleet's
// lanes hold it has the smaller budget, as one limiter reads it. Counting
// only its own one or two followers, the leader read every such 429 as the
// host's limit and cut every worker's pace (simulated flask-limiter's bare
// 50 per 10 s, 8 workers on 10 exits: a re-probe at 82 s pushed back, then
// pushed back again at the settled pace, and the fleet sat out 25 s of
// the debt the cut left its lanes: 67.8% over two minutes, one limiter
// 87.5%).
func (h *host) othersHolding(now int64) int {
	if h.led || h.workers <= 1 || now-h.cap.followAt < sympathySpan {
		return 0
	}
	f := h.cap.follow
	pushed := h.ev.lanes(now-sympathySpan, func(e evEntry) bool { return h.lanes[e.exit] == nil && atLeast(e.pace, f) })
	return max(0, h.othersLanes()-pushed)
}

// othersPushedBack is follow429's rule for the followers of other workers,
// on the worker that leads the host's search: several lanes pushed back at
// the pace the followers hold, within the sympathy span, fleet-wide, and
// what the explorer passed was a burst, or the limit moved down.
func (r *rules) othersPushedBack(h *host, now int64) {
	e := &h.exp
	if h.led || !h.exploring() || e.phase == expRamp {
		return
	}
	ex := h.lanes[e.exit]
	if ex == nil {
		return
	}
	f := h.cap.follow
	if !h.manyAtFollow(now) {
		return
	}
	if c := &h.cap; c.edgeAt != 0 && now-c.edgeAt <= max(sympathySpan, 2*c.quotaW) {
		// Within the edge's span (a sliding counter weighs the last
		// window too): the lanes in step with them meet the same edge
		// a moment later, having sent before they heard of it
		// (quotaEdge's "another lane at the same edge"). Read each
		// lane once, as quotaEdge does, a second 429 under the
		// headroom fell back, and one run in four of the twin of a
		// sliding 10 per 10 s read 77% instead of 88%; a limit that
		// moved pushes this worker's own lanes back as well.
		return
	}
	if r.newEdge(h, nil, f, now) {
		// A sliding-window counter's edge, met first by lanes of other
		// workers, as this worker's own followers meet it (quotaEdge):
		// they went in step with the others since they hold the count
		// of a first run as they do (Await), and read as a fall the
		// host searched again from a third of the limit (the twin of a
		// sliding 10 per 10 s, 88% → 42% over the run).
		return
	}
	r.fallBack(h, ex, f, now, fmt.Sprintf("followers of other workers pushed back at %.3g/s, several at once", f))
}

// shareDown reports whether sh has lost its store: a HostShare may have a
// method Down() bool saying so (redisstate's, while Redis is away), when
// its views are a cache no newer than the outage.
func shareDown(sh HostShare) bool {
	d, ok := sh.(interface{ Down() bool })
	return ok && d.Down()
}

// followLead applies the lead (HostShare.Leads) to h: a host another worker
// leads has no explorer here, and its followers hold the pace the leader
// published; a host this worker comes to lead starts its search from that
// pace, which every lane has held, rather than from the first guess.
func (l *Limiter) followLead(h *host, name string, v HostView, now int64) {
	r := l.rules
	if h.scope.shared() {
		return // the host's rate governs, shared as such
	}
	leads := l.share.Leads(name)
	switch {
	case leads && h.led:
		h.led = false
		if h.ledPace > 0 && h.unsearched() {
			r.searchFrom(h, h.ledPace, now, "this worker leads the search now, from the pace the lanes held")
		}
		r.updateFollow(h, now, "lead", "this worker leads the search now")
	case leads && h.c.Requests == 0 && h.exploring() && v.Follow > 0 && !v.Declared && h.unsearched():
		// A host new to this Limiter that the fleet's lanes already
		// hold a pace on: this worker led it in a process that died (a
		// worker run again with its id keeps its rank) or took the lead
		// before it asked. The search starts from that pace, as a
		// worker that comes to lead does, not from the first guess: a
		// worker killed while Redis was away and run again searched
		// nginx's 5 r/s from 0.25/s and drew five 429s doing so.
		r.searchFrom(h, v.Follow, now, "this worker leads the search, from the pace the fleet's lanes hold")
		r.updateFollow(h, now, "lead", "this worker leads the search")
	case !leads && !h.led:
		h.led, h.pubFollow = true, 0
		if e := &h.exp; e.exit != "" {
			ex := h.lanes[e.exit]
			h.note(r, now, "lead", e.exit, "explorer", 1, 0, "another worker leads the search: this lane follows")
			e.exit = ""
			if ex != nil {
				r.setPace(h, ex, h.cap.follow)
			}
		}
	}
	if h.led && v.Follow > 0 && v.FollowAt.UnixNano() > h.ledAt {
		if v.Follow > h.ledPace && shareDown(l.share) {
			// A raise read from a share that has lost its store is a
			// cached one, as old as the outage or older: the leader may
			// have taken it back since (Redis stopped 0.7 s after a
			// leader's raise to 7.5/s, withdrawn 0.5 s after it: the
			// other workers' lanes took it from the cache and held it
			// through the 12-s outage, 13 429s on four exits of nginx's
			// 5/s). A fall is taken at once; a raise once the share is
			// back and the view read again (h.ledAt left as it was).
			return
		}
		held := h.ledPace
		if held == 0 {
			held = h.followPace(r) // the followers' start: the leader had published nothing yet
		}
		if v.Follow < held {
			// The leader slowed the host: the lanes here pushed back
			// alone at the old pace were the host's limit moving, seen
			// fleet-wide, not budgets of their own under it. They take
			// the leader's paces again, down and back up. Before the
			// leader's first word too: a lane pushed back at the
			// followers' start pace, read as its IP's own budget, would
			// hold under the leader's later paces for good. (Suspected
			// first on nginx's 12 per minute, where the two lanes that
			// held 0.108/s for the run turned out to be the leader's
			// own: follow429 reads those now.)
			for _, ln := range h.lanes {
				if ln.own() > 0 && atLeast(ln.x.own, v.Follow) {
					h.note(r, now, "lead", ln.exit, "ceiling", ln.x.own, 0, "the leader slowed the host: not this lane's own budget")
					ln.x.own, ln.x.tpass = 0, 0
				}
			}
		}
		h.ledPace, h.ledAt, h.ledDeclared, h.ledAwait, h.ledWindow = v.Follow, v.FollowAt.UnixNano(), v.Declared, v.Await, int64(v.Window)
		if e := v.Edge.UnixNano(); !v.Edge.IsZero() && e > h.ledEdge {
			h.ledEdge = e
			r.skipOne(h, nil)
		}
		r.updateFollow(h, now, "lead", fmt.Sprintf("the worker that leads the search holds its followers at %.3g/s", v.Follow))
	}
}

// unsearched reports whether h's search has proven nothing yet: still in
// its ramp, nothing passed.
func (h *host) unsearched() bool { return h.cap.pass == 0 && h.exp.phase == expRamp }

// searchFrom starts h's search from pace p, which the lanes have held: p
// counts as passed, and the explorer ramps from there.
func (r *rules) searchFrom(h *host, p float64, now int64, why string) {
	c := &h.cap
	h.note(r, now, "lead", "", "floor", c.pass, p, why)
	c.pass, c.sent, c.at = p, p, now
	h.exp.pace = p * rampStep
}

// sharedSeen is the time of the newest shared evidence adopted for host.
func (l *Limiter) sharedSeen(host string) *int64 {
	l.shMu.Lock()
	defer l.shMu.Unlock()
	if l.shSeen == nil {
		l.shSeen = map[string]*int64{}
	}
	p := l.shSeen[host]
	if p == nil {
		if len(l.shSeen) > 1<<16 {
			clear(l.shSeen) // bounded: at worst some evidence is adopted twice
		}
		p = new(int64)
		l.shSeen[host] = p
	}
	return p
}

// admitShared asks the HostShare to admit a ticket that the local levels
// granted; a refusal gives the ticket back and says when to ask again.
func (l *Limiter) admitShared(t Ticket, now time.Time) (bool, time.Time) {
	r := l.rules
	sh := l.tab.shard(t.Host)
	sh.mu.Lock()
	var rate float64
	if h := sh.hosts[t.Host]; h != nil && h.rated() {
		rate = h.rate.now
	}
	sh.mu.Unlock()
	if r.ceiling == 0 && rate == 0 {
		return true, time.Time{}
	}
	ok, next := l.share.Admit(t.Host, r.ceiling, rate, now)
	if ok {
		return true, time.Time{}
	}
	l.release(t, relCanceled, Outcome{}, now)
	if !next.After(now) {
		next = now.Add(time.Duration(r.recheck))
	}
	return false, next
}
