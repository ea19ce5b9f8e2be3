package strategy

import (
	"math"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// articlePerHostSpec is the per-host AIMD limiter published in "429 Too Many
// Requests in Web Scraping: Rate Limits, Retry-After and Backoff (2026)",
// reference/article-429-retry-after-backoff.txt, Example "HostLimiter" and
// its fetch loop, ported line by line:
//
//	HostLimiter(rate=2.0, burst=4, min_rate=0.2, max_rate=10.0)
//	acquire: wait until not_before; refill min(burst, tokens+elapsed*rate);
//	         take one token or wait (1-tokens)/rate
//	on_success (status < 400): rate = min(max_rate, rate + 0.05)
//	on 429: wait = Retry-After, else full_jitter_backoff(attempt, 1.0, 60.0)
//	        = uniform(0, min(60, 2**attempt)); rate = max(min_rate, rate/2);
//	        not_before = max(not_before, now + wait)  — every worker pauses
//	main(concurrency=8), fetch(max_attempts=6), RETRYABLE = {429, 500, 502,
//	503, 504}; 403/404/407 give up; Retry-After over 300 s gives up
//
// One limiter per host; every exit is the same rotating gateway ("New IP on
// every request"), so exits are picked at random. Deviations forced by the
// fetch.Limiter interface: the backoff attempt number is the URL's attempt
// in the article, which the limiter does not see; this uses the number of
// consecutive 429s on the host since its last success (the same for one URL
// retried in a row). A 503 sleeps only its own request in the article; here
// the Core retries it at once.
func articlePerHostSpec() Spec {
	return Spec{
		Name:        ArticlePerHost,
		Summary:     "the article's per-host AIMD bucket: 2 r/s start, +0.05 per success, halve on 429, max 10 r/s, host-wide pause",
		Source:      "reference/article-429-retry-after-backoff.txt (HostLimiter, fetch, main)",
		Concurrency: 8,
		Retry:       fetch.RetryPolicy{MaxRetries: 5, MaxThrottled: 5, MaxWait: 300 * time.Second},
		// RETRYABLE = {429, 500, 502, 503, 504}: a 403 raises GiveUp.
		Verdicts: map[int]verdict.Verdict{403: verdict.Fatal},
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			return &lockedLimiter{inner: &aimd{rot: newRotation(env), hosts: map[string]*hostAIMD{}}}, nil
		},
	}
}

// AIMD parameters of the article's HostLimiter and fetch.
const (
	aimdRate     = 2.0
	aimdBurst    = 4.0
	aimdMinRate  = 0.2
	aimdMaxRate  = 10.0
	aimdIncrease = 0.05
	aimdBase     = 1.0  // full_jitter_backoff base, seconds
	aimdCap      = 60.0 // full_jitter_backoff cap, seconds
)

type hostAIMD struct {
	rate, tokens float64
	updated      time.Time
	notBefore    time.Time
	throttles    int // consecutive 429s: the backoff attempt number
}

type aimd struct {
	rot   rotation
	hosts map[string]*hostAIMD
	tk    tickets[struct{}]
}

func (a *aimd) host(name string, now time.Time) *hostAIMD {
	h := a.hosts[name]
	if h == nil {
		h = &hostAIMD{rate: aimdRate, tokens: aimdBurst, updated: now}
		a.hosts[name] = h
	}
	return h
}

func (a *aimd) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, err := pinned(want, a.rot.exits)
	if err != nil {
		return limit.Ticket{}, false, time.Time{}, err
	}
	h := a.host(host, now)
	if now.Before(h.notBefore) { // honoring Retry-After
		return limit.Ticket{}, false, h.notBefore, nil
	}
	elapsed := now.Sub(h.updated).Seconds()
	h.tokens = math.Min(aimdBurst, h.tokens+elapsed*h.rate)
	h.updated = now
	if h.tokens < 1 {
		return limit.Ticket{}, false, now.Add(after((1 - h.tokens) / h.rate)), nil
	}
	h.tokens--
	if exit == "" {
		exit = a.rot.pick()
	}
	return a.tk.issue(host, exit, now, struct{}{}), true, time.Time{}, nil
}

func (a *aimd) done(t limit.Ticket, o limit.Outcome, now time.Time) {
	if _, ok := a.tk.take(t); !ok {
		return
	}
	h := a.host(t.Host, now)
	switch o.Verdict {
	case verdict.OK:
		h.throttles = 0
		h.rate = math.Min(aimdMaxRate, h.rate+aimdIncrease) // additive increase
	case verdict.Throttled:
		wait := o.RetryAfter
		if wait <= 0 {
			ceil := math.Min(aimdCap, aimdBase*math.Pow(2, float64(h.throttles)))
			wait = secs(a.rot.rnd.Float64() * ceil)
		}
		h.throttles++
		h.rate = math.Max(aimdMinRate, h.rate/2) // multiplicative decrease
		if until := now.Add(wait); until.After(h.notBefore) {
			h.notBefore = until
		}
	}
}

func (a *aimd) cancel(t limit.Ticket, now time.Time) {
	if _, ok := a.tk.take(t); ok {
		h := a.host(t.Host, now)
		h.tokens = math.Min(aimdBurst, h.tokens+1)
	}
}
