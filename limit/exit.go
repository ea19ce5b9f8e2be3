package limit

import (
	"fmt"
	"math"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// exitState is one exit's cross-host state: provider limits, health and
// quarantine. The table's exit lock guards it.
type exitState struct {
	id       string
	rate     float64 // provider req/s; 0 = none
	conc     int32
	tat      int64
	inFlight int32
	quar     int64 // quarantined until
	fails    int16 // consecutive proxy failures
	probe    bool  // quarantine ended; the next request is a probe
	probeOut bool
	c        ExitCounters
}

func newExitState(e Exit) *exitState {
	s := &exitState{id: e.ID}
	s.configure(e)
	return s
}

// configure applies e's provider limits, keeping health. A rate that is
// not one (NaN, infinite, negative) is none, and one slower than a year's
// is a year's, as Config takes them; a cap past int32's is none either way
// (validExit says so).
func (s *exitState) configure(e Exit) {
	s.rate = exitRate(e.Rate)
	s.conc = int32(min(max(e.Concurrency, 0), math.MaxInt32))
}

// exitRate is r as an exit's provider rate: 0 (none) for what is not a
// rate, at least minRate (1e9/rate must fit an int64: 1e-300/s read as no
// limit at all).
func exitRate(r Rate) float64 {
	hz := r.Hz()
	if math.IsNaN(hz) || math.IsInf(hz, 0) || hz <= 0 || r.Per < 0 {
		return 0 // (a negative period, which Config refuses, is none too)
	}
	return max(hz, minRate)
}

// validExit says what of e's provider limits is not what it says
// (configure reads it otherwise), "" when all is.
func validExit(e Exit) string {
	switch hz := exitRate(e.Rate); {
	case hz == 0 && (e.Rate.N != 0 || e.Rate.Per < 0): // (given, and none: NaN, negative)
		return fmt.Sprintf("rate %v is not a rate: no provider rate", e.Rate)
	case hz > e.Rate.Hz():
		return fmt.Sprintf("rate %v is below one a year: one a year", e.Rate)
	}
	if e.Concurrency < 0 {
		return fmt.Sprintf("concurrency %d is negative: no provider cap", e.Concurrency)
	}
	return ""
}

// failing reports whether s is held back at now for failing as a proxy:
// quarantined, or its recovery probe still out.
func (s *exitState) failing(now int64) bool { return s.quar > now || s.probe && s.probeOut }

// readyAt reports when s may next carry a request and whether taking it
// needs take.
func (s *exitState) readyAt(r *rules, now int64) (int64, bool) {
	gated := s.rate > 0 || s.conc > 0 || s.probe
	t := s.quar
	if s.probe && s.probeOut {
		t = max(t, now+r.recheck)
	}
	if s.conc > 0 && s.inFlight >= s.conc {
		t = max(t, now+r.recheck)
	}
	if s.rate > 0 {
		t = max(t, s.tat)
	}
	return t, gated
}

// take charges s with one request at now if it can go; it reports ok, whether
// the request is the recovery probe, and otherwise when to try again.
func (s *exitState) take(r *rules, now int64) (ok, probe bool, next int64) {
	if t, _ := s.readyAt(r, now); t > now {
		return false, false, t
	}
	if s.rate > 0 {
		s.tat = max(s.tat, now) + int64(1e9/s.rate)
	}
	s.inFlight++
	if s.probe {
		s.probeOut = true
		s.c.Probes++
		return true, true, 0
	}
	return true, false, 0
}

// release settles one request on s: gives back what take charged (held) and
// applies health feedback.
func (s *exitState) release(r *rules, held, probe bool, kind releaseKind, v verdict.Verdict, now int64) {
	if held {
		s.inFlight--
		if kind == relCanceled && s.rate > 0 {
			s.tat -= int64(1e9 / s.rate)
		}
		if probe {
			s.probeOut = false
		}
	}
	if kind != relDone {
		return // nothing heard of the exit's health
	}
	if v == verdict.ProxyFailure {
		s.c.ProxyFailures++
		if s.fails < 30 {
			s.fails++
		}
		s.c.Quarantines++
		d := min(r.quarMax, r.quarBase<<(s.fails-1))
		s.quar = max(s.quar, now+d)
		s.probe = true
		return
	}
	if probe || s.fails > 0 {
		// The request got through the proxy: healthy again.
		s.probe, s.fails = false, 0
	}
}

func (s *exitState) snapshot(r *rules, now time.Time) ExitSnapshot {
	t, _ := s.readyAt(r, now.UnixNano())
	es := ExitSnapshot{
		ID:       s.id,
		Healthy:  s.fails == 0,
		Failures: int(s.fails),
		InFlight: int(s.inFlight),
		Probing:  s.probe,
		Counters: s.c,
	}
	if s.quar > now.UnixNano() {
		es.QuarantinedUntil = time.Unix(0, s.quar).UTC()
	}
	if t > now.UnixNano() {
		es.ReadyAt = time.Unix(0, t).UTC()
	}
	if s.rate > 0 {
		es.Rate = rateFromPerSecond(s.rate)
	}
	return es
}
