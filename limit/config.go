package limit

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"
)

// Policy chooses how a lane learns its capacity.
type Policy uint8

const (
	// Adaptive is the default: even pacing, a ceiling estimate (the lowest
	// rate that drew a 429), a floor estimate (a proven lower bound on the
	// server's rate), settling at Settle times the ceiling, and slow
	// multiplicative probing while nothing pushes back. See the package doc.
	Adaptive Policy = iota
	// ArticlePerExit is the reference article's rule set, kept for
	// comparison: a full bucket of FirstGuess per minute, halve on 429 with a
	// floor of 2/min, +25% toward FirstGuess after 100 consecutive successes,
	// never above FirstGuess.
	ArticlePerExit
)

// String names the policy as config files spell it.
func (p Policy) String() string {
	switch p {
	case Adaptive:
		return "adaptive"
	case ArticlePerExit:
		return "article"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// Config configures a Limiter. The zero value of every field means the
// documented default; New validates the whole struct once.
type Config struct {
	// FirstGuess is a new lane's starting rate. Default 30/min (the article).
	FirstGuess Rate
	// MinLaneRate is the floor a lane never learns below. Default 1/min
	// (the article floors at 2/min; its policy keeps that).
	MinLaneRate Rate
	// MaxLaneRate bounds upward probing of one lane. Default: HostCeiling
	// when set, else 50/s (or FirstGuess if higher).
	MaxLaneRate Rate
	// LaneBurst is how many requests a lane may send back to back. Default 1:
	// even spacing is what gets the full pool without 429s.
	LaneBurst int

	// HostCeiling is the politeness ceiling per host across all exits and
	// workers; zero means none.
	HostCeiling Rate
	// HostConcurrency caps in-flight requests per host. Default 32: enough
	// to keep a few dozen exits busy at typical latencies, low enough that
	// one host cannot hold the whole MaxInFlight budget.
	HostConcurrency int
	// MaxInFlight caps in-flight requests of this Limiter across all hosts.
	// Default 256. It is process-local even with a shared Store.
	MaxInFlight int

	// Policy is the lane learning policy. Default Adaptive.
	Policy Policy
	// Settle is where the adaptive policy settles, as a fraction of the
	// lowest rate that drew a 429. Default 0.97: pacing at 100% drew 8-12%
	// 429s on real servers; a few percent under drew none.
	Settle float64
	// Decrease multiplies a lane's rate on a 429 when no lower bound is known
	// yet. Default 0.7.
	Decrease float64
	// ProbeUp multiplies a lane's rate after a saturated run of ProbeRun
	// successes while no 429 has been seen (slow start). Default 1.5: from
	// the first guess of 30/min a lane reaches 20/s in about 30 seconds, and
	// it overshoots a limit by at most half before the first 429 says where
	// the limit is.
	ProbeUp float64
	// ProbeRun is the number of successes that make a run while probing up.
	// Default 5.
	ProbeRun int
	// Creep is the smallest relative step up after a saturated run once a
	// ceiling is known. Default 0.02.
	Creep float64
	// RunLength is the number of successes that make a run. Default 20.
	RunLength int
	// Reprobe is how long a lane must sit at its settled rate without any 429
	// before its ceiling estimate is allowed to rise by Creep (limits change).
	// Default 20 minutes.
	Reprobe time.Duration
	// ProbeEvery is how long a host's lanes must go without a 429 before one
	// settled lane probes above its ceiling in case the limit was raised.
	// A failed probe costs the host one 429, two when it had to measure,
	// and doubles the quiet the next one waits for. Default 30s.
	ProbeEvery time.Duration

	// BackoffBase and BackoffCap bound the full-jitter cooldown used when a
	// 429 or 503 carries no Retry-After. Defaults 1s and 60s.
	BackoffBase, BackoffCap time.Duration

	// HostIncrease is the host AIMD additive step per success while the host
	// is host-scoped. Default 3/min (the article's 0.05/s).
	HostIncrease Rate
	// HostDecrease multiplies the host rate on a host-scoped 429. Default 0.5.
	HostDecrease float64
	// HostMinRate bounds the host AIMD rate from below. Default 6/min.
	HostMinRate Rate

	// ScopeLanes is how many distinct lanes, each under its learned capacity,
	// must draw a 429 within ScopeSpan before the host is inferred to be
	// host-scoped. Default 3.
	ScopeLanes int
	// ScopeSpan is the correlation window for scope inference. Default 10s.
	ScopeSpan time.Duration
	// ScopeRevert is how long a host inferred (not declared) host-scoped stays
	// so without fresh evidence. Default 30 minutes.
	ScopeRevert time.Duration

	// QuarantineBase and QuarantineMax bound an exit's exponential quarantine
	// after proxy failures. Defaults 30s and 30 minutes.
	QuarantineBase, QuarantineMax time.Duration
	// BanBase and BanMax bound a lane's exponential quarantine after a
	// Banned verdict, or a wave of Forbidden ones (see wave.go). Defaults 10
	// minutes and 6 hours.
	BanBase, BanMax time.Duration
	// EarlyWarning flags a lane whose learned rate falls below this fraction
	// of its host's median lane rate. Default 0.5.
	EarlyWarning float64

	// IdleTTL expires lanes and hosts idle this long. Default 1 hour.
	IdleTTL time.Duration
	// Recheck is the retry delay Acquire reports when only a concurrency cap
	// blocks (it cannot know when a request will finish). Default 20ms.
	Recheck time.Duration

	// Rand supplies jitter; nil seeds one from crypto/rand. The Limiter
	// serialises its use.
	Rand *rand.Rand
	// Logger receives learning events at debug level; nil discards.
	Logger *slog.Logger
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("invalid limit config")

// Rules is a validated Config with every default filled in, in the units the
// learning math uses. Stores receive it with each operation; it is immutable
// after New and safe to share.
type Rules struct {
	Policy                    Policy
	First, MinLane, MaxLane   float64 // req/s
	LaneBurst                 float64
	Ceiling                   float64 // req/s, 0 = none
	HostConc, MaxInFlight     int
	Settle, Decrease, ProbeUp float64
	Creep                     float64
	RunLength, ProbeRun       int
	Reprobe, ProbeEvery       int64 // ns
	BackoffBase, BackoffCap   int64
	HostInc, HostDec, HostMin float64
	ScopeLanes                int
	ScopeSpan, ScopeRevert    int64
	QuarBase, QuarMax         int64
	BanBase, BanMax           int64
	EarlyWarning              float64
	IdleTTL, Recheck          int64
}

func (c *Config) rules() (*Rules, error) {
	r := &Rules{Policy: c.Policy}
	bad := func(field string, why string) (*Rules, error) {
		return nil, fmt.Errorf("%w: %s %s", ErrConfig, field, why)
	}
	if c.Policy > ArticlePerExit {
		return bad("Policy", "unknown")
	}
	rate := func(field string, v Rate, def float64) (float64, error) {
		if v.N < 0 || v.Per < 0 || math.IsNaN(v.N) || math.IsInf(v.N, 0) {
			return 0, fmt.Errorf("%w: %s %v must be positive", ErrConfig, field, v)
		}
		if v.IsZero() {
			return def, nil
		}
		return v.Hz(), nil
	}
	frac := func(field string, v, def, lo, hi float64) (float64, error) {
		if v == 0 {
			return def, nil
		}
		if !(v > lo && v < hi) {
			return 0, fmt.Errorf("%w: %s %v out of range (%v, %v)", ErrConfig, field, v, lo, hi)
		}
		return v, nil
	}
	dur := func(field string, v, def time.Duration) (int64, error) {
		if v < 0 {
			return 0, fmt.Errorf("%w: %s %v is negative", ErrConfig, field, v)
		}
		if v == 0 {
			v = def
		}
		return int64(v), nil
	}
	count := func(field string, v, def int) (int, error) {
		if v < 0 {
			return 0, fmt.Errorf("%w: %s %d is negative", ErrConfig, field, v)
		}
		if v == 0 {
			v = def
		}
		return v, nil
	}
	var err error
	set := func(e error) {
		if err == nil {
			err = e
		}
	}
	var e error
	r.First, e = rate("FirstGuess", c.FirstGuess, 0.5)
	set(e)
	minDef := 1.0 / 60
	if c.Policy == ArticlePerExit {
		minDef = 2.0 / 60
	}
	r.MinLane, e = rate("MinLaneRate", c.MinLaneRate, minDef)
	set(e)
	r.Ceiling, e = rate("HostCeiling", c.HostCeiling, 0)
	set(e)
	maxDef := max(50.0, r.First)
	if r.Ceiling > 0 {
		maxDef = r.Ceiling
	}
	r.MaxLane, e = rate("MaxLaneRate", c.MaxLaneRate, maxDef)
	set(e)
	b, e := count("LaneBurst", c.LaneBurst, 1)
	set(e)
	r.LaneBurst = float64(b)
	r.HostConc, e = count("HostConcurrency", c.HostConcurrency, 32)
	set(e)
	r.MaxInFlight, e = count("MaxInFlight", c.MaxInFlight, 256)
	set(e)
	r.Settle, e = frac("Settle", c.Settle, 0.97, 0, 1)
	set(e)
	r.Decrease, e = frac("Decrease", c.Decrease, 0.7, 0, 1)
	set(e)
	r.ProbeUp, e = frac("ProbeUp", c.ProbeUp, 1.5, 1, 10)
	set(e)
	r.Creep, e = frac("Creep", c.Creep, 0.02, 0, 1)
	set(e)
	r.RunLength, e = count("RunLength", c.RunLength, 20)
	set(e)
	r.ProbeRun, e = count("ProbeRun", c.ProbeRun, 5)
	set(e)
	r.Reprobe, e = dur("Reprobe", c.Reprobe, 20*time.Minute)
	set(e)
	r.ProbeEvery, e = dur("ProbeEvery", c.ProbeEvery, 30*time.Second)
	set(e)
	r.BackoffBase, e = dur("BackoffBase", c.BackoffBase, time.Second)
	set(e)
	r.BackoffCap, e = dur("BackoffCap", c.BackoffCap, time.Minute)
	set(e)
	r.HostInc, e = rate("HostIncrease", c.HostIncrease, 0.05)
	set(e)
	r.HostDec, e = frac("HostDecrease", c.HostDecrease, 0.5, 0, 1)
	set(e)
	r.HostMin, e = rate("HostMinRate", c.HostMinRate, 0.1)
	set(e)
	r.ScopeLanes, e = count("ScopeLanes", c.ScopeLanes, 3)
	set(e)
	r.ScopeSpan, e = dur("ScopeSpan", c.ScopeSpan, 10*time.Second)
	set(e)
	r.ScopeRevert, e = dur("ScopeRevert", c.ScopeRevert, 30*time.Minute)
	set(e)
	r.QuarBase, e = dur("QuarantineBase", c.QuarantineBase, 30*time.Second)
	set(e)
	r.QuarMax, e = dur("QuarantineMax", c.QuarantineMax, 30*time.Minute)
	set(e)
	r.BanBase, e = dur("BanBase", c.BanBase, 10*time.Minute)
	set(e)
	r.BanMax, e = dur("BanMax", c.BanMax, 6*time.Hour)
	set(e)
	r.EarlyWarning, e = frac("EarlyWarning", c.EarlyWarning, 0.5, 0, 1)
	set(e)
	r.IdleTTL, e = dur("IdleTTL", c.IdleTTL, time.Hour)
	set(e)
	r.Recheck, e = dur("Recheck", c.Recheck, 20*time.Millisecond)
	set(e)
	if err != nil {
		return nil, err
	}
	switch {
	case r.MinLane > r.First:
		return bad("MinLaneRate", "exceeds FirstGuess")
	case r.MaxLane < r.First:
		return bad("MaxLaneRate", "is below FirstGuess")
	case r.BackoffCap < r.BackoffBase:
		return bad("BackoffCap", "is below BackoffBase")
	case r.QuarMax < r.QuarBase:
		return bad("QuarantineMax", "is below QuarantineBase")
	case r.BanMax < r.BanBase:
		return bad("BanMax", "is below BanBase")
	}
	return r, nil
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
