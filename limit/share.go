package limit

import (
	"math"
	"time"
)

// What a host's lanes learn from each other: one lane leads slow start and
// re-probes, the others follow what it proves; new lanes start at the
// host's prior; a 429 two lanes draw at a like pace slows the others.

// leadProbe lets a lane's slow-start step (from before to its new pace) go
// above what the host's lanes have proven only if it leads the probing; the
// others stay at the proven pace until the leader has proven more. A leader
// that has not stepped for leaderTimeout gives way.
func (h *HostState) leadProbe(r *Rules, l *lane, before float64, now int64) {
	if r.Policy != Adaptive || l.l.hi != 0 || l.l.fixed || l.l.pace <= before || h.scope.shared() {
		return // (a shared limit: the host's rate governs)
	}
	h.proven = max(h.proven, before) // a saturated run at before just succeeded
	if l.l.pace <= h.proven {
		return
	}
	if h.leader == "" || h.leader == l.exit || now-h.leaderAt > int64(leaderTimeout) {
		h.leader, h.leaderAt = l.exit, now
		return
	}
	l.l.pace = max(before, h.proven)
}

// reprobe runs after each success of lane l: it starts a re-probe when the
// host has been quiet for ProbeEvery and reprobeQuiet successes (so a failed
// probe costs a 429 or two in that many), ends one that went nowhere, and
// lets the other lanes follow a raised limit a re-probe measured.
func (h *HostState) reprobe(r *Rules, l *lane, now int64) {
	ll := &l.l
	if r.Policy != Adaptive || ll.fixed {
		return
	}
	if h.scope.shared() {
		if ll.reHi > 0 {
			// The host's own rate governs now: this probe proves nothing.
			h.endProbe(r, l, now, false)
		}
		return
	}
	if h.okSince < math.MaxInt32 {
		h.okSince++
	}
	lead := h.leader == l.exit
	if lead && ll.reHi > 0 {
		h.leaderAt = now // an active probe keeps its lead
	}
	switch {
	case ll.reHi > 0 && ll.hi == 0 && now-h.probeAt > 4*r.ProbeEvery:
		// Still slow-starting long after it began: the lane is not sent
		// enough to prove a higher rate. Give the old ceiling back.
		h.endProbe(r, l, now, true)
	case ll.reHi > 0 && ll.hi > 0 && now-ll.quietAt >= r.ProbeEvery:
		// The probe's held pace has drawn nothing for long: it is under
		// the limit, and the series measures at least that.
		re := ll.reHi
		r.reprobeMeasure(ll, now)
		if ll.lo > re {
			h.publishRaise(ll.lo, now)
		} else {
			h.probeOver(l, now, true)
		}
	case ll.reHi > 0 && ll.hi > 0 && ll.cumN >= int32(2*r.ProbeRun):
		// Counted since the series' first 429, the new limit's lower bound
		// is proof enough for the others to follow at once.
		if b := counted(ll.cumN, ll.cumAt, now); b > ll.reHi && b > h.raised {
			h.publishRaise(b, now)
		}
	case lead && ll.reHi == 0 && h.raisedAt >= h.leaderAt && ll.settled(r) && now-ll.quietAt >= r.ProbeEvery:
		h.leader = "" // led a raise and has settled under it
	case ll.hi > 0 && ll.reHi == 0 && l.hot && now-h.thrAt >= r.ProbeEvery && h.okSince >= reprobeQuiet<<h.probeFails &&
		now-ll.quietAt >= r.ProbeEvery && (h.leader == "" || now-h.leaderAt > int64(leaderTimeout)):
		// Limits change: slow-start above the ceiling from here. Only a
		// lane sent as fast as it may go can prove a higher rate.
		h.leader, h.leaderAt, h.probeAt = l.exit, now, now
		h.raised = 0 // what earlier probes measured may be stale
		ll.reHi, ll.hi = ll.hi, 0
		ll.runAt, ll.runN, ll.cumAt, ll.cumN = 0, 0, 0, 0
	case !lead && ll.hi > 0 && ll.reHi == 0 && h.raisedAt > ll.quietAt && h.raised > ll.pace:
		// Follow a raise measured since this lane was last pushed back:
		// the measure is counted, so settle under it and climb no higher
		// on its own (the next re-probe will).
		ll.pace = min(r.MaxLane, h.raised)
		ll.hi, ll.lo = h.raised/r.Settle, 0
		ll.runAt, ll.runN, ll.cumAt, ll.cumN = 0, 0, 0, 0
	}
}

// publishRaise makes b, a counted lower bound on a raised limit, the pace
// the host's other lanes follow.
func (h *HostState) publishRaise(b float64, now int64) {
	h.raised, h.raisedAt, h.probeFails = b, now, 0
}

// endProbe gives lane l its old ceiling back and ends its re-probe, a
// failure when failed.
func (h *HostState) endProbe(r *Rules, l *lane, now int64, failed bool) {
	ll := &l.l
	p := ll.pace
	r.endReprobe(ll)
	ll.pace = max(r.MinLane, min(p, ll.pace)) // a slower lane stays slower
	h.probeOver(l, now, failed)
}

// probeOver releases l's lead after a re-probe that found no raise; a
// failure doubles the quiet the next one waits for, counted from now.
func (h *HostState) probeOver(l *lane, now int64, failed bool) {
	if h.leader == l.exit {
		h.leader = ""
	}
	if failed {
		h.probeFails = min(h.probeFails+1, maxProbeBackoff)
		h.thrAt, h.okSince = now, 0
	}
}

// sympathize applies the host's latest typical 429 (symHi, from two lanes
// within ScopeSpan, at most ProbeEvery ago) to lane l, which has not drawn
// one since and is sending at least as fast: a server that limits per IP gives every IP the
// same budget, so l's ceiling is no higher than symHi and its pace goes to
// the settle point under it. Responses to what l sent before count as part
// of that episode. Without this, lanes in step draw one 429 each.
func (h *HostState) sympathize(r *Rules, l *lane, now int64) {
	ll := &l.l
	if h.symAt == 0 || now-h.symAt > r.ProbeEvery || ll.quietAt >= h.symAt || ll.fixed || ll.reHi != 0 ||
		r.Policy != Adaptive || h.scope.shared() || ll.pace < h.symHi*0.999 {
		return // nothing recent, already pushed back since, or slower than what drew it
	}
	ll.quietAt = h.symAt
	if ll.hi == 0 || ll.hi > h.symHi {
		ll.hi = h.symHi
	}
	if p := r.Settle * h.symHi; ll.pace > p {
		// The next send was scheduled at the old pace: push it back by
		// the difference, or it would go too soon and draw the 429.
		old := r.interval(ll)
		ll.pace = max(r.MinLane, p)
		l.tat += r.interval(ll) - old
		ll.runAt, ll.runN = 0, 0
		l.epAt = now
	}
}

// sympathyShare: a 429 at a pace under this share of the host prior is one
// IP's own (flagged, say), not evidence for the others.
const sympathyShare = 0.8

// reprobeQuiet is how many successes a host must have had since its last 429
// before a lane re-probes: a failed probe costs a 429 or two, so at most 0.25%.
const reprobeQuiet = 400

// maxProbeBackoff caps the doubling of reprobeQuiet after failed re-probes
// (400 << 5: one probe per 12,800 successes).
const maxProbeBackoff = 5

// leaderTimeout is how long a probe leader may go without stepping up before
// another lane may lead.
const leaderTimeout = 30 * time.Second

// adoptPrior starts a lane that has not been pushed back yet at what its
// siblings learned: its ceiling becomes the host's prior and its pace the
// settle point under it, when that is below where probing has taken it.
func (h *HostState) adoptPrior(r *Rules, l *learner) {
	if r.Policy != Adaptive || h.prior <= 0 || l.hi != 0 || l.fixed || l.reHi != 0 {
		return
	}
	switch target := r.Settle * h.prior; {
	case l.pace >= target:
		// Probing has taken it where a sibling already drew a 429: restart
		// from where that sibling restarted instead of drawing its own.
		l.hi = h.prior
		l.pace = max(r.MinLane, min(r.MaxLane, r.Decrease*h.prior))
	case l.pace == r.First:
		// A new lane starts at the settle point its siblings learned.
		l.hi = h.prior
		l.pace = min(r.MaxLane, target)
	default:
		// Held back while a sibling probed: climb from here toward the
		// settle point under what the sibling found.
		l.hi = h.prior
	}
}

// learnPrior folds one lane's new ceiling into the host's prior (an
// exponentially weighted average, so one unlucky or flagged IP moves it
// only a little).
func (h *HostState) learnPrior(r *Rules, hi float64) {
	if r.Policy != Adaptive || hi <= 0 {
		return
	}
	if h.prior == 0 {
		h.prior = hi
		return
	}
	h.prior = 0.8*h.prior + 0.2*hi
}
