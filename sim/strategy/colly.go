package strategy

import (
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
)

// collySpec is Colly's LimitRule with its round-robin proxy switcher.
// Sources (github.com/gocolly/colly/v2):
//
//   - http_backend.go, LimitRule{DomainGlob, Delay, RandomDelay,
//     Parallelism} and httpBackend.Do: a request to a matching domain takes
//     one of Parallelism slots (waitChan; 1 when Parallelism <= 1) and holds
//     it until its response is read plus Delay + rand.Int63n(RandomDelay).
//     One rule is one set of slots for every domain it matches.
//   - proxy/proxy.go, RoundRobinProxySwitcher: exits in turn.
//   - Colly neither reads Retry-After nor learns from 429s; it retries only
//     when the user calls Request.Retry in OnError. The common pattern
//     retries every error, which the Core's default retry policy stands for.
//
// Settings: DomainGlob "*", Parallelism 2 (Colly's rate-limit example),
// Delay 1/Env.Rate (the documented per-IP spacing), RandomDelay Delay/2.
func collySpec() Spec {
	return Spec{
		Name:    CollyLimitRule,
		Summary: "Colly LimitRule{DomainGlob: \"*\", Parallelism: 2, Delay: 1/rate, RandomDelay: delay/2}, round-robin proxies",
		Source:  "gocolly/colly/v2 http_backend.go (LimitRule, httpBackend.Do), proxy/proxy.go (RoundRobinProxySwitcher)",
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			d := secs(1 / env.Rate)
			return &lockedLimiter{inner: newColly(CollyRule{Parallelism: 2, Delay: d, RandomDelay: d / 2}, env)}, nil
		},
	}
}

// CollyRule holds the LimitRule fields the strategy reads (DomainGlob is
// always "*": one rule for every host).
type CollyRule struct {
	Parallelism        int
	Delay, RandomDelay time.Duration
}

type colly struct {
	rule  CollyRule
	rot   rotation
	rr    int         // round-robin proxy cursor
	slots []time.Time // per slot: zero = in flight, else free from then
	free  []bool      // slot holds nothing
	tk    tickets[int]
}

func newColly(rule CollyRule, env Env) *colly {
	n := max(1, rule.Parallelism)
	c := &colly{rule: rule, rot: newRotation(env), slots: make([]time.Time, n), free: make([]bool, n)}
	for i := range c.free {
		c.free[i] = true
	}
	return c
}

func (c *colly) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, err := pinned(want, c.rot.exits)
	if err != nil {
		return limit.Ticket{}, false, time.Time{}, err
	}
	var soonest time.Time
	for i := range c.slots {
		if !c.free[i] {
			continue // in flight: its completion will wake the Core
		}
		if c.slots[i].After(now) {
			if soonest.IsZero() || c.slots[i].Before(soonest) {
				soonest = c.slots[i]
			}
			continue
		}
		c.free[i] = false
		if exit == "" {
			exit = c.rot.exits[c.rr%len(c.rot.exits)]
			c.rr++
		}
		return c.tk.issue(host, exit, now, i), true, time.Time{}, nil
	}
	if soonest.IsZero() {
		soonest = now
	}
	return limit.Ticket{}, false, soonest, nil
}

func (c *colly) done(t limit.Ticket, _ limit.Outcome, now time.Time) {
	i, ok := c.tk.take(t)
	if !ok {
		return
	}
	// The slot stays taken for Delay + rand(RandomDelay) after the response.
	d := c.rule.Delay
	if c.rule.RandomDelay > 0 {
		d += time.Duration(c.rot.rnd.Int64N(int64(c.rule.RandomDelay)))
	}
	c.free[i] = true
	c.slots[i] = now.Add(d)
}

func (c *colly) cancel(t limit.Ticket, _ time.Time) {
	if i, ok := c.tk.take(t); ok {
		c.free[i] = true
	}
}
