package limit

import (
	"fmt"
	"math"
	"time"
)

// The host's own rate: when the server limits site-wide (or per credential)
// or sheds load with 503s, one AIMD rate gates the whole host, and scope
// inference decides when that is.

// hostRate is a host's AIMD rate and what it learned, in req/s.
type hostRate struct {
	on  bool    // the rate gates the host
	now float64 // the current rate
	tat int64   // its GCRA theoretical arrival time
	// hi is the rate that last drew a host-level 429 or 503 (0 = none):
	// additive increase stops at Settle times it, so the rate settles under
	// the limit instead of saw-toothing. It creeps up after a long quiet so
	// that a raised limit is found again.
	hi float64
	// lo is a proven lower bound: between two pushback episodes the
	// server's budget was empty at both ends, so it refilled at least the
	// successes in between. A cut restarts no lower than Settle times it.
	lo    float64
	cumAt int64 // start of the current pushback series
	cumN  int32 // successes since cumAt
	epAt  int64 // host-level pushback episode start
	// epStart is when the overload episode this Limiter counts began: the
	// first cut, its own or adopted, of cuts each within sameEpisode of
	// it (epAt is the latest).
	epStart int64
	eps     int16 // consecutive host-level episodes, for backoff
	// overloaded: 503s put the host under the rate, whatever its scope.
	overloaded bool
}

// rated reports whether the host's rate gates it.
func (h *host) rated() bool { return h.rate.on }

// sendAll is what the host is sent by every Limiter that shares it: this
// one's send rate times their number (a fleet's workers split the pool's
// exits evenly, and so the host's requests).
func (h *host) sendAll(now int64) float64 { return h.send.current(now) * h.sharedBy() }

// startRate starts the host rate at what the host was actually sent: its
// answers a second lately where they came faster than its send rate, an
// average over about ten seconds, reads (a ramp doubling each second read
// 2/s at 15.5/s, and the host's overload cut it to a sixteenth).
func (r *rules) startRate(h *host, now int64, why string) {
	base := max(h.sendAll(now), h.mix.rate(now)*h.sharedBy())
	if base <= 0 {
		base = r.first
	}
	if r.ceiling > 0 {
		base = min(base, r.ceiling)
	}
	h.note(r, now, "host-rate", "", "host-rate", 0, base, why)
	h.rate.on, h.rate.now = true, base
}

// setScope records what the server limits by (from headers, or inferred
// from 429s); a shared scope puts the host under its rate.
func (r *rules) setScope(h *host, s Scope, now int64, why string) {
	if s == h.scope {
		if s.shared() {
			h.scopeAt = now
		}
		return
	}
	h.note(r, now, "scope", "", "scope", float64(h.scope), float64(s), why)
	if s.shared() && !h.rated() {
		// Control moves to the host: start from what it was sent, cut once.
		r.startRate(h, now, "the host limits site-wide: its own rate governs")
		h.rate.now = max(hostMin, h.rate.now*hostCut)
	}
	if s.shared() && !h.scope.shared() {
		// What the lanes learned was their share of the host's limit, not
		// their own: forget it, or their sum would cap the host under its
		// rate. Lanes pace at the host's rate now.
		h.cap = capacity{}
		h.exp = explorer{quietAt: now}
		for _, l := range h.lanes {
			if l.x != nil {
				l.x.own = 0
			}
			r.setPace(h, l, r.maxLane)
		}
	}
	if s.shared() {
		h.scopeAt = now
	}
	h.scope = s
}

// hostIncrease is the additive step of the host rate on a success, up to
// Settle times the rate that last drew a host-level pushback.
func (r *rules) hostIncrease(h *host, now int64) {
	hr := &h.rate
	hr.eps = 0
	if hr.cumAt != 0 && hr.cumN < math.MaxInt32 {
		hr.cumN++
	}
	// Shared by workers Limiters, each counting only its own successes:
	// a step as far as theirs together.
	n := h.sharedBy()
	step := hostStep * n
	if hr.lo > 0 && hr.now >= r.settle*hr.lo {
		step *= hostSlowStep
	}
	hr.now += step
	if hr.hi > 0 {
		if now-hr.epAt > 20*int64(time.Minute) {
			hr.hi *= 1 + n*0.02/20 // a long quiet: the ceiling creeps up 2% per 20 successes
		}
		hr.now = min(hr.now, r.settle*hr.hi)
	}
	if r.ceiling > 0 {
		hr.now = min(hr.now, r.ceiling)
	}
}

// hostDecrease is the multiplicative cut of one host-level pushback episode;
// answers to requests sent before the episode began count once. It reports
// whether this was a new episode.
func (r *rules) hostDecrease(h *host, sent, now int64, why string) bool {
	hr := &h.rate
	if hr.epAt != 0 && sent < hr.epAt {
		return false
	}
	hr.epAt = now
	if now-hr.epStart >= sameEpisode {
		hr.epStart = now
	}
	hr.eps = min(hr.eps+1, 30)
	x := hr.now
	sendRate := h.sendAll(now)
	if hr.hi == 0 {
		// The first pushback since the host became rated: it was drawn by
		// what the host was sent then, above its newly cut rate.
		x = max(x, sendRate)
	}
	// The host rate drew the pushback unless the host was sent far less
	// (the send rate averages ~10s, pauses included, so it reads low).
	drew := sendRate >= 0.5*x
	if drew {
		hr.hi = x
	}
	if hr.lo >= x {
		hr.lo = 0 // pushed back below what was proven: the limit moved
	}
	// This Limiter's successes stand for the fleet's: its workers'
	// together, counted as one count (n successes of each of k workers
	// are kn, not k(n-1): a worker of eight with five successes between
	// two cuts read 1.2/s of a credential's 2/s, and the fleet climbed
	// back from a cut to half in slow steps for a minute), once it has
	// two of its own (one success of eight workers' is no count).
	if b := counted(int32(min(float64(hr.cumN)*h.sharedBy(), math.MaxInt32)), hr.cumAt, now); hr.cumN > 1 && b > 0 && b < x {
		hr.lo = max(hr.lo, b)
	}
	hr.cumAt, hr.cumN = now, 0
	next := max(hostMin, x*hostCut)
	if hr.lo > 0 && drew {
		next = min(r.settle*x, max(r.settle*hr.lo, next))
	}
	h.note(r, now, "host-rate", "", "host-rate", hr.now, next, why)
	hr.now = next
	return true
}

// counted is the rate a server refilled at least, in req/s, between a
// pushback at from (its budget empty) and now (no fuller than empty), given
// n successes in between, whatever its burst: (n-1)/(now-from).
func counted(n int32, from, now int64) float64 {
	if from == 0 || now <= from || n <= 1 {
		return 0
	}
	return float64(n-1) / secs(now-from)
}

// hostPause extends the host's shared pause to until.
func (r *rules) hostPause(h *host, until, now int64, why string) {
	// A wait the server asks for is honoured up to a day, as a lane's is:
	// a 503 with ten years' Retry-After paused its host for a month.
	until = min(until, now+int64(maxRetryAfter))
	if until <= h.pause {
		return
	}
	h.c.ThrottledNs += until - max(h.pause, now)
	h.note(r, now, "pause", "", "pause", secs(max(h.pause-now, 0)), secs(until-now), why)
	h.pause = until
}

// hostThrottled handles a 429 on a host that limits site-wide.
func (r *rules) hostThrottled(h *host, o *Outcome, sent, now int64, u float64) {
	if !r.hostDecrease(h, sent, now, "a 429 on a host that limits site-wide") {
		if o.RetryAfter > 0 {
			r.hostPause(h, now+int64(o.RetryAfter), now, "a longer Retry-After from a request already out")
		}
		return
	}
	h.scopeAt = now
	d := int64(o.RetryAfter)
	if d <= 0 {
		d = int64(fullJitter(u, r.backoffBase, r.backoffCap, int(h.rate.eps)-1))
	}
	r.hostPause(h, now+d, now, "the host limits site-wide: every lane waits")
}

// laneBusy reports whether a 503 on host h's lane l is a per-IP limit's
// refusal rather than an overload: it says no Retry-After, the host is not
// limited site-wide yet, and another lane succeeded within busyPeerSpan.
// nginx's limit_req answers 503 unless told otherwise (limit_req_status),
// and many sites leave it so: read as an overload, its 2r/s per address on
// 10 exits put the whole pool under one host rate of about 3/s, 14.7% of
// what the exits were allowed. Read as the lane's 429, the other lanes go
// on, and the scope rule still finds a site-wide limit when several lanes
// are refused under their pace.
func (r *rules) laneBusy(h *host, l *lane, o *Outcome, now int64) bool {
	if h.rated() {
		return false
	}
	if o.HasRemaining && o.Remaining < 1 {
		// Its headers say this client's quota is spent: the quota's
		// refusal, whatever the status (connect-ratelimit's README has
		// the app answer 503 with X-RateLimit-Remaining: -1; read as an
		// overload, one lane's 503s put the whole host under a host rate
		// halved seven times, 1% of the pool's limit).
		return true
	}
	if o.RetryAfter > 0 || h.okExit == "" {
		return false
	}
	// Another lane's latest success: the host's last, or the one before
	// it when the last was this lane's own (two lanes refused within 4 ms
	// on nginx's 2r/s, the second just after a success of its own: read
	// as the site's overload, the host's rate halved for the rest of the
	// run, 40.5% of the limit).
	other := h.okAt
	if h.okExit == l.exit {
		other = h.prevOKAt
	}
	return other != 0 && now-other <= busyPeerSpan
}

// loneBusy reports whether a 503 without Retry-After on host h at now is
// read as its URL's transient error, not yet an overload, and records it
// (busyAt) for the next one's reading: the host is not rated, it
// succeeded since its last such 503 and within busyPeerSpan (any lane: a
// direct crawl has one), and that 503 was longer than loneBusySpan ago. A
// second soon after is an overload, as before: a site that sheds load
// sheds it from many requests, where a flaky page answers 503 alone among
// pages that pass (every tenth URL of a direct crawl 503 half the time:
// each read as an overload cut the host to 2/s of the 40 it was allowed,
// 600 URLs in 16 minutes, in a helper's blind run; what is left of it,
// busymix.go reads).
func (r *rules) loneBusy(h *host, o *Outcome, now int64) bool {
	if h.rated() || o.RetryAfter > 0 || h.okAt == 0 || now-h.okAt > busyPeerSpan || h.okAt < h.busyAt {
		return false
	}
	lone := h.busyAt == 0 || now-h.busyAt > loneBusySpan
	h.busyAt = now
	return lone
}

// busy handles a 503: an overloaded site has one capacity for all exits, so
// the host rate takes over and each overload episode cuts it.
func (r *rules) busy(h *host, o *Outcome, sent, now int64, u float64) {
	if !h.rated() {
		r.startRate(h, now, "503 overload: the site's capacity is one for all exits")
		h.rate.overloaded = true
	}
	r.hostDecrease(h, sent, now, "503 overload")
	if o.RetryAfter == 0 {
		h.busyTestStart(now) // (a told wait is the server's own word)
	}
	d, why := int64(o.RetryAfter), "503 with "+sayRetryAfter(o.RetryAfter)
	if d <= 0 {
		// (Said as a Retry-After the server never sent before.)
		d = int64(fullJitter(u, r.backoffBase, r.backoffCap, int(h.rate.eps)-1))
		why = fmt.Sprintf("503 without Retry-After: backoff %v", time.Duration(d).Round(time.Millisecond))
	}
	r.hostPause(h, now+d, now, why)
}
