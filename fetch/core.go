package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/internal/hostname"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/robots"
	"github.com/exitgate/exitgate/verdict"
)

// Limiter is what the engine needs from a limiter: limit.Limiter in
// production, and the baseline strategies in the simulator. Implementations
// must be safe for concurrent use.
type Limiter interface {
	// Acquire decides at now whether a request to host may go, and on which
	// exit. When it may not, it returns ok=false and the earliest time
	// anything could go, holding nothing.
	Acquire(host string, want limit.Want, now time.Time) (t limit.Ticket, ok bool, next time.Time, err error)
	// Done reports the outcome of a request sent on t and releases t.
	Done(t limit.Ticket, o limit.Outcome, now time.Time)
	// Cancel releases t for a request that was never sent.
	Cancel(t limit.Ticket, now time.Time)
}

// FasterReporter is a Limiter whose Done can say that the outcome made the
// host faster (limit.Limiter.DoneFaster): the Core then asks for the host
// again at once instead of holding it until the time Acquire gave at the
// slower pace. Sleeping that out cost the ramp an old interval per
// doubling. With a Limiter that cannot say, the Core waits as told.
type FasterReporter interface {
	DoneFaster(t limit.Ticket, o limit.Outcome, now time.Time) bool
}

// Abandoner is a Limiter that can take back a ticket whose request was sent
// but whose answer will not be heard (limit.Limiter.Abandon): its slots are
// freed and its token stays spent. With a Limiter that cannot, such a
// ticket is canceled (given back as never sent).
type Abandoner interface {
	Abandon(t limit.Ticket, now time.Time)
}

// Abandon gives back t, whose request was sent and whose answer will not be
// heard, through lim's Abandon when it is an Abandoner, else its Cancel.
func Abandon(lim interface {
	Cancel(t limit.Ticket, now time.Time)
}, t limit.Ticket, now time.Time) {
	if a, ok := lim.(Abandoner); ok {
		a.Abandon(t, now)
		return
	}
	lim.Cancel(t, now)
}

// DoneFaster gives t back to lim with its outcome o and reports whether the
// host went faster: through lim's DoneFaster when it is a FasterReporter,
// else through Done (false).
func DoneFaster(lim Limiter, t limit.Ticket, o limit.Outcome, now time.Time) bool {
	if fr, ok := lim.(FasterReporter); ok {
		return fr.DoneFaster(t, o, now)
	}
	lim.Done(t, o, now)
	return false
}

// CoreConfig configures a Core. The zero value of each field is its
// documented default.
type CoreConfig struct {
	// Concurrency caps requests in flight in total. Default 16.
	Concurrency int
	// Retry is the per-URL retry policy.
	Retry RetryPolicy
	// Robots turns on robots.txt: fetched once per host through the
	// limiter like any request, Disallow honoured, Crawl-delay spacing the
	// host's requests. UserAgent picks the robots.txt group.
	Robots    bool
	UserAgent string
	// MaxRedirects bounds the hops followed for one URL. Default 10; each
	// hop goes through the limiter for its own host.
	MaxRedirects int
	// AllowPrivateRedirects follows redirects to loopback, private,
	// link-local and unspecified addresses (and localhost) from any URL. By
	// default such a redirect is followed only when the URL's own host is
	// such an address (the crawl targets that network on purpose); from a
	// public URL it is abandoned, so that a site cannot steer the crawler
	// at the machine's own services or a cloud metadata address. Host names
	// are judged as written, not resolved.
	AllowPrivateRedirects bool
	// LeaseTTL is the frontier's visibility timeout. Jobs buffered for a
	// host that will be blocked for longer than half of it are handed back
	// so the lease cannot expire under them. Default 5m.
	LeaseTTL time.Duration
	// HostKey maps a URL to its limiter host key (for redirect hops; jobs
	// carry their own). Default: the lowercase host with a non-default port.
	HostKey func(*url.URL) string
	// Verdicts tunes classification per host. nil: the defaults.
	Verdicts func(host string) classify.Rules
	// Profile pins ambiguous rate-limit headers per host. nil: guess by
	// magnitude and form.
	Profile func(host string) rlheader.Profile
	// Rand drives retry jitter. nil: seeded from the runtime.
	Rand *rand.Rand
	// Logger receives decisions worth a line. nil: discard.
	Logger *slog.Logger
	// OnFinish, if set, is called (without locks held) for every job that
	// reaches done or abandoned in this run.
	OnFinish func(Finished)
	// Exits returns the exit keys the limiter chooses from, for telling
	// whether another exit is left to try a forbidden URL through. nil:
	// NewEngine sets it from its ExitSet; a Core without one tries a
	// forbidden URL nowhere else.
	Exits func() []string
	// Buffer, if set, bounds how many claimed jobs the Core keeps ready to
	// dispatch (it keeps at most the default, max(64, 4×Concurrency), and
	// at least one). A worker of a distributed crawl sizes it by the exits
	// it owns: the jobs it holds no other worker may take, and one on a
	// single exit held 128 while workers with six sat idle.
	Buffer func() int
}

func (c CoreConfig) withDefaults() CoreConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	c.Retry = c.Retry.withDefaults()
	if c.MaxRedirects <= 0 {
		c.MaxRedirects = 10
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 5 * time.Minute
	}
	if c.HostKey == nil {
		c.HostKey = DefaultHostKey
	}
	if c.Verdicts == nil {
		c.Verdicts = func(string) classify.Rules { return classify.Rules{} }
	}
	if c.Profile == nil {
		c.Profile = func(string) rlheader.Profile { return rlheader.Profile{} }
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c
}

// concurrencyRecheck is the longest wait the limiter reports when only a
// concurrency cap blocks (limit.Config.Recheck defaults to 20ms).
const concurrencyRecheck = 25 * time.Millisecond

// DefaultUserAgent identifies exitgate to servers and robots.txt.
const DefaultUserAgent = "exitgate/0.1 (+https://github.com/exitgate/exitgate)"

// DefaultHostKey is the URL's lowercase host, with the port when it is not
// the scheme's default: an internationalised name in its punycode form, as
// the frontier keys it and the client sends it (internal/hostname; one it
// cannot convert, as given).
//
// An address is keyed as the frontier writes it, however spelt
// (hostname.Address): 127.1, 2130706433 and [::ffff:127.0.0.1] are
// 127.0.0.1, an IPv6 address is in brackets (a --host-rate was bypassed by
// writing the host another way).
func DefaultHostKey(u *url.URL) string {
	name := u.Hostname()
	h, err := hostname.ASCII(name)
	if err != nil {
		h = strings.ToLower(name)
	}
	if a, ok := hostname.Address(h); ok {
		h = a
	} else if t := strings.TrimSuffix(h, "."); t != "" {
		h = t // example.com. is example.com's server
	}
	p := u.Port()
	if n, err := strconv.ParseUint(p, 10, 16); err == nil {
		p = strconv.FormatUint(n, 10) // 080 is 80
	}
	if p == "" || (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		return h
	}
	return h + ":" + p
}

// Attempt is one request the Core decided to send: which URL, through which
// exit (in Ticket), for which job.
type Attempt struct {
	Job    frontier.Job
	URL    string // this hop's URL (the job's, or a redirect target)
	Host   string // limiter host key of URL
	Hops   int    // redirects followed so far
	Ticket limit.Ticket
	SentAt time.Time
	// Robots marks the fetch of Host's robots.txt; Job is zero.
	Robots bool
}

// Response is what came back for an Attempt, as the executor saw it.
type Response struct {
	Status int
	Header http.Header
	// Sniff is the first bytes of the body (up to SniffBytes), for block
	// page detection and robots.txt.
	Sniff    []byte
	Bytes    int64  // body bytes received
	BodyPath string // where the body was stored; empty if not stored
	// Body is the whole body (up to the engine's MaxBodyBytes) when the
	// engine keeps bodies (EngineConfig.KeepBody); nil otherwise.
	Body []byte
	// Truncated: the body went on past the engine's MaxBodyBytes and was
	// cut there.
	Truncated bool
	Err       error // transport error; Status is 0
	// HeaderAt is when the status line and headers came (zero: At).
	HeaderAt time.Time
	// StoreErr is set when the response came but its body could not be
	// stored: the job is queued again uncharged, and Complete returns an
	// error wrapping it so that the engine stops.
	StoreErr *StoreError
	At       time.Time
	// Aborted marks a request cut short by shutdown: the job is handed back
	// uncharged, and the limiter hears nothing from it; its ticket is
	// abandoned (Limiter.Abandon), since it may have left. (Telling
	// whether it had, with a client trace, cost every request six
	// allocations and 525 bytes for what only a stop reads.)
	Aborted bool
	// ViaProxy: the request went whole to an HTTP proxy (Member.ViaProxy),
	// so a 407 is the proxy's refusal (proxy_failure). Otherwise a 407 is
	// the server's answer, a 4xx like any other: a page that answers 407
	// took every exit out of service as a failed proxy.
	ViaProxy bool
	// Unconditional: the request carried no If-None-Match nor
	// If-Modified-Since, so a 304 answers nothing it asked.
	Unconditional bool
}

// SniffBytes is how much of each body the executor keeps for classification.
// robots.txt is kept whole up to robots' own limit.
const SniffBytes = 4 << 10

// Finished describes a job that reached a final state in this run.
type Finished struct {
	Job     frontier.Job // as claimed: Attempts does not count the last one
	Outcome string       // "done" or "abandoned"
	Status  int
	Reason  string
	Exit    string
	// Result is what was recorded for a done job; for an abandoned one, its
	// last attempt's exit, time and size.
	Result frontier.Result
	// URL is the last hop's URL (the job's, or where redirects led; the one
	// robots.txt disallowed), At when its answer came and Header that
	// answer's headers (zero when it ended without a request: disallowed
	// by robots.txt).
	URL    string
	At     time.Time
	Header http.Header
	// Body is the response's body for a done job when the engine keeps
	// bodies (EngineConfig.KeepBody); otherwise nil, and Result.Body is
	// where it was stored, if it was. Job.Header and Job.Meta are the
	// job's own, as pushed.
	Body []byte
}

// Core makes the engine's decisions — which job goes now, on which exit, and
// what each response means for the limiter and the job — without doing any
// I/O of its own beyond the frontier. The live Engine drives it with real
// time and HTTP; the simulator drives the same Core in virtual time. It is
// safe for concurrent use.
type Core struct {
	cfg   CoreConfig
	fr    frontier.Frontier
	watch frontier.LeaseWatcher // fr, when it can tell a lease lost
	lim   Limiter
	tally *metrics.Tally

	mu       sync.Mutex
	hosts    map[string]*hostState
	order    []string // hosts in round-robin order
	cursor   int
	buffered int
	inflight int
	// out holds the attempts in flight (keyOf): an attempt completed
	// twice (or never dispatched) was taken, and the count in flight went
	// below zero, past Concurrency on the next dispatch.
	out   map[outKey]struct{}
	tries map[int64]Tries // uncharged counts, this run only
	// denied lists, per job, the exits that answered it 403 (this run
	// only): it is not sent through them again.
	denied map[int64][]string
	// exits is each exit's health as the responses through it tell it.
	exits   map[string]*exitHealth
	frNext  time.Time // when the frontier may have more due work
	frDirty bool      // jobs went back to the frontier since the last claim
}

type hostState struct {
	queue     []pending
	array     []pending // the array queue lives in, from its start
	notBefore time.Time
	// parkedUntil is when the jobs parked for the host's long wait fall
	// due (parkHostLocked): Waiting lists the host until then, and the
	// log says a wait's parking once.
	parkedUntil time.Time
	// limWait: notBefore is the limiter's next time for the host, which a
	// completion that made the host faster brings forward (FasterReporter).
	limWait bool
	// heldTo is how far the host's held-back time is counted: a wait
	// asked again before its end counts only what it adds.
	heldTo time.Time
	// waitFrom is when the limiter first held the host back since its
	// last send, zero while it sends (a wait asked again and again, each
	// time short, adds up here).
	waitFrom time.Time
	// pushback says what last made the host wait (a 429, a 503, a quota
	// spent), for telling why its URLs are parked.
	pushback string
	inflight int
	// robots: nil until known; robotsBusy while the fetch is in flight.
	robots      *robots.Rules
	robotsBusy  bool
	robotsFails int
	// robotsAt is where robots.txt is asked next when a redirect led
	// there ("" = the host's own), robotsHops how many led there.
	robotsAt   string
	robotsHops int
	robotsDown time.Time // first failure of the current robots.txt outage
	crawlDelay time.Duration
	// stallSaid: a request to the host timed out and the log said so.
	stallSaid bool
	// listed is whether the host is in the round-robin order (pruning
	// drops idle hosts from it but keeps their state).
	listed bool
}

// pushBack queues p. The queue is a slice whose front is cut off as jobs go
// (popFront); when it is full, its jobs move down to the start of its array
// if that has room, so that a steady crawl queues without allocating.
func (h *hostState) pushBack(p pending) {
	if len(h.queue) == cap(h.queue) && len(h.queue) < cap(h.array)/2 {
		n := copy(h.array[:cap(h.array)], h.queue)
		clear(h.array[n:cap(h.array)])
		h.queue = h.array[:n]
	}
	h.queue = append(h.queue, p)
	if cap(h.queue) > cap(h.array) {
		h.array = h.queue[:0]
	}
}

// popFront drops the first queued job.
func (h *hostState) popFront() {
	h.queue[0] = pending{} // let its strings go
	h.queue = h.queue[1:]
}

type pending struct {
	job  frontier.Job
	url  string
	hops int
}

// NewCore returns a Core over a frontier and a limiter, counting into tally.
func NewCore(cfg CoreConfig, fr frontier.Frontier, lim Limiter, tally *metrics.Tally) *Core {
	c := &Core{
		cfg:     cfg.withDefaults(),
		fr:      fr,
		lim:     lim,
		tally:   tally,
		hosts:   map[string]*hostState{},
		out:     map[outKey]struct{}{},
		tries:   map[int64]Tries{},
		denied:  map[int64][]string{},
		exits:   map[string]*exitHealth{},
		frDirty: true,
	}
	c.watch = frontier.AsLeaseWatcher(fr)
	return c
}

// Inflight returns the number of attempts dispatched and not yet completed.
func (c *Core) Inflight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}

// Busy reports whether any attempt is in flight or any job is buffered.
func (c *Core) Busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight > 0 || c.buffered > 0
}

// HandBack returns every buffered job to the frontier, for shutdown. Attempts
// in flight are not touched: Complete settles them.
func (c *Core) HandBack(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for _, host := range c.order {
		if err := c.handBackLocked(ctx, c.hosts[host]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Dispatch returns the attempts that may start at now, and the time at which
// more might (zero when only a completion can change anything). It never
// waits: a host whose lanes are all dry is skipped until its next time.
func (c *Core) Dispatch(ctx context.Context, now time.Time) ([]Attempt, time.Time, error) {
	return c.dispatch(ctx, now, nil)
}

// dispatch is Dispatch appending to out, so that a caller can reuse it.
func (c *Core) dispatch(ctx context.Context, now time.Time, out []Attempt) ([]Attempt, time.Time, error) {
	c.mu.Lock()
	if err := c.refillLocked(ctx, now); err != nil {
		c.mu.Unlock()
		return out, time.Time{}, err
	}
	var finished []Finished
	// Round-robin, one attempt per host per pass, so that no host starves
	// another within one dispatch.
	for progress := true; progress && c.inflight < c.cfg.Concurrency; {
		progress = false
		n := len(c.order)
		for i := 0; i < n && c.inflight < c.cfg.Concurrency; i++ {
			host := c.order[(c.cursor+i)%n]
			a, ok, fin := c.nextLocked(ctx, host, now)
			finished = append(finished, fin...)
			if ok {
				out = append(out, a)
				progress = true
			}
		}
		if n > 0 {
			c.cursor = (c.cursor + 1) % n
		}
	}
	c.pruneLocked()
	wake := c.wakeLocked(now)
	c.mu.Unlock()
	c.finish(finished)
	return out, wake, nil
}

// nextLocked tries to start one attempt for host.
func (c *Core) nextLocked(ctx context.Context, host string, now time.Time) (Attempt, bool, []Finished) {
	h := c.hosts[host]
	if h != nil && c.mustWaitLocked(h, now) {
		return Attempt{}, false, c.parkHostLocked(ctx, host, h, now)
	}
	if h == nil || h.notBefore.After(now) {
		return Attempt{}, false, nil
	}
	var fin []Finished
	if c.cfg.Robots && h.robots == nil {
		if h.robotsBusy || len(h.queue) == 0 {
			return Attempt{}, false, nil
		}
		u, err := url.Parse(h.queue[0].url)
		if err != nil {
			h.robots = robots.AllowAll
		} else {
			t, ok := c.acquireLocked(host, h, limit.Want{}, now)
			if !ok {
				return Attempt{}, false, nil
			}
			h.robotsBusy = true
			robotsURL := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}).String()
			if h.robotsAt != "" {
				robotsURL = h.robotsAt
			}
			return c.startLocked(h, Attempt{URL: robotsURL, Host: host, Ticket: t, Robots: true, SentAt: now, Hops: h.robotsHops}), true, nil
		}
	}
	for len(h.queue) > 0 {
		p := h.queue[0]
		if h.robots != nil && !robotsAllow(h.robots, p.url) {
			h.popFront()
			c.buffered--
			f, final, err := c.settleLocked(ctx, p.job, Fate{Kind: FateAbandon, Reason: "disallowed by robots.txt"}, 0, frontier.Result{})
			if err != nil {
				c.cfg.Logger.Warn("abandon", "url", frontier.Redact(p.url), "err", err)
			}
			if final {
				// The URL robots.txt disallows: a redirect's target, not
				// the job's own (its row named no final URL).
				f.URL = p.url
				fin = append(fin, f)
			}
			continue
		}
		if c.watch != nil && c.watch.LeaseLost(p.job.Lease()) {
			// Buffered while its lease ran out: another worker holds the
			// job now and fetches it. Fetched here too, it was fetched
			// twice.
			h.popFront()
			c.buffered--
			delete(c.tries, p.job.ID) // the job's tries are the other worker's now
			delete(c.denied, p.job.ID)
			c.cfg.Logger.Warn("lease lost: dropped a buffered job another worker holds now", "url", frontier.Redact(p.url))
			continue
		}
		t, ok := c.acquireLocked(host, h, limit.Want{Pin: p.job.Exit, Avoid: c.denied[p.job.ID]}, now)
		if !ok {
			if c.mustWaitLocked(h, now) {
				fin = append(fin, c.parkHostLocked(ctx, host, h, now)...)
			}
			return Attempt{}, false, fin
		}
		h.popFront()
		c.buffered--
		if h.crawlDelay > 0 {
			h.notBefore, h.limWait = now.Add(h.crawlDelay), false
		}
		if c.tally != nil && p.hops == 0 && c.sentBeforeLocked(p.job) {
			// A retry is a request sent again, counted as it goes (it was
			// counted when one was scheduled: a crawl stopped with a retry
			// queued said 1 retry of 1 request).
			c.tally.Retry(host, t.Exit)
		}
		return c.startLocked(h, Attempt{Job: p.job, URL: p.url, Host: host, Hops: p.hops, Ticket: t, SentAt: now}), true, fin
	}
	return Attempt{}, false, fin
}

// sentBeforeLocked reports whether job j was sent before, in this run or
// an earlier one: charged attempts, a status recorded, or this run's
// uncharged tries (a job parked for its host's wait before it was ever
// sent has none of them).
func (c *Core) sentBeforeLocked(j frontier.Job) bool {
	return j.Attempts > 0 || j.Status != 0 || c.tries[j.ID] != (Tries{})
}

func (c *Core) startLocked(h *hostState, a Attempt) Attempt {
	h.waitFrom = time.Time{}
	c.inflight++
	h.inflight++
	c.out[keyOf(a)] = struct{}{}
	return a
}

// outKey is an attempt in flight: its job's, each job having one attempt
// in flight at most, or its host's robots.txt fetch, one at a time. (Not
// the ticket: a Limiter of the caller's own may number them all 0.)
type outKey struct {
	robots string // the host, for its robots.txt
	job    int64
}

func keyOf(a Attempt) outKey {
	if a.Robots {
		return outKey{robots: a.Host}
	}
	return outKey{job: a.Job.ID}
}

// ErrNotInFlight: Complete was given an attempt the Core has no record of
// in flight (completed already, or never dispatched). Nothing was counted.
var ErrNotInFlight = errors.New("fetch: the attempt is not in flight (completed already, or never dispatched)")

// acquireLocked asks the limiter for host; when nothing can go it blocks
// the host until the limiter's next time and counts that as throttled time.
func (c *Core) acquireLocked(host string, h *hostState, want limit.Want, now time.Time) (limit.Ticket, bool) {
	t, ok, next, err := c.lim.Acquire(host, want, now)
	if err != nil {
		c.cfg.Logger.Warn("limiter refused", "host", host, "err", err)
		next = now.Add(time.Second)
		ok = false
	}
	if ok {
		return t, true
	}
	switch wait := next.Sub(now); {
	case wait <= 0:
		// Held by a concurrency cap: a completion will wake us.
		next = time.Time{}
	case wait > concurrencyRecheck && c.tally != nil:
		// Shorter waits are the limiter re-checking a concurrency cap, which
		// is this crawl's own choice, not the server holding it back.
		if from := later(now, h.heldTo); next.After(from) {
			c.tally.HeldBackUntil(host, from, next)
			h.heldTo = next
		}
	}
	h.notBefore, h.limWait = next, !next.IsZero()
	if c.mustWaitLocked(h, now) {
		return limit.Ticket{}, false // its caller parks the host's jobs
	}
	if h.waitFrom.IsZero() {
		h.waitFrom = now
	}
	// Jobs held past half a lease go back to the frontier, for another
	// worker that may send them: a wait that long, or waits asked again
	// and again that added up to it. A limiter that follows another
	// worker's search answers a second at most each time, whatever the
	// wait (it learns of a faster pace only when asked): three workers
	// through Redis held every URL left, two for their lanes' long wait
	// at a pace the leader set too low, and the leader, which would have
	// searched higher, had none to send (TestRedisFaults/KillDuringOutage).
	if !next.IsZero() && max(next.Sub(now), now.Sub(h.waitFrom)) > c.cfg.LeaseTTL/2 {
		if len(h.queue) > 0 {
			c.cfg.Logger.Debug("host held back past half a lease: its buffered jobs go back to the frontier",
				"host", host, "jobs", len(h.queue), "held_since", h.waitFrom, "until", next)
		}
		if err := c.handBackLocked(context.Background(), h); err != nil {
			c.cfg.Logger.Warn("hand back", "host", host, "err", err)
		}
	}
	return limit.Ticket{}, false
}

// mustWaitLocked reports whether host h may not send before a time beyond
// the retry policy's MaxWait: its jobs are then parked until that time
// rather than held.
func (c *Core) mustWaitLocked(h *hostState, now time.Time) bool {
	return h.notBefore.Sub(now) > c.cfg.Retry.MaxWait
}

// waitWhy is why host h waits at now, as far as known: the last pushback
// its answers gave, else its robots.txt's Crawl-delay when that is the
// wait (a Crawl-delay of a day read "the limiter holds it"), else "".
func (h *hostState) waitWhy(now time.Time) string {
	if h.pushback == "" && h.crawlDelay > 0 && h.notBefore.Sub(now) <= h.crawlDelay+time.Second {
		return fmt.Sprintf("robots.txt Crawl-delay %v", h.crawlDelay)
	}
	return h.pushback
}

// parkHostLocked parks every buffered job of a host that must wait beyond
// MaxWait, durably, until the host may send again; the host's other due jobs
// follow as they are claimed. It says so in the log.
func (c *Core) parkHostLocked(ctx context.Context, host string, h *hostState, now time.Time) []Finished {
	if len(h.queue) == 0 {
		return nil
	}
	why := h.waitWhy(now)
	if why == "" {
		why = "the limiter holds it"
	}
	until := h.notBefore.Format(time.RFC3339)
	reason := fmt.Sprintf("host must wait until %s, beyond max wait %s (%s)", until, c.cfg.Retry.MaxWait, why)
	if h.parkedUntil.Equal(h.notBefore) {
		// The same wait, its URLs parked as they are claimed: said once
		// (each claimed batch said it again, 1,000 lines for 1,000 hosts).
		c.cfg.Logger.Debug("host must wait beyond --max-wait: more of its URLs parked", "host", host, "until", until, "urls", len(h.queue))
	} else {
		c.cfg.Logger.Warn("host must wait beyond --max-wait: its URLs are parked", "host", host, "until", until, "why", why, "urls", len(h.queue))
	}
	h.parkedUntil = h.notBefore
	var fin []Finished
	for _, p := range h.queue {
		f, final, err := c.settleLocked(ctx, p.job, Fate{Kind: FatePark, At: h.notBefore, Reason: reason, Tries: c.tries[p.job.ID]}, 0, frontier.Result{})
		if err != nil {
			c.cfg.Logger.Warn("park", "url", frontier.Redact(p.url), "err", err)
		}
		if final {
			fin = append(fin, f)
		}
	}
	c.buffered -= len(h.queue)
	h.queue, h.waitFrom = nil, time.Time{}
	return fin
}

// HostWait is a host that may not send before Until, and why: one whose
// URLs are parked because it must wait beyond the retry policy's MaxWait
// (Waiting), or one a stall line names (Stall.Waits).
type HostWait struct {
	Host  string
	Until time.Time
	Why   string // what made it wait, e.g. "status 429, Retry-After 2h0m0s"
	// Since is when the limiter first held the host back since its last
	// send (a stall line's; zero: not known). Much before Until's wait
	// began, the limiter put the host off again and again.
	Since time.Time
	// Held is how many of the host's URLs this worker holds claimed while
	// it waits (to be parked): the frontier counts them leased.
	Held int
}

// Waiting lists the hosts that, at now, must wait beyond MaxWait, or whose
// URLs parked for such a wait are not yet due, soonest first.
func (c *Core) Waiting(now time.Time) []HostWait {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []HostWait
	for host, h := range c.hosts {
		// Listed while its parked URLs wait too, not only while its wait
		// is beyond MaxWait: a host parked for 6 minutes was said for its
		// first and then shown as a bare count for 5.
		if c.mustWaitLocked(h, now) || h.parkedUntil.After(now) {
			out = append(out, HostWait{Host: host, Until: later(h.notBefore, h.parkedUntil), Why: h.waitWhy(now), Held: len(h.queue)})
		}
	}
	slices.SortFunc(out, func(a, b HostWait) int { return a.Until.Compare(b.Until) })
	return out
}

// handBackLocked returns a host's buffered jobs to the frontier: at shutdown,
// and when a host is blocked for so long that their leases could expire.
func (c *Core) handBackLocked(ctx context.Context, h *hostState) error {
	var first error
	for _, p := range h.queue {
		err := c.fr.Release(ctx, p.job.Lease())
		if err != nil && first == nil && !errors.Is(err, frontier.ErrLeaseLost) {
			first = fmt.Errorf("release %s: %w", p.job.URL, err)
		}
	}
	c.buffered -= len(h.queue)
	h.queue, h.waitFrom = nil, time.Time{}
	c.frDirty = true
	return first
}

// refillLocked claims due jobs from the frontier into the per-host buffers.
// It claims in batches, when the buffer is down to half its target, when jobs
// went back to the frontier, or when queued work falls due: a claim costs a
// transaction, and on a frontier of a million jobs a few milliseconds.
func (c *Core) refillLocked(ctx context.Context, now time.Time) error {
	target := c.bufferTarget()
	want := target - c.buffered
	if want <= 0 || (c.buffered > target/2 && !c.frDirty && now.Before(c.frNext)) {
		return nil
	}
	// One host may fill half the buffer, so that hosts that can go are not
	// crowded out by one that cannot.
	perHost := max(c.cfg.Concurrency+2, target/2)
	jobs, err := c.fr.Claim(ctx, now, want, func(host string) bool {
		h := c.hosts[host]
		// A host that must wait beyond MaxWait takes its due jobs, to
		// park them.
		return h == nil || (len(h.queue) < perHost && (!h.notBefore.After(now) || c.mustWaitLocked(h, now)))
	})
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	for _, j := range jobs {
		if c.reclaimedLocked(j) {
			continue
		}
		c.enqueueLocked(j.Host, pending{job: j, url: j.URL})
	}
	c.frDirty = false
	if len(jobs) < want {
		ready, err := c.fr.Ready(ctx, now, 1)
		if err != nil {
			return fmt.Errorf("ready: %w", err)
		}
		switch {
		case len(ready.Hosts) > 0:
			// Due work for hosts that are blocked or full: look again when
			// one of them frees up (a completion or its notBefore wakes us).
			c.frNext = now.Add(100 * time.Millisecond)
		case ready.Next.IsZero():
			c.frNext = now.Add(time.Hour)
		default:
			c.frNext = ready.Next
		}
	} else {
		// More may be due: claim again when the buffer is down to half,
		// or after refillEvery (its hosts may be blocked while others
		// have work), not on every dispatch: a claim costs a transaction.
		c.frNext = now.Add(refillEvery)
	}
	return nil
}

// refillEvery is how soon the Core claims again after a claim that got all
// it asked for, while its buffer is more than half full.
const refillEvery = 20 * time.Millisecond

// bufferTarget is how many claimed jobs the Core keeps ready to dispatch.
func (c *Core) bufferTarget() int {
	n := max(64, 4*c.cfg.Concurrency)
	if c.cfg.Buffer != nil {
		n = max(1, min(n, c.cfg.Buffer()))
	}
	return n
}

// reclaimedLocked reports whether job j, just claimed, was buffered already
// (its lease ran out while it waited, and the frontier gave it out again):
// the buffered copy takes the new lease, and j is not queued twice. Queued
// twice, a host held past a lease by a robots.txt outage settled each of its
// URLs twice, and would have fetched each twice. (A first claim, the common
// case, cannot be one: no scan.)
func (c *Core) reclaimedLocked(j frontier.Job) bool {
	h := c.hosts[j.Host]
	if h == nil || j.Seq <= 1 {
		return false
	}
	for i := range h.queue {
		if h.queue[i].job.ID == j.ID {
			h.queue[i].job = j
			return true
		}
	}
	return false
}

func (c *Core) enqueueLocked(host string, p pending) {
	h := c.hosts[host]
	if h == nil {
		h = &hostState{}
		c.hosts[host] = h
	}
	if !h.listed {
		// New, or pruned while idle: a host with work must be in the
		// round-robin, or its jobs sit buffered forever.
		h.listed = true
		c.order = append(c.order, host)
	}
	h.pushBack(p)
	c.buffered++
}

// pruneLocked forgets hosts with nothing buffered or in flight, so that the
// round-robin stays as long as the active host set. Robots rules are kept.
func (c *Core) pruneLocked() {
	if len(c.order) < 64 {
		return
	}
	kept := c.order[:0]
	for _, host := range c.order {
		if h := c.hosts[host]; len(h.queue) > 0 || h.inflight > 0 || h.robotsBusy {
			kept = append(kept, host)
		} else {
			h.listed = false
		}
	}
	c.order = kept
	c.cursor = 0
}

// wakeLocked is the earliest time a blocked host or the frontier may have
// work; zero when only a completion can help.
func (c *Core) wakeLocked(now time.Time) time.Time {
	if c.frDirty {
		// Jobs went back to the frontier (parked, say) since the last
		// claim: what it holds next is known only after claiming again.
		return now
	}
	var wake time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	for _, host := range c.order {
		h := c.hosts[host]
		if len(h.queue) > 0 && h.notBefore.After(now) {
			earlier(h.notBefore)
		}
	}
	earlier(c.frNext)
	return wake
}

// Complete takes the response to an attempt: the limiter learns from it, the
// run's tally counts it, and the job is done, retried, parked or abandoned.
//
// The Core's lock is held only to decide: the response is read before it,
// and the limiter and the frontier are told after it, so that concurrent
// completions reach the frontier together (and share its commits) rather
// than one at a time.
func (c *Core) Complete(ctx context.Context, a Attempt, r Response) error {
	c.mu.Lock()
	k := keyOf(a)
	_, ok := c.out[k]
	delete(c.out, k)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotInFlight, frontier.Redact(a.URL))
	}
	now := r.At
	if r.Aborted {
		c.mu.Lock()
		h := c.hostLocked(a.Host)
		c.inflight--
		h.inflight--
		if a.Robots {
			h.robotsBusy = false
		}
		c.mu.Unlock()
		Abandon(c.lim, a.Ticket, now) // the server may have counted it
		if c.tally != nil && !a.SentAt.IsZero() {
			// Sent, and the server may have seen it: counted (the
			// summary said 1 request where the server saw 11).
			c.tally.Record(metrics.Event{Host: a.Host, Exit: a.Ticket.Exit, Aborted: true, Latency: now.Sub(a.SentAt), At: now})
		}
		if a.Robots {
			return nil
		}
		err := c.fr.Release(ctx, a.Job.Lease())
		c.settled(Fate{Kind: FateRetry, At: now})
		if err != nil {
			return fmt.Errorf("release %s: %w", a.Job.URL, err)
		}
		return nil
	}

	sig := rlheader.Parse(r.Header, now, c.cfg.Profile(a.Host))
	v := interpret(r, sig, c.cfg.Verdicts(a.Host))
	o := outcomeOf(v, sig, a.SentAt, a.URL)
	o.AnsweredAt = r.HeaderAt
	faster := DoneFaster(c.lim, a.Ticket, o, now)
	if c.tally != nil {
		c.tally.Record(metrics.Event{
			Host: a.Host, Exit: a.Ticket.Exit, Status: r.Status, Verdict: v,
			RetryAfter: sig.RetryAfter, HasRetryAfter: sig.HasRetryAfter,
			Latency: now.Sub(a.SentAt), Bytes: r.Bytes, At: now,
		})
	}
	// A redirect's target is resolved before the lock too.
	redirect, refused := v == verdict.OK && isRedirect(r.Status) && !a.Robots, ""
	var next *url.URL
	if redirect {
		next, refused = c.redirectTo(a.URL, a.Job.URL, r.Header.Get("Location"))
	}

	c.mu.Lock()
	h := c.hostLocked(a.Host)
	c.inflight--
	h.inflight--
	if why := pushbackOf(r, v, sig); why != "" {
		h.pushback = why
	}
	if faster && h.limWait && !c.mustWaitLocked(h, now) {
		h.notBefore, h.limWait = time.Time{}, false // ask the limiter again
	}
	// With no exit left that works, stop rather than wait on quarantines:
	// the job is settled as usual (a proxy failure is retried, uncharged).
	noExit := c.exitSeenLocked(a.Ticket.Exit, v, r)

	if a.Robots {
		c.robotsLocked(a, h, v, r, now)
		c.mu.Unlock()
		return noExit
	}
	if r.Err != nil && !h.stallSaid && ErrorClass(r.Err) == "timeout" {
		// Said at the first, once per host: a server that accepts and
		// never answers, or trickles its body, held its URLs for the
		// timeout an attempt, retries and all (minutes at the defaults),
		// while the progress line counted them queued at "ETA ?".
		h.stallSaid = true
		stalled := "no response headers"
		if !r.HeaderAt.IsZero() {
			stalled = fmt.Sprintf("headers came, body still arriving (%d bytes)", r.Bytes)
		}
		c.cfg.Logger.Warn("host does not answer in time: its requests time out and are retried", "host", a.Host,
			"url", frontier.Redact(a.URL), "after", now.Sub(a.SentAt).Round(time.Millisecond), "stalled", stalled)
	}

	// A redirect is followed as a new hop through the limiter of its host;
	// one that cannot be followed is the URL's end, not a page.
	if redirect && refused == "" && a.Hops < c.cfg.MaxRedirects {
		host := c.cfg.HostKey(next)
		c.enqueueFrontLocked(host, pending{job: a.Job, url: next.String(), hops: a.Hops + 1})
		c.mu.Unlock()
		return noExit
	}

	tries := c.tries[a.Job.ID]
	tries.Charged = a.Job.Attempts
	untried := 0
	if v == verdict.Forbidden {
		untried = c.denyLocked(a)
	}
	fate := decide(c.cfg.Retry, tries, attemptResult{
		Method: a.Job.Method, Status: r.Status, Verdict: v,
		RetryAfter: sig.RetryAfter, HasRetryAfter: sig.HasRetryAfter, Err: r.Err,
		Untried: untried,
	}, c.cfg.Rand, now)
	switch {
	case redirect && refused != "":
		fate = Fate{Kind: FateAbandon, Reason: refused}
	case redirect:
		fate = Fate{Kind: FateAbandon, Reason: fmt.Sprintf("too many redirects (%d)", a.Hops)}
	}
	if r.Status == http.StatusNotModified && r.Unconditional && fate.Kind == FateDone {
		// A 304 to a request that asked for nothing conditional has no
		// page to keep: recorded done with an empty body, it read as
		// fetched (a helper's blind run). Abandoned, said why.
		fate = Fate{Kind: FateAbandon, Reason: "304 Not Modified to a request that was not conditional: no page"}
	}
	if r.StoreErr != nil && fate.Kind == FateDone {
		// Never done without its body: queued again, uncharged, for a run
		// that has room.
		fate = Fate{Kind: FateRetry, At: now, Reason: "body not stored", Tries: tries}
	}
	c.noteFateLocked(a.Job, fate)
	c.mu.Unlock()

	result := frontier.Result{
		Status: r.Status, Bytes: r.Bytes, Exit: a.Ticket.Exit,
		Elapsed: now.Sub(a.SentAt), Body: r.BodyPath, Truncated: r.Truncated,
	}
	fin, final, err := c.writeFate(ctx, a.Job, fate, r.Status, result)
	c.settled(fate)
	if final {
		fin.Result, fin.URL, fin.At, fin.Header = result, a.URL, now, r.Header
		if fin.Outcome == "done" {
			fin.Body = r.Body
		}
		c.finish([]Finished{fin})
	}
	if r.StoreErr != nil && err == nil {
		err = fmt.Errorf("%w (%s is queued again; free space or inodes, then run again)", r.StoreErr, a.Job.URL)
	}
	if err == nil {
		err = noExit
	}
	return err
}

// hostLocked returns the state of host, made anew if it is unknown (it
// cannot be pruned while in flight, but stay safe).
func (c *Core) hostLocked(host string) *hostState {
	h := c.hosts[host]
	if h == nil {
		h = &hostState{listed: true}
		c.hosts[host] = h
		c.order = append(c.order, host)
	}
	return h
}

// pushbackOf says in a few words what in a response makes its host wait
// (a 429, a 503, a spent quota), or "".
func pushbackOf(r Response, v verdict.Verdict, sig rlheader.Signal) string {
	var why string
	switch {
	case v == verdict.Throttled || v == verdict.Busy:
		// "last answer": the wait is the limiter's, which may be longer
		// than the answer said (a Retry-After of a second pushed back
		// again waits twice as long each time).
		why = fmt.Sprintf("last answer: status %d", r.Status)
		switch {
		case sig.HasRetryAfter && sig.RetryAfter <= 0:
			// A date already past: "Retry-After 0s" beside a park of
			// minutes read as a contradiction (the wait is the
			// limiter's backoff).
			why += ", a Retry-After already past"
		case sig.HasRetryAfter:
			why += ", " + sayRetryAfter(sig.RetryAfter)
		case sig.HasRemaining && sig.Remaining == 0 && sig.HasReset:
			why += ", rate-limit remaining 0, reset in " + sig.Reset.Round(time.Second).String()
		}
	case sig.HasRemaining && sig.Remaining == 0:
		why = fmt.Sprintf("last answer: status %d, rate-limit remaining 0", r.Status)
		if sig.HasReset {
			why += ", reset in " + sig.Reset.Round(time.Second).String()
		}
	case v == verdict.ProxyFailure:
		why = "exits failing"
	case v == verdict.Banned:
		why = fmt.Sprintf("last answer: status %d, a block page: its lane quarantined", r.Status)
	case v == verdict.Forbidden:
		// A wave of them bans the lanes it came through; the host then
		// waits with nothing said of why but "the limiter holds it".
		why = fmt.Sprintf("last answer: status %d, forbidden: a wave of them quarantines the lanes it came through", r.Status)
	}
	return why
}

// exitHealth is what the responses through one exit say about it.
type exitHealth struct {
	fails  int    // proxy failures in a row
	worked bool   // something other than a proxy failure came through it
	why    string // the last proxy failure
}

// exitSeenLocked records what came through exit and, after a proxy failure,
// returns a *NoExitError if no exit of the pool works any more: each has
// failed, and one that worked earlier in the run has failed twice in a row
// (its quarantine's recovery probe failed too). Nil while any may work, and
// when the pool is unknown (CoreConfig.Exits nil).
func (c *Core) exitSeenLocked(exit string, v verdict.Verdict, r Response) error {
	e := c.exits[exit]
	if e == nil {
		e = &exitHealth{}
		c.exits[exit] = e
	}
	if v != verdict.ProxyFailure {
		if e.fails > 0 {
			c.cfg.Logger.Info("exit works again", "exit", exit, "after proxy failures", e.fails)
		}
		e.fails, e.worked = 0, true
		return nil
	}
	e.fails++
	e.why = describe(attemptResult{Status: r.Status, Verdict: v, Err: r.Err})
	if e.fails == 1 {
		// Said at its first failure in a row: every exit of a pool
		// dying one after another went half a minute without a word,
		// then the run stopped with "no working exit".
		c.cfg.Logger.Warn("exit failing as a proxy: held back while it is checked; its URLs go through other exits, uncharged",
			"exit", exit, "why", e.why, "exits failing", c.failingLocked())
	}
	if c.cfg.Exits == nil {
		return nil
	}
	keys := c.cfg.Exits()
	failed := make([]ExitFailure, 0, len(keys))
	for _, k := range keys {
		e := c.exits[k]
		if e == nil || e.fails == 0 || e.worked && e.fails < 2 {
			return nil
		}
		failed = append(failed, ExitFailure{Exit: k, Failures: e.fails, Why: e.why})
	}
	if len(failed) == 0 {
		return nil
	}
	return &NoExitError{Exits: failed}
}

// failingLocked counts the exits whose last answer was a proxy failure.
func (c *Core) failingLocked() int {
	n := 0
	for _, e := range c.exits {
		if e.fails > 0 {
			n++
		}
	}
	return n
}

// NoExitError says that no exit of the pool works: every one failed as a
// proxy (see Core), so that the run stops instead of waiting on their
// quarantines. The jobs stay queued.
type NoExitError struct {
	Exits []ExitFailure
}

// ExitFailure is one exit's latest proxy failure and how many came in a row.
type ExitFailure struct {
	Exit     string
	Failures int
	Why      string // e.g. "status 407", "proxy_failure: proxy no answer within 5s"
}

func (e *NoExitError) Error() string {
	var b strings.Builder
	b.WriteString("no working exit; every exit fails as a proxy:")
	for _, x := range e.Exits {
		fmt.Fprintf(&b, "\n  %s: %s (%d in a row)", x.Exit, x.Why, x.Failures)
	}
	b.WriteString("\ncheck them with \"exitgate proxies check\"; the URLs stay queued for the next run")
	return b.String()
}

// denyLocked records that a's exit answered a's job 403 and returns how many
// exits of the pool have not: a pinned job has no other.
func (c *Core) denyLocked(a Attempt) int {
	if a.Job.Exit != "" || c.cfg.Exits == nil {
		return 0
	}
	d := c.denied[a.Job.ID]
	if !slices.Contains(d, a.Ticket.Exit) {
		d = append(d, a.Ticket.Exit)
		c.denied[a.Job.ID] = d
	}
	untried := 0
	for _, e := range c.cfg.Exits() {
		if !slices.Contains(d, e) {
			untried++
		}
	}
	return untried
}

// settleLocked records a job's fate in the frontier, all under the lock
// (for the rare fates decided while dispatching). final says the job
// reached done or abandoned, described by the returned Finished.
func (c *Core) settleLocked(ctx context.Context, j frontier.Job, fate Fate, status int, res frontier.Result) (Finished, bool, error) {
	c.noteFateLocked(j, fate)
	f, final, err := c.writeFate(ctx, j, fate, status, res)
	c.settledLocked(fate)
	return f, final, err
}

// noteFateLocked keeps what this run remembers of a job with the fate
// decided for it: its uncharged tries while it comes back, nothing once
// it is final.
func (c *Core) noteFateLocked(j frontier.Job, fate Fate) {
	if fate.Kind == FateRetry || fate.Kind == FatePark {
		c.tries[j.ID] = fate.Tries
		return
	}
	delete(c.tries, j.ID)
	delete(c.denied, j.ID)
}

// settled takes the lock to note that a fate was written: a job that went
// back to the frontier is claimable again, from fate.At.
func (c *Core) settled(fate Fate) {
	if fate.Kind != FateRetry && fate.Kind != FatePark {
		return
	}
	c.mu.Lock()
	c.settledLocked(fate)
	c.mu.Unlock()
}

func (c *Core) settledLocked(fate Fate) {
	if fate.Kind != FateRetry && fate.Kind != FatePark {
		return
	}
	c.frDirty = true
	if fate.At.Before(c.frNext) {
		c.frNext = fate.At
	}
}

// writeFate writes a job's fate to the frontier and counts it; it needs no
// lock. final says the job reached done or abandoned, described by the
// returned Finished.
func (c *Core) writeFate(ctx context.Context, j frontier.Job, fate Fate, status int, res frontier.Result) (Finished, bool, error) {
	l := j.Lease()
	var err error
	switch fate.Kind {
	case FateDone:
		err = c.fr.Complete(ctx, l, res)
	case FateRetry:
		err = c.fr.Retry(ctx, l, fate.At, fate.Charge, status, fate.Reason)
	case FatePark:
		err = c.fr.Park(ctx, l, fate.At, status, fate.Reason)
		c.cfg.Logger.Info("parked", "url", frontier.Redact(j.URL), "until", fate.At, "reason", fate.Reason)
	case FateAbandon:
		err = c.fr.Abandon(ctx, l, status, fate.Reason)
		if c.tally != nil {
			c.tally.Abandon(j.Host, res.Exit, fate.Reason)
		}
	}
	if c.tally != nil {
		switch fate.Kind {
		case FateDone:
			if err == nil {
				c.tally.Done(j.Host, res.Exit)
				if res.Truncated {
					c.tally.Truncated(j.Host, res.Exit)
				}
			}
		}
	}
	if err != nil || fate.Kind == FateRetry || fate.Kind == FatePark {
		return Finished{}, false, wrapSettle(err, j)
	}
	out := "done"
	if fate.Kind == FateAbandon {
		out = "abandoned"
	}
	return Finished{Job: j, Outcome: out, Status: status, Reason: fate.Reason, Exit: res.Exit}, true, nil
}

func wrapSettle(err error, j frontier.Job) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, frontier.ErrLeaseLost) {
		// Another worker owns the job now; its fate is theirs to decide.
		return nil
	}
	return fmt.Errorf("settle %s: %w", j.URL, err)
}

func (c *Core) finish(fs []Finished) {
	if c.cfg.OnFinish == nil {
		return
	}
	for _, f := range fs {
		c.cfg.OnFinish(f)
	}
}

func (c *Core) enqueueFrontLocked(host string, p pending) {
	c.enqueueLocked(host, p)
	h := c.hosts[host]
	copy(h.queue[1:], h.queue[:len(h.queue)-1])
	h.queue[0] = p
}

// robotsLocked takes the answer to a robots.txt fetch (RFC 9309 §2.3.1):
// 2xx is parsed; 4xx means no rules; a 429 or busy answer is asked again when
// the limiter allows. 5xx and network errors make robots.txt unreachable,
// which means "disallow everything" for now, not for good (§2.3.1.4): the
// host's URLs wait, none is abandoned. It is asked again with backoff; once
// the outage has lasted the retry policy's MaxWait, the host's URLs are
// parked for an hour (at least twice MaxWait) and it is asked again then.
func (c *Core) robotsLocked(a Attempt, h *hostState, v verdict.Verdict, r Response, now time.Time) {
	host := a.Host
	h.robotsBusy = false
	if r.Status >= 200 && r.Status < 500 {
		h.robotsDown = time.Time{}
	}
	if v != verdict.Throttled && v != verdict.ProxyFailure && !(r.Status >= 500 || r.Err != nil) {
		h.robotsAt, h.robotsHops = "", 0 // answered (a redirect sets them again below): the host's own robots.txt is asked next time
	}
	switch {
	case isRedirect(r.Status):
		// RFC 9309 2.3.1.2: follow five redirects at least, and read
		// what they reach for the first host; more, or one that cannot
		// be followed, and robots.txt is unavailable, which allows
		// everything. (Each redirect read as unreachable: a robots.txt
		// moved to https, or to www., held the host's URLs for good.)
		next, refused := c.redirectTo(a.URL, a.URL, r.Header.Get("Location"))
		if refused == "" && a.Hops < maxRobotsHops {
			h.robotsAt, h.robotsHops = next.String(), a.Hops+1
			return
		}
		if refused == "" {
			refused = fmt.Sprintf("more than %d redirects", maxRobotsHops)
		}
		c.cfg.Logger.Info("robots.txt unavailable: everything allowed", "host", host, "why", refused)
		h.robots = robots.AllowAll
	case r.Status >= 200 && r.Status < 300:
		h.robots = robots.Parse(bytes.NewReader(r.Sniff), c.cfg.UserAgent)
		h.crawlDelay = h.robots.CrawlDelay()
		if h.crawlDelay > 0 {
			c.cfg.Logger.Info("robots.txt crawl-delay", "host", host, "delay", h.crawlDelay)
		}
	case v == verdict.Throttled || v == verdict.ProxyFailure:
		// Not the site's answer about robots; ask again.
	case r.Status >= 400 && r.Status < 500:
		h.robots = robots.AllowAll
	case v == verdict.Fatal && r.Status == 0:
		// Failed for good before any answer (a name that does not exist,
		// a certificate the client refuses): no robots.txt to read, and
		// none will be. The host's URLs go, each to meet the same failure
		// as its own fate. Read as an outage, a list with one mistyped
		// name waited --max-wait and then parked it an hour, in every run.
		c.cfg.Logger.Info("robots.txt cannot be fetched: its host's URLs are asked themselves", "host", host, "err", r.Err)
		h.robots = robots.AllowAll
	default:
		h.robotsFails++
		if h.robotsDown.IsZero() {
			h.robotsDown = now
		}
		h.pushback = "robots.txt unreachable: " + describe(attemptResult{Status: r.Status, Verdict: v, Err: r.Err})
		if h.robotsFails == 1 {
			// Said at once: a robots.txt that never answers held the
			// host's URLs for --max-wait without a word.
			c.cfg.Logger.Warn("robots.txt unreachable: the host's URLs wait while it is asked again", "host", host,
				"status", r.Status, "err", r.Err, "parked after", c.cfg.Retry.MaxWait)
		}
		if now.Sub(h.robotsDown) < c.cfg.Retry.MaxWait {
			h.notBefore, h.limWait = now.Add(c.cfg.Retry.Backoff.Delay(c.cfg.Rand, h.robotsFails, 0)), false
			if max(h.notBefore.Sub(now), now.Sub(h.robotsDown)) > c.cfg.LeaseTTL/2 && len(h.queue) > 0 {
				// Held past half a lease, as a limiter's wait hands them
				// back: kept, their leases ran out under them and the
				// frontier gave them out again, every URL buffered twice
				// (the park said 40 URLs of 20).
				if err := c.handBackLocked(context.Background(), h); err != nil {
					c.cfg.Logger.Warn("hand back", "host", host, "err", err)
				}
			}
			return
		}
		c.cfg.Logger.Warn("robots.txt unreachable: the host's URLs wait", "host", host, "since", h.robotsDown, "status", r.Status, "err", r.Err)
		h.notBefore, h.limWait = now.Add(max(time.Hour, 2*c.cfg.Retry.MaxWait)), false // beyond MaxWait: parked
		h.robotsFails, h.robotsDown = 0, time.Time{}
	}
}

func robotsAllow(r *robots.Rules, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	return r.Allowed(u.RequestURI())
}

// maxRobotsHops is how many redirects a robots.txt is followed through
// (RFC 9309: at least five).
const maxRobotsHops = 5

// redirectTo is where a redirect from URL from leads (redirectTarget), or
// why it is not followed; a private address is refused unless the crawl
// allows it or origin, the URL whose target it is, is on one itself.
func (c *Core) redirectTo(from, origin, location string) (*url.URL, string) {
	next, refused := redirectTarget(from, location)
	if refused == "" && !c.cfg.AllowPrivateRedirects && isPrivateHost(next.Hostname()) && !isPrivateHost(hostOf(origin)) {
		refused = "redirect to a private address refused: " + clipReason(next.Hostname())
	}
	return next, refused
}

// hostOf is raw's host name ("" if raw does not parse).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// isRedirect reports whether status sends the client elsewhere, with the
// target in Location. (300, 304 and 305 do not: they are kept as answers.)
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// redirectTarget resolves a Location against the URL that answered it, or
// says in a few words why it cannot be followed (the abandon reason).
func redirectTarget(from, location string) (*url.URL, string) {
	if strings.TrimSpace(location) == "" {
		return nil, "redirect without Location"
	}
	base, err := url.Parse(from)
	if err != nil {
		return nil, "unfollowable redirect: bad URL"
	}
	next, err := base.Parse(location)
	switch {
	case err != nil:
		return nil, "unfollowable redirect: bad Location"
	case next.Scheme != "http" && next.Scheme != "https":
		return nil, fmt.Sprintf("unfollowable redirect: scheme %q", clipReason(next.Scheme))
	case next.Host == "":
		return nil, "unfollowable redirect: no host"
	}
	next.Fragment = ""
	return next, ""
}

// isPrivateHost reports whether host (a name or an address, as written in
// a URL) is this machine or a private network: localhost, loopback, private
// (RFC 1918, fc00::/7), shared (100.64.0.0/10), link-local (cloud metadata
// lives at 169.254.169.254) or unspecified.
func isPrivateHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		var ok bool
		if a, ok = NumericIPv4(h); !ok {
			return false
		}
	}
	return privateAddr(a.Unmap())
}

// privateAddr is isPrivateHost's test of an address: a 6to4, NAT64 or
// IPv4-compatible IPv6 address is tested as the IPv4 address it carries
// ([64:ff9b::a9fe:a9fe] reaches 169.254.169.254 through a NAT64 gateway),
// and the IPv4 blocks no public host is in count as private too.
func privateAddr(a netip.Addr) bool {
	if v4, ok := embeddedIPv4(a); ok {
		return privateAddr(v4)
	}
	if a.Is4() {
		for _, p := range reservedV4 {
			if p.Contains(a) {
				return true
			}
		}
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsUnspecified()
}

// reservedV4 are IPv4 blocks no public host is in (RFC 6890): shared
// address space (carrier-grade NAT), IETF protocol assignments,
// benchmarking, "this network" and the reserved class E.
var reservedV4 = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// embeddedIPv4 is the IPv4 address an IPv6 address carries by a standard
// translation: NAT64's well-known prefix 64:ff9b::/96 (and the local-use
// 64:ff9b:1::/48), 6to4's 2002::/16 and the deprecated IPv4-compatible
// ::/96 (not :: and ::1 themselves).
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() || a.Is4In6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case nat64.Contains(a), nat64Local.Contains(a):
		return v4(12), true
	case sixToFour.Contains(a):
		return v4(2), true
	case compatV4.Contains(a) && !a.IsUnspecified() && !a.IsLoopback():
		return v4(12), true
	}
	return netip.Addr{}, false
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	compatV4   = netip.MustParsePrefix("::/96")
)

// NumericIPv4 reads host as an IPv4 address written in any of the forms
// inet_aton accepts (2130706433, 0x7f000001, 127.1, 0177.0.0.1 are all
// 127.0.0.1): internal/hostname.NumericIPv4.
func NumericIPv4(host string) (netip.Addr, bool) { return hostname.NumericIPv4(host) }

// clipReason keeps text from a response short in an abandon reason.
func clipReason(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
