package peers

import (
	"fmt"
	"net/http"
	"time"

	"github.com/didip/tollbooth/v7"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	flimiter "github.com/gofiber/fiber/v2/middleware/limiter"
	"github.com/labstack/echo/v4"
	emiddleware "github.com/labstack/echo/v4/middleware"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulimiter "github.com/ulule/limiter/v3"
	ustdlib "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	umemory "github.com/ulule/limiter/v3/drivers/store/memory"
	"golang.org/x/time/rate"
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

// Fiber is github.com/gofiber/fiber v2's limiter middleware per client
// address (its default key, c.IP()): max requests per expiration, in a
// fixed window opened by the client's first request or, with sliding, its
// sliding window (the previous window's count weighted by how much of it
// still overlaps, plus the current one's). Both count refused requests, read
// the time from a clock that ticks once a second, and answer
// X-RateLimit-Limit, -Remaining and -Reset (seconds to the window's end) on
// requests let through and Retry-After (the same seconds) on 429s. The
// fiber app is served through fiber's own net/http adaptor, so the server
// and its access log are the other Go targets'; the limiter is fiber's.
func Fiber(max int, expiration time.Duration, sliding bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		cfg := flimiter.Config{Max: max, Expiration: expiration}
		if sliding {
			cfg.LimiterMiddleware = flimiter.SlidingWindow{}
		}
		app.Use(flimiter.New(cfg))
		app.All("/*", adaptor.HTTPHandler(next))
		return adaptor.FiberApp(app)
	}
}

// Echo is github.com/labstack/echo v4's RateLimiter middleware with its
// memory store as its README shows it (NewRateLimiterMemoryStore(r)): a
// golang.org/x/time/rate bucket per client (its default identifier,
// c.RealIP(): the TCP peer when no forwarding header is sent) of r per
// second with a burst of r rounded up, answering a bare 429 (no header) when
// the bucket is empty.
func Echo(r float64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		e := echo.New()
		e.HideBanner, e.HidePort = true, true
		e.Use(emiddleware.RateLimiter(emiddleware.NewRateLimiterMemoryStore(rate.Limit(r))))
		e.Any("/*", echo.WrapHandler(next))
		return e
	}
}
