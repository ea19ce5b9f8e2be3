package server

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// This file holds the twins: algorithms that decide exactly as a real
// limiter does, down to its clock granularity and integer arithmetic, so a
// strategy judged on a twin meets what it would meet on the real server.
// Each type's comment says where in the real source its rules come from.
// The versions read: nginx 1.2x (src/http/modules/ngx_http_limit_req_module.c),
// HAProxy 2.4+ (src/freq_ctr.c, include/haproxy/freq_ctr.h, src/http_act.c),
// golang.org/x/time v0.16 (rate/rate.go), github.com/go-chi/httprate
// (limiter.go, local_counter.go), Python limits 2.8.0
// (limits/storage/memory.py, limits/strategies.py) under flask-limiter 3.3.1
// (flask_limiter/extension.py, flask_limiter/wrappers.py), express-rate-limit
// 8.7 (source/memory-store.ts, source/rate-limit.ts, source/headers.ts).

// ---- nginx limit_req ----

// nginxLeaky is nginx's limit_req (ngx_http_limit_req_module.c).
//
// Counting, from ngx_http_limit_req_lookup: each key holds excess (in
// milli-requests) and last (ms of nginx's cached clock, ngx_current_msec).
// The zone's rate is kept in milli-requests per second, truncated:
// rate=R r/s gives R*1000, R r/m gives R*1000/60 (20r/m is 333, not
// 333.3; ngx_http_limit_req_zone). On a request at now:
//
//	ms     = now - last                  (0 if negative)
//	excess = excess - rate*ms/1000 + 1000 (integer division; 0 if negative)
//	reject (NGX_BUSY) if excess > burst*1000
//
// A rejected request changes nothing: excess and last are stored only when
// the request passes (and last only when ms != 0). A key seen for the first
// time passes with excess 0. So at 1r/s, burst 0, a request 999 ms after
// the last accepted one computes excess 0-999+1000 = 1 > 0 and is rejected;
// at 1000 ms it computes 0 and passes: requests spaced exactly 1/rate all
// pass, one a millisecond early fails. This is GCRA with tolerance
// burst/rate on a millisecond clock with truncating division.
//
// burst=B lets B requests beyond the first through back to back (Policy
// Burst is B+1, the most an idle key sends at once). Without nodelay an
// accepted request with excess > 0 is held excess*1000/rate ms before it is
// served (ngx_http_limit_req_account, with the default delay=0); with
// nodelay it is served at once. Several limit_req lines: every zone is
// looked up (all but the last without accounting); if any rejects, none is
// charged; if all pass, each is charged and the request waits the longest
// delay (ngx_http_limit_req_handler and _account). The twin models one zone.
//
// What it answers: limit_req_status (503 by default; 429 when configured),
// no rate-limit header of its own; a Retry-After only if the config adds
// one (add_header ... always), which is then a constant.
type nginxLeaky struct {
	p     Policy
	rate  int64 // milli-requests per second (ctx->rate)
	burst int64 // (Burst-1)*1000 (limit->burst)
	delay bool  // no nodelay: hold accepted requests with excess > 0
	keys  map[string]*ngxNode
}

type ngxNode struct{ excess, last int64 } // last in ms

func (n *nginxLeaky) Policy() Policy { return n.p }
func (n *nginxLeaky) Keys() int      { return len(n.keys) }

func (n *nginxLeaky) SetPolicy(p Policy) error {
	p, err := p.checked()
	if err != nil {
		return err
	}
	n.p = p
	n.rate = max(int64(p.Quota)*1000*int64(time.Second)/int64(p.Window), 1)
	n.burst = int64(p.Burst-1) * 1000
	return nil
}

func (n *nginxLeaky) Decide(key string, now time.Time) Decision {
	msNow := floorDiv(now.UnixNano(), int64(time.Millisecond))
	d := Decision{Limit: n.p.Burst, Window: n.p.Window}
	s := n.keys[key]
	if s == nil {
		n.keys[key] = &ngxNode{last: msNow}
		d.Allowed = true
		d.Remaining = int(n.burst / 1000)
		d.Reset = n.waitLocked(0, msNow, msNow, now)
		return d
	}
	ms := max(msNow-s.last, 0)
	excess := max(s.excess-n.rate*ms/1000+1000, 0)
	if excess > n.burst {
		d.RetryAfter = n.waitLocked(s.excess, s.last, msNow, now)
		d.Reset = d.RetryAfter
		return d
	}
	s.excess = excess
	if ms != 0 {
		s.last = msNow
	}
	d.Allowed = true
	d.Remaining = int((n.burst - excess) / 1000)
	d.Reset = n.waitLocked(s.excess, s.last, msNow, now)
	if n.delay && excess > 0 {
		d.Delay = time.Duration(excess*1000/n.rate) * time.Millisecond
	}
	return d
}

// waitLocked returns the time from now until a key holding excess at
// lastMs would pass again: the first ms with excess-rate*ms/1000+1000 <=
// burst, that is rate*ms >= 1000*(excess+1000-burst).
func (n *nginxLeaky) waitLocked(excess, lastMs, msNow int64, now time.Time) time.Duration {
	need := excess + 1000 - n.burst
	if need <= 0 {
		return 0
	}
	at := lastMs + ceilDiv(1000*need, n.rate)
	if at <= msNow {
		return 0
	}
	return time.Duration(at*int64(time.Millisecond) - now.UnixNano())
}

// ---- HAProxy stick table http_req_rate ----

// haproxyRate is an HAProxy stick table storing http_req_rate(period),
// tracked with `http-request track-sc0 src` and enforced with
// `http-request deny deny_status 429 if { sc_http_req_rate(0) gt N }`
// (Policy: Quota N, Window period).
//
// Counting, from update_freq_ctr_period (include/haproxy/freq_ctr.h) and
// update_freq_ctr_period_slow (src/freq_ctr.c): a counter holds curr, prev
// and curr_tick (ms, kept even: bit 0 is a lock). An event at now with
// now-curr_tick < period adds to curr; otherwise prev takes curr, curr
// restarts, curr_tick advances one period, and if now is a further period
// past that, prev is 0 and curr_tick = now. Periods are aligned to the
// key's first request, not to the clock.
//
// The estimate, from freq_ctr_total and read_freq_ctr_period: with remain
// = curr_tick+period-now, the rate is (prev*remain + curr*period)/period,
// truncated: the previous period weighted by the part of the current period
// still to run. (When curr is 0 and prev <= 1 it reports prev unweighted,
// the "flapping correction"; a tracked request never sees that, since it
// has just counted itself.)
//
// The track-sc action counts the request in http_req_rate as soon as it is
// tracked (http_action_track_sc in src/http_act.c: "let's count a new HTTP
// request as it's the first time we do it"), before the deny rule reads
// the rate. So the rate includes the request being judged, and a denied
// request counts like an accepted one: a client that keeps sending while
// denied keeps its rate above N and stays denied until it pauses.
//
// What it answers: deny_status (403 by default, 429 when configured) with
// HAProxy's canned body; no rate-limit header; a Retry-After only if the
// rule adds one (`hdr Retry-After 30`), a constant.
//
// With Policy.Block it is a ban kept in the same stick table, as HAProxy's
// configuration manual sets one against abusers:
//
//	stick-table type ip size 100k expire 30s store gpc0,http_req_rate(10s)
//	http-request track-sc0 src
//	http-request sc-inc-gpc0(0) if { sc_http_req_rate(0) gt 20 }
//	http-request deny deny_status 429 if { sc_get_gpc0(0) gt 0 }
//
// A key whose rate goes over is refused while gpc0 is set, and gpc0 goes
// only with the whole entry, which expires Block (the table's expire) after
// the key's last request: every request, refused ones too, touches it, so
// a client that keeps trying stays banned until it has been silent that
// long.
type haproxyRate struct {
	p      Policy
	period int64 // ms
	q      int64
	keys   map[string]*freqCtr
}

type freqCtr struct {
	tick, curr, prev int64
	banned           bool  // gpc0 > 0 (Policy.Block)
	seen             int64 // ms of the last request, for the entry's expiry
}

func (h *haproxyRate) Policy() Policy { return h.p }
func (h *haproxyRate) Keys() int      { return len(h.keys) }

func (h *haproxyRate) SetPolicy(p Policy) (err error) {
	if h.p, err = p.checked(); err != nil {
		return err
	}
	h.period = max(int64(h.p.Window/time.Millisecond), 1)
	h.q = int64(h.p.Quota)
	return nil
}

// update is update_freq_ctr_period with inc 1.
func (c *freqCtr) update(now, period int64) {
	if now-c.tick < period {
		c.curr++
		return
	}
	c.prev, c.curr = c.curr, 1
	c.tick += period
	if now-c.tick >= period {
		c.prev = 0
		c.tick = now
	}
	c.tick &^= 1
}

// read is read_freq_ctr_period (freq_ctr_total with pend < 0).
func (c *freqCtr) read(now, period int64) int64 {
	curr, past := c.curr, c.prev
	remain := c.tick + period - now
	if remain < 0 {
		remain += period
		past = 0
		if remain >= 0 {
			past = curr
		}
		curr = 0
	}
	if curr == 0 && past <= 1 {
		return past
	}
	return (past*remain + curr*period) / period
}

func (h *haproxyRate) Decide(key string, now time.Time) Decision {
	ms := floorDiv(now.UnixNano(), int64(time.Millisecond))
	c := h.keys[key]
	if block := int64(h.p.Block / time.Millisecond); c != nil && block > 0 && ms-c.seen >= block {
		c = nil // the entry expired, its ban with it
	}
	if c == nil {
		// A new entry is a zeroed area: its first update starts the
		// period at now.
		c = &freqCtr{tick: ms - 2*h.period}
		h.keys[key] = c
	}
	c.seen = ms
	c.update(ms, h.period)
	r := c.read(ms, h.period)
	if h.p.Block > 0 && r > h.q {
		c.banned = true
	}
	d := Decision{Limit: h.p.Quota, Window: h.p.Window, Allowed: r <= h.q && !c.banned, Remaining: int(max(h.q-r, 0))}
	if c.banned { // (only with Policy.Block)
		d.Reset = h.p.Block
		d.RetryAfter = h.p.Block
		return d
	}
	d.Reset = time.Duration(c.tick+h.period-ms) * time.Millisecond
	if !d.Allowed {
		d.RetryAfter = h.wait(c, ms, now)
	}
	return d
}

// wait is how long from now until one more request would pass if none
// came meanwhile (HAProxy does not say; the site's ban rule uses it).
func (h *haproxyRate) wait(c *freqCtr, ms int64, now time.Time) time.Duration {
	p := h.period
	end := c.tick + p // start of the next period
	at := end + p     // two periods on, everything has aged out
	// Later in this period: rate = curr+1 + prev*remain/p <= q.
	if k := h.q - c.curr - 1; k >= 0 && c.prev > 0 {
		rem := ceilDiv((k+1)*p, c.prev) - 1 // largest remain that fits
		at = min(at, max(end-rem, ms))
	}
	// In the next period: rate = 1 + curr*remain/p <= q.
	if c.curr > 0 && h.q >= 1 {
		rem := min(ceilDiv(h.q*p, c.curr)-1, p)
		at = min(at, end+p-rem)
	}
	return max(time.Duration(at*int64(time.Millisecond)-now.UnixNano()), time.Millisecond)
}

// ---- go-chi/httprate ----

// httpRate is github.com/go-chi/httprate v0.16.1's sliding-window counter
// with its local counter (limiter.go: NewRateLimiter, OnLimit,
// currentWindow and calculateRate; local_counter.go).
//
// Counting: one counter per key and fixed window. The windows are aligned
// to the limiter's start, not to the clock: NewRateLimiter with the local
// counter sets windowOffset = start - start.Truncate(windowLength), and
// currentWindow(t) = (t - offset).Truncate(windowLength) + offset. The
// estimate is the float
//
//	rate = prev*(window-elapsed)/window + curr
//
// with prev the previous window's count and elapsed the time into the
// current one, rounded half away from zero (math.Round). A request passes
// when round(rate)+1 <= limit, so a key reaches the limit once the estimate
// is limit-0.5. Rejected requests are not counted (IncrementBy runs only on
// the accepted path).
//
// The limiter is built when its server starts, before the bench starts
// the exits and the crawl: the twin starts its windows Config.Uptime
// before the first request it sees.
//
// What it answers, on every response: X-RateLimit-Limit (the limit) and
// X-RateLimit-Reset = currentWindow.Add(windowLength).Unix(), the end of
// the current window in Unix seconds ROUNDED DOWN: since windows start at
// the limiter's start, not on a whole second, Reset says a time up to a
// second before the window ends, and a client that waits for it sends
// while the window (and the estimate) is still full. Even at the end the
// quota is not free: the current count just becomes the previous one.
// X-RateLimit-Remaining is limit-round(rate)-1 when accepted,
// limit-round(rate) when rejected. A rejection is http.Error 429 with
// Retry-After: the window length in whole seconds, whatever the actual
// wait. WithResponseHeaders(ResponseHeaders{}) sends none of these (the
// -bare scenarios).
//
// It keeps the sliding-window counter's state (two counts per key and
// window) and decides by httprate's rules instead.
type httpRate struct {
	slidingWindow
	uptime  int64 // ns the limiter ran before the first request (Config.Uptime)
	offset  int64 // window phase (ns), set at the first request
	started bool
}

func (h *httpRate) setUptime(d time.Duration) { h.uptime = int64(d) }

func (h *httpRate) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	if !h.started {
		h.started = true
		h.offset = t - h.uptime - floorDiv(t-h.uptime, h.w)*h.w
	}
	idx := floorDiv(t-h.offset, h.w)
	s := h.state(key, idx)
	start := idx*h.w + h.offset
	diff := t - start
	est := float64(s.prev)*(float64(h.w)-float64(diff))/float64(h.w) + float64(s.cur)
	r := int64(math.Round(est))
	// .Unix() of the window's end: whole seconds, rounded down.
	reset := floorDiv(start+h.w, int64(time.Second)) * int64(time.Second)
	d := Decision{Limit: h.p.Quota, Window: h.p.Window, Reset: time.Duration(reset - t)}
	if r+1 > h.q {
		d.Remaining = int(h.q - r)
		d.RetryAfter = time.Duration(int64(h.p.Window.Seconds())) * time.Second
		return d
	}
	s.cur++
	d.Allowed = true
	d.Remaining = int(h.q - r - 1)
	return d
}

// ---- Python limits: moving window and fixed window ----

// movingWindow is the moving window of Python limits 2.8.0 with its
// in-memory storage, as flask-limiter 3.3 uses it by default.
//
// Counting, from MemoryStorage.acquire_entry (limits/storage/memory.py):
// each key keeps the instants (time.time(), float seconds) of its accepted
// hits, newest first. A hit at now is rejected when the limit-th newest
// hit has atime >= now - expiry: a hit exactly expiry seconds old still
// counts. Rejected hits are not recorded.
//
// What it answers (flask-limiter with headers enabled; __inject_headers in
// flask_limiter/extension.py runs after every request, the 429 too):
// X-RateLimit-Limit (the amount), X-RateLimit-Remaining (amount minus the
// hits in the window), X-RateLimit-Reset = RequestLimit.reset_at =
// int(window_start + expiry + 1) (flask_limiter/wrappers.py,
// MovingWindowRateLimiter.get_window_stats), and Retry-After =
// int(reset_at - time.time()) on every response, 200s included. In limits
// 2.8.0 get_moving_window takes window_start from the first in-window hit
// of the newest-first list, so it is the NEWEST hit: Reset is when the
// newest hit expires (+1 s), not the oldest. A client that waits for Reset
// waits a whole window although a slot frees when the oldest hit expires.
// (limits 3.10 fixed this: commit 5f693f3, "Use oldest entry in window to
// derive start of window".)
//
// With fixed set it is limits 2.8.0's fixed window instead
// (FixedWindowRateLimiter.hit, MemoryStorage.incr and get): the window
// starts at a key's first hit and ends expiry seconds later (expirations
// <= now clears it); every hit increments the counter, rejected ones too,
// and passes while the count is <= amount. Reset is int(expiry instant)+1,
// Remaining max(0, amount - count); the same headers as above.
type movingWindow struct {
	p     Policy
	w     int64
	fixed bool
	keys  map[string]*mwState
}

type mwState struct {
	log         []int64 // accepted hits, oldest first (moving window)
	start, hits int64   // window start and count (fixed window)
}

func (m *movingWindow) Policy() Policy { return m.p }
func (m *movingWindow) Keys() int      { return len(m.keys) }

func (m *movingWindow) SetPolicy(p Policy) (err error) {
	if m.p, err = p.checked(); err != nil {
		return err
	}
	m.w = int64(m.p.Window)
	return nil
}

func (m *movingWindow) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	s := m.keys[key]
	if s == nil {
		s = &mwState{start: math.MinInt64 / 2}
		m.keys[key] = s
	}
	if m.fixed {
		return m.fixedDecide(s, t)
	}
	// Hits older than expiry no longer count (atime < now - expiry).
	i := 0
	for i < len(s.log) && s.log[i] < t-m.w {
		i++
	}
	s.log = append(s.log[:0], s.log[i:]...)
	q := m.p.Quota
	d := Decision{Limit: q, Window: m.p.Window}
	if len(s.log) >= q {
		// The oldest of the newest q hits frees its slot just after it is
		// expiry old.
		d.RetryAfter = time.Duration(s.log[len(s.log)-q] + m.w + 1 - t)
	} else {
		s.log = append(s.log, t)
		d.Allowed = true
	}
	d.Remaining = q - len(s.log)
	start := t
	if len(s.log) > 0 {
		start = s.log[len(s.log)-1] // the newest, as limits 2.8.0 reads it
	}
	d.Reset = m.resetAt(floorDiv(start, int64(time.Second))*int64(time.Second)+m.w, t)
	return d
}

func (m *movingWindow) fixedDecide(s *mwState, t int64) Decision {
	if s.start+m.w <= t {
		s.start, s.hits = t, 0
	}
	s.hits++
	q := int64(m.p.Quota)
	d := Decision{Limit: m.p.Quota, Window: m.p.Window, Allowed: s.hits <= q, Remaining: int(max(q-s.hits, 0))}
	if !d.Allowed {
		d.RetryAfter = time.Duration(s.start + m.w - t)
	}
	// get_expiry is int(expiry instant): truncated to the second.
	d.Reset = m.resetAt(floorDiv(s.start+m.w, int64(time.Second))*int64(time.Second), t)
	return d
}

// resetAt turns window_start+expiry (ns, whole seconds) into the Decision
// Reset that renders as flask-limiter's X-RateLimit-Reset, int(... + 1).
func (m *movingWindow) resetAt(end, t int64) time.Duration {
	return time.Duration(end + int64(time.Second) - t)
}

// ---- golang.org/x/time/rate ----

// xRate is a per-key golang.org/x/time/rate.Limiter, as a middleware keeps
// one per client IP and calls Allow (rate/rate.go): it is the real code,
// not a copy. Counting (reserveN, advance): a token bucket of burst b
// refilled at limit tokens per second in float64; a request takes a token
// when one is there (tokens >= 1 after the refill, capped at b); Allow
// never waits, and a refused request changes nothing (the state is stored
// only when ok). A new limiter starts full. Reserve would instead book the
// next token in the future and return the delay (Reservation.Delay), which
// a middleware can send as Retry-After; RetryAfter here is that delay.
type xRate struct {
	p    Policy
	keys map[string]*rate.Limiter
}

func (x *xRate) Policy() Policy { return x.p }
func (x *xRate) Keys() int      { return len(x.keys) }

func (x *xRate) limit() rate.Limit { return rate.Limit(x.p.Rate()) }

func (x *xRate) SetPolicy(p Policy) (err error) {
	if x.p, err = p.checked(); err != nil {
		return err
	}
	for _, l := range x.keys {
		l.SetLimit(x.limit())
		l.SetBurst(x.p.Burst)
	}
	return nil
}

func (x *xRate) Decide(key string, now time.Time) Decision {
	l := x.keys[key]
	if l == nil {
		l = rate.NewLimiter(x.limit(), x.p.Burst)
		x.keys[key] = l
	}
	d := Decision{Limit: x.p.Burst, Window: time.Duration(float64(x.p.Burst) / x.p.Rate() * float64(time.Second))}
	d.Allowed = l.AllowN(now, 1)
	tokens := l.TokensAt(now)
	d.Remaining = int(max(tokens, 0))
	if tokens < float64(x.p.Burst) {
		d.Reset = time.Duration((math.Floor(tokens) + 1 - tokens) / float64(x.limit()) * float64(time.Second))
	}
	if !d.Allowed {
		d.RetryAfter = time.Duration((1 - tokens) / float64(x.limit()) * float64(time.Second))
	}
	return d
}

// ---- express-rate-limit ----

// expressMemory is express-rate-limit 8's default MemoryStore under its
// middleware (source/memory-store.ts, source/rate-limit.ts).
//
// Counting, from MemoryStore.increment and resetClient: each key holds
// totalHits and resetTime (ms of Date.now()). A key seen for the first time
// gets resetTime = now + windowMs; on every request, if resetTime <= now
// the count restarts at 0 and resetTime = now + windowMs; then totalHits is
// incremented, whatever the outcome, and the request is rejected when
// totalHits > limit. So the window is fixed, opened by the key's first
// request after the previous one ended (not aligned to the clock), and a
// rejected request counts but cannot extend it. (clearExpired drops a key
// idle for a whole interval, which can only happen after its resetTime.)
//
// What it answers (standardHeaders "draft-8", legacyHeaders false): on every
// response RateLimit and RateLimit-Policy (HeadersIETFDraft8) with
// remaining = max(limit - totalHits, 0) and t = ceil((resetTime - now)/1000);
// on 429, Retry-After = the same t.
//
// With Policy.Block it is rate-limiter-flexible's RateLimiterMemory with a
// blockDuration (lib/RateLimiterAbstract.js, RateLimiterStoreAbstract): the
// same fixed window opened by the key's first request, every request
// consuming a point, and the first one over the limit setting the key's
// expiry to Block from then, so that it is refused until then, its
// msBeforeNext the block's remaining time.
type expressMemory struct {
	p    Policy
	w    int64 // ms
	keys map[string]*emClient
}

type emClient struct{ hits, reset int64 } // reset in ms

func (e *expressMemory) Policy() Policy { return e.p }
func (e *expressMemory) Keys() int      { return len(e.keys) }

func (e *expressMemory) SetPolicy(p Policy) (err error) {
	if e.p, err = p.checked(); err != nil {
		return err
	}
	e.w = max(int64(e.p.Window/time.Millisecond), 1)
	return nil
}

func (e *expressMemory) Decide(key string, now time.Time) Decision {
	ms := floorDiv(now.UnixNano(), int64(time.Millisecond))
	c := e.keys[key]
	if c == nil {
		c = &emClient{reset: ms + e.w}
		e.keys[key] = c
	}
	if c.reset <= ms {
		c.hits, c.reset = 0, ms+e.w
	}
	c.hits++
	q := int64(e.p.Quota)
	if e.p.Block > 0 && c.hits == q+1 {
		// rate-limiter-flexible's blockDuration: the first request over
		// the limit blocks the key from now for Block, its window with it.
		c.reset = ms + int64(e.p.Block/time.Millisecond)
	}
	d := Decision{Limit: e.p.Quota, Window: e.p.Window, Allowed: c.hits <= q, Remaining: int(max(q-c.hits, 0))}
	d.Reset = time.Duration(c.reset-ms) * time.Millisecond
	if !d.Allowed {
		d.RetryAfter = d.Reset
	}
	return d
}

// qosEvent is Apache mod_qos 11's QS_ClientEventLimitCount (mod_qos.c,
// qos_hp_event_count): per key a counter and the time(NULL) second of its
// first event; a request resets it first when that second plus the
// directive's seconds is before now's second, then counts (every request,
// refused ones too, starting the timer on the first), and is refused when
// the counter reaches the directive's count. The directive's seconds are
// Policy.Window less one second (QoSEvent), its count Policy.Quota plus
// one. It answers no header.
type qosEvent struct {
	p       Policy
	seconds int64 // the directive's
	keys    map[string]*qosCounter
}

type qosCounter struct{ n, start int64 } // start: a Unix second

func (q *qosEvent) Policy() Policy { return q.p }
func (q *qosEvent) Keys() int      { return len(q.keys) }

func (q *qosEvent) SetPolicy(p Policy) (err error) {
	if q.p, err = p.checked(); err != nil {
		return err
	}
	if w := q.p.Window; w < 2*time.Second || w%time.Second != 0 {
		return fmt.Errorf("qos-event: window %v: want whole seconds, 2 s or more (the directive's seconds plus one)", w)
	}
	q.seconds = int64(q.p.Window/time.Second) - 1
	return nil
}

func (q *qosEvent) Decide(key string, now time.Time) Decision {
	sec := floorDiv(now.UnixNano(), int64(time.Second))
	c := q.keys[key]
	if c == nil {
		c = &qosCounter{}
		q.keys[key] = c
	}
	if c.n > 0 && c.start+q.seconds < sec {
		c.n, c.start = 0, 0
	}
	c.n++
	if c.n == 1 {
		c.start = sec
	}
	return Decision{Limit: q.p.Quota, Window: q.p.Window, Allowed: c.n <= int64(q.p.Quota)}
}

// quietReset is gin-rate-limit v1.5's InMemoryStore (in_memory.go): per key
// the Unix second of its last request let through and the tokens left. A
// request first refills the tokens to the limit when that second plus the
// window's seconds is not after now's second; it is refused with none
// left (refused requests change nothing), else takes one and moves the
// last second to now's. Its reset, on every answer, is the last second
// plus the window: a lane paced evenly spends the limit in one window and
// waits a whole window more, idle, for any of it back.
type quietReset struct {
	p       Policy
	seconds int64
	keys    map[string]*quietKey
}

type quietKey struct{ last, tokens int64 } // last: a Unix second

func (q *quietReset) Policy() Policy { return q.p }
func (q *quietReset) Keys() int      { return len(q.keys) }

func (q *quietReset) SetPolicy(p Policy) (err error) {
	if q.p, err = p.checked(); err != nil {
		return err
	}
	if w := q.p.Window; w < time.Second || w%time.Second != 0 {
		return fmt.Errorf("quiet-reset: window %v: want whole seconds", w)
	}
	q.seconds = int64(q.p.Window / time.Second)
	return nil
}

func (q *quietReset) Decide(key string, now time.Time) Decision {
	sec := floorDiv(now.UnixNano(), int64(time.Second))
	k := q.keys[key]
	if k == nil {
		k = &quietKey{last: sec, tokens: int64(q.p.Quota)}
		q.keys[key] = k
	}
	if k.last+q.seconds <= sec {
		k.tokens = int64(q.p.Quota)
	}
	d := Decision{Limit: q.p.Quota, Window: q.p.Window, Allowed: k.tokens > 0}
	if d.Allowed {
		k.tokens--
		k.last = sec
	}
	d.Remaining = int(k.tokens)
	d.Reset = time.Duration((k.last+q.seconds)*int64(time.Second) - now.UnixNano())
	if !d.Allowed {
		d.RetryAfter = d.Reset
	}
	return d
}

// evasive is Apache mod_evasive 1.10's site counter (mod_evasive20.c,
// access_checker) on time(NULL)'s whole seconds: a key on hold (refused
// within Block seconds of its last refused request) is refused and held
// on; else its counter, made by its first request (which it does not
// count), is reset when the key's last request was Window or more seconds
// before, and a request that finds it at Quota within Window is refused
// and puts the key on hold; every request not on hold counts and moves
// the last second to now's. So Quota pass in each second (at Window 1 s),
// Quota+1 in the key's first. Refused with a bare 403, no header: it tells
// nothing of when. A gap: the real module's first refusal of an address
// may hold nothing (a lone 403, the next second let through: its log shows
// it); this model holds from the first, which reads the real 5 a second
// blocking 10 s within three points (a trial build holding nothing at
// first, not kept, read it 17 points low). The same page asked twice in a
// second (its page counter) is not modelled: a crawl asks each URL once.
type evasive struct {
	p               Policy
	interval, block int64 // whole seconds
	keys            map[string]*evasiveKey
}

type evasiveKey struct {
	count, last, held int64 // last, held: Unix seconds
	holding           bool
}

func (v *evasive) Policy() Policy { return v.p }
func (v *evasive) Keys() int      { return len(v.keys) }

func (v *evasive) SetPolicy(p Policy) (err error) {
	if v.p, err = p.checked(); err != nil {
		return err
	}
	if w := v.p.Window; w < time.Second || w%time.Second != 0 {
		return fmt.Errorf("evasive: window %v: want whole seconds (DOSSiteInterval)", w)
	}
	if b := v.p.Block; b < time.Second || b%time.Second != 0 {
		return fmt.Errorf("evasive: block %v: want whole seconds, 1 or more (DOSBlockingPeriod)", b)
	}
	v.interval, v.block = int64(v.p.Window/time.Second), int64(v.p.Block/time.Second)
	return nil
}

func (v *evasive) Decide(key string, now time.Time) Decision {
	t := floorDiv(now.UnixNano(), int64(time.Second))
	d := Decision{Limit: v.p.Quota, Window: v.p.Window, Allowed: true}
	k := v.keys[key]
	switch {
	case k != nil && k.holding && t-k.held < v.block:
		k.held, d.Allowed = t, false
	case k == nil:
		v.keys[key] = &evasiveKey{last: t}
	default:
		if t-k.last < v.interval && k.count >= int64(v.p.Quota) {
			k.holding, k.held, d.Allowed = true, t, false
		} else if t-k.last >= v.interval {
			k.count = 0
		}
		k.last = t
		k.count++
	}
	if !d.Allowed {
		d.Status = http.StatusForbidden
		d.RetryAfter = time.Duration(v.block) * time.Second // what a key that sent nothing more would wait, at most
	}
	return d
}

// npmLimiter is the npm package limiter 4.1's RateLimiter with
// fireImmediately (RateLimiter.ts tryRemoveTokens, TokenBucket.ts drip) on
// a millisecond clock, one per key made at its first request: a request
// first opens a new window when the current one (from the key's first
// request, or the window's opening request) is Window or more old; it is
// refused when Quota were taken in the window already, else when the
// bucket, filled at Quota/Window a millisecond since its last drip (up to
// Quota, full when made), holds less than one token; else it takes one
// and counts in the window. A refused request takes nothing. It answers
// no header of its own: the app sets Retry-After (Config.RetryAfter).
type npmLimiter struct {
	p    Policy
	keys map[string]*npmKey
}

type npmKey struct {
	content          float64 // tokens
	lastDrip, window int64   // ms
	taken            int
}

func (n *npmLimiter) Policy() Policy { return n.p }
func (n *npmLimiter) Keys() int      { return len(n.keys) }

func (n *npmLimiter) SetPolicy(p Policy) (err error) {
	n.p, err = p.checked()
	return err
}

func (n *npmLimiter) Decide(key string, now time.Time) Decision {
	ms := floorDiv(now.UnixNano(), int64(time.Millisecond))
	w := n.p.Window.Milliseconds()
	q := float64(n.p.Quota)
	k := n.keys[key]
	if k == nil {
		k = &npmKey{content: q, lastDrip: ms, window: ms}
		n.keys[key] = k
	}
	d := Decision{Limit: n.p.Quota, Window: n.p.Window}
	if ms < k.window || ms-k.window >= w {
		k.window, k.taken = ms, 0
	}
	if k.taken < n.p.Quota {
		k.content = min(k.content+float64(max(ms-k.lastDrip, 0))*q/float64(w), q)
		k.lastDrip = ms
		if k.content >= 1 {
			k.content--
			k.taken++
			d.Allowed = true
		}
	}
	if !d.Allowed {
		// What a key that sent nothing more would wait: the window's
		// end, or the next whole token, whichever is later.
		wait := time.Duration(max(k.window+w-ms, 0)) * time.Millisecond
		if k.taken < n.p.Quota {
			wait = time.Duration(math.Ceil((1-k.content)*float64(w)/q)) * time.Millisecond
		}
		d.RetryAfter = wait
	}
	return d
}
