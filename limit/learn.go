package limit

import (
	"math"
	"time"
)

// learner is one lane's capacity estimate. All rates are requests per
// second; all times are Unix nanoseconds. The methods are the learning rules
// the package doc describes; they are pure functions of the state, the rules
// and the instant, so a store in another language can be checked against
// the same tables.
type learner struct {
	pace    float64 // current even-spacing rate
	hi      float64 // ceiling estimate: lowest pace that drew a 429; 0 = none seen
	lo      float64 // floor: proven lower bound on the server's sustained rate; 0 = none
	cumAt   int64   // first 429 of the current series: the server's bucket was empty then
	runAt   int64   // start of the current run of successes
	quietAt int64   // last 429 or last ceiling drift
	cumN    int32   // successes since cumAt
	runN    int32   // successes in the current run
	streak  int32   // consecutive successes (article policy)
	eps     int16   // consecutive 429 episodes, for backoff
	fixed   bool    // a declared quota set the pace; do not probe
	// reHi is the ceiling a settled lane had when it began to probe above
	// it (the limit may have been raised); 0 = not re-probing. While it is
	// set, hi is 0 and the lane slow-starts from its settled pace.
	reHi float64
}

func secs(ns int64) float64 { return float64(ns) / 1e9 }

// onOK applies one success at now.
func (r *Rules) onOK(l *learner, now int64) {
	l.eps = 0
	if r.Policy == ArticlePerExit {
		// Article: after 100 consecutive successes grow 25% toward the
		// default, never above it.
		l.streak++
		if l.streak >= 100 {
			l.streak = 0
			l.pace = min(r.First, l.pace*1.25)
		}
		return
	}
	if l.cumAt != 0 {
		l.cumN++
	}
	if l.runAt == 0 {
		l.runAt, l.runN = now, 0
	}
	l.runN++
	run := r.RunLength
	if l.hi == 0 && !l.fixed {
		run = r.ProbeRun // slow start: nothing has pushed back yet
	}
	if int(l.runN) < run {
		return
	}
	el := now - l.runAt
	// A run only proves something if the lane was sending at its pace: a
	// lane that idles is never pushed back and must not creep upward.
	saturated := el > 0 && float64(l.runN-1)/secs(el) >= 0.8*l.pace
	l.runAt, l.runN = now, 1
	if !saturated || l.fixed {
		return
	}
	if l.hi == 0 {
		// Nothing has pushed back yet: probe multiplicatively.
		l.pace = min(r.MaxLane, l.pace*r.ProbeUp)
		return
	}
	limit := r.Settle * l.hi
	if l.settled(r) {
		// Settled. A limit raised a lot is found by the host's re-probe
		// (HostState.reprobe); after a long quiet time the ceiling also
		// drifts up a little, so that a modest raise is found too.
		if now-l.quietAt < r.Reprobe {
			return
		}
		l.hi *= 1 + r.Creep
		l.quietAt = now
		limit = r.Settle * l.hi
	}
	// Close half the gap to the settle point, at least Creep per run.
	l.pace = min(r.MaxLane, limit, max(l.pace*(1+r.Creep), (l.pace+limit)/2))
}

// settled reports whether a lane with a known ceiling has reached its settle
// point under it.
func (l *learner) settled(r *Rules) bool {
	return l.hi > 0 && l.pace >= r.Settle*l.hi*0.999
}

// on429 applies the first 429 of an episode at now.
func (r *Rules) on429(l *learner, now int64) {
	l.eps++
	l.streak = 0
	l.runAt, l.runN = 0, 0
	l.quietAt = now
	if r.Policy == ArticlePerExit {
		l.pace = max(r.MinLane, l.pace*0.5)
		return
	}
	x := l.pace
	if l.reHi > 0 {
		r.reprobe429(l, x, now)
		return
	}
	if l.hi == 0 || x < l.hi {
		l.hi = x
	}
	if l.lo >= l.hi {
		// Pushed back below what we had proven: the limit moved. Forget.
		l.lo, l.cumAt = 0, 0
	}
	if l.cumAt != 0 {
		if b := counted(l.cumN, l.cumAt, now); b > 0 && b < l.hi {
			l.lo = max(l.lo, b)
		}
	} else {
		l.cumAt, l.cumN = now, 0
	}
	p := l.hi * r.Decrease
	if l.lo > 0 {
		p = min(r.Settle*l.hi, max(r.Settle*l.lo, p))
	}
	l.pace = max(r.MinLane, p)
}

// reprobe429 applies a 429 at pace x to a lane probing above its old
// ceiling reHi. The first 429 starts a counting series and holds the pace
// between reHi and x (their geometric mean), above the new limit if it lies
// low in that range, so that further 429s come and the series measures the
// limit (lo) whatever the server's burst. The next 429 decides: a measure
// no higher than reHi (or too few successes to measure) means a burst faked
// the climb and the old ceiling stands; else the limit was raised.
func (r *Rules) reprobe429(l *learner, x float64, now int64) {
	re := l.reHi
	if l.hi == 0 && x <= re*r.ProbeUp*r.ProbeUp*1.001 {
		// Drawn within two steps of the old ceiling: whatever a burst
		// allowed, the limit was not raised much. The old ceiling stands
		// (a modest raise is found by the slow drift of settled lanes).
		r.endReprobe(l)
		return
	}
	if l.hi == 0 {
		l.hi = x
		l.cumAt, l.cumN = now, 0
		l.pace = max(r.MinLane, math.Sqrt(re*x))
		return
	}
	// The second 429 decides: a probe costs the host at most two.
	l.hi = min(l.hi, x)
	if l.cumN < int32(2*r.ProbeRun) {
		l.cumAt, l.cumN = 0, 0 // too few successes to tell a raise
	}
	r.reprobeMeasure(l, now)
}

// reprobeMeasure ends a re-probe with what its series measured: the old
// ceiling stands, or lo is the raised limit.
func (r *Rules) reprobeMeasure(l *learner, now int64) {
	b := counted(l.cumN, l.cumAt, now)
	if b <= l.reHi {
		r.endReprobe(l)
		return
	}
	l.reHi = 0
	l.lo = min(b, l.hi)
	l.cumAt, l.cumN = now, 0
	l.pace = max(r.MinLane, min(r.MaxLane, l.lo))
}

// endReprobe gives a re-probing lane its old ceiling back, at the settle
// point under it.
func (r *Rules) endReprobe(l *learner) {
	l.hi, l.reHi, l.cumAt, l.cumN = l.reHi, 0, 0, 0
	l.pace = max(r.MinLane, min(r.MaxLane, r.Settle*l.hi))
}

// counted is the rate a server refilled at least, in req/s, between a 429 at
// from (its bucket empty) and now (no fuller than empty), given n successes
// in between, whatever its burst: (n-1)/(now-from). 0 when nothing measures.
func counted(n int32, from, now int64) float64 {
	if from == 0 || now <= from || n <= 1 {
		return 0
	}
	return float64(n-1) / secs(now-from)
}

// cooldown is how long a lane rests after the first 429 of an episode, given
// the server's Retry-After (0 = none) and a uniform u in [0,1).
func (r *Rules) cooldown(l *learner, retryAfter time.Duration, u float64) int64 {
	if retryAfter > 0 {
		return int64(retryAfter)
	}
	d := int64(fullJitter(u, time.Duration(r.BackoffBase), time.Duration(r.BackoffCap), int(l.eps)-1))
	if r.Policy == Adaptive {
		// At least two intervals at the new pace, so the server's bucket
		// holds a token again even if it also charged the rejected request.
		d = max(d, 2*r.interval(l))
	}
	return d
}

// interval is the even spacing at the lane's pace, in ns.
func (r *Rules) interval(l *learner) int64 {
	if l.pace <= 0 {
		return int64(time.Hour)
	}
	return int64(1e9 / l.pace)
}

// tau is the GCRA burst tolerance: how far ahead of its schedule a lane may
// send. The article refills a full bucket of capacity per minute; the
// adaptive policy allows LaneBurst back-to-back requests, plus slop.
func (r *Rules) tau(l *learner) int64 {
	b := r.LaneBurst
	if r.Policy == ArticlePerExit {
		b = max(1, l.pace*60)
	}
	iv := r.interval(l)
	return int64((b-1)*float64(iv)) + slop(iv)
}

// slop is how early a lane may let a request go: a quarter of its interval,
// at most 2ms. A caller wakes a little after the instant it was given (timer
// and scheduling latency), and GCRA with no tolerance would add each such
// lateness to the next interval, losing rate for good (measured: a 500/s
// ceiling delivered 407/s). Absorbing it keeps the long-run rate exact; the
// early margin is far inside the few percent the adaptive policy keeps
// under a learned limit.
func slop(iv int64) int64 {
	return min(iv/4, int64(2*time.Millisecond))
}

// hostSlop is slop for the host ceiling and AIMD pacers, which no server
// enforces at exactly that rate: up to a whole interval, at most 2ms, so that
// even a fast ceiling (500/s) keeps its rate through timer lateness.
func hostSlop(iv int64) int64 {
	return min(iv, int64(2*time.Millisecond))
}
