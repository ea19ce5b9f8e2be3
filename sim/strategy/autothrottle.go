package strategy

import (
	"math"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// autoThrottleSpec is Scrapy's AutoThrottle extension with the built-in
// RetryMiddleware, at Scrapy's default settings. Sources:
//
//   - scrapy/extensions/throttle.py (Scrapy 2.11–2.13), AutoThrottle:
//     start delay max(DOWNLOAD_DELAY, AUTOTHROTTLE_START_DELAY); on each
//     response, target_delay = latency / AUTOTHROTTLE_TARGET_CONCURRENCY,
//     new_delay = max(target_delay, (slot.delay + target_delay) / 2),
//     clamped to [DOWNLOAD_DELAY, AUTOTHROTTLE_MAX_DELAY]; a non-200
//     response may raise the delay but never lower it.
//   - scrapy/core/downloader/__init__.py: one download slot per hostname
//     (proxies do not change the slot); a request starts when the slot has
//     fewer than CONCURRENT_REQUESTS_PER_DOMAIN transferring and at least
//     download_delay() has passed since the last start; with
//     RANDOMIZE_DOWNLOAD_DELAY the gap is uniform in [0.5, 1.5] × delay.
//   - scrapy/downloadermiddlewares/retry.py and the default settings:
//     RETRY_TIMES = 2, RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408,
//     429]; Retry-After is not read (reference/article-429-retry-after-
//     backoff.txt: "The built-in RetryMiddleware does not read Retry-After").
//     403 is not in the list: it is not retried.
//   - defaults: AUTOTHROTTLE_START_DELAY 5.0, AUTOTHROTTLE_MAX_DELAY 60.0,
//     AUTOTHROTTLE_TARGET_CONCURRENCY 1.0, DOWNLOAD_DELAY 0,
//     CONCURRENT_REQUESTS 16, CONCURRENT_REQUESTS_PER_DOMAIN 8.
//
// Exits rotate at random per request (scrapy-rotating-proxies and gateway
// setups alike). The gap is drawn once per request rather than at every
// queue check, which Scrapy does; the mean gap is the same.
func autoThrottleSpec() Spec {
	return Spec{
		Name:        ScrapyAutoThrottle,
		Summary:     "Scrapy AutoThrottle (latency-driven delay per domain) + RetryMiddleware (429 retried twice, no Retry-After)",
		Source:      "scrapy/extensions/throttle.py, scrapy/core/downloader/__init__.py, scrapy/downloadermiddlewares/retry.py (Scrapy 2.13 defaults)",
		Concurrency: 16, // CONCURRENT_REQUESTS
		Retry:       fetch.RetryPolicy{MaxRetries: 2, MaxThrottled: 2},
		Verdicts:    map[int]verdict.Verdict{403: verdict.Fatal},
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			return &lockedLimiter{inner: &autoThrottle{cfg: DefaultAutoThrottle, rot: newRotation(env), slots: map[string]*slot{}}}, nil
		},
	}
}

// AutoThrottleConfig holds the Scrapy settings the strategy reads.
type AutoThrottleConfig struct {
	StartDelay, MaxDelay, DownloadDelay time.Duration
	TargetConcurrency                   float64
	PerDomain                           int
	Randomize                           bool
}

// DefaultAutoThrottle is Scrapy's default settings with AUTOTHROTTLE_ENABLED.
var DefaultAutoThrottle = AutoThrottleConfig{
	StartDelay:        5 * time.Second,
	MaxDelay:          60 * time.Second,
	DownloadDelay:     0,
	TargetConcurrency: 1.0,
	PerDomain:         8,
	Randomize:         true,
}

type slot struct {
	delay        time.Duration
	next         time.Time // earliest start of the next request
	transferring int
}

type autoThrottle struct {
	cfg   AutoThrottleConfig
	rot   rotation
	slots map[string]*slot
	tk    tickets[struct{}]
}

func (a *autoThrottle) slot(host string) *slot {
	s := a.slots[host]
	if s == nil {
		s = &slot{delay: max(a.cfg.DownloadDelay, a.cfg.StartDelay)}
		a.slots[host] = s
	}
	return s
}

func (a *autoThrottle) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, err := pinned(want, a.rot.exits)
	if err != nil {
		return limit.Ticket{}, false, time.Time{}, err
	}
	s := a.slot(host)
	if s.transferring >= a.cfg.PerDomain {
		return limit.Ticket{}, false, now, nil
	}
	if now.Before(s.next) {
		return limit.Ticket{}, false, s.next, nil
	}
	gap := s.delay
	if a.cfg.Randomize {
		gap = time.Duration((0.5 + a.rot.rnd.Float64()) * float64(s.delay))
	}
	s.next = now.Add(gap)
	s.transferring++
	if exit == "" {
		exit = a.rot.pick()
	}
	return a.tk.issue(host, exit, now, struct{}{}), true, time.Time{}, nil
}

func (a *autoThrottle) done(t limit.Ticket, o limit.Outcome, now time.Time) {
	if _, ok := a.tk.take(t); !ok {
		return
	}
	s := a.slot(t.Host)
	s.transferring--
	if o.Verdict == verdict.ProxyFailure {
		// No response from the site: AutoThrottle only hears
		// response_downloaded. (Transport errors look like 5xx verdicts
		// here; the simulator produces none.)
		return
	}
	sent := t.At
	if !o.SentAt.IsZero() {
		sent = o.SentAt
	}
	latency := now.Sub(sent).Seconds()
	target := latency / a.cfg.TargetConcurrency
	nd := (s.delay.Seconds() + target) / 2
	nd = math.Max(target, nd)
	nd = math.Min(math.Max(a.cfg.DownloadDelay.Seconds(), nd), a.cfg.MaxDelay.Seconds())
	// Scrapy checks response.status != 200; the limiter sees verdicts, and
	// every simulated success is a 200.
	if o.Verdict != verdict.OK && secs(nd) <= s.delay {
		return
	}
	s.delay = secs(nd)
}

func (a *autoThrottle) cancel(t limit.Ticket, _ time.Time) {
	if _, ok := a.tk.take(t); ok {
		a.slot(t.Host).transferring--
	}
}
