// Package peerbench measures exitgate and the baseline strategies against
// real rate limiters that nobody here wrote (nginx limit_req, haproxy stick
// tables, golang.org/x/time/rate, github.com/go-chi/httprate, Python
// flask-limiter), each keyed on the client IP and reached through N real
// tinyproxy exits bound to distinct loopback addresses.
//
// A run crawls one target with one strategy for a fixed time, either with
// the production engine in-process (fetch.Engine driven by sim/run.Live, as
// `exitgate bench --real` does) or by running the `exitgate crawl` binary,
// and is measured from the target's own access log with sim/measure. The
// client's counts are checked against the server's.
package peerbench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/exitgate/exitgate/internal/peers"
)

// Target is one real rate limiter keyed on the client IP, described well
// enough that results are self-describing. Targets are plain values; Start
// runs a fresh instance.
type Target struct {
	// Name is the target's name on the command line.
	Name string `json:"name"`
	// Server is the program or library doing the limiting.
	Server string `json:"server"`
	// Algorithm is how it counts.
	Algorithm string `json:"algorithm"`
	// Limit requests are allowed per Window (plus Burst), per client IP.
	Limit  int     `json:"limit"`
	Window float64 `json:"window_seconds"`
	Burst  int     `json:"burst"`
	// Rate is the sustained limit per client IP, in requests per second:
	// what utilization is measured against.
	Rate float64 `json:"rate_per_second"`
	// RetryAfter says what Retry-After its 429s carry.
	RetryAfter string `json:"retry_after"`
	// Headers lists the rate-limit headers it sends, and on which responses.
	Headers string `json:"headers"`
	// CountsDenied says whether rejected requests count against the limit.
	CountsDenied bool `json:"counts_denied"`
	// Config is the limiter's configuration as written.
	Config string `json:"config"`

	start func(dir string) (Server, error)
}

// Server is a running target.
type Server interface {
	// URL is the base URL; every path under it is served and limited.
	URL() string
	// AccessLogPath is the server's own access log (peers.ReadAccessLog).
	AccessLogPath() string
	// Tail is the tail of its output and logs, for error messages.
	Tail() string
	// Close stops it; nothing is left running.
	Close() error
}

// Start runs a fresh instance of the target with its files in dir.
func (t Target) Start(dir string) (Server, error) {
	if t.start == nil {
		return nil, fmt.Errorf("target %q: not startable (not from Targets)", t.Name)
	}
	s, err := t.start(dir)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return s, nil
}

// Describe is a one-line description: limit, burst, headers, Retry-After.
func (t Target) Describe() string {
	burst := ""
	if t.Burst > 0 {
		burst = fmt.Sprintf(" burst %d,", t.Burst)
	}
	denied := "denied requests not counted"
	if t.CountsDenied {
		denied = "denied requests counted"
	}
	return fmt.Sprintf("%s, %s: %d per %s per IP (%s/s sustained),%s %s; headers: %s; Retry-After: %s",
		t.Server, t.Algorithm, t.Limit, fmtWindow(t.Window), fmtRate(t.Rate), burst, denied, t.Headers, t.RetryAfter)
}

func fmtWindow(sec float64) string {
	switch {
	case sec == 60:
		return "minute"
	case sec == 1:
		return "second"
	}
	return fmt.Sprintf("%gs", sec)
}

func fmtRate(r float64) string {
	if r >= 1 {
		return fmt.Sprintf("%g", r)
	}
	return fmt.Sprintf("%.3g", r)
}

// nginxTarget limits with limit_req keyed on $binary_remote_addr and serves
// one page for every path.
func nginxTarget(name string, perSecond float64, rateConf string, burst int, retryAfter string) Target {
	ra := "none"
	if retryAfter != "" {
		ra = retryAfter + " (fixed: nginx cannot compute one)"
	}
	burstConf := ""
	if burst > 0 {
		burstConf = fmt.Sprintf(" burst=%d nodelay", burst)
	}
	limit, window := int(perSecond), 1.0
	if strings.HasSuffix(rateConf, "r/m") {
		limit, window = int(perSecond*60+0.5), 60
	}
	return Target{
		Name: name, Server: "nginx limit_req",
		Algorithm: "leaky bucket (one request per 1/rate; excess beyond the burst rejected)",
		Limit:     limit, Window: window, Burst: burst, Rate: perSecond,
		RetryAfter: ra, Headers: "none",
		Config: fmt.Sprintf("limit_req_zone $binary_remote_addr zone=perip:1m rate=%s; limit_req zone=perip%s; limit_req_status 429;", rateConf, burstConf),
		start: func(dir string) (Server, error) {
			return peers.StartNginx(peers.NginxConfig{Rate: rateConf, Burst: burst, RetryAfter: retryAfter,
				NoRetryAfter: retryAfter == "", Dir: dir,
				Files: map[string]string{"page.txt": "page\n"}, Fallback: "page.txt"})
		},
	}
}

// haproxyTarget denies with 429 when the src's http_req_rate over period
// is above limit; tracking comes first, so denied requests count.
func haproxyTarget(name string, limit int, period time.Duration, retryAfter string) Target {
	ra, hdr := "none", ""
	if retryAfter != "" {
		ra, hdr = retryAfter+" (fixed)", " hdr Retry-After "+retryAfter
	}
	sec := period.Seconds()
	return Target{
		Name: name, Server: "haproxy stick table",
		Algorithm: fmt.Sprintf("http_req_rate(%gs) tracked on src before the deny: a rolling rate over two periods", sec),
		Limit:     limit, Window: sec, Rate: float64(limit) / sec,
		RetryAfter: ra, Headers: "none", CountsDenied: true,
		Config: fmt.Sprintf("stick-table type ip store http_req_rate(%gs); http-request track-sc0 src; http-request deny deny_status 429%s if { sc_http_req_rate(0) gt %d }", sec, hdr, limit),
		start: func(dir string) (Server, error) {
			return peers.StartHAProxy(peers.HAProxyConfig{Limit: limit, Period: period, RetryAfter: retryAfter, Dir: dir})
		},
	}
}

func xrateTarget(name string, perSecond float64, burst int) Target {
	return Target{
		Name: name, Server: "golang.org/x/time/rate (a per-IP rate.Limiter, our few lines)",
		Algorithm: "token bucket", Limit: int(perSecond), Window: 1, Burst: burst, Rate: perSecond,
		RetryAfter: "none", Headers: "none",
		Config: fmt.Sprintf("rate.NewLimiter(%g, %d) per client IP; Allow() or 429", perSecond, burst),
		start: func(dir string) (Server, error) {
			return peers.StartGoServer(peers.GoServerConfig{Name: name, Limiter: peers.XRate(rate.Limit(perSecond), burst), Dir: dir})
		},
	}
}

func httprateTarget(name string, limit int, window time.Duration, strip bool) Target {
	ra := fmt.Sprintf("%g (the window length, on 429s only)", window.Seconds())
	headers := "X-RateLimit-Limit, -Remaining, -Reset (epoch seconds of the window's end) on every response"
	conf := fmt.Sprintf("httprate.LimitByIP(%d, %v)", limit, window)
	if strip {
		ra, headers = "none (stripped)", "none (stripped by a wrapper)"
		conf += " with X-RateLimit-* and Retry-After deleted"
	}
	return Target{
		Name: name, Server: "github.com/go-chi/httprate v0.16.1",
		Algorithm: "sliding window counter (previous window weighted by overlap + current)",
		Limit:     limit, Window: window.Seconds(), Rate: float64(limit) / window.Seconds(),
		RetryAfter: ra, Headers: headers, Config: conf,
		start: func(dir string) (Server, error) {
			return peers.StartGoServer(peers.GoServerConfig{Name: name, Limiter: peers.HTTPRate(limit, window, strip), Dir: dir})
		},
	}
}

func flaskTarget(name string, perMinute int, strategy, algorithm, retryAfter string) Target {
	limit := fmt.Sprintf("%d per minute", perMinute)
	return Target{
		Name: name, Server: "Python flask-limiter 3.3 (limits 2.8, Debian python3-flask-limiter), werkzeug threaded server",
		Algorithm: algorithm, Limit: perMinute, Window: 60, Rate: float64(perMinute) / 60,
		RetryAfter: retryAfter,
		Headers:    "X-RateLimit-Limit, -Remaining, -Reset (epoch seconds) and Retry-After on every response, 200s included",
		Config:     fmt.Sprintf("Limiter(get_remote_address, default_limits=[%q], strategy=%q, headers_enabled=True, storage_uri=\"memory://\")", limit, strategy),
		start: func(dir string) (Server, error) {
			return peers.StartFlask(peers.FlaskConfig{Limit: limit, Strategy: strategy, Dir: dir})
		},
	}
}

func expressTarget(name string, limit int, window time.Duration) Target {
	return Target{
		Name: name, Server: "Node express-rate-limit 8.7 (MemoryStore) on express 5",
		Algorithm: "fixed window per client (opened by the client's first request)",
		Limit:     limit, Window: window.Seconds(), Rate: float64(limit) / window.Seconds(),
		RetryAfter: "seconds until the window resets (429s only)",
		Headers:    "IETF draft-8 RateLimit and RateLimit-Policy structured fields (q, w, r, t) on every response",
		Config:     fmt.Sprintf("rateLimit({windowMs: %d, limit: %d, standardHeaders: \"draft-8\", legacyHeaders: false})", window.Milliseconds(), limit),
		start: func(dir string) (Server, error) {
			return peers.StartExpress(peers.ExpressConfig{Limit: limit, Window: window, Headers: "draft-8", Dir: dir})
		},
	}
}

// Targets returns every target, from the fastest limit to the slowest
// within each server.
func Targets() []Target {
	return []Target{
		nginxTarget("nginx-10r-s-burst5", 10, "10r/s", 5, ""),
		nginxTarget("nginx-1r-s", 1, "1r/s", 0, "1"),
		nginxTarget("nginx-30r-m", 0.5, "30r/m", 0, "60"),
		haproxyTarget("haproxy-20-per-10s", 20, 10*time.Second, ""),
		haproxyTarget("haproxy-2-per-10s", 2, 10*time.Second, "30"),
		xrateTarget("xrate-2-s-burst5", 2, 5),
		httprateTarget("httprate-30-per-10s", 30, 10*time.Second, false),
		httprateTarget("httprate-30-per-10s-bare", 30, 10*time.Second, true),
		httprateTarget("httprate-10-per-min", 10, time.Minute, false),
		flaskTarget("flask-moving-20-per-min", 20, "moving-window",
			"moving window (a log of the last minute's accepted requests)", "seconds until the oldest request leaves the window"),
		flaskTarget("flask-fixed-6-per-min", 6, "fixed-window",
			"fixed window per client (limits' memory storage opens it at the client's first request and resets it 60 s later, not on the clock)",
			"seconds until the window resets"),
		expressTarget("express-30-per-min", 30, time.Minute),
	}
}

// TargetNames returns every target's name, in Targets' order.
func TargetNames() []string {
	var out []string
	for _, t := range Targets() {
		out = append(out, t.Name)
	}
	return out
}

// SelectTargets returns the named targets in the order given; "all" (alone)
// means every target.
func SelectTargets(names []string) ([]Target, error) {
	all := Targets()
	if len(names) == 1 && names[0] == "all" {
		return all, nil
	}
	var out []Target
	for _, n := range names {
		i := slices.IndexFunc(all, func(t Target) bool { return t.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown target %q (known: %s)", n, strings.Join(TargetNames(), ", "))
		}
		out = append(out, all[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no targets")
	}
	return out, nil
}
