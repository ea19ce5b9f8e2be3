package limit

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Learned is what a Limiter learned about its hosts, for a crawl to save
// with its frontier and give back on resume (Limiter.Learned and
// Limiter.Restore), so that a resumed crawl does not learn every host
// again from the first guess. It is a plain JSON-friendly value.
type Learned struct {
	Saved time.Time     `json:"saved"`
	Hosts []LearnedHost `json:"hosts"`
}

// LearnedHost is one host's knowledge. Rates are in requests per second.
type LearnedHost struct {
	Host   string    `json:"host"`
	Scope  Scope     `json:"scope"`
	Hinted bool      `json:"scope_hinted,omitempty"`
	Phase  string    `json:"phase"`
	At     time.Time `json:"at"` // when it last changed
	// LaneRate is the pace the host's lanes followed; Pass, Ceiling, Floor
	// and Estimate what the explorer passed, was pushed back at, counted,
	// and read from the first 429; Declared what the server declared.
	LaneRate float64 `json:"lane_rate"`
	Pass     float64 `json:"pass,omitempty"`
	Ceiling  float64 `json:"ceiling,omitempty"`
	Floor    float64 `json:"floor,omitempty"`
	Estimate float64 `json:"estimate,omitempty"`
	Declared float64 `json:"declared,omitempty"`
	// DeclaredBucket: the limit the server declares is a bucket's
	// capacity, not a ceiling (the host explores above it).
	DeclaredBucket bool `json:"declared_bucket,omitempty"`
	// DeclaredHeadroom is what the headroom check (headroom.go) found:
	// "none" (a lane went at the declared rate unharmed) or "kept" (it was
	// pushed back); empty while unchecked.
	DeclaredHeadroom string `json:"declared_headroom,omitempty"`
	// DeclaredStrict is how many requests a window the server was seen to
	// allow less than it declares (declared.go, declared429).
	DeclaredStrict float64 `json:"declared_strict,omitempty"`
	Careful        bool    `json:"careful,omitempty"`
	Windowed       bool    `json:"windowed,omitempty"`
	// Burst is how many requests beyond its rate the server let a lane
	// send in a burst, as the explorer measured it.
	Burst float64 `json:"burst,omitempty"`
	// Sent is the pace the explorer sent when it passed Pass (a careful
	// pass counts a request less); Costly that a 429 idles a lane many
	// intervals there.
	Sent   float64 `json:"sent,omitempty"`
	Costly bool    `json:"costly,omitempty"`
	// BlockSeconds is how long the server refuses a lane everything once
	// it ran out, read without a Retry-After (0: none read).
	BlockSeconds float64 `json:"block_seconds,omitempty"`
	// Refuses: the server refused lanes with waves of bare 403s read as
	// its limit (rule wave); RefusalHoldSeconds the longest hold after
	// which a refused lane was let through (0: the usual 12 s).
	Refuses            bool    `json:"refuses,omitempty"`
	RefusalHoldSeconds float64 `json:"refusal_hold_seconds,omitempty"`
	// SpanSeconds is the careful proof span.
	SpanSeconds float64 `json:"span_seconds,omitempty"`
	// HostRate is the host's own rate while it limits site-wide or sheds
	// load, HostRateCeiling and HostRateFloor what that rate learned.
	HostRate        float64 `json:"host_rate,omitempty"`
	HostRateCeiling float64 `json:"host_rate_ceiling,omitempty"`
	HostRateFloor   float64 `json:"host_rate_floor,omitempty"`
	// Lanes lists the lanes whose IP has a smaller budget than the host's
	// pace (Own where it was pushed back, Pass what it passed).
	Lanes []LearnedLane `json:"lanes,omitempty"`
	// Waits are the waits the server asked for that had not ended when
	// the state was saved: each lane's Retry-After or block, and the
	// host's own pause (Exit empty). Restored as they are, whatever else
	// is: a crawl stopped within a Retry-After: 60 asked again 5 s later
	// on the next run. A host that learned nothing else is kept for them
	// alone (Phase "waiting").
	Waits []LearnedWait `json:"waits,omitempty"`
}

// LearnedWait is a wait the server asked of one lane, or of the whole host
// (Exit ""), until Until.
type LearnedWait struct {
	Exit  string    `json:"exit,omitempty"`
	Until time.Time `json:"until"`
}

// phaseWaiting marks a saved host kept only for its waits.
const phaseWaiting = "waiting"

// OnlyWaits reports whether the entry was kept for its waits alone, no
// rate learned.
func (lh LearnedHost) OnlyWaits() bool { return lh.Phase == phaseWaiting }

// LearnedLane is one lane with a smaller budget of its own.
type LearnedLane struct {
	Exit string  `json:"exit"`
	Own  float64 `json:"own"`
	Pass float64 `json:"pass,omitempty"`
}

// How long saved knowledge is trusted on restore: up to trustFresh it is
// taken as settled (the next re-probe checks it as usual); up to
// trustStale the lanes start a little under it and the explorer proves it
// again; beyond, the host is learned from scratch. Limits change, and a
// restart may come days later.
const (
	trustFresh  = 10 * time.Minute
	trustStale  = 24 * time.Hour
	staleMargin = 0.9
)

// Learned returns what the limiter knows about every host at now.
func (l *Limiter) Learned(now time.Time) Learned {
	l.mustBeNew()
	now = sane(now)
	out := Learned{Saved: now.UTC()}
	for i := range l.tab.shards {
		sh := &l.tab.shards[i]
		sh.mu.Lock()
		for _, h := range sh.hosts {
			lh, ok := h.learned(l.rules)
			waits := h.waits(now.UnixNano())
			switch {
			case ok:
				lh.Waits = waits
				out.Hosts = append(out.Hosts, lh)
			case len(waits) > 0:
				out.Hosts = append(out.Hosts, LearnedHost{Host: h.name, Scope: h.scope, Phase: phaseWaiting, At: now.UTC(), Waits: waits})
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out.Hosts, func(a, b LearnedHost) int { return strings.Compare(a.Host, b.Host) })
	return out
}

// learned copies what h knows; false when it knows nothing worth keeping
// (still in its first ramp, or shared with no rate learned).
func (h *host) learned(r *rules) (LearnedHost, bool) {
	c, e := &h.cap, &h.exp
	lh := LearnedHost{
		Host: h.name, Scope: h.scope, Hinted: h.hinted, Phase: h.phase(),
		At:       time.Unix(0, max(c.at, h.scopeAt)).UTC(),
		LaneRate: h.followPace(r), Pass: c.pass, Ceiling: c.hi, Floor: c.lo, Estimate: c.safe,
		Declared: min(c.declared, maxLearnedRate), Careful: c.careful, Windowed: c.windowed, Burst: c.extra, SpanSeconds: secs(c.span),
		Sent: c.sent, Costly: c.costly, DeclaredBucket: c.bucket, DeclaredStrict: c.win.strict,
		BlockSeconds: secs(c.block), Refuses: c.refuses, RefusalHoldSeconds: secs(h.waveHold),
	}
	switch {
	case c.win.free:
		lh.DeclaredHeadroom = "none"
	case c.room.done:
		lh.DeclaredHeadroom = "kept"
	}
	if h.rated() {
		lh.HostRate, lh.HostRateCeiling, lh.HostRateFloor = h.rate.now, h.rate.hi, h.rate.lo
	}
	for _, ln := range h.lanes {
		if o := ln.own(); o > 0 {
			lh.Lanes = append(lh.Lanes, LearnedLane{Exit: ln.exit, Own: o, Pass: ln.x.tpass})
		}
	}
	slices.SortFunc(lh.Lanes, func(a, b LearnedLane) int { return strings.Compare(a.Exit, b.Exit) })
	if ((e.phase == expRamp || e.awaitAt != 0) && c.declared == 0 && !h.rated()) || h.led {
		// Nothing learned: still in the first ramp, or its first 429's
		// recovery not measured yet, the lanes holding a cautious reading
		// (the run as a minute's window) that is no rate: kept, it was
		// restored as settled, and a crawl killed in the first seconds
		// of a recovery resumed at 0.28/s on nginx's 5 r/s, 6% of it. Or
		// another worker leads the host's search and keeps its record (a
		// follower's copy would overwrite a newer one).
		return lh, false
	}
	return lh, true
}

// waits lists the waits of h that end after now: its lanes' cooldowns and
// quarantines, and its own pause.
func (h *host) waits(now int64) []LearnedWait {
	var ws []LearnedWait
	if h.pause > now {
		ws = append(ws, LearnedWait{Until: time.Unix(0, h.pause).UTC()})
	}
	for _, ln := range h.lanes {
		if until := max(ln.cool, ln.ban); until > now {
			ws = append(ws, LearnedWait{Exit: ln.exit, Until: time.Unix(0, until).UTC()})
		}
	}
	slices.SortFunc(ws, func(a, b LearnedWait) int { return strings.Compare(a.Exit, b.Exit) })
	return ws
}

// restoreWaits holds h's lanes, and h itself, to the waits that end after
// now, each cut at the longest wait the limiter takes (a clock gone wrong
// must not stop a host for years). What they hold of this run counts as
// its time throttled, as the waits it draws itself do (a resumed crawl held
// 10 s by a restored cooldown said 0 s throttled).
func (r *rules) restoreWaits(h *host, ws []LearnedWait, now int64) {
	for _, w := range ws {
		until := min(w.Until.UnixNano(), now+int64(maxRetryAfter))
		if until <= now {
			continue
		}
		if w.Exit == "" {
			r.hostPause(h, until, now, "a wait the server asked for before the last run stopped")
			continue
		}
		ln := h.lanes[w.Exit]
		if ln == nil {
			ln = h.newLane(r, w.Exit, 0, now)
		}
		h.lengthenCool(ln, until, now)
		r.rekey(h, ln)
	}
}

// Restore gives the limiter back what an earlier run learned, aged at now:
// knowledge younger than 10 minutes is taken as settled; older (up to a
// day) is a starting point the lanes start a little under while the
// explorer proves it again; older still is dropped. Hosts the limiter has
// already started on keep what they have, and gain the fresh lanes with a
// budget of their own that they do not have (an exit that moved here from
// another worker brings what its lanes learned there). It returns how many hosts it
// restored, and an error naming the first entry it could not use (the
// others are restored all the same).
func (l *Limiter) Restore(s Learned, now time.Time) (int, error) {
	l.mustBeNew()
	now = sane(now)
	r := l.rules
	n := 0
	var firstErr error
	for i, lh := range s.Hosts {
		if err := lh.check(); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("limit: learned host %d: %w", i, err)
			}
			continue
		}
		if lh.Phase != phaseWaiting && l.restoreHost(lh, s.Saved, now) {
			n++
		}
		if len(lh.Waits) > 0 {
			// Whatever the rates' age: the times are the server's.
			sh := l.tab.shard(lh.Host)
			sh.mu.Lock()
			h := sh.hosts[lh.Host]
			if h == nil {
				h = newHost(lh.Host)
				h.last = now.UnixNano()
				sh.hosts[lh.Host] = h
			}
			r.restoreWaits(h, lh.Waits, now.UnixNano())
			sh.mu.Unlock()
		}
	}
	return n, firstErr
}

// inPool reports whether exit is one of the pool's (any, before SetExits:
// nothing to tell by).
func (l *Limiter) inPool(exit string) bool {
	p := l.pool.Load()
	return p == nil || p.Len() == 0 || l.HasExit(exit)
}

// restoreHost restores one host's rates (Restore), reporting whether it
// took them whole.
func (l *Limiter) restoreHost(lh LearnedHost, saved, now time.Time) bool {
	r := l.rules
	inPool := l.inPool
	at := lh.At
	if at.IsZero() || at.After(saved) {
		at = saved
	}
	age := now.Sub(at)
	if age > trustStale {
		return false
	}
	sh := l.tab.shard(lh.Host)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if h := sh.hosts[lh.Host]; h == nil {
		h = newHost(lh.Host)
		h.last = now.UnixNano()
		r.restore(h, lh, age, now.UnixNano(), inPool)
		sh.hosts[lh.Host] = h
		return true
	} else if age <= trustFresh && lh.Phase == phaseNames[expSettled] && h.exploring() && h.unsearched() {
		// A host this Limiter knows only as another worker's follower
		// (or not yet at all): a settled search handed over with the
		// lead is taken whole, so the new leader does not search
		// again from the lanes' pace.
		r.restore(h, lh, age, now.UnixNano(), inPool)
		return true
	} else if age <= trustFresh {
		r.restoreLanes(h, lh.Lanes, now.UnixNano(), inPool)
	}
	return false
}

// maxLearnedRate is the largest rate Learned writes and Restore takes: a
// server's "unlimited" quota (2147483647 a second) is saved as this, not
// refused when read back.
const maxLearnedRate = 1e9

// check rejects entries that would poison the limiter.
func (lh LearnedHost) check() error {
	bad := func(v float64) bool { return v < 0 || v != v || v > maxLearnedRate }
	switch {
	case lh.Host == "":
		return fmt.Errorf("empty host")
	case bad(lh.LaneRate) || bad(lh.Pass) || bad(lh.Ceiling) || bad(lh.Floor) || bad(lh.Estimate) || bad(lh.Declared) || bad(lh.HostRate) || bad(lh.Burst) || bad(lh.Sent) || bad(lh.BlockSeconds) ||
		bad(lh.HostRateCeiling) || bad(lh.HostRateFloor) || bad(lh.DeclaredStrict) || bad(lh.SpanSeconds) || slices.ContainsFunc(lh.Lanes, func(l LearnedLane) bool { return bad(l.Own) || bad(l.Pass) }):
		// (All of them: a NaN in one this did not look at was restored,
		// and the next Snapshot failed to encode as JSON.)
		return fmt.Errorf("host %q: a rate is negative, not a number or absurd", lh.Host)
	case lh.Scope > ScopeCredential:
		return fmt.Errorf("host %q: unknown scope %d", lh.Host, lh.Scope)
	}
	return nil
}

// restore installs lh into the fresh host h, aged age.
func (r *rules) restore(h *host, lh LearnedHost, age time.Duration, now int64, inPool func(string) bool) {
	c, e := &h.cap, &h.exp
	h.scope, h.hinted, h.scopeAt = lh.Scope, lh.Hinted, now
	c.declared, c.bucket = lh.Declared, lh.DeclaredBucket
	c.win.free, c.room.done = lh.DeclaredHeadroom == "none", lh.DeclaredHeadroom != ""
	c.win.strict = lh.DeclaredStrict
	c.room.at = now // a check waits two windows at the restored pace, as on a fresh one
	c.careful, c.windowed, c.extra = lh.Careful, lh.Windowed, lh.Burst
	c.block = int64(min(lh.BlockSeconds, maxRetryAfter.Seconds()) * 1e9) // the server's way, however old the rate
	c.refuses = lh.Refuses                                               // so is a refusal's: the followers keep Settle's margin
	h.waveHold = int64(min(max(lh.RefusalHoldSeconds, 0), secs(maxWaveHold)) * 1e9)
	c.span = max(minSpan, min(maxSpan, int64(lh.SpanSeconds*1e9)))
	c.at = now
	if lh.HostRate > 0 && lh.Scope.shared() {
		h.rate.on, h.rate.now, h.rate.hi, h.rate.lo = true, lh.HostRate, lh.HostRateCeiling, lh.HostRateFloor
	}
	fresh := age <= trustFresh
	if c.declared == 0 && lh.LaneRate > 0 && !lh.Scope.shared() {
		h.restored = true
		if fresh {
			c.pass, c.lo, c.safe, c.sent, c.costly = lh.Pass, lh.Floor, lh.Estimate, lh.Sent, lh.Costly
			c.ceil(lh.Ceiling, now)
			c.follow = max(r.minLane, lh.LaneRate) // (1e-12/s restored held a host for 16 years)
			e.phase = expSettled
			h.resumed = true
		} else {
			// Stale: a starting point under the old pace, to be proven again.
			c.safe = max(r.minLane, staleMargin*lh.LaneRate)
			c.careful = true
			c.ceil(lh.Ceiling, now)
			c.follow = r.settle * c.safe
			e.phase = expBisect
		}
		e.pace = c.follow
		e.quietAt = now
	}
	h.note(r, now, "restore", "", "follow", 0, h.followPace(r), fmt.Sprintf("learned %v ago (%s)", age.Round(time.Second), map[bool]string{true: "trusted", false: "to be proven again"}[fresh]))
	if fresh {
		r.restoreLanes(h, lh.Lanes, now, inPool)
	}
	h.log.takeOp()
}

// restoreLanes adds the lanes with a budget of their own that h has no
// lane for.
// Only exits of the pool get a lane (inPool): lanes of exits it does not
// have (a resume with another proxy list, a hostile file) sat in the
// host's heap, each Acquire clearing a few and saying "next" at 1970:
// 10,000 of them held the first request 6 s.
func (r *rules) restoreLanes(h *host, lanes []LearnedLane, now int64, inPool func(string) bool) {
	for _, ll := range lanes {
		if ll.Own <= 0 || ll.Exit == "" || h.lanes[ll.Exit] != nil || !inPool(ll.Exit) {
			continue
		}
		ln := &lane{exit: ll.Exit, idx: -1, serAt: now, pace: max(r.minLane, min(ll.Own*tierCut, h.followPace(r)))}
		x := ln.extra()
		x.own, x.tpass, x.ownAt = ll.Own, ll.Pass, now
		if x.tpass > 0 {
			ln.pace = max(r.minLane, min(x.tpass, h.followPace(r)))
		}
		h.lanes[ln.exit] = ln
		h.push(ln)
	}
}
