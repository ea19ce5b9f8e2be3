package monitor

import (
	"fmt"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// Breaker states.
const (
	closed   = 0
	open     = 1
	halfOpen = 2
)

var breakerNames = [...]string{"closed", "open", "half-open"}

// breaker is one host's circuit breaker.
type breaker struct {
	state    int
	until    time.Time     // end of the cool-down, while open
	cooldown time.Duration // the current one: doubles with each failed probe
	why      string
	trips    int // times opened
	// The probe of a half-open breaker, while it is out.
	probeOut  bool
	probeSeq  uint64
	probeExit string
}

// openLocked opens h's breaker at now for its cool-down and orders its jobs
// parked until then.
func (m *Monitor) openLocked(h *hostMon, now time.Time, why string) {
	b := &h.br
	if b.cooldown == 0 {
		b.cooldown = m.cfg.Cooldown
	}
	if b.state == closed {
		m.open.Add(1)
	}
	b.state, b.until, b.why, b.probeOut = open, now.Add(b.cooldown), why, false
	b.trips++
	reason := fmt.Sprintf("circuit breaker open: %s; parked for a cool-down of %v", why, b.cooldown)
	m.parks = append(m.parks, parkOrder{host: h.name, until: b.until, why: reason})
	m.emitLocked(Event{At: now, Kind: KindBreakerOpen, Level: "warn", Host: h.name, Value: h.ratio, Until: b.until,
		Message: fmt.Sprintf("circuit breaker open: %s; the host's URLs are parked until %s (cool-down %v), then one probe; the rest of the crawl goes on", why, b.until.Format(time.RFC3339), b.cooldown)})
}

// breakerTickLocked moves an open breaker whose cool-down is over to
// half-open.
func (m *Monitor) breakerTickLocked(h *hostMon, now time.Time) {
	if h.br.state == open && !now.Before(h.br.until) {
		h.br.state = halfOpen
		m.emitLocked(Event{At: now, Kind: KindBreakerHalfOpen, Level: "info", Host: h.name,
			Message: "circuit breaker half-open: one probe request may go"})
	}
}

// closeLocked closes h's breaker after a successful probe: the host is
// judged afresh from now on.
func (m *Monitor) closeLocked(h *hostMon, now time.Time) {
	b := &h.br
	b.state, b.probeOut, b.cooldown, b.until = closed, false, m.cfg.Cooldown, time.Time{}
	m.open.Add(-1)
	h.win.reset()
	msg := "circuit breaker closed: the probe succeeded; the host's URLs go again"
	if h.alerted {
		msg += " (its 429 alert is cleared)"
		h.alerted = false
	}
	h.overAt, h.underAt, h.over = time.Time{}, time.Time{}, false
	m.emitLocked(Event{At: now, Kind: KindBreakerClosed, Level: "info", Host: h.name, Message: msg})
}

// Limiter is what the engine needs from a limiter (fetch.Limiter).
type Limiter interface {
	Acquire(host string, want limit.Want, now time.Time) (t limit.Ticket, ok bool, next time.Time, err error)
	Done(t limit.Ticket, o limit.Outcome, now time.Time)
	Cancel(t limit.Ticket, now time.Time)
}

// Gate wraps the engine's limiter with the monitor's circuit breakers: an
// open breaker refuses its host's requests until its cool-down is over
// (the engine then holds or parks the host's jobs), a half-open one lets
// one probe through, and the probe's outcome closes or reopens it. Hosts
// whose breaker is closed, the rest of the crawl, pass straight through.
// It is safe for concurrent use, as the limiter it wraps must be.
type Gate struct {
	m     *Monitor
	inner Limiter
}

// Gate returns inner behind the monitor's breakers; give it to the engine
// (fetch.NewCore) in place of inner.
func (m *Monitor) Gate(inner Limiter) *Gate { return &Gate{m: m, inner: inner} }

// Acquire is inner's Acquire, unless host's breaker is open (refused until
// its cool-down ends) or half-open with its probe out (refused for
// Config.ProbeRecheck).
func (g *Gate) Acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	if g.m.open.Load() == 0 {
		return g.inner.Acquire(host, want, now)
	}
	m := g.m
	m.mu.Lock()
	h := m.hosts[host]
	if h == nil || h.br.state == closed {
		m.mu.Unlock()
		return g.inner.Acquire(host, want, now)
	}
	m.breakerTickLocked(h, now)
	switch {
	case h.br.state == open:
		until := h.br.until
		m.mu.Unlock()
		return limit.Ticket{}, false, until, nil
	case h.br.probeOut:
		m.mu.Unlock()
		return limit.Ticket{}, false, now.Add(m.cfg.ProbeRecheck), nil
	}
	h.br.probeOut = true // held while the limiter decides
	m.mu.Unlock()
	t, ok, next, err := g.inner.Acquire(host, want, now)
	m.mu.Lock()
	if ok {
		h.br.probeSeq, h.br.probeExit = t.Seq, t.Exit
	} else {
		h.br.probeOut = false
	}
	m.mu.Unlock()
	return t, ok, next, err
}

// Done is inner's Done; a probe's outcome closes its breaker (a success)
// or opens it again for twice the cool-down (a 429, a 503, a ban). Any
// other answer lets another probe go.
func (g *Gate) Done(t limit.Ticket, o limit.Outcome, now time.Time) {
	g.DoneFaster(t, o, now)
}

// DoneFaster is Done, reporting whether inner's lanes for the host went
// faster (when inner can tell: fetch.FasterReporter).
func (g *Gate) DoneFaster(t limit.Ticket, o limit.Outcome, now time.Time) bool {
	faster := fetch.DoneFaster(g.inner, t, o, now)
	g.breakersDone(t, o, now)
	return faster
}

// breakersDone applies the outcome of t to the breakers.
func (g *Gate) breakersDone(t limit.Ticket, o limit.Outcome, now time.Time) {
	if g.m.open.Load() == 0 {
		return
	}
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.probeLocked(t)
	if h == nil {
		return
	}
	h.br.probeOut = false
	switch o.Verdict {
	case verdict.OK:
		m.closeLocked(h, now)
	case verdict.Throttled, verdict.Busy, verdict.Banned:
		h.br.cooldown = min(2*h.br.cooldown, m.cfg.CooldownMax)
		m.openLocked(h, now, fmt.Sprintf("the probe was answered %s", o.Verdict))
	}
}

// Cancel is inner's Cancel; a probe never sent lets another go.
func (g *Gate) Cancel(t limit.Ticket, now time.Time) {
	g.inner.Cancel(t, now)
	g.probeBack(t)
}

// Abandon is inner's Abandon (its Cancel where it has none: fetch.Abandon);
// a probe whose answer was never heard lets another go.
func (g *Gate) Abandon(t limit.Ticket, now time.Time) {
	fetch.Abandon(g.inner, t, now)
	g.probeBack(t)
}

// probeBack lets another probe of t's host go when t was its probe.
func (g *Gate) probeBack(t limit.Ticket) {
	if g.m.open.Load() == 0 {
		return
	}
	g.m.mu.Lock()
	if h := g.m.probeLocked(t); h != nil {
		h.br.probeOut = false
	}
	g.m.mu.Unlock()
}

// probeLocked returns the host whose outstanding probe t is, or nil.
func (m *Monitor) probeLocked(t limit.Ticket) *hostMon {
	h := m.hosts[t.Host]
	if h == nil || h.br.state != halfOpen || !h.br.probeOut || h.br.probeSeq != t.Seq || h.br.probeExit != t.Exit {
		return nil
	}
	return h
}
