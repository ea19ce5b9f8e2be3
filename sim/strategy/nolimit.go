package strategy

import (
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
)

// noLimiterSpec sends whenever the Core has a free slot (its concurrency cap
// of 16 is the only bound) through an exit picked at random, and learns
// nothing. It is the floor every other strategy must beat on 429s and the
// ceiling of raw throughput.
func noLimiterSpec() Spec {
	return Spec{
		Name:    NoLimiter,
		Summary: "no limiter: the Core's 16 concurrent requests through random exits",
		Source:  "none (control)",
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			return &lockedLimiter{inner: &noLimit{rot: newRotation(env)}}, nil
		},
	}
}

type noLimit struct {
	rot rotation
	tk  tickets[struct{}]
}

func (n *noLimit) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, err := pinned(want, n.rot.exits)
	if err != nil {
		return limit.Ticket{}, false, time.Time{}, err
	}
	if exit == "" {
		exit = n.rot.pick()
	}
	return n.tk.issue(host, exit, now, struct{}{}), true, time.Time{}, nil
}

func (n *noLimit) done(t limit.Ticket, _ limit.Outcome, _ time.Time) { n.tk.take(t) }
func (n *noLimit) cancel(t limit.Ticket, _ time.Time)                { n.tk.take(t) }
