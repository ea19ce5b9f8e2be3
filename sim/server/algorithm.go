package server

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"golang.org/x/time/rate"
)

// Policy is the quota a limiter enforces per key: Quota requests per Window.
// Burst only matters to the bucket algorithms (token bucket, GCRA): it is how
// many requests an idle key may send back to back.
//
// Zero fields mean defaults: Quota 1, Window 1 s, Burst = Quota.
type Policy struct {
	Quota  int
	Window time.Duration
	Burst  int
	// Block is how long BlockBucket refuses a key everything after it
	// ran out, ExpressMemory one that went over its window's limit
	// (rate-limiter-flexible's blockDuration), and HAProxy one whose rate
	// went over (a gpc0 ban in a stick table that expires Block after the
	// key's last request, every refused one too); 0: never. The other
	// algorithms ignore it.
	Block time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.Quota == 0 {
		p.Quota = 1
	}
	if p.Window == 0 {
		p.Window = time.Second
	}
	if p.Burst == 0 {
		p.Burst = p.Quota
	}
	return p
}

// maxQuotaWindow bounds Quota*Window (and Burst*Window) so the integer math in
// the algorithms never overflows int64.
const maxQuotaWindow = math.MaxInt64 / 4

func (p Policy) validate() error {
	switch {
	case p.Quota < 0:
		return fmt.Errorf("policy quota %d is negative", p.Quota)
	case p.Window < 0:
		return fmt.Errorf("policy window %v is negative", p.Window)
	case p.Burst < 0:
		return fmt.Errorf("policy burst %d is negative", p.Burst)
	case p.Block < 0:
		return fmt.Errorf("policy block %v is negative", p.Block)
	}
	d := p.withDefaults()
	if int64(d.Window)/int64(d.Quota) == 0 {
		return fmt.Errorf("policy %d per %v is finer than one request per nanosecond", d.Quota, d.Window)
	}
	if int64(d.Window) > maxQuotaWindow/int64(max(d.Quota, d.Burst)) {
		return fmt.Errorf("policy %d (burst %d) per %v is too large", d.Quota, d.Burst, d.Window)
	}
	return nil
}

// checked validates p and returns it with defaults applied.
func (p Policy) checked() (Policy, error) {
	if err := p.validate(); err != nil {
		return p, err
	}
	return p.withDefaults(), nil
}

// Rate is the long-run allowed rate of one key in requests per second
// (Quota/Window, with defaults applied).
func (p Policy) Rate() float64 {
	d := p.withDefaults()
	return float64(d.Quota) / d.Window.Seconds()
}

// Decision is what a limiter decided for one request and what the server
// would tell the client about it.
type Decision struct {
	// Allowed reports whether the request passes.
	Allowed bool
	// Limit is the quota the client is told (Quota, or Burst for buckets).
	Limit int
	// Window is the period Limit refers to (for RateLimit-Policy w=).
	Window time.Duration
	// Remaining is what is left of Limit after this request.
	Remaining int
	// Reset is the time until the window ends (window algorithms) or until
	// the next token (bucket algorithms).
	Reset time.Duration
	// RetryAfter is zero when allowed; otherwise the time until a request
	// from this key would next be allowed if it sent nothing meanwhile.
	RetryAfter time.Duration
	// Delay is how long the server holds an accepted request before it
	// serves it (nginx limit_req with a burst and no nodelay); zero for
	// the others.
	Delay time.Duration
	// Status is what a refused request is answered with when it is not
	// 429 (Evasive's bare 403); 0: 429.
	Status int
}

// Algorithm is one rate-limiting algorithm holding state per key.
//
// Implementations are not safe for concurrent use (Site serialises them).
// They expect Now values per key to be nondecreasing; an earlier instant is
// treated as the latest one seen. Memory: one entry per distinct key ever
// seen (a sliding log holds up to Quota timestamps per key); nothing is
// evicted, which suits simulations with tens to thousands of keys.
type Algorithm interface {
	// Decide charges one request from key at now.
	Decide(key string, now time.Time) Decision
	// SetPolicy replaces the policy; per-key state carries over.
	SetPolicy(p Policy) error
	// Policy returns the policy in force, defaults applied.
	Policy() Policy
	// Keys returns the number of keys holding state.
	Keys() int
}

// Algo names an algorithm.
type Algo uint8

const (
	// TokenBucket refills Quota tokens per Window up to Burst; a request
	// takes one token.
	TokenBucket Algo = iota
	// FixedWindow allows Quota requests per Window, windows aligned to the
	// Unix epoch.
	FixedWindow
	// SlidingLog allows Quota requests within any Window, keeping a
	// timestamp per allowed request.
	SlidingLog
	// SlidingWindow estimates the last Window's count from the current and
	// previous fixed windows, weighting the previous by its overlap
	// (Cloudflare's approximation), exactly. Rejected requests do not
	// count. go-chi/httprate rounds the estimate: see HTTPRate.
	SlidingWindow
	// GCRA is the generic cell rate algorithm (virtual scheduling):
	// emission interval Window/Quota, tolerance for Burst back-to-back.
	GCRA
	// Penalising is SlidingWindow counting every request, rejected ones too,
	// in the manner of HAProxy's http_req_rate in a stick table: a client
	// that keeps sending while limited stays limited. HAProxy itself aligns
	// periods to a key's first request and truncates its estimate: see
	// HAProxy.
	Penalising
	// Nginx is nginx limit_req with nodelay: a leaky bucket in
	// milli-requests on a millisecond clock (see nginxLeaky). Burst is
	// nginx's burst+1.
	Nginx
	// NginxDelay is nginx limit_req without nodelay: requests within the
	// burst are queued (answered late) instead of served at once.
	NginxDelay
	// HAProxy is a stick table's http_req_rate(Window) checked with
	// `gt Quota` after the request is tracked: a period-weighted estimate
	// on a millisecond clock that counts denied requests (see haproxyRate).
	HAProxy
	// HTTPRate is github.com/go-chi/httprate's sliding-window counter:
	// rounded estimate, epoch-aligned windows, rejections not counted (see
	// httpRate).
	HTTPRate
	// LimitsMoving is Python limits 2.8's moving window (flask-limiter's
	// default storage): a log in which a hit exactly Window old still
	// counts (see movingWindow).
	LimitsMoving
	// LimitsFixed is Python limits 2.8's fixed window: it starts at a key's
	// first hit and counts rejected hits too.
	LimitsFixed
	// XRate is a golang.org/x/time/rate.Limiter per key (Allow).
	XRate
	// ExpressMemory is express-rate-limit 8's MemoryStore: a fixed window
	// per key opened by the key's first request, on a millisecond clock,
	// counting rejected requests too (see expressMemory).
	ExpressMemory
	// Throttled is GCRA as github.com/throttled/throttled v2 reports it:
	// the limit it declares is the bucket's capacity (Burst), and its
	// reset the time until the bucket is full again, not a window's end.
	Throttled
	// BlockBucket is Varnish's vsthrottle (varnish-modules 0.20): a bucket
	// of Quota whole tokens refilled at Quota per Window, a refill adding
	// only whole tokens and a passed request dropping the fraction earned;
	// a key that runs out is refused everything for Policy.Block, and its
	// requests meanwhile still take tokens and restart the refill (see
	// blockBucket).
	BlockBucket
	// QoSEvent is Apache mod_qos's QS_ClientEventLimitCount: a counter per
	// key from the whole second of its first event, reset once the
	// directive's seconds have passed after that second, every request
	// counted and the one that brings it to the directive's count refused:
	// Quota (the count less one) pass per window, and a steady client's
	// windows are a second longer than the directive's, so Policy.Window is
	// that longer window, the directive's seconds plus one (see qosEvent).
	QoSEvent
	// QuietReset is github.com/JGLTechnologies/gin-rate-limit's
	// in-memory store: Quota tokens per key, all of them given back only
	// once a whole Window of seconds has passed since the key's last
	// request let through (each one restarts it), refused requests not
	// counted; its reset is that last request's second plus the window
	// (see quietReset).
	QuietReset
	// Evasive is Apache mod_evasive 1.10's site counter (DOSSiteCount
	// Quota, DOSSiteInterval Window in whole seconds, DOSBlockingPeriod
	// Policy.Block): per key a counter that a request Window or more whole
	// seconds after the key's last one resets, the request that finds it
	// at Quota refused and the key held, every request within Block whole
	// seconds of its last refused one refused too and holding it on.
	// Refused with a bare 403, not a 429 (see evasive).
	Evasive
	// NpmLimiter is the npm package limiter 4.1's RateLimiter with
	// fireImmediately: a token bucket of Quota refilled at Quota per
	// Window on a millisecond clock (fractional tokens), full at the key's
	// first request, and beside it at most Quota taken in a window opened
	// by the first request after the last window ended, refused requests
	// opening it too and taking nothing (see npmLimiter).
	NpmLimiter
)

var algoNames = [...]string{
	TokenBucket:   "token-bucket",
	FixedWindow:   "fixed-window",
	SlidingLog:    "sliding-log",
	SlidingWindow: "sliding-window",
	GCRA:          "gcra",
	Penalising:    "penalising",
	Nginx:         "nginx",
	NginxDelay:    "nginx-delay",
	HAProxy:       "haproxy",
	HTTPRate:      "httprate",
	LimitsMoving:  "limits-moving",
	LimitsFixed:   "limits-fixed",
	XRate:         "xrate",
	ExpressMemory: "express-memory",
	Throttled:     "throttled",
	BlockBucket:   "block-bucket",
	QoSEvent:      "qos-event",
	QuietReset:    "quiet-reset",
	Evasive:       "evasive",
	NpmLimiter:    "npm-limiter",
}

// String returns the kebab-case name used in scenarios and reports.
func (a Algo) String() string {
	if int(a) < len(algoNames) {
		return algoNames[a]
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// ErrUnknownAlgo is returned for an Algo value with no implementation.
var ErrUnknownAlgo = errors.New("unknown algorithm")

// NewAlgorithm returns a fresh algorithm of kind a enforcing p (zero fields
// of p mean defaults).
func NewAlgorithm(a Algo, p Policy) (Algorithm, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	var alg Algorithm
	switch a {
	case TokenBucket:
		alg = &tokenBucket{keys: make(map[string]*tbState)}
	case FixedWindow:
		alg = &fixedWindow{keys: make(map[string]*fwState)}
	case SlidingLog:
		alg = &slidingLog{keys: make(map[string]*slState)}
	case SlidingWindow:
		alg = &slidingWindow{keys: make(map[string]*swState)}
	case GCRA, Throttled:
		alg = &gcra{keys: make(map[string]*int64), full: a == Throttled}
	case Penalising:
		alg = &slidingWindow{keys: make(map[string]*swState), countRejected: true}
	case Nginx, NginxDelay:
		alg = &nginxLeaky{keys: make(map[string]*ngxNode), delay: a == NginxDelay}
	case HAProxy:
		alg = &haproxyRate{keys: make(map[string]*freqCtr)}
	case HTTPRate:
		alg = &httpRate{slidingWindow: slidingWindow{keys: make(map[string]*swState)}}
	case LimitsMoving, LimitsFixed:
		alg = &movingWindow{keys: make(map[string]*mwState), fixed: a == LimitsFixed}
	case XRate:
		alg = &xRate{keys: make(map[string]*rate.Limiter)}
	case ExpressMemory:
		alg = &expressMemory{keys: make(map[string]*emClient)}
	case BlockBucket:
		alg = &blockBucket{keys: make(map[string]*bbState)}
	case QoSEvent:
		alg = &qosEvent{keys: make(map[string]*qosCounter)}
	case QuietReset:
		alg = &quietReset{keys: make(map[string]*quietKey)}
	case Evasive:
		alg = &evasive{keys: make(map[string]*evasiveKey)}
	case NpmLimiter:
		alg = &npmLimiter{keys: make(map[string]*npmKey)}
	default:
		return nil, fmt.Errorf("%w %v", ErrUnknownAlgo, a)
	}
	if err := alg.SetPolicy(p); err != nil {
		return nil, err
	}
	return alg, nil
}

// ---- several limits at once ----

// layered holds each key to every part at once (Config.Also), checked in
// turn: a request one part refuses was charged by the parts before it.
type layered struct{ parts []Algorithm }

// Decide returns the refusing part's decision, or, when every part allows,
// the one with the fewest remaining (what flask-limiter's headers state).
func (l *layered) Decide(key string, now time.Time) Decision {
	var d Decision
	for i, a := range l.parts {
		x := a.Decide(key, now)
		if !x.Allowed {
			return x
		}
		if i == 0 || x.Remaining < d.Remaining {
			d = x
		}
	}
	return d
}

// SetPolicy replaces the first part's policy (New refuses a schedule with
// further limits, so only a caller of the site's algorithm gets here).
func (l *layered) SetPolicy(p Policy) error { return l.parts[0].SetPolicy(p) }

// Policy returns the part with the lowest rate: the one a steady pace
// meets.
func (l *layered) Policy() Policy {
	ps := make([]Policy, len(l.parts))
	for i, a := range l.parts {
		ps[i] = a.Policy()
	}
	return binding(ps[0], ps[1:])
}

// binding is the policy with the lowest rate of p and also, defaults
// applied: the one a steady pace meets.
func binding(p Policy, also []Policy) Policy {
	p = p.withDefaults()
	for _, q := range also {
		if q.Rate() < p.Rate() {
			p = q.withDefaults()
		}
	}
	return p
}

func (l *layered) Keys() int { return l.parts[0].Keys() }

func (l *layered) setUptime(d time.Duration) {
	for _, a := range l.parts {
		if u, ok := a.(interface{ setUptime(time.Duration) }); ok {
			u.setUptime(d)
		}
	}
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// floorDiv returns floor(a/b) for b > 0, also for negative a (instants
// before 1970 in virtual time).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// mulDivCeil returns ceil(a*b/c) for non-negative a, b and positive c,
// saturating at MaxInt64; the product may exceed 64 bits.
func mulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// ---- token bucket ----

// tokenBucket keeps each key's level in units of token·Window-nanoseconds
// (one token = Window), so refill is the exact integer elapsed*Quota.
type tokenBucket struct {
	p        Policy
	w, full  int64 // Window in ns; Burst*Window
	q        int64
	burstWin time.Duration
	keys     map[string]*tbState
}

type tbState struct{ level, last int64 }

func (b *tokenBucket) Policy() Policy { return b.p }
func (b *tokenBucket) Keys() int      { return len(b.keys) }

func (b *tokenBucket) SetPolicy(p Policy) error {
	if err := p.validate(); err != nil {
		return err
	}
	p = p.withDefaults()
	oldW := b.w
	b.p = p
	b.w, b.q = int64(p.Window), int64(p.Quota)
	b.full = int64(p.Burst) * b.w
	b.burstWin = time.Duration(int64(p.Burst) * b.w / b.q)
	for _, s := range b.keys {
		if oldW != b.w && oldW != 0 {
			// Rescale to the new unit once; float precision is ample for
			// a one-off change.
			s.level = int64(float64(s.level) / float64(oldW) * float64(b.w))
		}
		s.level = min(s.level, b.full)
	}
	return nil
}

func (b *tokenBucket) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	s := b.keys[key]
	if s == nil {
		s = &tbState{level: b.full, last: t}
		b.keys[key] = s
	}
	if el := t - s.last; el > 0 {
		if el >= ceilDiv(b.full-s.level, b.q) {
			s.level = b.full
		} else {
			s.level += el * b.q
		}
		s.last = t
	}
	d := Decision{Limit: b.p.Burst, Window: b.burstWin}
	if s.level >= b.w {
		s.level -= b.w
		d.Allowed = true
	}
	rem := s.level / b.w
	d.Remaining = int(rem)
	if s.level < b.full {
		d.Reset = time.Duration(ceilDiv((rem+1)*b.w-s.level, b.q))
	}
	if !d.Allowed {
		d.RetryAfter = d.Reset
	}
	return d
}

// ---- vsthrottle's bucket of whole tokens, with a block ----

// blockBucket follows vmod_vsthrottle.c's is_denied: tokens are a whole
// number; a decision first adds (long)(elapsed/period*limit) since the
// key's last use, capped at the limit; a blocked key's request marks a use
// (so requests closer than a token's time apart refill nothing) and takes
// a token if there is one, and is refused; an unblocked one passes on a
// token and marks a use, and without one is refused, the block starting
// (a refused request marks no use: its elapsed time keeps counting).
type blockBucket struct {
	p    Policy
	keys map[string]*bbState
}

type bbState struct {
	tokens          int64
	lastUsed, block int64
}

func (b *blockBucket) Policy() Policy { return b.p }
func (b *blockBucket) Keys() int      { return len(b.keys) }

func (b *blockBucket) SetPolicy(p Policy) error {
	p, err := p.checked()
	if err != nil {
		return err
	}
	b.p = p
	return nil
}

func (b *blockBucket) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	limit, period := int64(b.p.Quota), int64(b.p.Window)
	s := b.keys[key]
	if s == nil {
		s = &bbState{tokens: limit, lastUsed: t}
		b.keys[key] = s
	}
	if t < s.lastUsed {
		t = s.lastUsed
	}
	s.tokens = min(limit, s.tokens+int64(float64(t-s.lastUsed)/float64(period)*float64(limit)))
	blocked := b.p.Block > 0 && t < s.block
	if blocked {
		s.lastUsed = t
	}
	d := Decision{Limit: b.p.Quota, Window: b.p.Window}
	switch {
	case s.tokens > 0:
		s.tokens--
		s.lastUsed = t
		d.Allowed = !blocked
	case b.p.Block > 0 && !blocked:
		s.block = t + int64(b.p.Block)
	}
	d.Remaining = int(s.tokens)
	token := time.Duration(ceilDiv(period, limit)) // a whole token's time from the last use
	d.Reset = time.Duration(s.lastUsed-t) + token
	if !d.Allowed {
		d.RetryAfter = d.Reset
		if b.p.Block > 0 && t < s.block {
			d.RetryAfter = time.Duration(s.block - t)
		}
	}
	return d
}

// ---- GCRA ----

// gcra stores the theoretical arrival time (TAT) per key.
type gcra struct {
	p        Policy
	t, tau   int64 // emission interval; tolerance (Burst-1)*t
	burstWin time.Duration
	keys     map[string]*int64
	full     bool // Reset is the time until the bucket is full (Throttled)
}

func (g *gcra) Policy() Policy { return g.p }
func (g *gcra) Keys() int      { return len(g.keys) }

func (g *gcra) SetPolicy(p Policy) error {
	if err := p.validate(); err != nil {
		return err
	}
	p = p.withDefaults()
	g.p = p
	g.t = int64(p.Window) / int64(p.Quota)
	g.tau = int64(p.Burst-1) * g.t
	g.burstWin = time.Duration(int64(p.Burst) * g.t)
	return nil
}

func (g *gcra) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	tatp := g.keys[key]
	if tatp == nil {
		tatp = new(int64)
		*tatp = t
		g.keys[key] = tatp
	}
	tat := max(*tatp, t)
	d := Decision{Limit: g.p.Burst, Window: g.burstWin}
	if allowAt := tat - g.tau; t < allowAt {
		d.RetryAfter = time.Duration(allowAt - t)
		d.Reset = d.RetryAfter
		if g.full {
			d.Reset = time.Duration(tat - t)
		}
		return d
	}
	newTAT := tat + g.t
	*tatp = newTAT
	d.Allowed = true
	slack := g.tau + g.t - (newTAT - t) // time credit left, >= 0
	rem := slack / g.t
	d.Remaining = int(rem)
	d.Reset = time.Duration((rem+1)*g.t - slack)
	if g.full {
		d.Reset = time.Duration(newTAT - t)
	}
	return d
}

// ---- fixed window ----

type fixedWindow struct {
	p    Policy
	w, q int64
	keys map[string]*fwState
}

type fwState struct {
	idx   int64
	count int64
}

func (f *fixedWindow) Policy() Policy { return f.p }
func (f *fixedWindow) Keys() int      { return len(f.keys) }

func (f *fixedWindow) SetPolicy(p Policy) error {
	if err := p.validate(); err != nil {
		return err
	}
	f.p = p.withDefaults()
	f.w, f.q = int64(f.p.Window), int64(f.p.Quota)
	return nil
}

func (f *fixedWindow) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	idx := floorDiv(t, f.w)
	s := f.keys[key]
	if s == nil {
		s = &fwState{idx: idx}
		f.keys[key] = s
	}
	if s.idx != idx {
		// A later window starts empty; an earlier instant (out of order)
		// is charged to the window already held.
		if idx > s.idx {
			s.idx, s.count = idx, 0
		}
	}
	d := Decision{Limit: f.p.Quota, Window: f.p.Window}
	if s.count < f.q {
		s.count++
		d.Allowed = true
	}
	d.Remaining = int(f.q - s.count)
	d.Reset = time.Duration(max((s.idx+1)*f.w-t, 0))
	if !d.Allowed {
		d.RetryAfter = d.Reset
	}
	return d
}

// ---- sliding log ----

type slidingLog struct {
	p    Policy
	w    int64
	keys map[string]*slState
}

// slState is a ring of the allowed requests' instants, oldest at head.
type slState struct {
	ring    []int64
	head, n int
}

func (l *slidingLog) Policy() Policy { return l.p }
func (l *slidingLog) Keys() int      { return len(l.keys) }

func (l *slidingLog) SetPolicy(p Policy) error {
	if err := p.validate(); err != nil {
		return err
	}
	p = p.withDefaults()
	if p.Quota != l.p.Quota {
		for _, s := range l.keys {
			s.resize(p.Quota)
		}
	}
	l.p = p
	l.w = int64(p.Window)
	return nil
}

// resize keeps the newest entries that fit in a ring of size q.
func (s *slState) resize(q int) {
	ring := make([]int64, q)
	keep := min(s.n, q)
	for i := range keep {
		ring[i] = s.ring[(s.head+s.n-keep+i)%len(s.ring)]
	}
	s.ring, s.head, s.n = ring, 0, keep
}

func (l *slidingLog) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	s := l.keys[key]
	if s == nil {
		s = &slState{ring: make([]int64, l.p.Quota)}
		l.keys[key] = s
	}
	for s.n > 0 && s.ring[s.head]+l.w <= t {
		s.head = (s.head + 1) % len(s.ring)
		s.n--
	}
	d := Decision{Limit: l.p.Quota, Window: l.p.Window}
	if s.n < len(s.ring) {
		s.ring[(s.head+s.n)%len(s.ring)] = t
		s.n++
		d.Allowed = true
	}
	d.Remaining = len(s.ring) - s.n
	d.Reset = time.Duration(max(s.ring[s.head]+l.w-t, 0))
	if !d.Allowed {
		d.RetryAfter = d.Reset
	}
	return d
}

// ---- sliding window counter (and the penalising variant) ----

type slidingWindow struct {
	p             Policy
	w, q          int64
	countRejected bool
	keys          map[string]*swState
}

type swState struct {
	idx       int64
	prev, cur int64
}

// state returns key's counters moved to window idx, creating them.
func (sw *slidingWindow) state(key string, idx int64) *swState {
	s := sw.keys[key]
	if s == nil {
		s = &swState{idx: idx}
		sw.keys[key] = s
	}
	s.rotate(idx)
	return s
}

// rotate moves the counters to window idx: the current count becomes the
// previous one after one window, and both are forgotten after two. An
// earlier idx (out of order) is charged to the window held.
func (s *swState) rotate(idx int64) {
	switch {
	case idx == s.idx+1:
		s.prev, s.cur, s.idx = s.cur, 0, idx
	case idx > s.idx:
		s.prev, s.cur, s.idx = 0, 0, idx
	}
}

func (sw *slidingWindow) Policy() Policy { return sw.p }
func (sw *slidingWindow) Keys() int      { return len(sw.keys) }

func (sw *slidingWindow) SetPolicy(p Policy) error {
	if err := p.validate(); err != nil {
		return err
	}
	sw.p = p.withDefaults()
	sw.w, sw.q = int64(sw.p.Window), int64(sw.p.Quota)
	return nil
}

// fits reports whether one more request fits when the previous window held
// prev, the current one holds cur and e ns of it have elapsed:
// prev*(w-e)/w + cur + 1 <= q, computed without overflow.
func (sw *slidingWindow) fits(prev, cur, e int64) bool {
	if cur+1 > sw.q {
		return false
	}
	return prev == 0 || sw.w-e <= (sw.q-cur-1)*sw.w/prev
}

// wait returns how long after e (ns into the current window) one more
// request would fit, assuming nothing else arrives.
func (sw *slidingWindow) wait(prev, cur, e int64) int64 {
	if cur+1 <= sw.q {
		if prev == 0 {
			return 0
		}
		if m := (sw.q - cur - 1) * sw.w / prev; m > 0 {
			return max(sw.w-m-e, 0)
		}
	}
	// Next window: cur becomes prev.
	toNext := sw.w - e
	if cur == 0 {
		return toNext
	}
	if m := (sw.q - 1) * sw.w / cur; m > 0 {
		return toNext + max(sw.w-m, 0)
	}
	return toNext + sw.w
}

func (sw *slidingWindow) Decide(key string, now time.Time) Decision {
	t := now.UnixNano()
	idx := floorDiv(t, sw.w)
	s := sw.state(key, idx)
	e := min(max(t-s.idx*sw.w, 0), sw.w-1)
	d := Decision{Limit: sw.p.Quota, Window: sw.p.Window}
	if sw.countRejected {
		// HAProxy tracks the request first, then compares the rate
		// including it against the limit.
		d.Allowed = sw.fits(s.prev, s.cur, e)
		s.cur++
	} else if sw.fits(s.prev, s.cur, e) {
		s.cur++
		d.Allowed = true
	}
	// Remaining = floor(q - cur - prev*(w-e)/w); the weighted part may be
	// huge for a penalised key, so compare before subtracting.
	if pp := mulDivCeil(s.prev, sw.w-e, sw.w); pp < sw.q && s.cur < sw.q-pp {
		d.Remaining = int(sw.q - pp - s.cur)
	}
	d.Reset = time.Duration(sw.w - e)
	if d.Remaining == 0 {
		// A sliding counter has no window end that frees the quota: the
		// previous window's weight decays continuously. What it can say
		// truthfully is when the next request fits, as sliding-window
		// implementations report their reset.
		d.Reset = time.Duration(sw.wait(s.prev, s.cur, e))
	}
	if !d.Allowed {
		d.RetryAfter = time.Duration(sw.wait(s.prev, s.cur, e))
	}
	return d
}
