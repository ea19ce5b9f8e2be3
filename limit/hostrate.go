package limit

import (
	"math"
	"slices"
	"time"
)

// The host's own rate: when the server limits host-wide (or per credential)
// or sheds load with 503s, an AIMD rate gates the whole host, and scope
// inference decides when that is.

// setScope records what the server limits by (from headers, or inferred
// from 429s); a shared scope puts the host under its AIMD rate.
func (h *HostState) setScope(r *Rules, s Scope, now int64) {
	if s.shared() && !h.rated() {
		// Control moves to the host: start the AIMD rate from what the
		// host was actually sent, cut once.
		h.startRate(r)
		h.aimd = max(r.HostMin, h.aimd*r.HostDec)
	}
	if s.shared() && !h.scope.shared() && r.Policy == Adaptive {
		// The ceilings lanes learned were their shares of the host's
		// limit, not their own: forget them, or their sum would cap the
		// host under its rate. Lanes slow-start again under it.
		for _, l := range h.lanes {
			if !l.l.fixed {
				l.l.hi, l.l.lo, l.l.reHi, l.l.cumAt, l.l.cumN = 0, 0, 0, 0, 0
			}
		}
		h.leader, h.prior, h.proven, h.raised = "", 0, 0, 0
	}
	if s.shared() {
		h.scopeAt = now
	}
	h.scope = s
}

// scopeEvidence records one lane's 429 as evidence that the host's limit is
// shared and, once ScopeLanes distinct lanes gave some within ScopeSpan
// (and no header said otherwise), puts the host under its own rate. It
// reports whether it did.
func (h *HostState) scopeEvidence(r *Rules, exit string, now int64) bool {
	h.ev[h.evN%uint8(len(h.ev))] = scopeEv{exit: exit, at: now}
	h.evN++
	if h.countEvidence(now-r.ScopeSpan) < r.ScopeLanes || h.hinted {
		return false
	}
	h.setScope(r, ScopeHost, now)
	return true
}

// countEvidence is how many distinct lanes drew a 429 under their learned
// capacity since since: evidence that the limit is shared, not per IP.
func (h *HostState) countEvidence(since int64) int {
	var seen [8]string
	n := 0
	for _, e := range h.ev {
		if e.exit == "" || e.at < since || slices.Contains(seen[:n], e.exit) {
			continue
		}
		seen[n] = e.exit
		n++
	}
	return n
}

// rated reports whether the host's AIMD rate gates it: the server limits
// host-wide (or per credential), or the site is overloaded.
func (h *HostState) rated() bool { return h.scope.shared() || h.overloaded }

// startRate starts the host AIMD rate at what the host was actually sent.
func (h *HostState) startRate(r *Rules) {
	base := h.sendRate
	if base <= 0 {
		base = r.First
	}
	h.aimd = base
	if r.Ceiling > 0 {
		h.aimd = min(h.aimd, r.Ceiling)
	}
}

// hostIncrease is the additive step of the host rate on a success, up to
// Settle times the rate that last drew a host-level 429 or 503. After
// Reprobe without pushback that bound creeps up by Creep every RunLength
// successes, as a settled lane's does, so that a raised limit is found again.
func (r *Rules) hostIncrease(h *HostState, now int64) {
	if h.aimdCumAt != 0 && h.aimdCumN < math.MaxInt32 {
		h.aimdCumN++
	}
	step := r.HostInc
	if h.aimdLo > 0 && h.aimd >= r.Settle*h.aimdLo {
		// Above what is proven the next pushback is near: a fifth of
		// the step, so that episodes are rare and each costs little
		// (measured on the bench's host-scoped, per-credential and
		// overload scenarios: a twentieth left 4% of the rate unused,
		// a third drew a quarter more 429s for under 1% more rate).
		step /= 5
	}
	h.aimd += step
	if h.aimdHi > 0 {
		if now-h.epAt > r.Reprobe {
			h.aimdHi *= 1 + r.Creep/float64(r.RunLength)
		}
		h.aimd = min(h.aimd, r.Settle*h.aimdHi)
	}
	if r.Ceiling > 0 {
		h.aimd = min(h.aimd, r.Ceiling)
	}
}

// hostDecrease is the multiplicative cut of one host-level pushback episode;
// answers to requests sent before the episode began count once. It reports
// whether this was a new episode.
func (r *Rules) hostDecrease(h *HostState, sent, now int64) bool {
	if h.epAt != 0 && sent < h.epAt {
		return false
	}
	h.epAt = now
	x := h.aimd
	if h.aimdHi == 0 {
		// The first pushback since the host became rated: it was drawn
		// by what the host was sent then, above its newly cut rate.
		x = max(x, h.sendRate)
	}
	// The host rate drew the pushback unless the host was sent far less
	// (sendRate averages ~10s, pauses included, so it reads low).
	drew := h.sendRate >= 0.5*x
	if drew {
		h.aimdHi = x
	}
	if h.aimdLo >= x {
		h.aimdLo = 0 // pushed back below what was proven: the limit moved
	}
	if b := counted(h.aimdCumN, h.aimdCumAt, now); b > 0 && b < x {
		h.aimdLo = max(h.aimdLo, b)
	}
	h.aimdCumAt, h.aimdCumN = now, 0
	h.aimd = max(r.HostMin, x*r.HostDec)
	if h.aimdLo > 0 && drew {
		h.aimd = min(r.Settle*x, max(r.Settle*h.aimdLo, h.aimd))
	}
	return true
}

func (r *Rules) hostThrottled(h *HostState, o *Outcome, sent, now int64, u float64) {
	if !r.hostDecrease(h, sent, now) {
		if until := now + int64(o.RetryAfter); o.RetryAfter > 0 && until > h.pause {
			h.c.ThrottledNs += until - max(h.pause, now)
			h.pause = until
		}
		return
	}
	h.scopeAt = now
	h.hostEps++
	d := int64(o.RetryAfter)
	if d <= 0 {
		d = int64(fullJitter(u, time.Duration(r.BackoffBase), time.Duration(r.BackoffCap), int(h.hostEps)-1))
	}
	if until := now + d; until > h.pause {
		h.c.ThrottledNs += until - max(h.pause, now)
		h.pause = until
	}
}
