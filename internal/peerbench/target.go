// Package peerbench measures exitgate and the baseline strategies against
// real rate limiters that nobody here wrote (nginx limit_req, haproxy stick
// tables, golang.org/x/time/rate, github.com/go-chi/httprate, Python
// flask-limiter, Node express-rate-limit), each keyed on the client IP and reached through N real
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
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/sim/server"
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
	// Refuses is the status the limiter refuses a client with when it is
	// not 429 (mod_evasive's bare 403): measured as a 429, a limited
	// request. 0: 429.
	Refuses int `json:"refuses,omitempty"`
	// Config is the limiter's configuration as written.
	Config string `json:"config"`
	// Twin is the name of its simulated twin (sim/server.Twins):
	// twin-<Name>.
	Twin string `json:"twin"`

	// What the twin must agree with (TestTwinsMatchTargets): the twin's
	// algorithm, its Policy.Burst, a constant Retry-After (0: none or
	// computed), the header mode and whether a Date header is sent.
	algo             server.Algo
	twinBurst        int
	fixedRetryAfter  time.Duration
	headers          server.HeaderMode
	retryAfterAlways bool
	noDate           bool // the server's answers carry no Date header (haproxy's own)
	inProcess        bool // a Go middleware served from the bench's own process

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
	s, err := peers.StartRetry(func() (Server, error) { return t.start(dir) })
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
		// 20 per minute on 10 exits is 3.333/s, not 3.333333333333333/s.
		return fmt.Sprintf("%.4g", r)
	}
	return fmt.Sprintf("%.3g", r)
}

// nginx503Target is nginxTarget with no burst at nginx's default
// limit_req_status, 503 without Retry-After: a per-IP limit that reads as
// an overload. The measure counts what the access log marks
// limit=REJECTED as limited (Result.judge).
func nginx503Target(name string, perSecond float64, rateConf string) Target {
	t := nginxTarget(name, perSecond, rateConf, 0, false, "")
	t.Server += " (limit_req_status left at its default)"
	t.RetryAfter = "none (rejected with 503)"
	t.Config = strings.Replace(t.Config, " limit_req_status 429;", "", 1)
	t.start = nginxStart(peers.NginxConfig{Rate: rateConf, NoRetryAfter: true, Status: 503})
	return t
}

// nginxTarget limits with limit_req keyed on $binary_remote_addr and serves
// one page for every path. delay leaves nodelay out of a burst.
func nginxTarget(name string, perSecond float64, rateConf string, burst int, delay bool, retryAfter string) Target {
	ra := "none"
	var fixed time.Duration
	if retryAfter != "" {
		ra = retryAfter + " (fixed: nginx cannot compute one)"
		fixed = seconds(retryAfter)
	}
	burstConf, algo, algorithm := "", server.Nginx, "leaky bucket (one request per 1/rate; excess beyond the burst rejected)"
	if burst > 0 {
		burstConf = fmt.Sprintf(" burst=%d nodelay", burst)
		if delay {
			burstConf = fmt.Sprintf(" burst=%d", burst)
			algo = server.NginxDelay
			algorithm = "leaky bucket without nodelay (requests within the burst are held until their turn and answered late; beyond it rejected)"
		}
	}
	limit, window := int(perSecond), 1.0
	if strings.HasSuffix(rateConf, "r/m") {
		limit, window = int(perSecond*60+0.5), 60
	}
	return Target{
		Name: name, Server: "nginx 1.22 limit_req", Algorithm: algorithm,
		Limit: limit, Window: window, Burst: burst, Rate: perSecond,
		RetryAfter: ra, Headers: "none",
		Config: fmt.Sprintf("limit_req_zone $binary_remote_addr zone=perip:1m rate=%s; limit_req zone=perip%s; limit_req_status 429;", rateConf, burstConf),
		algo:   algo, twinBurst: burst + 1, fixedRetryAfter: fixed,
		start: nginxStart(peers.NginxConfig{Rate: rateConf, Burst: burst, Delay: delay, RetryAfter: retryAfter,
			NoRetryAfter: retryAfter == ""}),
	}
}

// nginxStart starts nginx with cfg in a run's directory, serving one page
// for every path.
func nginxStart(cfg peers.NginxConfig) func(dir string) (Server, error) {
	cfg.Files, cfg.Fallback = map[string]string{"page.txt": "page\n"}, "page.txt"
	return func(dir string) (Server, error) {
		c := cfg
		c.Dir = dir
		return peers.StartNginx(c)
	}
}

// seconds reads a whole number of seconds written in a config; the
// targets below are written here, so a bad one is a bug.
func seconds(s string) time.Duration {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("peerbench: Retry-After %q is not whole seconds", s))
	}
	return time.Duration(n) * time.Second
}

// haproxyTarget denies with 429 when the src's http_req_rate over period
// is above limit; tracking comes first, so denied requests count.
func haproxyTarget(name string, limit int, period time.Duration, retryAfter string) Target {
	ra, hdr := "none", ""
	var fixed time.Duration
	if retryAfter != "" {
		ra, hdr, fixed = retryAfter+" (fixed)", " hdr Retry-After "+retryAfter, seconds(retryAfter)
	}
	sec := period.Seconds()
	return Target{
		Name: name, Server: "haproxy 2.6 stick table",
		Algorithm: fmt.Sprintf("http_req_rate(%gs) tracked on src before the deny: a rolling rate over two periods", sec),
		Limit:     limit, Window: sec, Rate: float64(limit) / sec,
		RetryAfter: ra, Headers: "none", CountsDenied: true,
		Config: fmt.Sprintf("stick-table type ip store http_req_rate(%gs); http-request track-sc0 src; http-request deny deny_status 429%s if { sc_http_req_rate(0) gt %d }", sec, hdr, limit),
		algo:   server.HAProxy, twinBurst: limit, fixedRetryAfter: fixed, noDate: true,
		start: func(dir string) (Server, error) {
			return peers.StartHAProxy(peers.HAProxyConfig{Limit: limit, Period: period, RetryAfter: retryAfter, Dir: dir})
		},
	}
}

func xrateTarget(name string, perSecond float64, burst int) Target {
	return Target{
		Name: name, Server: "golang.org/x/time/rate v0.16 (a per-IP rate.Limiter, our few lines)",
		Algorithm: "token bucket", Limit: int(perSecond), Window: 1, Burst: burst, Rate: perSecond,
		RetryAfter: "none", Headers: "none",
		Config: fmt.Sprintf("rate.NewLimiter(%g, %d) per client IP; Allow() or 429", perSecond, burst),
		algo:   server.XRate, twinBurst: burst, inProcess: true,
		start: func(dir string) (Server, error) {
			return peers.StartGoServer(peers.GoServerConfig{Name: name, Limiter: peers.XRate(rate.Limit(perSecond), burst), Dir: dir})
		},
	}
}

func httprateTarget(name string, limit int, window time.Duration, strip bool) Target {
	ra := fmt.Sprintf("%g (the window length, on 429s only)", window.Seconds())
	headers := "X-RateLimit-Limit, -Remaining, -Reset (epoch seconds of the window's end) on every response"
	conf := fmt.Sprintf("httprate.LimitByIP(%d, %v)", limit, window)
	mode := server.HeadersXRateLimit
	if strip {
		ra, headers, mode = "none (stripped)", "none (stripped by a wrapper)", server.HeadersNone
		conf += " with X-RateLimit-* and Retry-After deleted"
	}
	return Target{
		Name: name, Server: "github.com/go-chi/httprate v0.16.1",
		Algorithm: "sliding window counter (previous window weighted by overlap + current)",
		Limit:     limit, Window: window.Seconds(), Rate: float64(limit) / window.Seconds(),
		RetryAfter: ra, Headers: headers, Config: conf,
		algo: server.HTTPRate, twinBurst: limit, headers: mode, inProcess: true,
		start: func(dir string) (Server, error) {
			return peers.StartGoServer(peers.GoServerConfig{Name: name, Limiter: peers.HTTPRate(limit, window, strip), Dir: dir})
		},
	}
}

func flaskTarget(name string, limit int, window time.Duration, fixed, headers bool) Target {
	unit := map[time.Duration]string{time.Second: "second", 10 * time.Second: "10 seconds", 15 * time.Second: "15 seconds", 30 * time.Second: "30 seconds", time.Minute: "minute", 2 * time.Minute: "2 minutes"}[window]
	return flaskLimits(name, fmt.Sprintf("%d per %s", limit, unit), limit, window, fixed, headers)
}

// flaskLimits is flask-limiter holding each client to the limits of spec
// (one, or several separated by ";"), of which limit per window is the one
// a steady pace meets and utilization is measured against.
func flaskLimits(name, spec string, limit int, window time.Duration, fixed, headers bool) Target {
	span := map[time.Duration]string{time.Second: "a second", 10 * time.Second: "10 seconds", 15 * time.Second: "15 seconds", 30 * time.Second: "30 seconds", time.Minute: "a minute", 2 * time.Minute: "2 minutes"}[window]
	strategy, algo := "moving-window", server.LimitsMoving
	algorithm := fmt.Sprintf("moving window (a log of the accepted requests of the last %s)", span)
	ra := "seconds until X-RateLimit-Reset (a window after the newest request, +1 s), on every response"
	if fixed {
		strategy, algo = "fixed-window", server.LimitsFixed
		algorithm = fmt.Sprintf("fixed window per client (limits' memory storage opens it at the client's first request and resets it %s later, not on the clock; rejected requests count)", span)
		ra = "seconds until the window resets, on every response"
	}
	hdrs, mode := "X-RateLimit-Limit, -Remaining, -Reset (epoch seconds, one added to the reset's whole second) and Retry-After on every response, 200s included", server.HeadersXRateLimit
	if !headers {
		ra, hdrs, mode = "none", "none (headers_enabled=False, flask-limiter's default)", server.HeadersNone
	}
	return Target{
		Name: name, Server: "Python flask-limiter 3.3 (limits 2.8, Debian python3-flask-limiter), werkzeug threaded server",
		Algorithm: algorithm, Limit: limit, Window: window.Seconds(), Rate: float64(limit) / window.Seconds(),
		RetryAfter: ra, Headers: hdrs, CountsDenied: fixed,
		Config: fmt.Sprintf("Limiter(get_remote_address, default_limits=[%q], strategy=%q, headers_enabled=%s, storage_uri=\"memory://\")",
			spec, strategy, map[bool]string{true: "True", false: "False"}[headers]),
		algo: algo, twinBurst: limit, headers: mode, retryAfterAlways: headers,
		start: func(dir string) (Server, error) {
			return peers.StartFlask(peers.FlaskConfig{Limit: spec, Strategy: strategy, NoHeaders: !headers, Dir: dir})
		},
	}
}

func expressTarget(name string, limit int, window time.Duration) Target {
	return Target{
		Name: name, Server: "Node express-rate-limit 8.7 (MemoryStore) on express 5",
		Algorithm: "fixed window per client (opened by the client's first request; rejected requests count)",
		Limit:     limit, Window: window.Seconds(), Rate: float64(limit) / window.Seconds(),
		RetryAfter:   "seconds until the window resets (429s only)",
		Headers:      "IETF draft-8 RateLimit and RateLimit-Policy structured fields (q, w, pk; r, t) on every response",
		CountsDenied: true,
		Config:       fmt.Sprintf("rateLimit({windowMs: %d, limit: %d, standardHeaders: \"draft-8\", legacyHeaders: false})", window.Milliseconds(), limit),
		algo:         server.ExpressMemory, twinBurst: limit, headers: server.HeadersIETFDraft8,
		start: func(dir string) (Server, error) {
			return peers.StartExpress(peers.ExpressConfig{Limit: limit, Window: window, Headers: "draft-8", Dir: dir})
		},
	}
}

// Targets returns every target, from the fastest limit to the slowest
// within each server. Each has a simulated twin, twin-<name>, in
// sim/server.Twins, in the same order.
func Targets() []Target {
	ts := []Target{
		nginxTarget("nginx-10r-s-burst5", 10, "10r/s", 5, false, ""),
		nginxTarget("nginx-2r-s-burst4-delay", 2, "2r/s", 4, true, ""),
		nginxTarget("nginx-1r-s-burst5", 1, "1r/s", 5, false, ""),
		nginxTarget("nginx-1r-s", 1, "1r/s", 0, false, "1"),
		nginxTarget("nginx-30r-m", 0.5, "30r/m", 0, false, "60"),
		nginxTarget("nginx-6r-m", 0.1, "6r/m", 0, false, "10"),
		nginxTarget("nginx-20r-m-bare", 1.0/3, "20r/m", 0, false, ""),
		nginxTarget("nginx-20r-m-ra10", 1.0/3, "20r/m", 0, false, "10"),
		nginxTarget("nginx-10r-m-ra1", 1.0/6, "10r/m", 0, false, "1"),
		nginxTarget("nginx-10r-m-burst10", 1.0/6, "10r/m", 10, false, ""),
		nginxTarget("nginx-10r-m-burst1", 1.0/6, "10r/m", 1, false, ""),
		haproxyTarget("haproxy-20-per-10s", 20, 10*time.Second, ""),
		haproxyTarget("haproxy-100-per-10s-bare", 100, 10*time.Second, ""),
		haproxyTarget("haproxy-5-per-10s", 5, 10*time.Second, ""),
		haproxyTarget("haproxy-2-per-10s", 2, 10*time.Second, "30"),
		haproxyTarget("haproxy-6-per-min", 6, time.Minute, "60"),
		haproxyTarget("haproxy-100-per-min-bare", 100, time.Minute, ""),
		haproxyTarget("haproxy-6-per-min-bare", 6, time.Minute, ""),
		haproxyTarget("haproxy-10-per-30s-bare", 10, 30*time.Second, ""),
		haproxyTarget("haproxy-6-per-30s-bare", 6, 30*time.Second, ""),
		xrateTarget("xrate-20-s-burst1", 20, 1),
		xrateTarget("xrate-10-s-burst10", 10, 10),
		xrateTarget("xrate-2-s-burst5", 2, 5),
		httprateTarget("httprate-30-per-10s", 30, 10*time.Second, false),
		httprateTarget("httprate-10-per-s", 10, time.Second, false),
		httprateTarget("httprate-30-per-10s-bare", 30, 10*time.Second, true),
		httprateTarget("httprate-5-per-10s-bare", 5, 10*time.Second, true),
		httprateTarget("httprate-5-per-10s", 5, 10*time.Second, false),
		httprateTarget("httprate-10-per-min", 10, time.Minute, false),
		flaskTarget("flask-moving-20-per-min", 20, time.Minute, false, true),
		flaskTarget("flask-moving-6-per-min-bare", 6, time.Minute, false, false),
		flaskTarget("flask-moving-5-per-s", 5, time.Second, false, true),
		flaskTarget("flask-moving-5-per-10s", 5, 10*time.Second, false, true),
		flaskTarget("flask-fixed-10-per-s", 10, time.Second, true, true),
		flaskTarget("flask-fixed-10-per-s-bare", 10, time.Second, true, false),
		flaskTarget("flask-fixed-60-per-min-bare", 60, time.Minute, true, false),
		flaskTarget("flask-fixed-10-per-30s-bare", 10, 30*time.Second, true, false),
		flaskTarget("flask-fixed-50-per-10s-bare", 50, 10*time.Second, true, false),
		flaskTarget("flask-fixed-40-per-15s-bare", 40, 15*time.Second, true, false),
		flaskTarget("flask-fixed-20-per-2min-bare", 20, 2*time.Minute, true, false),
		flaskTarget("flask-fixed-20-per-min", 20, time.Minute, true, true),
		flaskTarget("flask-fixed-6-per-min", 6, time.Minute, true, true),
		expressTarget("express-30-per-min", 30, time.Minute),
	}
	for i := range ts {
		ts[i].Twin = "twin-" + ts[i].Name
	}
	return ts
}

// TargetNames returns every target's name, in Targets' order.
func TargetNames() []string { return targetNames(Targets()) }

// HoldoutNames returns every held-out target's name, in Holdouts' order.
func HoldoutNames() []string { return targetNames(Holdouts()) }

func targetNames(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// SelectTargets returns the named targets (of Targets or Holdouts) in the
// order given; "all" (alone) means every target, "holdout" every held-out
// one.
func SelectTargets(names []string) ([]Target, error) {
	all := Targets()
	if len(names) == 1 && names[0] == "all" {
		return all, nil
	}
	known := append(all, Holdouts()...)
	var out []Target
	for _, n := range names {
		if n == "holdout" {
			out = append(out, Holdouts()...)
			continue
		}
		i := slices.IndexFunc(known, func(t Target) bool { return t.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown target %q (known: %s; held out: %s)", n, strings.Join(TargetNames(), ", "), strings.Join(HoldoutNames(), ", "))
		}
		out = append(out, known[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no targets")
	}
	return out, nil
}
