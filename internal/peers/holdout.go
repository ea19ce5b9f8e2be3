package peers

import (
	"fmt"
	"net/http"
	"time"

	"github.com/didip/tollbooth/v7"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulimiter "github.com/ulule/limiter/v3"
	ustdlib "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	umemory "github.com/ulule/limiter/v3/drivers/store/memory"
)

// The middlewares below are off-the-shelf limiters by other authors, each
// keyed on the client address and used as its README shows: the held-out
// targets of the real-limiter bench (peerbench.Holdouts), which the learner
// is checked against but not tuned on.

type byClientIP struct{}

func (byClientIP) Key(r *http.Request) string { return clientIP(r) }

// Throttled is github.com/throttled/throttled v2's GCRA per client address,
// perSecond with maxBurst requests beyond it (its RateQuota): it declares
// X-RateLimit-Limit as the burst plus one, -Remaining, -Reset as the
// seconds until the bucket is full again, and Retry-After on a 429.
func Throttled(perSecond float64, maxBurst int) (func(http.Handler) http.Handler, error) {
	st, err := memstore.NewCtx(65536)
	if err != nil {
		return nil, fmt.Errorf("throttled: %w", err)
	}
	q := throttled.RateQuota{MaxRate: throttled.PerDuration(1, time.Duration(float64(time.Second)/perSecond)), MaxBurst: maxBurst}
	rl, err := throttled.NewGCRARateLimiterCtx(st, q)
	if err != nil {
		return nil, fmt.Errorf("throttled: %w", err)
	}
	return (&throttled.HTTPRateLimiterCtx{RateLimiter: rl, VaryBy: byClientIP{}}).RateLimit, nil
}

// GoLimiter is github.com/sethvargo/go-limiter's memory store behind its
// httplimit middleware, per client address: tokens per interval, all of
// them back at each interval's end (a fixed window opened by the client's
// first request). X-RateLimit-Reset and a 429's Retry-After are
// time.RFC1123 dates in UTC.
func GoLimiter(tokens uint64, interval time.Duration) (func(http.Handler) http.Handler, error) {
	st, err := memorystore.New(&memorystore.Config{Tokens: tokens, Interval: interval})
	if err != nil {
		return nil, fmt.Errorf("go-limiter: %w", err)
	}
	mw, err := httplimit.NewMiddleware(st, func(r *http.Request) (string, error) { return clientIP(r), nil })
	if err != nil {
		return nil, fmt.Errorf("go-limiter: %w", err)
	}
	return mw.Handle, nil
}

// Ulule is github.com/ulule/limiter v3's memory store behind its stdlib
// middleware, per client address: limit per period, a window opened by the
// client's first request; X-RateLimit-Reset in epoch seconds, no
// Retry-After.
func Ulule(limit int64, period time.Duration) func(http.Handler) http.Handler {
	l := ulimiter.New(umemory.NewStore(), ulimiter.Rate{Period: period, Limit: limit})
	return ustdlib.NewMiddleware(l, ustdlib.WithKeyGetter(clientIP)).Handler
}

// Tollbooth is github.com/didip/tollbooth v7, a golang.org/x/time/rate
// bucket per client address of perSecond with burst: it declares
// RateLimit-Limit as its rate per second, RateLimit-Reset: 1 and its
// tokens as RateLimit-Remaining; no Retry-After.
func Tollbooth(perSecond float64, burst int) func(http.Handler) http.Handler {
	l := tollbooth.NewLimiter(perSecond, nil).SetIPLookups([]string{"RemoteAddr"}).SetBurst(burst)
	return func(next http.Handler) http.Handler { return tollbooth.LimitHandler(l, next) }
}
