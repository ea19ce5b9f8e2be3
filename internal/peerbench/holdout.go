package peerbench

import (
	"fmt"
	"net/http"
	"time"

	"github.com/exitgate/exitgate/internal/peers"
)

// Holdouts are real limiters the learner is checked against but was not
// tuned on: off-the-shelf Go middlewares by other authors whose headers
// mean other things than the targets' do (a bucket's capacity declared as
// the limit, resets as HTTP-dates, a rate declared per second with its
// tokens as Remaining), and nginx and haproxy configured unlike the
// targets. They have no simulated twin on purpose: a twin is a model built
// to agree with a target, and these are there to catch what the models and
// the tuning missed. `--targets holdout` runs them all; each can be named.
func Holdouts() []Target {
	return []Target{
		holdoutGo("throttled-5-s-burst3", "github.com/throttled/throttled/v2 v2.15.0", "GCRA", 5, time.Second, 3,
			"X-RateLimit-Limit (the burst plus one), -Remaining, -Reset (seconds until the bucket is full again)", "seconds until the next request fits (429s only)",
			"throttled.RateQuota{MaxRate: 5/s, MaxBurst: 3}",
			func() (func(http.Handler) http.Handler, error) { return peers.Throttled(5, 3) }),
		holdoutGo("throttled-1-per-2s", "github.com/throttled/throttled/v2 v2.15.0", "GCRA", 1, 2*time.Second, 0,
			"as throttled-5-s-burst3", "as throttled-5-s-burst3",
			"throttled.RateQuota{MaxRate: 1 per 2 s, MaxBurst: 0}",
			func() (func(http.Handler) http.Handler, error) { return peers.Throttled(0.5, 0) }),
		holdoutGo("golimiter-10-per-10s", "github.com/sethvargo/go-limiter v0.7.1", "fixed window opened by the client's first request", 10, 10*time.Second, 0,
			"X-RateLimit-Limit, -Remaining, -Reset (time.RFC1123 in UTC)", "the reset, as an RFC1123 date in UTC (429s only)",
			"memorystore.Config{Tokens: 10, Interval: 10 * time.Second}",
			func() (func(http.Handler) http.Handler, error) { return peers.GoLimiter(10, 10*time.Second) }),
		holdoutGo("golimiter-3-per-s", "github.com/sethvargo/go-limiter v0.7.1", "fixed window opened by the client's first request", 3, time.Second, 0,
			"as golimiter-10-per-10s", "as golimiter-10-per-10s",
			"memorystore.Config{Tokens: 3, Interval: time.Second}",
			func() (func(http.Handler) http.Handler, error) { return peers.GoLimiter(3, time.Second) }),
		countsDenied(holdoutGo("ulule-20-per-min", "github.com/ulule/limiter/v3 v3.11.2", "fixed window opened by the client's first request", 20, time.Minute, 0,
			"X-RateLimit-Limit, -Remaining, -Reset (epoch seconds)", "none",
			"limiter.Rate{Period: time.Minute, Limit: 20}",
			func() (func(http.Handler) http.Handler, error) { return peers.Ulule(20, time.Minute), nil })),
		countsDenied(holdoutGo("ulule-5-per-s", "github.com/ulule/limiter/v3 v3.11.2", "fixed window opened by the client's first request", 5, time.Second, 0,
			"as ulule-20-per-min", "none",
			"limiter.Rate{Period: time.Second, Limit: 5}",
			func() (func(http.Handler) http.Handler, error) { return peers.Ulule(5, time.Second), nil })),
		holdoutGo("tollbooth-4-s", "github.com/didip/tollbooth/v7 v7.0.2", "token bucket (golang.org/x/time/rate)", 4, time.Second, 1,
			"RateLimit-Limit (its rate per second), RateLimit-Reset: 1, RateLimit-Remaining (its tokens)", "none",
			"tollbooth.NewLimiter(4, nil).SetBurst(1)",
			func() (func(http.Handler) http.Handler, error) { return peers.Tollbooth(4, 1), nil }),
		holdoutGo("tollbooth-1-s-burst3", "github.com/didip/tollbooth/v7 v7.0.2", "token bucket (golang.org/x/time/rate)", 1, time.Second, 3,
			"as tollbooth-4-s", "none",
			"tollbooth.NewLimiter(1, nil).SetBurst(3)",
			func() (func(http.Handler) http.Handler, error) { return peers.Tollbooth(1, 3), nil }),
		nginxTarget("nginx-5r-s-burst10", 5, "5r/s", 10, false, ""),
		nginxTarget("nginx-12r-m", 0.2, "12r/m", 0, false, "5"),
		haproxyTarget("haproxy-10-per-30s", 10, 30*time.Second, "15"),
	}
}

// holdoutGo is an in-process Go middleware target without a twin, allowing
// limit per window (plus burst) per client IP.
func holdoutGo(name, server, algorithm string, limit int, window time.Duration, burst int, headers, retryAfter, config string,
	mw func() (func(http.Handler) http.Handler, error)) Target {
	return Target{
		Name: name, Server: server, Algorithm: algorithm,
		Limit: limit, Window: window.Seconds(), Burst: burst, Rate: float64(limit) / window.Seconds(),
		RetryAfter: retryAfter, Headers: headers, Config: config, inProcess: true,
		start: func(dir string) (Server, error) {
			limiter, err := mw()
			if err != nil {
				return nil, err
			}
			return peers.StartGoServer(peers.GoServerConfig{Name: name, Limiter: limiter, Dir: dir})
		},
	}
}

// countsDenied marks t as counting rejected requests against the limit
// (ulule/limiter increments its counter before it decides).
func countsDenied(t Target) Target {
	t.CountsDenied = true
	return t
}

// errNoTwin is a held-out target asked to calibrate.
func errNoTwin(t Target) error {
	return fmt.Errorf("target %s is held out: it has no simulated twin to calibrate", t.Name)
}
