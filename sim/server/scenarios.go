package server

import "time"

// Kind is the scope a scenario's limit is enforced on, as a client must
// discover it.
type Kind string

// Scenario kinds.
const (
	// PerIP: one budget per client IP (exit).
	PerIP Kind = "per-ip"
	// HostScoped: one budget for the whole site, whatever the exit.
	HostScoped Kind = "host-scoped"
	// PerCredential: one budget per proxy credential, although exits vary.
	PerCredential Kind = "per-credential"
	// Rotating: per-IP limits reached through a rotating gateway that
	// picks a new exit per request.
	Rotating Kind = "rotating"
)

// Scenario is a named site preset.
type Scenario struct {
	Name        string
	Description string
	Kind        Kind
	// Config is ready for New; set Rand and Logger as needed.
	Config Config
	// Path is the one-way delay from a client's send to the site's
	// arrival: the proxy hop and the scheduling jitter of real machines
	// (zero: requests arrive the instant they are sent). Pacing at exactly
	// a limit's spacing tips over it when this varies.
	Path Latency
	// WakeLate is how late a real client's timers fire after the time its
	// limiter asked for (zero: on the dot, as virtual time does): a live
	// engine wakes a fraction of a millisecond to milliseconds late, which
	// decides whether a lane taken one pacing interval after it was ready
	// counts as sending at its pace.
	WakeLate Latency
	// StartPhase is how far past a whole second a run starts by default
	// (sim/run.Config.Start). It matters to servers that write whole
	// seconds (Date, epoch resets): a real run starts at a random instant
	// within a second. Zero: on the second.
	StartPhase time.Duration
	// URLs, when set, is the crawl's size (a short crawl); zero leaves it
	// to the runner (what a perfect client fetches in its run).
	URLs int
	// Hosts, when set, makes a scenario of several sites crawled at once:
	// each host has its own Config and URL count, and Config above is
	// unused.
	Hosts []Host
}

// Host is one site of a multi-host scenario.
type Host struct {
	Name   string // the URL host, e.g. h001.test
	Config Config
	URLs   int // zero: what a perfect client fetches in the run
}

// scenarioLatency is a plausible page latency: median 40 ms, long tail
// capped at 400 ms.
var scenarioLatency = Latency{Dist: LogNormal, Base: 40 * time.Millisecond, Max: 400 * time.Millisecond, Sigma: 0.4}

// Scenarios returns the preset catalogue, freshly built on each call. The
// limits suit a pool of about 20 exits: about 1 request per second per key,
// small bursts, so a global 1 r/s limiter uses 1/20 of the pool.
func Scenarios() []Scenario {
	perSecond := Policy{Quota: 1, Window: time.Second, Burst: 2}
	perTen := Policy{Quota: 10, Window: 10 * time.Second}
	sc := func(name, desc string, kind Kind, c Config) Scenario {
		c.Name = name
		c.Latency = scenarioLatency
		return Scenario{Name: name, Description: desc, Kind: kind, Config: c}
	}
	return []Scenario{
		sc("per-ip-token-bucket", "token bucket per client IP, 1 r/s, burst 2, bare 429s (close to nginx limit_req burst=1 nodelay, without its millisecond clock: see twin-nginx-*)", PerIP,
			Config{Algorithm: TokenBucket, Policy: perSecond}),
		sc("per-ip-fixed-window", "fixed window per client IP, 10 per 10 s aligned to the epoch, bare 429s", PerIP,
			Config{Algorithm: FixedWindow, Policy: perTen}),
		sc("per-ip-sliding-log", "sliding log per client IP, 10 within any 10 s, bare 429s", PerIP,
			Config{Algorithm: SlidingLog, Policy: perTen}),
		sc("per-ip-sliding-window", "sliding-window counter per client IP, 10 per 10 s, bare 429s", PerIP,
			Config{Algorithm: SlidingWindow, Policy: perTen}),
		sc("per-ip-gcra", "GCRA per client IP, 1 r/s, burst 2, bare 429s", PerIP,
			Config{Algorithm: GCRA, Policy: perSecond}),
		sc("per-ip-headers-gcra", "GCRA per client IP as github.com/throttled/throttled reports it, 3 r/s, burst 2: X-RateLimit-Limit is the burst, -Reset the seconds until the bucket is full again (read as 2 per second); Retry-After", PerIP,
			Config{Algorithm: Throttled, Policy: Policy{Quota: 3, Window: time.Second, Burst: 2}, Headers: HeadersXRateLimit, ResetFormat: ResetDelta}),
		sc("per-ip-penalising", "per-IP sliding-window counter of 10 per 10 s counting rejected requests too, like an HAProxy stick table (epoch-aligned and exact where HAProxy truncates: see twin-haproxy-*); bare 429s", PerIP,
			Config{Algorithm: Penalising, Policy: perTen}),
		sc("per-ip-headers-xrl", "fixed window per IP, 10 per 10 s, X-RateLimit-* with epoch reset and Retry-After (GitHub style)", PerIP,
			Config{Algorithm: FixedWindow, Policy: perTen, Headers: HeadersXRateLimit}),
		sc("per-ip-headers-ietf", "sliding-window counter per IP, 10 per 10 s, IETF RateLimit and RateLimit-Policy with Retry-After", PerIP,
			Config{Algorithm: SlidingWindow, Policy: perTen, Headers: HeadersIETF}),
		sc("per-ip-retry-after", "token bucket per IP, 1 r/s, burst 2, Retry-After on 429 only", PerIP,
			Config{Algorithm: TokenBucket, Policy: perSecond, Headers: HeadersRetryAfter}),
		sc("host-scoped", "one token bucket for the whole site, 5 r/s, burst 5, whatever the exit; Retry-After", HostScoped,
			Config{Algorithm: TokenBucket, Policy: Policy{Quota: 5, Window: time.Second, Burst: 5}, Key: KeySpec{By: KeySite}, Headers: HeadersRetryAfter}),
		sc("per-credential", "token bucket per proxy credential, 2 r/s, burst 2, although exits vary; Retry-After", PerCredential,
			Config{Algorithm: TokenBucket, Policy: Policy{Quota: 2, Window: time.Second, Burst: 2}, Key: KeySpec{By: KeyProxyUser}, Headers: HeadersRetryAfter}),
		sc("rotating", "token bucket per IP, 1 r/s, burst 2, reached through a gateway that rotates the exit per request; Retry-After", Rotating,
			Config{Algorithm: TokenBucket, Policy: perSecond, Headers: HeadersRetryAfter}),
		sc("limit-change", "token bucket per IP with Retry-After: 1 r/s, then 0.5 r/s after 60 s, then 2 r/s after 120 s", PerIP,
			Config{Algorithm: TokenBucket, Policy: perSecond, Headers: HeadersRetryAfter, Schedule: []Change{
				{At: 60 * time.Second, Policy: Policy{Quota: 1, Window: 2 * time.Second, Burst: 2}},
				{At: 120 * time.Second, Policy: Policy{Quota: 2, Window: time.Second, Burst: 4}},
			}}),
		sc("overload-503", "per-IP token bucket 1 r/s, burst 2, behind a site capacity of 12 r/s that sheds with 503 and Retry-After: 2", PerIP,
			Config{Algorithm: TokenBucket, Policy: perSecond, Headers: HeadersRetryAfter, Overload: Overload{Rate: 12, RetryAfter: 2 * time.Second}}),
		sc("bans", "fixed window per IP, 10 per 10 s, Retry-After; 5 ignored 429s within 1 min ban the IP for 5 min with a 403 block page", PerIP,
			Config{Algorithm: FixedWindow, Policy: perTen, Headers: HeadersRetryAfter, Ban: Ban{After: 5, Within: time.Minute, For: 5 * time.Minute}}),
	}
}

// ScenarioByName returns the named preset (from Scenarios, Twins or Wide).
func ScenarioByName(name string) (Scenario, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}
