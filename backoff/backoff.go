// Package backoff computes retry delays. It holds no state and reads no clock:
// callers pass the attempt number and their own *rand.Rand, so every delay is
// reproducible in tests.
//
// Full jitter is the default because it spreads retries from many clients
// evenly over the whole interval instead of bunching them at its end; see
// "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015).
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Default values used when a Policy field is zero.
const (
	DefaultBase = 500 * time.Millisecond
	DefaultCap  = 60 * time.Second
)

// Kind selects the jitter algorithm.
type Kind uint8

const (
	// Full draws uniformly from [0, min(cap, base·2^attempt)].
	Full Kind = iota
	// Decorrelated draws uniformly from [base, min(cap, 3·previous)].
	Decorrelated
)

// Policy describes a backoff. The zero value is full jitter with DefaultBase
// and DefaultCap. A Policy is a plain value and safe for concurrent use; the
// *rand.Rand passed to its methods is not, unless the caller makes it so.
type Policy struct {
	Kind Kind
	Base time.Duration // first ceiling; 0 means DefaultBase
	Cap  time.Duration // largest delay ever returned; 0 means DefaultCap
}

func (p Policy) base() time.Duration {
	if p.Base > 0 {
		return p.Base
	}
	return DefaultBase
}

func (p Policy) cap() time.Duration {
	if p.Cap > 0 {
		return p.Cap
	}
	return DefaultCap
}

// Ceiling returns min(cap, base·2^attempt), the upper bound of the full-jitter
// draw for attempt (0 for the first retry). It never overflows.
func (p Policy) Ceiling(attempt int) time.Duration {
	base, limit := p.base(), p.cap()
	if attempt < 0 {
		attempt = 0
	}
	// Above 62 doublings any positive base exceeds every time.Duration.
	if attempt >= 62 || float64(base)*math.Exp2(float64(attempt)) >= float64(limit) {
		return limit
	}
	return base << attempt
}

// Delay returns the delay before retry number attempt (0 for the first retry).
// prev is the delay returned for the previous attempt; only Decorrelated uses
// it (0 means none yet).
func (p Policy) Delay(r *rand.Rand, attempt int, prev time.Duration) time.Duration {
	if p.Kind == Decorrelated {
		return decorrelated(r, p.base(), p.cap(), prev)
	}
	return uniform(r, 0, p.Ceiling(attempt))
}

// At returns the full-jitter delay for a uniform draw u in [0, 1):
// u·Ceiling(attempt). It serves state machines that draw their own u (so that
// a port to another runtime, such as a Redis script, can replay them).
func (p Policy) At(u float64, attempt int) time.Duration {
	u = min(max(u, 0), 1)
	return time.Duration(u * float64(p.Ceiling(attempt)))
}

// FullJitter is the shorthand for Policy{Base: base, Cap: cap}.Delay(r, attempt, 0).
func FullJitter(r *rand.Rand, base, cap time.Duration, attempt int) time.Duration {
	return Policy{Base: base, Cap: cap}.Delay(r, attempt, 0)
}

func decorrelated(r *rand.Rand, base, limit, prev time.Duration) time.Duration {
	if prev < base {
		prev = base
	}
	hi := prev
	if hi <= limit/3 {
		hi *= 3
	} else {
		hi = limit
	}
	if hi < base {
		return limit
	}
	return uniform(r, base, hi)
}

// uniform draws from [lo, hi], inclusive of hi so that the cap is reachable.
func uniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}
