package limit

import (
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// ExitState is one exit's cross-host state: provider limits, health and
// quarantine. A Store keeps one per pool exit and applies ExitReadyAt,
// TakeExit and ReleaseExit to it atomically; it is not safe for concurrent
// use on its own.
type ExitState struct {
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

// NewExitState returns healthy state for e.
func NewExitState(e Exit) *ExitState {
	s := &ExitState{id: e.ID}
	s.Configure(e)
	return s
}

// Configure applies e's provider limits, keeping health.
func (s *ExitState) Configure(e Exit) {
	s.rate = e.Rate.Hz()
	s.conc = int32(e.Concurrency)
}

// ExitReadyAt reports when s may next carry a request (Unix ns) and whether
// taking it needs TakeExit.
func ExitReadyAt(r *Rules, s *ExitState, now int64) (int64, bool) {
	gated := s.rate > 0 || s.conc > 0 || s.probe
	t := s.quar
	if s.probe && s.probeOut {
		t = max(t, now+r.Recheck)
	}
	if s.conc > 0 && s.inFlight >= s.conc {
		t = max(t, now+r.Recheck)
	}
	if s.rate > 0 {
		t = max(t, s.tat)
	}
	return t, gated
}

// TakeExit charges s with one request at now if it can go.
func TakeExit(r *Rules, s *ExitState, now int64) ExitGrant {
	if t, _ := ExitReadyAt(r, s, now); t > now {
		return ExitGrant{Next: time.Unix(0, t)}
	}
	if s.rate > 0 {
		s.tat = max(s.tat, now) + int64(1e9/s.rate)
	}
	s.inFlight++
	g := ExitGrant{OK: true}
	if s.probe {
		s.probeOut = true
		g.Probe = true
		s.c.Probes++
	}
	return g
}

// ReleaseExit settles one request on s.
func ReleaseExit(r *Rules, s *ExitState, req *ExitRelease) {
	now := req.Now.UnixNano()
	if req.Held {
		s.inFlight--
		if req.Cancel && s.rate > 0 {
			s.tat -= int64(1e9 / s.rate)
		}
		if req.Probe {
			s.probeOut = false
		}
	}
	if req.Cancel {
		return
	}
	if req.Verdict == verdict.ProxyFailure {
		s.c.ProxyFailures++
		if s.fails < 30 {
			s.fails++
		}
		s.c.Quarantines++
		d := min(r.QuarMax, r.QuarBase<<(s.fails-1))
		s.quar = max(s.quar, now+d)
		s.probe = true
		return
	}
	if req.Probe || s.fails > 0 {
		// The probe got through the proxy: healthy again.
		s.probe, s.fails = false, 0
	}
}

// SnapshotExit copies s for a Snapshot.
func SnapshotExit(r *Rules, s *ExitState, now time.Time) ExitSnapshot {
	t, _ := ExitReadyAt(r, s, now.UnixNano())
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
