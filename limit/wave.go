package limit

import (
	"fmt"
	"time"
)

// A bare 403 (verdict.Forbidden) is one URL's fate, not a ban: a forbidden
// page among good ones says nothing about the lane. A wave says more:
// Config.BanWave Forbidden answers from distinct URLs on one lane within
// waveSpan, with no success on the lane in between, quarantine the lane as a
// Banned verdict does.
const (
	waveURLs = 3 // Config.BanWave's default
	waveSpan = int64(time.Minute)
)

// wave is a lane's recent Forbidden answers since its last success, one per
// URL. The host keeps one only for lanes that have some (host.waves).
type wave []waveHit

type waveHit struct {
	url  uint64 // Outcome.URLHash; 0 (unknown) is always a URL of its own
	at   int64
	pace float64 // the lane's pace the request was sent at
}

// forbiddenWave adds a Forbidden answer for the URL hashed url at now to w
// and reports whether w is now a wave: n answers from distinct URLs within
// span. Answers older than span are dropped; the same URL again counts once,
// at its latest time. The caller drops w on a success and once it is a wave.
func forbiddenWave(w *wave, url uint64, pace float64, now, span int64, n int) bool {
	kept := (*w)[:0]
	for _, h := range *w {
		if now-h.at <= span && (url == 0 || h.url != url) {
			kept = append(kept, h)
		}
	}
	*w = append(kept, waveHit{url: url, at: now, pace: pace})
	return len(*w) >= n
}

// pace is the fastest pace a request of the wave was sent at: the one that
// ran the count out, where the lane slowed (or took the search) while its
// answers came back refused.
func (w wave) pace() float64 {
	p := 0.0
	for _, h := range w {
		p = max(p, h.pace)
	}
	return p
}

// forbidden records a Forbidden answer on lane l to a request sent at pace
// and reports whether it completed a wave, and the wave's pace.
func (h *host) forbidden(r *rules, l *lane, url uint64, pace float64, now int64) (bool, float64) {
	if h.waves == nil {
		h.waves = make(map[*lane]*wave)
	}
	w := h.waves[l]
	if w == nil {
		w = new(wave)
		h.waves[l] = w
	}
	if !forbiddenWave(w, url, pace, now, waveSpan, r.banWave) {
		return false, 0
	}
	delete(h.waves, l)
	return true, w.pace()
}

// refusing reports whether lane l has Forbidden answers that may yet make
// a wave: it is no lane to hand the search to.
func (h *host) refusing(l *lane) bool {
	w := h.waves[l]
	return w != nil && len(*w) > 0
}

// endWave forgets lane l's Forbidden answers (it succeeded, or is gone).
func (h *host) endWave(l *lane) {
	if h.waves != nil {
		delete(h.waves, l)
	}
}

// Rule wave: a wave of Forbidden answers on a lane that had successes
// before it, on a host whose lanes search their budget, is the limit
// refusing the pace, not a ban: an anti-flood module (Apache's mod_evasive)
// answers a client over its count with a bare 403 and holds it while it
// keeps sending. Read as a ban, the explorer of mod_evasive's 5 a second
// was quarantined ten minutes at 7.76/s, nothing searched after it, and the
// host held 1.94/s a lane for the rest of the run (28% of the limit);
// followers that took a pace a lucky quick run had passed were banned all
// at once. So the wave is read as a 429 at the fastest pace its requests
// were sent at (wave.pace), told to wait waveTold: longer than any
// window's recovery, a penalty's wait, which says nothing of the limit. The
// lane itself is held out only as long as the block: a block each refused
// request restarts runs out in silence. It waits waveHold, longer than an anti-flood
// block's usual length (mod_evasive's DOSBlockingPeriod is 10 s unless
// set, counted in whole seconds from the last refused request's), or the
// longest hold that let a lane of the host through again, if longer.
// Refused again after it (one answer says so: the lane's first answers
// are the block's), with nothing let through between, the block is longer:
// the lane waits twice as long each time, up to maxWaveHold; refused after
// that, it is a ban. A lane refused in a wave before any success of its
// own, or since its last ban, is banned as before: a ban does not let it
// through.
const (
	waveTold = time.Duration(maxRecovery) + time.Second
	waveHold = int64(12 * time.Second)
	// maxWaveHold is the longest hold a refused lane waits before a
	// refusal reads as a ban: anti-flood blocks last seconds to a minute
	// (mod_evasive's guides set 10 to 60 s). A site that 403s an IP for
	// good after some successes bans the lane after 7 refusals and 3
	// minutes (12+24+48+96 s); doubled up to Config.BanBase instead, it
	// took 9 refusals and 12.7 minutes, and BannedEverywhere said no the
	// whole time.
	maxWaveHold = int64(2 * time.Minute)
)

// limitWave applies rule wave to the wave that lane l completed at pace x
// (wave.pace) with the answer o to the request rec, sent at sent, at now,
// and reports whether it was read as the limit's refusal (false: the
// caller bans the lane).
func (r *rules) limitWave(h *host, l *lane, x float64, rec ticketRec, o *Outcome, sent, now int64, u float64) bool {
	x2 := l.extra()
	if !h.exploring() || l.c.ok == 0 || x2.banned {
		return false // (never let through, or not since its ban: a ban)
	}
	hold := max(waveHold, h.waveHold)
	h.note(r, now, "wave", l.exit, "cooldown", 0, secs(hold),
		fmt.Sprintf("a wave of %d forbidden URLs at %.3g/s after successes: the limit refusing the pace, read as a 429 with a penalty's wait", r.banWave, x))
	x2.waveAt, x2.hold = now, hold
	if !h.cap.careful {
		// A refusal counts over a second or more, from the clock's
		// whole second (mod_evasive): a quick run across two of them
		// passes a pace one of them refuses (5.59/s passed over 1.1 s
		// against mod_evasive's 5 a second, and every follower that
		// took it was refused).
		h.note(r, now, "wave", l.exit, "careful", 0, 1, "a refusal: a pace passes only over a careful span")
		h.cap.careful = true
	}
	h.cap.refuses = true // (the followers keep Settle's margin: capacity.refuses)
	if e := &h.exp; e.phase == expRamp && l.exit == e.exit && !h.led {
		r.waveEndsRamp(h, l, x, now)
		h.readsNothing(l, now)
		r.cooldown(h, l, x, waveTold, false, now, u)
	} else {
		refusal := *o // (Forbidden still: throttled tells it by that)
		refusal.RetryAfter = waveTold
		rec.laneIv = int64(1e9 / x) // read at the wave's pace
		r.throttled(h, l, rec, &refusal, sent, now, u)
	}
	// The reading waits a penalty's wait; the lane the block's, however
	// long (cut to the penalty's, a hold the host had learned longer let
	// the lane go early into a block still running, and it was banned).
	if l.cool > now+hold {
		r.releaseAt(h, l, now+hold) // (the time given back is not throttled)
	} else {
		h.lengthenCool(l, now+hold, now)
	}
	r.handOff(h, l, now)
	return true
}

// refusedAgain applies rule wave to a Forbidden answer on lane l, refused
// in a wave and let through nothing since, at now: the block outlasted its
// hold, and the lane waits twice as long. It reports false past
// maxWaveHold: a ban (the caller bans the lane). Nothing of it is the
// host's: a lane banned for good is refused again too (the host's hold is
// what let a lane through, letThrough).
func (r *rules) refusedAgain(h *host, l *lane, now int64) bool {
	x2 := l.x
	hold := 2 * x2.hold
	if hold > maxWaveHold {
		return false
	}
	h.note(r, now, "wave", l.exit, "cooldown", 0, secs(hold), "refused again after its hold, nothing let through between: the block lasts longer, wait twice as long")
	x2.waveAt, x2.hold = now, hold
	h.readsNothing(l, now)
	h.lengthenCool(l, now+hold, now) // (counted as time throttled)
	return true
}

// refusedStill reports whether lane l's Forbidden answer to a request
// sent at sent is its block's: its first requests after a hold, with
// nothing let through since. A 403 long after the hold ran out (the lane
// idle meanwhile) is a URL's own again, and the hold is forgotten.
func (l *lane) refusedStill(sent int64) bool {
	x2 := l.x
	if x2 == nil || x2.hold == 0 {
		return false
	}
	if sent < x2.waveAt+x2.hold+waveHold {
		return true
	}
	x2.hold = 0
	return false
}

// letThrough notes a success of lane l to a request sent at sent, at
// now: if it had been refused in a wave and sent this after it, the hold
// it waited was long enough. Longer than waveHold, later waves on the host
// wait that long at once, and the search, each of whose refused steps
// costs a lane that long, stops within costlyDone (mod_evasive blocking a
// minute, simulated: every wave cost its lane 15, 30 and 60 s refused again
// before the 120 s that let it through, 64% of the limit over a two-minute
// run). A success clears the ban's mark too: a later wave on the lane is
// read afresh.
func (h *host) letThrough(r *rules, l *lane, sent, now int64) {
	x2 := l.x
	if x2 == nil || sent <= x2.waveAt {
		return // (an answer to what it sent before the refusal)
	}
	x2.banned = false
	if x2.hold > waveHold {
		h.waveHold = max(h.waveHold, x2.hold)
		if !h.cap.costly {
			h.note(r, now, "wave", l.exit, "ceiling", h.cap.hi, h.cap.hi, fmt.Sprintf("a refusal held a lane %.0fs: the search stops within %.0f%%", secs(x2.hold), 100*(costlyDone-1)))
			h.cap.costly = true
		}
	}
	x2.hold = 0
}

// waveEndsRamp ends the ramp on the explorer l's wave at pace x at now: x
// is the ceiling, and what the ramp passed stands. Nothing in a refusal
// reads a recovery (the lane waits a penalty's wait, as a 429 after a
// burst with a long Retry-After would have it wait to see it recover,
// the followers held at a minute's reading meanwhile: 0.24/s of 5 for a
// minute), and a count over a second or a few, as an anti-flood module
// keeps, is what the ramp's quick runs measure. The search refines from
// there.
func (r *rules) waveEndsRamp(h *host, l *lane, x float64, now int64) {
	e, c := &h.exp, &h.cap
	h.note(r, now, "wave", l.exit, "ceiling", c.hi, x, "a refusal ends slow start")
	c.ceil(x, now)
	e.ramped = c.pass
	if c.pass == 0 {
		// Refused at its first pace: nothing passed to follow. The
		// followers keep the pace they started at, as after a 429 at a
		// first request (firstEstimate).
		c.safe = max(c.safe, r.minLane, min(r.first*startShare, x/rampStep))
	}
	r.setPhase(h, l, expRefine, now, "a refusal")
	r.setExplorerPace(h, l, max(r.minLane, c.pass, x/rampStep), now, "refine", "start again from what the ramp passed, in smaller steps")
	r.updateFollow(h, now, "wave", "the ramp ended on a refusal")
}
