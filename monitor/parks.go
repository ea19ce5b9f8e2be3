package monitor

import (
	"context"
	"strings"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

// ParkCounter is a frontier that counts the jobs parked through it by kind
// of reason, for Status.ParkedByReason and the exitgate_parked_total
// metric; everything else passes through. Give it to the engine in place
// of the frontier it wraps.
type ParkCounter struct {
	frontier.Frontier
	m *Monitor
}

// CountParks wraps fr so that m counts the jobs parked through it.
func (m *Monitor) CountParks(fr frontier.Frontier) *ParkCounter {
	return &ParkCounter{Frontier: fr, m: m}
}

// Unwrap returns the frontier counted (frontier.Wrapper).
func (p *ParkCounter) Unwrap() frontier.Frontier { return p.Frontier }

// Park parks the job and counts it under its reason's kind.
func (p *ParkCounter) Park(ctx context.Context, l frontier.Lease, until time.Time, status int, reason string) error {
	err := p.Frontier.Park(ctx, l, until, status, reason)
	if err == nil {
		p.m.mu.Lock()
		p.m.parkedBy[ParkReason(reason)]++
		p.m.mu.Unlock()
	}
	return err
}

// ParkReason is the kind of a park reason, without its times and figures:
// "circuit breaker", "host must wait", "Retry-After over max wait", or the
// reason's first words.
func ParkReason(reason string) string {
	switch {
	case strings.HasPrefix(reason, "circuit breaker"):
		return "circuit breaker"
	case strings.HasPrefix(reason, "host must wait"):
		return "host must wait"
	case strings.Contains(reason, "Retry-After") && strings.Contains(reason, "max wait"):
		return "Retry-After over max wait"
	case strings.Contains(reason, "robots.txt"):
		return "robots.txt unreachable"
	}
	if i := strings.IndexAny(reason, ":(0123456789"); i > 0 {
		reason = reason[:i]
	}
	return strings.TrimSpace(reason)
}
