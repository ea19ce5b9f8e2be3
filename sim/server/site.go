// Package server simulates rate-limited websites for the exitgate simulator.
//
// A Site combines a limiting algorithm (token bucket, fixed window, sliding
// log, sliding-window counter, GCRA or a penalising counter), a key (client
// IP, credential, cookie or the whole site), a header mode, a latency
// distribution, site-wide overload (503), bans after abuse (403) and a
// schedule of limit changes. Its core, Handle, decides at an explicit instant
// and never reads the clock, so a virtual-time run of a million requests
// takes seconds; ServeHTTP wraps it for real sockets.
//
// The site also keeps the ground truth a benchmark needs: counts per key and
// in total, and the theoretical allowed rate for a number of keys.
//
// Only Site is meant for concurrent use; the configuration, request,
// response and statistics types are plain values, and Algorithm
// implementations are serialised by their Site.
package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Config describes a simulated site. The zero value is a site keyed on
// client IP with a token bucket of 1 request per second, burst 1, no
// rate-limit headers, zero latency, no overload, no bans.
type Config struct {
	// Name labels log lines; default "site".
	Name string
	// Algorithm is the limiting algorithm; default TokenBucket.
	Algorithm Algo
	// Policy is the initial quota per key (zero fields: see Policy).
	Policy Policy
	// Key says what the limit is keyed on; default the client IP.
	Key KeySpec
	// Headers says which rate-limit fields responses carry; default none.
	Headers HeaderMode
	// ResetFormat is the X-RateLimit-Reset form; default epoch seconds.
	ResetFormat ResetFormat
	// NoRetryAfter drops Retry-After from 429s in the X-RateLimit and IETF
	// modes, so a client must use the reset field.
	NoRetryAfter bool
	// Refuse, when 403, answers the limiter's refusals with a bare 403
	// (Apache's 403 page) instead of a 429, as HAProxy's `http-request
	// deny` does by default and nginx's `limit_req_status 403`; the
	// Evasive algorithm always does. 0: 429.
	Refuse int
	// RetryAfter, when positive, is the constant Retry-After sent on every
	// 429 in place of the algorithm's own wait, in any header mode (nginx's
	// `add_header Retry-After 1 always`, HAProxy's `hdr Retry-After 30`).
	RetryAfter time.Duration
	// RetryAfterAlways sends Retry-After on every response, as the whole
	// seconds from now to X-RateLimit-Reset, truncated (flask-limiter 3.3
	// with headers enabled). Only with HeadersXRateLimit and ResetEpoch.
	RetryAfterAlways bool
	// Uptime is how long the server had been running when its first
	// request arrived. Limiters that start their windows with the server
	// (HTTPRate) are that far out of phase with the client; the others
	// ignore it. Zero: the server starts with its first request.
	Uptime time.Duration
	// Date sends the Date header (the server's clock in whole seconds, as
	// nginx, Go's net/http, werkzeug and express do; HAProxy's own answers
	// carry none). A client measures epoch resets against it, so a reset
	// written in whole seconds reads up to a second longer or shorter than
	// against its own clock.
	Date bool
	// PolicyName names the IETF policy; default "default".
	PolicyName string
	// Latency is the response-time distribution; default zero.
	Latency Latency
	// Overload is the site's total capacity; default unlimited.
	Overload Overload
	// Ban bans abusive keys; default never.
	Ban Ban
	// Tiers, when set, gives keys different budgets (IP reputation tiers):
	// the n-th distinct key the site sees is held to Tiers[n % len(Tiers)]
	// with its own state, Policy applying to none. Not with Schedule.
	Tiers []Policy
	// Also holds each key to further limits at once, of the same
	// algorithm, checked after Policy in turn: a request one refuses was
	// charged by those before it (flask-limiter's "3 per second;40 per
	// minute": the limits library hits each limit in turn). The policy in
	// force (Site.Policy, the measure's allowed rate) is the one with the
	// lowest rate. Not with Tiers, Schedule or Turns.
	Also []Policy
	// Schedule changes the policy mid-run; entries are applied in order of
	// At (a copy is sorted).
	Schedule []Change
	// Turns turn the site against some keys mid-run (see KeyTurn).
	Turns []KeyTurn
	// Start is the instant Schedule and Turns offsets count from; zero
	// means the Now of the first request handled.
	Start time.Time
	// Rand draws latencies; nil means a fixed seed, so runs repeat. The
	// site serialises its use; do not share it with other users.
	Rand *rand.Rand
	// Logger receives bans and limit changes; nil discards.
	Logger *slog.Logger
	// Record keeps every request's arrival, key and status for Hits: the
	// server's own access log, which the bench measures as it measures a
	// real server's. About 40 bytes a request.
	Record bool
}

// Hit is one request in a site's record (Config.Record).
type Hit struct {
	At     time.Time
	Key    string
	Status int
}

// Overload is a site's total capacity across all keys. Arrivals beyond it
// get 503 before the per-key limiter sees them (a shedding load balancer in
// front of the application); a 503 charges nothing to the key.
type Overload struct {
	// Rate is the total requests per second accepted; 0 = unlimited.
	// Every arrival counts, whatever the limiter later says.
	Rate float64
	// Burst is the site bucket's depth; 0 means max(1, ceil(Rate)).
	Burst int
	// Concurrent is the most requests in flight (arrival to arrival +
	// latency); 0 = unlimited. 503s occupy no slot.
	Concurrent int
	// RetryAfter is sent on 503 as whole seconds, rounded up; 0 = none.
	RetryAfter time.Duration
}

// Ban bans a key that ignores 429s. A 429 counts as ignored when its
// request arrived before the RetryAfter of the key's previous 429 had
// elapsed (whether or not the header mode told the client). After ignored
// 429s within Within, the key gets 403 with a block page for For.
type Ban struct {
	// After is the number of ignored 429s that triggers a ban; 0 = never.
	After int
	// Within is the period they must fall in; default 1 minute.
	Within time.Duration
	// For is the ban's length; default 10 minutes.
	For time.Duration
}

// Change sets a new policy At a time since the start of the run.
type Change struct {
	At     time.Duration
	Policy Policy
}

// SimRequest is one request as the site sees it.
type SimRequest struct {
	// Key, when set, is the limiter key and overrides extraction (virtual
	// mode with a precomputed key).
	Key string
	// IP is the client address the site sees (the exit's IP).
	IP string
	// ProxyUser is the proxy username, for sites keyed on KeyProxyUser;
	// when empty it is read from Header's Proxy-Authorization.
	ProxyUser string
	// Header holds request headers, for header and cookie keys; may be nil.
	Header http.Header
	// Now is the instant the request arrives.
	Now time.Time
}

// SimResponse is the site's answer. Header may be one map shared by many
// responses (responses carrying the same values share it, which keeps
// Handle allocation-free in steady state): treat it as read-only and Clone
// it before modifying.
type SimResponse struct {
	Status  int
	Header  http.Header
	Body    string
	Latency time.Duration
}

// Counts are request outcomes.
type Counts struct {
	Requests   int64 // all arrivals
	Allowed    int64 // 200
	Limited    int64 // 429
	Overloaded int64 // 503
	Banned     int64 // 403
}

func (c *Counts) add(status int) {
	c.Requests++
	switch status {
	case http.StatusOK:
		c.Allowed++
	case http.StatusTooManyRequests:
		c.Limited++
	case http.StatusServiceUnavailable:
		c.Overloaded++
	case http.StatusForbidden:
		c.Banned++
	}
}

// Stats is a snapshot of a site's counters.
type Stats struct {
	Counts
	// Bans is the number of bans issued.
	Bans int64
	// Keys holds the counts of every key seen.
	Keys map[string]Counts
}

// ErrConfig is wrapped by every error New returns.
var ErrConfig = errors.New("invalid site config")

// Bodies sent by the site.
const (
	BodyOK      = "ok\n"
	BodyLimited = "Too Many Requests\n"
	// BodyForbidden is Apache's own 403 page, as mod_evasive's refusals
	// carry it: no block page's marker.
	BodyForbidden = "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>403 Forbidden</title>\n</head><body>\n<h1>Forbidden</h1>\n<p>You don't have permission to access this resource.</p>\n</body></html>\n"
	BodyOverload  = "<html><head><title>503 Service Unavailable</title></head><body><h1>503 Service Unavailable</h1><p>The server is temporarily unable to service your request due to capacity problems. Please try again later.</p></body></html>\n"
	BodyBlockPage = `<!DOCTYPE html>
<html lang="en-US"><head><title>Attention Required! | Cloudflare</title></head>
<body><div id="cf-wrapper"><div id="cf-error-details">
<h1 data-translate="block_headline">Sorry, you have been blocked</h1>
<h2 class="cf-subheadline">You are unable to access this site</h2>
<p>This website is using a security service to protect itself from online attacks. The action you just performed triggered the security solution.</p>
</div></div></body></html>
`
)

// Site is a simulated rate-limited website. It is safe for concurrent use:
// one mutex serialises decisions (Handle takes well under a microsecond).
// Memory grows with the number of distinct keys seen (counters, ban state
// and the algorithm's per-key state); nothing is evicted, which suits
// simulations with up to many thousands of keys.
type Site struct {
	cfg   Config
	log   *slog.Logger
	sched []Change

	mu      sync.Mutex
	alg     Algorithm
	tiers   []Algorithm // Config.Tiers; alg is tiers[0]
	turns   []turn      // Config.Turns
	rng     *rand.Rand
	started bool
	start   int64 // ns
	next    int   // next Schedule entry
	keys    map[string]*keyState
	totals  Counts
	bans    int64

	capTokens, capBurst float64
	capLast             int64
	inflight            []int64 // min-heap of completion instants
	hits                []Hit

	// Shared read-only headers (see headerLocked).
	hPlain, hBlock, hOverload http.Header
	hCache                    map[hdrKey]http.Header
}

type keyState struct {
	Counts
	idx         int // the order in which the site first saw the key
	tier        int
	waitUntil   int64 // end of the last 429's RetryAfter
	bannedUntil int64
	strikes     []int64 // instants of ignored 429s within Ban.Within
	pk          string  // draft-8 partition key, computed once
}

// New validates cfg and returns a site.
func New(cfg Config) (*Site, error) {
	if err := validate(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var tiers []Algorithm
	for _, p := range cfg.Tiers {
		a, err := NewAlgorithm(cfg.Algorithm, p)
		if err != nil {
			return nil, fmt.Errorf("%w: tier: %v", ErrConfig, err)
		}
		tiers = append(tiers, a)
	}
	alg, err := NewAlgorithm(cfg.Algorithm, cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if len(cfg.Also) > 0 {
		l := &layered{parts: []Algorithm{alg}}
		for i, p := range cfg.Also {
			a, err := NewAlgorithm(cfg.Algorithm, p)
			if err != nil {
				return nil, fmt.Errorf("%w: also[%d]: %v", ErrConfig, i, err)
			}
			l.parts = append(l.parts, a)
		}
		alg = l
	}
	for _, a := range append(tiers, alg) {
		if u, ok := a.(interface{ setUptime(time.Duration) }); ok {
			u.setUptime(cfg.Uptime)
		}
	}
	if len(tiers) > 0 {
		alg = tiers[0]
	}
	turns, err := newTurns(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	s := &Site{
		cfg:   cfg,
		log:   cfg.Logger,
		alg:   alg,
		tiers: tiers,
		turns: turns,
		rng:   cfg.Rand,
		keys:  make(map[string]*keyState),
		sched: slices.Clone(cfg.Schedule),
	}
	slices.SortStableFunc(s.sched, func(a, b Change) int { return int(min(max(a.At-b.At, -1), 1)) })
	for i := range s.sched {
		s.sched[i].Policy = s.sched[i].Policy.withDefaults()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hPlain = http.Header{hContentType: ctText}
	s.hBlock = http.Header{hContentType: ctHTML}
	s.hOverload = http.Header{hContentType: ctHTML}
	if ra := cfg.Overload.RetryAfter; ra > 0 {
		s.hOverload[hRetryAfter] = []string{strconv.FormatInt(ceilSeconds(ra), 10)}
	}
	s.hCache = make(map[hdrKey]http.Header)
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(1, 2))
	}
	if o := cfg.Overload; o.Rate > 0 {
		s.capBurst = float64(o.Burst)
		if o.Burst == 0 {
			s.capBurst = max(1, math.Ceil(o.Rate))
		}
		s.capTokens = s.capBurst
	}
	return s, nil
}

func validate(c *Config) error {
	if c.Name == "" {
		c.Name = "site"
	}
	if c.PolicyName == "" {
		c.PolicyName = "default"
	}
	c.Key = c.Key.withDefaults()
	c.Latency = c.Latency.withDefaults()
	b := &c.Ban
	if b.Within == 0 {
		b.Within = time.Minute
	}
	if b.For == 0 {
		b.For = 10 * time.Minute
	}
	o := c.Overload
	switch {
	case int(c.Algorithm) >= len(algoNames):
		return fmt.Errorf("%w %d", ErrUnknownAlgo, c.Algorithm)
	case c.Key.By > KeySite:
		return fmt.Errorf("unknown key kind %d", c.Key.By)
	case c.Headers > HeadersLimitRemaining:
		return fmt.Errorf("unknown header mode %d", c.Headers)
	case len(c.Tiers) > 0 && len(c.Schedule) > 0:
		return errors.New("tiers and a schedule cannot be combined")
	case len(c.Also) > 0 && (len(c.Tiers) > 0 || len(c.Schedule) > 0 || len(c.Turns) > 0):
		return errors.New("further limits (Also) cannot be combined with tiers, a schedule or turns")
	case c.RetryAfter < 0:
		return fmt.Errorf("retry-after %v is negative", c.RetryAfter)
	case c.Refuse != 0 && c.Refuse != http.StatusForbidden:
		return fmt.Errorf("refusal status %d: want 0 (429) or 403", c.Refuse)
	case c.Uptime < 0:
		return fmt.Errorf("uptime %v is negative", c.Uptime)
	case c.RetryAfterAlways && (c.Headers != HeadersXRateLimit || c.ResetFormat != ResetEpoch):
		return errors.New("RetryAfterAlways needs X-RateLimit headers with an epoch reset")
	case c.ResetFormat > ResetDelta:
		return fmt.Errorf("unknown reset format %d", c.ResetFormat)
	case !validPolicyName(c.PolicyName):
		return fmt.Errorf("policy name %q needs escaping in a structured field", c.PolicyName)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("overload rate %v is not a finite non-negative number", o.Rate)
	case o.Burst < 0 || o.Concurrent < 0 || o.RetryAfter < 0:
		return fmt.Errorf("overload %+v has a negative field", o)
	case b.After < 0 || b.Within < 0 || b.For < 0:
		return fmt.Errorf("ban %+v has a negative field", *b)
	}
	if err := c.Latency.validate(); err != nil {
		return err
	}
	if err := c.Policy.validate(); err != nil {
		return err
	}
	for i, ch := range c.Schedule {
		if ch.At < 0 {
			return fmt.Errorf("schedule[%d] at %v is negative", i, ch.At)
		}
		if err := ch.Policy.validate(); err != nil {
			return fmt.Errorf("schedule[%d]: %w", i, err)
		}
	}
	return nil
}

// Refuses is the status the site's limiter refuses a request with: 429,
// or mod_evasive's 403 (Evasive). A measure counts it as a 429.
func (s *Site) Refuses() int {
	if s.cfg.Algorithm == Evasive || s.cfg.Refuse == http.StatusForbidden {
		return http.StatusForbidden
	}
	return http.StatusTooManyRequests
}

// KeyOf returns the limiter key the site derives for r.
func (s *Site) KeyOf(r SimRequest) string { return s.cfg.Key.key(&r) }

// Handle decides one request at r.Now. It never reads the clock or sleeps:
// the caller applies Latency (virtual time adds it, ServeHTTP sleeps it).
// Requests should arrive in nondecreasing Now for exact concurrency and
// window accounting.
func (s *Site) Handle(r SimRequest) SimResponse {
	key := s.cfg.Key.key(&r)
	t := r.Now.UnixNano()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(t)
	ks := s.keys[key]
	if ks == nil {
		ks = &keyState{idx: len(s.keys)}
		if len(s.tiers) > 0 {
			ks.tier = len(s.keys) % len(s.tiers)
		}
		s.keys[key] = ks
	}
	resp := SimResponse{Latency: s.cfg.Latency.draw(s.rng)}
	tr := s.turnLocked(ks.idx, t)
	switch {
	case t < ks.bannedUntil || tr != nil && tr.Block:
		resp.Status, resp.Body, resp.Header = http.StatusForbidden, BodyBlockPage, s.hBlock
	case s.overloadedLocked(t):
		resp.Status, resp.Body, resp.Header = http.StatusServiceUnavailable, BodyOverload, s.hOverload
	default:
		alg := s.alg
		if len(s.tiers) > 0 {
			alg = s.tiers[ks.tier]
		}
		if tr != nil {
			alg = tr.alg
		}
		d := alg.Decide(key, r.Now)
		resp.Latency += d.Delay
		resp.Header = s.headerLocked(d, t, key, ks)
		switch {
		case d.Allowed:
			resp.Status, resp.Body = http.StatusOK, BodyOK
		case d.Status == http.StatusForbidden || s.cfg.Refuse == http.StatusForbidden:
			resp.Status, resp.Body = http.StatusForbidden, BodyForbidden
			s.strikeLocked(key, ks, t, d.RetryAfter)
		default:
			resp.Status, resp.Body = http.StatusTooManyRequests, BodyLimited
			s.strikeLocked(key, ks, t, d.RetryAfter)
		}
	}
	if s.cfg.Overload.Concurrent > 0 && resp.Status != http.StatusServiceUnavailable {
		s.pushInflight(t + int64(resp.Latency))
	}
	ks.add(resp.Status)
	s.totals.add(resp.Status)
	if s.cfg.Record {
		s.hits = append(s.hits, Hit{At: r.Now, Key: key, Status: resp.Status})
	}
	return resp
}

// Hits returns a copy of the record, in arrival order (empty unless
// Config.Record).
func (s *Site) Hits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits)
}

// advanceLocked starts the run clock and applies due schedule entries.
func (s *Site) advanceLocked(t int64) {
	if !s.started {
		s.started = true
		s.start = t
		if !s.cfg.Start.IsZero() {
			s.start = s.cfg.Start.UnixNano()
		}
	}
	for s.next < len(s.sched) && t-s.start >= int64(s.sched[s.next].At) {
		ch := s.sched[s.next]
		s.next++
		if err := s.alg.SetPolicy(ch.Policy); err != nil {
			// Unreachable: New validated every entry.
			s.log.Error("limit change rejected", "site", s.cfg.Name, "err", err)
			continue
		}
		s.log.Info("limit changed", "site", s.cfg.Name, "at", ch.At, "quota", ch.Policy.Quota, "window", ch.Policy.Window, "burst", ch.Policy.Burst)
	}
}

// overloadedLocked charges one arrival to the site's capacity and reports
// whether it exceeds it.
func (s *Site) overloadedLocked(t int64) bool {
	o := s.cfg.Overload
	if o.Concurrent > 0 {
		for len(s.inflight) > 0 && s.inflight[0] <= t {
			s.popInflight()
		}
		if len(s.inflight) >= o.Concurrent {
			return true
		}
	}
	if o.Rate > 0 {
		if el := t - s.capLast; el > 0 {
			s.capTokens = min(s.capBurst, s.capTokens+float64(el)*o.Rate/1e9)
			s.capLast = t
		}
		if s.capTokens < 1 {
			return true
		}
		s.capTokens--
	}
	return false
}

// strikeLocked records a 429 for the ban rule.
func (s *Site) strikeLocked(key string, ks *keyState, t int64, retryAfter time.Duration) {
	b := s.cfg.Ban
	if b.After == 0 {
		return
	}
	if t < ks.waitUntil {
		cut := t - int64(b.Within)
		i := 0
		for i < len(ks.strikes) && ks.strikes[i] <= cut {
			i++
		}
		ks.strikes = append(ks.strikes[:0], ks.strikes[i:]...)
		ks.strikes = append(ks.strikes, t)
		if len(ks.strikes) >= b.After {
			ks.bannedUntil = t + int64(b.For)
			ks.strikes = ks.strikes[:0]
			ks.waitUntil = 0
			s.bans++
			s.log.Info("key banned", "site", s.cfg.Name, "key", key, "for", b.For)
			return
		}
	}
	ks.waitUntil = max(ks.waitUntil, t+int64(retryAfter))
}

func (s *Site) pushInflight(v int64) {
	h := append(s.inflight, v)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	s.inflight = h
}

func (s *Site) popInflight() {
	h := s.inflight
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l] < h[m] {
			m = l
		}
		if r := l + 1; r < n && h[r] < h[m] {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.inflight = h
}

// ServeHTTP answers r at time.Now, keyed from r.RemoteAddr and r's headers,
// after sleeping the drawn latency (returning early if the client goes away).
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp := s.Handle(SimRequest{IP: hostOf(r.RemoteAddr), Header: r.Header, Now: time.Now()})
	if resp.Latency > 0 {
		t := time.NewTimer(resp.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	w.WriteHeader(resp.Status)
	io.WriteString(w, resp.Body)
}

// Stats returns a snapshot of the counters.
func (s *Site) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Counts: s.totals, Bans: s.bans, Keys: make(map[string]Counts, len(s.keys))}
	for k, ks := range s.keys {
		st.Keys[k] = ks.Counts
	}
	return st
}

// Policy returns the per-key policy in force now (after the last applied
// schedule entry).
func (s *Site) Policy() Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.alg.Policy()
}

// AllowedRate is the theoretical most successes per second a client with
// keys distinct keys (exits, credentials…) can get under the policy in
// force now. See AllowedRateAt.
func (s *Site) AllowedRate(keys int) float64 {
	s.mu.Lock()
	p := s.alg.Policy()
	s.mu.Unlock()
	return s.allowed(keys, p)
}

// AllowedRateAt is AllowedRate under the policy in force elapsed after the
// start of the run: keys × Quota/Window (1 key for a site-wide limit),
// capped by Overload.Rate and by Overload.Concurrent / mean latency. Initial
// bursts are not counted. Example: per-IP 1 r/s with 20 exits gives 20;
// site-wide 1 r/s gives 1.
func (s *Site) AllowedRateAt(keys int, elapsed time.Duration) float64 {
	return s.allowed(keys, s.policyAt(elapsed))
}

// AllowedRequests integrates AllowedRateAt over the first d of the run: the
// successes a perfect client could get, for utilisation across limit
// changes.
func (s *Site) AllowedRequests(keys int, d time.Duration) float64 {
	total, from, p := 0.0, time.Duration(0), s.policyAt(0)
	for _, ch := range s.sched {
		if ch.At >= d {
			break
		}
		if ch.At > from {
			total += s.allowed(keys, p) * (ch.At - from).Seconds()
			from = ch.At
		}
		p = ch.Policy
	}
	return total + s.allowed(keys, p)*(d-from).Seconds()
}

func (s *Site) policyAt(elapsed time.Duration) Policy {
	p := binding(s.cfg.Policy, s.cfg.Also)
	for _, ch := range s.sched {
		if ch.At > elapsed {
			break
		}
		p = ch.Policy
	}
	return p
}

// steadyRate is what one key can sustain under p, evenly paced. It is
// Quota/Window except for the sliding-window counter (plain or penalising):
// it admits a request when prev·(w−e)/w + cur + 1 <= Quota, and under a
// steady rate r the weighted count is r·w, so r·w + 1 <= Quota: at most
// (Quota−1)/Window. TestSteadyRateIsWhatTheCounterAdmits checks it.
func (s *Site) steadyRate(p Policy) float64 {
	if a := s.cfg.Algorithm; a == SlidingWindow || a == Penalising {
		d := p.withDefaults()
		return float64(max(d.Quota-1, 1)) / d.Window.Seconds()
	}
	return p.Rate()
}

func (s *Site) allowed(keys int, p Policy) float64 {
	if s.cfg.Key.By == KeySite {
		keys = 1
	}
	r := float64(max(keys, 0)) * s.steadyRate(p)
	if n := len(s.cfg.Tiers); n > 0 {
		r = 0
		for i := range max(keys, 0) {
			r += s.steadyRate(s.cfg.Tiers[i%n].withDefaults())
		}
	}
	o := s.cfg.Overload
	if o.Rate > 0 {
		r = min(r, o.Rate)
	}
	if m := s.cfg.Latency.Mean(); o.Concurrent > 0 && m > 0 {
		r = min(r, float64(o.Concurrent)/m.Seconds())
	}
	return r
}
