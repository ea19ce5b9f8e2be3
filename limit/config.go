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

// Config configures a Limiter. The zero value of every field means the
// documented default; New validates the whole struct once.
type Config struct {
	// FirstGuess is where a host's first exploring lane starts. Default
	// 30/min (the reference article's guess). It is a starting point, not a
	// bound: the limiter probes above it while nothing pushes back.
	FirstGuess Rate
	// MinLaneRate is the floor a lane never learns below. Default 1/min,
	// or FirstGuess when that is lower (a site known to be that slow).
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
	// Default 256.
	MaxInFlight int

	// Settle is where lanes pace, as a fraction of the per-lane limit the
	// host's lanes proved or the server declared. Default 0.97: pacing at
	// 100% of a limit drew 8-12% 429s on real servers (a few ms of jitter
	// tips a request over a window's edge); a few percent under drew none.
	Settle float64

	// BackoffBase and BackoffCap bound the full-jitter cooldown used when a
	// 429 or 503 carries no Retry-After. Defaults 1s and 60s.
	BackoffBase, BackoffCap time.Duration

	// ProbeEvery is how long a host's lanes must go without a 429 before one
	// lane probes above the settled pace, in case the limit was raised.
	// Each failed probe costs one 429 and doubles the quiet the next one
	// waits for. Default 60s.
	ProbeEvery time.Duration

	// ScopeLanes is how many distinct lanes, each paced at what was proven
	// safe for one lane, must draw a 429 within ScopeSpan before the host is
	// inferred to limit site-wide. Default 3.
	ScopeLanes int
	// ScopeSpan is the correlation window for scope inference. Default 10s.
	ScopeSpan time.Duration
	// ScopeRevert is how long a host inferred (not declared) host-scoped
	// stays so without fresh evidence. Default 30 minutes.
	ScopeRevert time.Duration

	// QuarantineBase and QuarantineMax bound an exit's exponential quarantine
	// after proxy failures. Defaults 30s and 30 minutes.
	QuarantineBase, QuarantineMax time.Duration
	// BanBase and BanMax bound a lane's exponential quarantine after a ban
	// (a block page, or a wave of forbidden answers). Defaults 10 minutes
	// and 6 hours.
	BanBase, BanMax time.Duration
	// BanWave is how many Forbidden answers to distinct requests on one
	// lane, with no success in between, make a ban. Default 3: one 403 is
	// that URL's fate, not the lane's.
	BanWave int
	// EarlyWarning flags a lane whose learned rate falls below this fraction
	// of its host's median lane rate. Default 0.5.
	EarlyWarning float64

	// IdleTTL expires lanes and hosts idle this long. Default 1 hour.
	IdleTTL time.Duration
	// Recheck is the retry delay Acquire reports when only a concurrency cap
	// blocks (it cannot know when a request will finish). Default 20ms.
	Recheck time.Duration
	// Changes is how many change records each host keeps for Snapshot.
	// Default 16.
	Changes int

	// Shared, when set, shares host-level state with other Limiters (other
	// workers of one crawl): the ceiling and the host's rate become one
	// schedule, and pauses, scope, rate cuts and 429 evidence are adopted
	// from the others (shared.go). nil: this Limiter is alone.
	Shared HostShare

	// Rand supplies jitter; nil seeds one from crypto/rand. The Limiter
	// serialises its use.
	Rand *rand.Rand
	// Logger receives every change record at debug level and store warnings;
	// nil discards.
	Logger *slog.Logger
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("invalid limit config")

// rules is a validated Config with every default filled in, in the units the
// learning math uses (requests per second, Unix nanoseconds). Immutable after
// New and shared by every host.
type rules struct {
	first, minLane, maxLane float64
	laneBurst               float64
	ceiling                 float64 // 0 = none
	hostConc, maxInFlight   int
	settle                  float64
	backoffBase, backoffCap int64
	probeEvery              int64
	scopeLanes              int
	scopeSpan, scopeRevert  int64
	quarBase, quarMax       int64
	banBase, banMax         int64
	banWave                 int
	earlyWarning            float64
	idleTTL, recheck        int64
	changes                 int
}

func (c *Config) rules() (*rules, error) {
	r := &rules{}
	var err error
	fail := func(field, why string, args ...any) {
		if err == nil {
			err = fmt.Errorf("%w: %s %s", ErrConfig, field, fmt.Sprintf(why, args...))
		}
	}
	rate := func(field string, v Rate, def float64) float64 {
		if v.N < 0 || v.Per < 0 || math.IsNaN(v.N) || math.IsInf(v.N, 0) {
			fail(field, "%v must be a positive finite rate", v)
			return def
		}
		if v.IsZero() {
			return def
		}
		if v.Hz() < minRate {
			// 1e-12/s passed as positive: the first request never went,
			// the next 41 years away (past what a Duration holds).
			fail(field, "%v is below one request a year", v)
			return def
		}
		return v.Hz()
	}
	frac := func(field string, v, def, lo, hi float64) float64 {
		if v == 0 {
			return def
		}
		if !(v > lo && v < hi) {
			fail(field, "%v out of range (%v, %v)", v, lo, hi)
			return def
		}
		return v
	}
	dur := func(field string, v, def time.Duration) int64 {
		if v < 0 {
			fail(field, "%v is negative", v)
		}
		if v <= 0 {
			v = def
		}
		return int64(v)
	}
	count := func(field string, v, def, most int) int {
		if v < 0 || v > most {
			fail(field, "%d out of range [0, %d]", v, most)
			return def
		}
		if v == 0 {
			return def
		}
		return v
	}
	r.first = rate("FirstGuess", c.FirstGuess, 0.5)
	r.ceiling = rate("HostCeiling", c.HostCeiling, 0)
	maxDef := max(50.0, r.first)
	if r.ceiling > 0 {
		maxDef = r.ceiling
	}
	r.maxLane = rate("MaxLaneRate", c.MaxLaneRate, maxDef)
	if c.FirstGuess.IsZero() && r.maxLane < r.first {
		// A ceiling under the default first guess, and no guess given:
		// the lanes start at it, as crawl's do (--host-rate under
		// --lane-rate). It was refused, "MaxLaneRate is below FirstGuess",
		// naming two fields the caller never set.
		r.first = r.maxLane
	}
	r.minLane = rate("MinLaneRate", c.MinLaneRate, min(1.0/60, r.first))
	r.laneBurst = float64(count("LaneBurst", c.LaneBurst, 1, 1<<20))
	r.hostConc = count("HostConcurrency", c.HostConcurrency, 32, 1<<20)
	r.maxInFlight = count("MaxInFlight", c.MaxInFlight, 256, 1<<24)
	r.settle = frac("Settle", c.Settle, 0.97, 0.5, 1)
	r.backoffBase = dur("BackoffBase", c.BackoffBase, time.Second)
	r.backoffCap = dur("BackoffCap", c.BackoffCap, time.Minute)
	r.probeEvery = dur("ProbeEvery", c.ProbeEvery, time.Minute)
	r.scopeLanes = count("ScopeLanes", c.ScopeLanes, 3, 1024)
	r.scopeSpan = dur("ScopeSpan", c.ScopeSpan, 10*time.Second)
	r.scopeRevert = dur("ScopeRevert", c.ScopeRevert, 30*time.Minute)
	r.quarBase = dur("QuarantineBase", c.QuarantineBase, 30*time.Second)
	r.quarMax = dur("QuarantineMax", c.QuarantineMax, 30*time.Minute)
	r.banBase = dur("BanBase", c.BanBase, 10*time.Minute)
	r.banMax = dur("BanMax", c.BanMax, 6*time.Hour)
	r.banWave = count("BanWave", c.BanWave, 3, 255)
	r.earlyWarning = frac("EarlyWarning", c.EarlyWarning, 0.5, 0, 1)
	r.idleTTL = dur("IdleTTL", c.IdleTTL, time.Hour)
	r.recheck = dur("Recheck", c.Recheck, 20*time.Millisecond)
	r.changes = count("Changes", c.Changes, 16, 1024)
	if err != nil {
		return nil, err
	}
	// Each pair names the values it compares and where the other came
	// from: "MinLaneRate exceeds FirstGuess" blamed a field never set
	// (the default's), and a MinLaneRate above MaxLaneRate was reported
	// as that.
	given := func(set bool, name string) string {
		if set {
			return name
		}
		return name + "'s default"
	}
	hz := func(x float64) Rate { return PerSecond(x) }
	switch {
	case r.minLane > r.maxLane:
		fail("MinLaneRate", "%v exceeds %s %v", hz(r.minLane), given(!c.MaxLaneRate.IsZero() || r.ceiling > 0, "MaxLaneRate"), hz(r.maxLane))
	case r.minLane > r.first:
		fail("MinLaneRate", "%v exceeds %s %v", hz(r.minLane), given(!c.FirstGuess.IsZero(), "FirstGuess"), hz(r.first))
	case r.maxLane < r.first && c.MaxLaneRate.IsZero():
		fail("HostCeiling", "%v is below FirstGuess %v: no lane may go faster than its host", hz(r.ceiling), hz(r.first))
	case r.maxLane < r.first:
		fail("MaxLaneRate", "%v is below %s %v", hz(r.maxLane), given(!c.FirstGuess.IsZero(), "FirstGuess"), hz(r.first))
	case r.backoffCap < r.backoffBase:
		fail("BackoffCap", "%v is below %s %v", time.Duration(r.backoffCap), given(c.BackoffBase > 0, "BackoffBase"), time.Duration(r.backoffBase))
	case r.quarMax < r.quarBase:
		fail("QuarantineMax", "%v is below %s %v", time.Duration(r.quarMax), given(c.QuarantineBase > 0, "QuarantineBase"), time.Duration(r.quarBase))
	case r.banMax < r.banBase:
		fail("BanMax", "%v is below %s %v", time.Duration(r.banMax), given(c.BanBase > 0, "BanBase"), time.Duration(r.banBase))
	}
	return r, err
}

// minRate is the slowest rate a Config takes: one request a year. Slower
// ones overflow the intervals the limiter keeps in nanoseconds.
const minRate = 1.0 / (365 * 24 * 3600)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
