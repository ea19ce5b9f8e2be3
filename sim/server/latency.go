package server

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Dist names a latency distribution.
type Dist uint8

const (
	// Fixed: always Base.
	Fixed Dist = iota
	// Uniform: uniform in [Base, Max].
	Uniform
	// LogNormal: Base * exp(Sigma * N(0,1)), capped at Max: a median of
	// Base with a long right tail, like real response times.
	LogNormal
)

// Latency is a response-time distribution. The zero value is a fixed zero
// latency.
type Latency struct {
	Dist Dist
	// Base is the fixed value, the uniform minimum or the lognormal median.
	Base time.Duration
	// Max is the uniform maximum, or the lognormal cap (0 = 10 × Base).
	Max time.Duration
	// Sigma is the lognormal shape; 0 means 0.5.
	Sigma float64
}

func (l Latency) withDefaults() Latency {
	if l.Dist == LogNormal {
		if l.Sigma == 0 {
			l.Sigma = 0.5
		}
		if l.Max == 0 {
			l.Max = 10 * l.Base
		}
	}
	return l
}

func (l Latency) validate() error {
	switch {
	case l.Base < 0 || l.Max < 0 || l.Sigma < 0 || math.IsNaN(l.Sigma) || math.IsInf(l.Sigma, 0):
		return fmt.Errorf("latency %+v has a negative or invalid field", l)
	case l.Dist > LogNormal:
		return fmt.Errorf("unknown latency distribution %d", l.Dist)
	case l.Dist == Uniform && l.Max < l.Base:
		return fmt.Errorf("uniform latency max %v is below base %v", l.Max, l.Base)
	}
	return nil
}

// Draw returns one latency; rng is used only by random distributions.
func (l Latency) Draw(rng *rand.Rand) time.Duration {
	return l.withDefaults().draw(rng)
}

// draw is Draw for a latency with its defaults applied.
func (l Latency) draw(rng *rand.Rand) time.Duration {
	switch l.Dist {
	case Uniform:
		if l.Max == l.Base {
			return l.Base
		}
		return l.Base + time.Duration(rng.Int64N(int64(l.Max-l.Base)+1))
	case LogNormal:
		v := float64(l.Base) * math.Exp(l.Sigma*rng.NormFloat64())
		if v > float64(l.Max) {
			return l.Max
		}
		return time.Duration(v)
	}
	return l.Base
}

// Mean returns the distribution's mean (the lognormal mean ignores the cap).
func (l Latency) Mean() time.Duration {
	l = l.withDefaults()
	switch l.Dist {
	case Uniform:
		return (l.Base + l.Max) / 2
	case LogNormal:
		return min(time.Duration(float64(l.Base)*math.Exp(l.Sigma*l.Sigma/2)), l.Max)
	}
	return l.Base
}
