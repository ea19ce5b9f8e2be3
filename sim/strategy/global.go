package strategy

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
)

// globalSpec is the global per-domain limiter: one token bucket per target
// host, shared by every worker and every exit, sized by hand to the rate the
// site documents per client. Source: the "Global per-domain limiter, shared
// across all workers" design criticised in
// reference/article-per-exit-token-buckets.txt ("you set a global 30/min
// limit while running 20 exits. You're using 1/20th of the capacity"), and
// the per-host limiter kept global across exits in
// reference/article-429-retry-after-backoff.txt ("Keep your per-host
// limiter global"). The bucket is golang.org/x/time/rate with burst 1; it
// learns nothing from responses. Exits rotate at random per request.
func globalSpec() Spec {
	return Spec{
		Name:    GlobalPerDomain,
		Summary: "one token bucket per host at the documented per-IP rate, shared across all exits",
		Source:  "reference/article-per-exit-token-buckets.txt (global per-domain design); golang.org/x/time/rate",
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			return &lockedLimiter{inner: &global{rot: newRotation(env), rate: env.Rate, hosts: map[string]*rate.Limiter{}}}, nil
		},
	}
}

type global struct {
	rot   rotation
	rate  float64
	hosts map[string]*rate.Limiter
	tk    tickets[*rate.Reservation]
}

func (g *global) bucket(host string) *rate.Limiter {
	b := g.hosts[host]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(g.rate), 1)
		g.hosts[host] = b
	}
	return b
}

func (g *global) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, err := pinned(want, g.rot.exits)
	if err != nil {
		return limit.Ticket{}, false, time.Time{}, err
	}
	r, next, ok := take(g.bucket(host), now)
	if !ok {
		return limit.Ticket{}, false, next, nil
	}
	if exit == "" {
		exit = g.rot.pick()
	}
	return g.tk.issue(host, exit, now, r), true, time.Time{}, nil
}

// take takes one token at now, or reports when one will be there.
func take(b *rate.Limiter, now time.Time) (*rate.Reservation, time.Time, bool) {
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, now.Add(d), false
	}
	return r, time.Time{}, true
}

func (g *global) done(t limit.Ticket, _ limit.Outcome, _ time.Time) { g.tk.take(t) }

func (g *global) cancel(t limit.Ticket, now time.Time) {
	if r, ok := g.tk.take(t); ok {
		// Give the token back: the request never went.
		r.CancelAt(now)
	}
}
