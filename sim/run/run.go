// Package run drives the production fetch engine against simulated sites and
// exit pools, for every strategy of sim/strategy, and measures how each one
// uses what the server allows.
//
// Two modes run the same fetch.Core and the same limiter code:
//
//   - Virtual: a discrete-event loop in virtual time. Attempts the Core
//     dispatches go through an exits.Pool to server.Site.Handle with the
//     exit's IP as the key; each response completes at send time plus the
//     site's drawn latency. No goroutines, no clock: a run is a pure
//     function of its Config (seeded), and hours of traffic take seconds.
//   - Real: the site serves HTTP on a loopback listener, each exit is a
//     single-exit proxy bound to its own 127.0.0.x source address, and
//     fetch.Engine crawls through them with real sockets and real time.
//
// Matrix runs scenarios × strategies in virtual time; Markdown and SVG
// render the results.
package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sort"
	"strconv"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/sim/exits"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// Config describes one virtual-time run: one strategy on one scenario. The
// zero value of each optional field is its documented default.
type Config struct {
	// Scenario is the simulated site. Required (a server.Scenarios entry).
	Scenario server.Scenario
	// Strategy is the limiter under test. Required.
	Strategy strategy.Spec
	// Exits is the pool size. Default 20.
	Exits int
	// URLs is the size of the fixed URL set. Default: what a perfect client
	// fetches in 10 minutes at the scenario's allowed rate (at least 100).
	URLs int
	// Seed makes the run repeatable. Default 1.
	Seed uint64
	// Warmup is the "first window" excluded from the steady-state figures:
	// the limiter's learning window (the article's buckets are per minute).
	// Default 60 s.
	Warmup time.Duration
	// Bucket is the timeline resolution. Default 1 s.
	Bucket time.Duration
	// MaxTime stops the run after this much virtual time, with whatever is
	// unfinished counted as such. Default 24 h.
	MaxTime time.Duration
	// Concurrency overrides the strategy's Core concurrency when > 0, for
	// large pools (it also sizes exitgate's in-flight caps).
	Concurrency int
	// SessionsPerExit is how many sticky sessions per exit a
	// session-capable strategy opens on a rotating gateway. Default 4 for
	// strategies that resolve exit IPs, 1 otherwise (the article's code
	// opens one session per exit).
	SessionsPerExit int
	// Start is virtual time zero. Default 2026-01-02T00:00:00Z plus the
	// scenario's StartPhase.
	Start time.Time
	// Duration, when set, stops the run after this much virtual time and
	// measures exactly that span (the acceptance check runs 120 s), or up
	// to the last response if the URL set is done sooner; zero runs until
	// the URL set is done (or MaxTime) and measures to the last response.
	Duration time.Duration
	// Logger receives the strategy's change records (exitgate's, at debug
	// level: why a lane sped up or slowed down), stamped in virtual time
	// by the limiter. nil: discarded.
	Logger *slog.Logger
	// Watch, when set, watches the run (see Watcher): the run then keeps
	// a metrics.Tally for it. WatchEvery is its tick; default 1 s.
	Watch      Watcher
	WatchEvery time.Duration
}

// Errors a run returns.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("invalid run config")
	// ErrStalled: jobs were due but the limiter refused them without a time
	// to try again and nothing was in flight to wake the engine.
	ErrStalled = errors.New("run stalled")
)

// DefaultWarmup is Config.Warmup's default.
const DefaultWarmup = 60 * time.Second

func (c Config) withDefaults() (Config, error) {
	if c.Scenario.Name == "" {
		return c, fmt.Errorf("%w: no scenario", ErrConfig)
	}
	if c.Strategy.New == nil {
		return c, fmt.Errorf("%w: no strategy", ErrConfig)
	}
	if c.Exits == 0 {
		c.Exits = 20
	}
	if c.Exits < 0 || c.URLs < 0 || c.Concurrency < 0 || c.SessionsPerExit < 0 || c.Duration < 0 {
		return c, fmt.Errorf("%w: negative size", ErrConfig)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	if c.Bucket <= 0 {
		c.Bucket = time.Second
	}
	if c.MaxTime <= 0 {
		c.MaxTime = 24 * time.Hour
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).Add(c.Scenario.StartPhase)
	}
	if c.SessionsPerExit == 0 {
		c.SessionsPerExit = 1
		if c.Strategy.ResolveIPs {
			c.SessionsPerExit = 4
		}
	}
	return c, nil
}

// Keys is the number of distinct limiter keys a client with exits exits
// presents to a site of this scenario: one per exit when it keys on the IP,
// one (the shared credential or the site) otherwise.
func Keys(s server.Scenario, exits int) int {
	if s.Config.Key.By == server.KeyIP {
		return exits
	}
	return 1
}

// DefaultURLs is the URL set a perfect client fetches in 10 minutes (at
// least 100 per host), or the scenario's own URL count (a short crawl).
func DefaultURLs(s server.Scenario, exits int) int {
	hs, err := hostsFor(s, exits, 1, 0)
	if err != nil {
		return 100
	}
	n := 0
	for _, h := range hs {
		n += h.urls
	}
	return n
}

// proxyUser is the one proxy credential every simulated client uses.
const proxyUser = "user"

// SiteHost is the host of the simulated site's URLs in virtual runs.
const SiteHost = "site.test"

// route says how one limiter exit key reaches the site.
type route struct {
	exit     string   // pinned pool exit ID; empty: by session or rotating
	sessions []string // sticky sessions behind the key, used round-robin
	next     int
}

// Virtual runs cfg in virtual time and returns its measures.
func Virtual(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	sc := cfg.Scenario
	hosts, err := hostsFor(sc, cfg.Exits, cfg.Seed, cfg.URLs)
	if err != nil {
		return Result{}, err
	}
	pool, err := newPool(cfg)
	if err != nil {
		return Result{}, err
	}
	routes, keys := routesFor(cfg, pool)

	conc := cfg.Strategy.Concurrency
	if cfg.Concurrency > 0 {
		conc = cfg.Concurrency
	}
	// The rate an operator would type: the strictest host's.
	rate := hosts[0].site.Policy().Rate()
	for _, h := range hosts[1:] {
		rate = min(rate, h.site.Policy().Rate())
	}
	lim, err := cfg.Strategy.New(strategy.Env{
		Exits:    keys,
		Rate:     rate,
		InFlight: cfg.Concurrency,
		Rand:     rand.New(rand.NewPCG(cfg.Seed, 3)),
		Logger:   cfg.Logger,
	})
	if err != nil {
		return Result{}, fmt.Errorf("strategy %s: %w", cfg.Strategy.Name, err)
	}
	fr, err := memory.New(memory.Config{})
	if err != nil {
		return Result{}, err
	}
	defer fr.Close()
	if err := pushHosts(ctx, fr, hosts); err != nil {
		return Result{}, err
	}

	m := newMeter(cfg.Start, cfg.Bucket)
	var tally *metrics.Tally
	engineLim := lim
	if cfg.Watch != nil {
		tally = metrics.NewTally(cfg.Start)
		engineLim = cfg.Watch.Wrap(lim)
	}
	cc := coreConfig(cfg.Strategy, conc, cfg.Seed, m.finished)
	// A forbidden URL is tried through the other exits, as the engine's
	// Core does (NewEngine sets it): without them, every 403 of a
	// limiter's refusal (mod_evasive's) abandoned its URL at once.
	cc.Exits = func() []string { return keys }
	core := fetch.NewCore(cc, fr, engineLim, tally)

	d := &driver{
		core: core, fr: fr, pool: pool, routes: routes, m: m,
		sites: map[string]*server.Site{}, path: sc.Path, wakeLate: sc.WakeLate,
		pathRand: rand.New(rand.NewPCG(cfg.Seed, 5)),
		wakeRand: rand.New(rand.NewPCG(cfg.Seed, 6)),
		sniff:    map[string][]byte{},
	}
	for _, h := range hosts {
		d.sites[h.name] = h.site
	}
	if cfg.Watch != nil {
		d.watcher, d.watchEvery, d.nextWatch = cfg.Watch, cfg.WatchEvery, cfg.Start
		if d.watchEvery <= 0 {
			d.watchEvery = time.Second
		}
		cfg.Watch.Start(Watched{Core: core, Limiter: lim, Tally: tally, Frontier: fr, Start: cfg.Start})
	}
	limitAt := cfg.Start.Add(cfg.MaxTime)
	if cfg.Duration > 0 {
		limitAt = cfg.Start.Add(cfg.Duration)
	}
	end, err := d.loop(ctx, cfg.Start, limitAt)
	if err != nil {
		return Result{}, err
	}
	counts, err := fr.Counts(ctx)
	if err != nil {
		return Result{}, err
	}
	urls := 0
	for _, h := range hosts {
		urls += h.urls
	}
	r := m.result(resultInput{
		scenario: sc, strategy: cfg.Strategy.Name, site: hosts[0].site,
		keys: hosts[0].keys, urls: urls, end: end, counts: counts,
		exits: cfg.Exits,
	})
	// A run stopped at Duration is measured over all of it (time spent
	// waiting counts); one that finished its URLs first, to its end.
	mEnd := end
	if cfg.Duration > 0 && !r.Finished {
		mEnd = limitAt
	}
	settleEnd := mEnd
	if !d.drained.IsZero() && d.drained.Before(mEnd) {
		settleEnd = d.drained
	}
	if err := r.measure(hosts, cfg.Start, mEnd, settleEnd, cfg.Warmup); err != nil {
		return Result{}, err
	}
	return r, nil
}

// newPool builds the run's simulated exits (virtual addresses from
// 10.0.0.1: no sockets are opened).
func newPool(cfg Config) (*exits.Pool, error) {
	return exits.New(exits.Config{Exits: cfg.Exits, FirstIP: netip.AddrFrom4([4]byte{10, 0, 0, 1}), Rand: rand.New(rand.NewPCG(cfg.Seed, 2))})
}

func coreConfig(spec strategy.Spec, conc int, seed uint64, onFinish func(fetch.Finished)) fetch.CoreConfig {
	cc := fetch.CoreConfig{
		Concurrency: conc,
		Retry:       spec.Retry,
		Rand:        rand.New(rand.NewPCG(seed, 4)),
		OnFinish:    onFinish,
	}
	if len(spec.Verdicts) > 0 {
		rules := classify.Rules{Status: spec.Verdicts}
		cc.Verdicts = func(string) classify.Rules { return rules }
	}
	return cc
}

// PageURL is the i-th of n URLs (1-based) of a site's URL set:
// base/p/<i>, zero-padded to n's width so that the set sorts in order.
func PageURL(base string, i, n int) string {
	return fmt.Sprintf("%s/p/%0*d", base, len(strconv.Itoa(n)), i)
}

func pushURLs(ctx context.Context, fr frontier.Frontier, base string, n int) error {
	const batch = 4096
	jobs := make([]frontier.NewJob, 0, batch)
	for i := 1; i <= n; i++ {
		jobs = append(jobs, frontier.NewJob{URL: PageURL(base, i, n)})
		if len(jobs) == batch || i == n {
			if _, err := fr.Push(ctx, jobs); err != nil {
				return fmt.Errorf("push: %w", err)
			}
			jobs = jobs[:0]
		}
	}
	return nil
}

// routesFor decides the exit keys the strategy sees and how each reaches the
// site: pool exits by ID, except behind a rotating gateway, where
// session-capable strategies open sticky sessions (keyed by their resolved
// IP when the strategy resolves identities, as pool.Identity does with an
// echo request) and the others send through the rotating endpoint.
func routesFor(cfg Config, pool *exits.Pool) (map[string]*route, []string) {
	routes := map[string]*route{}
	if cfg.Scenario.Kind != server.Rotating {
		for _, e := range pool.Exits() {
			routes[e.ID] = &route{exit: e.ID}
		}
		return routes, sortedKeys(routes)
	}
	if !cfg.Strategy.Sessions {
		routes["gateway"] = &route{}
		return routes, []string{"gateway"}
	}
	n := cfg.SessionsPerExit * cfg.Exits
	width := len(strconv.Itoa(n))
	for i := 1; i <= n; i++ {
		sess := fmt.Sprintf("s%0*d", width, i)
		key := sess
		if cfg.Strategy.ResolveIPs {
			// One echo request through the session tells its IP.
			ip, err := pool.Route("", sess, cfg.Start)
			if err != nil {
				continue
			}
			key = ip
		}
		r := routes[key]
		if r == nil {
			r = &route{}
			routes[key] = r
		}
		r.sessions = append(r.sessions, sess)
	}
	return routes, sortedKeys(routes)
}

func sortedKeys(m map[string]*route) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// driver is the discrete-event loop of one virtual run.
type driver struct {
	core     *fetch.Core
	fr       frontier.Frontier
	sites    map[string]*server.Site // by URL host
	path     server.Latency          // client -> site one-way delay
	pathRand *rand.Rand
	wakeLate server.Latency // how late the engine wakes for a limiter's time
	wakeRand *rand.Rand
	pool     *exits.Pool
	routes   map[string]*route
	m        *meter
	events   eventHeap
	seq      uint64
	sniff    map[string][]byte // body -> bytes, so responses share them
	// drained is the first instant (checked each virtual second) at which
	// the frontier held no queued or parked job: from then on lanes run
	// out of work, so settling is judged before it.
	drained, checked time.Time
	// watcher is ticked every watchEvery of virtual time (Config.Watch).
	watcher    Watcher
	watchEvery time.Duration
	nextWatch  time.Time
}

// loop runs until nothing is in flight or scheduled, or until limit. It
// returns the instant of the last completion.
func (d *driver) loop(ctx context.Context, start, limit time.Time) (time.Time, error) {
	now, last := start, start
	for iter := 0; ; iter++ {
		if iter&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return last, err
			}
		}
		atts, wake, err := d.core.Dispatch(ctx, now)
		if err != nil {
			return last, err
		}
		for _, a := range atts {
			d.send(a, now)
		}
		if d.drained.IsZero() && now.Sub(d.checked) >= time.Second {
			d.checked = now
			c, err := d.fr.Counts(ctx)
			if err != nil {
				return last, err
			}
			if c.Queued+c.Parked == 0 {
				d.drained = now
			}
		}
		var next time.Time
		if len(d.events) > 0 {
			next = d.events[0].at
		}
		if !wake.IsZero() && d.wakeLate != (server.Latency{}) {
			// A real engine's timer fires a little after the time the
			// limiter asked for.
			wake = wake.Add(d.wakeLate.Draw(d.wakeRand))
		}
		if !wake.IsZero() && (next.IsZero() || wake.Before(next)) {
			next = wake
		}
		if next.IsZero() {
			// Nothing in flight and nothing scheduled: done, unless the
			// limiter refused work without saying when (a stall).
			c, err := d.fr.Counts(ctx)
			if err != nil {
				return last, err
			}
			if n := c.Queued + c.Leased; n > 0 {
				return last, fmt.Errorf("%w at %v: %d jobs due, nothing in flight and no wake time", ErrStalled, now.Sub(start), n)
			}
			return last, nil
		}
		if !next.After(now) {
			if len(atts) > 0 {
				continue // state changed: look again at the same instant
			}
			if len(d.events) == 0 || d.events[0].at.After(now) {
				next = now.Add(time.Millisecond) // nothing moved: step on
			} // else: arrivals or responses are due now
		}
		if next.After(limit) {
			return last, nil
		}
		d.watch(ctx, next)
		now = next
		for len(d.events) > 0 && !d.events[0].at.After(now) {
			ev := d.events.pop()
			if ev.arrive {
				d.arrive(ev)
				continue
			}
			last = ev.at
			d.m.response(ev.resp, ev.at)
			if err := d.core.Complete(ctx, ev.a, ev.resp); err != nil {
				return last, err
			}
		}
	}
}

// send routes one attempt through its exit and schedules its arrival at
// the site after the scenario's path delay (or its failure).
func (d *driver) send(a fetch.Attempt, now time.Time) {
	r := d.routes[a.Ticket.Exit]
	var resp fetch.Response
	switch {
	case r == nil:
		resp = fetch.Response{Err: fmt.Errorf("%w: %q", fetch.ErrNoExit, a.Ticket.Exit), At: now}
	default:
		sess := ""
		if len(r.sessions) > 0 {
			sess = r.sessions[r.next%len(r.sessions)]
			r.next++
		}
		ip, err := d.pool.Route(r.exit, sess, now)
		if err != nil {
			resp = fetch.Response{Err: err, At: now.Add(time.Millisecond)}
			break
		}
		d.seq++
		d.events.push(event{at: now.Add(d.path.Draw(d.pathRand)), seq: d.seq, a: a, arrive: true, ip: ip})
		return
	}
	d.seq++
	d.events.push(event{at: resp.At, seq: d.seq, a: a, resp: resp})
}

// arrive hands an attempt to its host's site at ev.at and schedules the
// response.
func (d *driver) arrive(ev event) {
	site := d.sites[ev.a.Host]
	if site == nil && len(d.sites) == 1 {
		for _, s := range d.sites {
			site = s
		}
	}
	var resp fetch.Response
	if site == nil {
		resp = fetch.Response{Err: fmt.Errorf("no simulated site for host %q", ev.a.Host), At: ev.at}
	} else {
		sr := site.Handle(server.SimRequest{IP: ev.ip, ProxyUser: proxyUser, Now: ev.at})
		body := d.sniff[sr.Body]
		if body == nil {
			body = []byte(sr.Body)
			d.sniff[sr.Body] = body
		}
		// sr.Header is shared and read-only; the Core only reads it.
		resp = fetch.Response{Status: sr.Status, Header: sr.Header, Sniff: body, Bytes: int64(len(body)), At: ev.at.Add(sr.Latency)}
	}
	d.seq++
	d.events.push(event{at: resp.At, seq: d.seq, a: ev.a, resp: resp})
}

// event is one request arriving at its site, or one response due, at at.
type event struct {
	at     time.Time
	seq    uint64 // ties complete in send order
	a      fetch.Attempt
	resp   fetch.Response
	arrive bool   // the request reaches its site (resp not yet known)
	ip     string // the exit IP the site sees, for arrivals
}

type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = event{}
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && s.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
