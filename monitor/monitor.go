package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/verdict"
)

// Sources is what a Monitor observes and acts through. Every field is
// optional: what is missing is neither shown nor done.
type Sources struct {
	// Limiter's snapshots show learned capacities, lanes, bans and the
	// learner's change records (a *limit.Limiter).
	Limiter interface {
		Snapshot(now time.Time) limit.Snapshot
	}
	// Tally is subscribed to (every request's Event) and read for totals.
	Tally *metrics.Tally
	// Counts reads the frontier's counts (frontier.Frontier.Counts), at
	// most every CountsEvery.
	Counts func(ctx context.Context) (frontier.Counts, error)
	// CountsEvery spaces the reads of Counts where one is costly (a
	// Redis frontier's read is a round trip per host); 0 reads them at
	// every Tick, for a frontier that keeps its counts at hand (SQLite,
	// memory): read every 5 s, the dashboard's URL counts lagged its
	// request counts by up to that.
	CountsEvery time.Duration
	// Waiting lists the hosts whose URLs are parked because they must wait
	// beyond the retry policy's MaxWait (fetch.Core.Waiting).
	Waiting func(now time.Time) []fetch.HostWait
	// Park parks a host's jobs durably until a time (fetch.Core.ParkHost):
	// what an open breaker does.
	Park func(ctx context.Context, host string, until time.Time, why string) (int, error)
	// Quarantine holds one exit back from one host until a time
	// (limit.Limiter.Quarantine): what a bad reputation leads to.
	Quarantine func(host, exit string, until time.Time, why string, now time.Time) bool
}

// Monitor watches one crawl (see the package doc for its rules). It is safe
// for concurrent use. Attach its sources, wrap the engine's limiter with
// Gate, then call Tick at a steady pace (Run does, in real time).
type Monitor struct {
	// ended is when the crawl ended (End); zero while it runs.
	ended time.Time
	cfg   Config
	log   *slog.Logger
	// open counts hosts whose breaker is not closed: while it is zero the
	// Gate passes every call straight through.
	open atomic.Int32

	mu      sync.Mutex
	src     Sources
	started time.Time
	hosts   map[string]*hostMon
	lanes   map[laneKey]*laneMon
	ev      events
	spike   bool
	parks   []parkOrder
	// counts is the frontier's latest counts, read every CountsEvery.
	counts   frontier.Counts
	countsAt time.Time
	parkedBy map[string]int64 // parks by reason class (ParkCounter)
	status   Status
}

type parkOrder struct {
	host  string
	until time.Time
	why   string
}

// hostMon is what the monitor keeps about one host.
type hostMon struct {
	name    string
	win     window
	last    time.Time // its latest response
	seen    time.Time // the last tick that found it in the limiter
	total   int64     // responses seen
	over    bool      // over budget at the last tick
	ratio   float64   // 429 ratio over the window at the last tick, exits held back left out
	req     int       // responses within the window at the last tick, all of them
	overAt  time.Time // start of the episode over budget; zero: within
	underAt time.Time // within budget again since, during an episode
	alerted bool
	br      breaker

	// Retry-After: the host's recent values (not those of a jump).
	ra       [16]time.Duration
	raN      int
	jumped   bool
	jumpBase time.Duration
	jumpAt   time.Time

	// peaks holds the learned capacity per lane (perLane), so that exits
	// given to another worker of a fleet, or taken from it, are no fall:
	// a worker that joined a distributed crawl took 7 of the first
	// worker's 10 exits, and the first warned of a capacity down 68%.
	// fallPeak is the peak per lane a fall was measured from.
	peaks    peaks
	capacity float64 // learned, at the last tick
	lanes    int     // what capacity is the sum of: the host's lanes, or 1 for its own rate
	sendRate float64
	falling  bool
	fallPeak float64

	hist *history // kept for the busiest hosts only
}

// New validates cfg once and returns a Monitor.
func New(cfg Config) (*Monitor, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Monitor{
		cfg:      c,
		log:      c.Logger,
		hosts:    map[string]*hostMon{},
		lanes:    map[laneKey]*laneMon{},
		parkedBy: map[string]int64{},
	}, nil
}

// Config returns the monitor's configuration with every default filled in.
func (m *Monitor) Config() Config { return m.cfg }

// Attach sets what the monitor observes and acts through, and subscribes
// it to src.Tally. Call it once, before the crawl starts.
func (m *Monitor) Attach(src Sources) {
	m.mu.Lock()
	m.src = src
	m.mu.Unlock()
	if src.Tally != nil {
		src.Tally.Subscribe(m.Record)
	}
}

func (m *Monitor) hostLocked(name string) *hostMon {
	h := m.hosts[name]
	if h == nil {
		h = &hostMon{name: name, win: newWindow(m.cfg.Window), peaks: newPeaks(m.cfg.FallSpan)}
		m.hosts[name] = h
	}
	return h
}

// Record takes one finished request (a Tally subscription calls it). It is
// quick: the rules run in Tick, except the Retry-After jump, which is
// judged on each value.
func (m *Monitor) Record(e metrics.Event) {
	if e.Host == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.hostLocked(e.Host)
	h.win.add(e.At, e.Status == 429)
	h.last = e.At
	h.total++
	if e.Exit != "" {
		// Lanes are followed from their first 429 on: what they send
		// next tells whether they draw more than their peers.
		l := m.lanes[laneKey{e.Host, e.Exit}]
		if l == nil && e.Status == 429 {
			l = m.laneLocked(e.Host, e.Exit)
		}
		if l != nil {
			l.count(e.At, e.Status == 429, m.cfg.Window)
		}
	}
	if e.HasRetryAfter && (e.Verdict == verdict.Throttled || e.Verdict == verdict.Busy) {
		m.retryAfterLocked(h, e.RetryAfter, e.At)
	}
}

// retryAfterLocked judges one Retry-After against the host's usual ones.
func (m *Monitor) retryAfterLocked(h *hostMon, ra time.Duration, at time.Time) {
	n := min(h.raN, len(h.ra))
	if h.jumped {
		if ra <= 2*h.jumpBase {
			h.jumped = false
			m.emitLocked(Event{At: at, Kind: KindRetryAfterBack, Level: "info", Host: h.name, Value: ra.Seconds(),
				Message: fmt.Sprintf("Retry-After back to %v (usual %v)", ra, h.jumpBase)})
		} else {
			return // the jump's values do not become the usual
		}
	}
	if n >= 3 {
		vals := slices.Clone(h.ra[:n])
		slices.Sort(vals)
		base := vals[n/2]
		if float64(ra) >= m.cfg.JumpFactor*float64(base) && ra >= m.cfg.JumpMin {
			h.jumped, h.jumpBase, h.jumpAt = true, base, at
			m.emitLocked(Event{At: at, Kind: KindRetryAfterJump, Level: "warn", Host: h.name, Value: ra.Seconds(),
				Message: fmt.Sprintf("Retry-After jumped to %v from a usual %v: a burst limit became a longer quota", ra, base)})
			return
		}
	}
	h.ra[h.raN%len(h.ra)] = ra
	h.raN++
}

// Tick evaluates every rule at now, acts (parks, quarantines) and rebuilds
// the Status. Call it at a steady pace (Config.Every); Run does.
func (m *Monitor) Tick(ctx context.Context, now time.Time) {
	m.mu.Lock()
	src := m.src
	readCounts := src.Counts != nil && (m.countsAt.IsZero() || now.Sub(m.countsAt) >= src.CountsEvery || now.Before(m.countsAt))
	m.mu.Unlock()

	var snap limit.Snapshot
	if src.Limiter != nil {
		snap = src.Limiter.Snapshot(now)
	}
	var counts frontier.Counts
	var countsErr error
	if readCounts {
		counts, countsErr = src.Counts(ctx)
	}
	var waiting []fetch.HostWait
	if src.Waiting != nil {
		waiting = src.Waiting(now)
	}
	var tally *metrics.Counters
	if src.Tally != nil {
		c := src.Tally.Total()
		tally = &c
	}

	m.mu.Lock()
	if m.started.IsZero() {
		m.started = now
		if src.Tally != nil {
			m.started = src.Tally.Start()
		}
	}
	if readCounts && countsErr == nil {
		m.counts, m.countsAt = counts, now
	}
	m.hostsLocked(now, snap)
	m.spikeLocked(now)
	quars := m.reputationLocked(now, snap)
	parks := m.parks
	m.parks = nil
	m.statusLocked(now, snap, waiting, tally)
	m.mu.Unlock()

	if countsErr != nil {
		m.log.Warn("monitor: frontier counts", "err", countsErr)
	}
	for _, p := range parks {
		if src.Park == nil {
			continue
		}
		if _, err := src.Park(ctx, p.host, p.until, p.why); err != nil {
			m.log.Warn("monitor: park", "host", p.host, "err", err)
		}
	}
	for _, q := range quars {
		if src.Quarantine != nil {
			src.Quarantine(q.host, q.exit, q.until, q.why, now)
		}
	}
}

// Run calls Tick every Config.Every until ctx ends, then returns nil.
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Every)
	defer t.Stop()
	m.Tick(ctx, time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			m.Tick(ctx, now)
		}
	}
}

// capacity is a host's learned rate in requests per second: its own rate
// when it governs (a site-wide limit), else the sum of its lanes', under
// the politeness ceiling; and how many lanes it is the sum of (1 for its
// own rate).
func capacity(hs limit.HostSnapshot) (float64, int) {
	c, n := hs.Rate.Hz(), 1
	if c == 0 {
		for _, l := range hs.Lanes {
			c += l.Rate.Hz()
		}
		n = max(1, len(hs.Lanes))
	}
	if ceil := hs.Ceiling.Hz(); ceil > 0 {
		c = min(c, ceil)
	}
	return c, n
}

// perLane is h's capacity per lane at the last tick.
func (h *hostMon) perLane() float64 { return h.capacity / float64(max(1, h.lanes)) }

// fellFrom is the capacity h fell from, over the lanes it has now.
func (h *hostMon) fellFrom() float64 { return h.fallPeak * float64(max(1, h.lanes)) }

// hostsLocked runs the per-host rules: budget, alert, breaker, falling
// equilibrium, and the dashboard's history.
func (m *Monitor) hostsLocked(now time.Time, snap limit.Snapshot) {
	cfg := &m.cfg
	for _, hs := range snap.Hosts {
		h := m.hostLocked(hs.Host)
		h.seen = now
		h.capacity, h.lanes = capacity(hs)
		h.sendRate = hs.SendRate.Hz()
		if !hs.Wall.IsZero() {
			// A window's quota found spent: the pace that ran into it
			// was no equilibrium (flask-limiter's bare "3 per
			// second;40 per minute" read 19.4/s, then 6.47/s once the
			// minute was read: the server's limit had not moved).
			h.peaks.reset()
			continue
		}
		m.fallingLocked(h, hs.Phase, now)
	}
	held := m.heldLocked(now)
	for name, h := range m.hosts {
		if h.seen.Before(now) && h.last.Before(now.Add(-2*cfg.Window)) && h.br.state == closed && h.overAt.IsZero() {
			delete(m.hosts, name) // gone from the limiter and idle: nothing to judge
			continue
		}
		req, thr := h.win.sum(now)
		h.req = req
		if c, ok := held[name]; ok {
			req, thr = max(req-c[0], 0), max(thr-c[1], 0)
		}
		h.ratio = 0
		if req > 0 {
			h.ratio = float64(thr) / float64(req)
		}
		m.breakerTickLocked(h, now)
		if h.br.state != closed {
			h.over = false
			continue // judged by its probe; an empty window says nothing
		}
		budget := cfg.budget(name)
		// A window with too few answers to judge (none, or 429s over the
		// budget but fewer than MinThrottled: a host locked out answers a
		// few 429s a minute to a learner that has slowed right down) keeps
		// the host where it stood; it is no sign of recovery.
		over, enough := float64(thr) > budget*float64(req), thr >= cfg.MinThrottled
		if req > 0 && (enough || !over) {
			h.over = over && enough
		}
		switch {
		case h.over:
			if h.overAt.IsZero() {
				h.overAt = now
			}
			h.underAt = time.Time{}
		case !h.overAt.IsZero():
			if h.underAt.IsZero() {
				h.underAt = now
			}
			if now.Sub(h.underAt) >= cfg.Window {
				if h.alerted {
					m.emitLocked(Event{At: now, Kind: KindBudgetOK, Level: "info", Host: name, Value: h.ratio,
						Message: fmt.Sprintf("429s back within budget (%.2f%% over the last %v, budget %.2f%%)", 100*h.ratio, cfg.Window, 100*budget)})
				}
				h.overAt, h.underAt, h.alerted = time.Time{}, time.Time{}, false
			}
		}
		if !h.over {
			continue
		}
		overFor := now.Sub(h.overAt)
		if !h.alerted && overFor >= cfg.AlertAfter {
			h.alerted = true
			m.emitLocked(Event{At: now, Kind: KindOverBudget, Level: "warn", Host: name, Value: h.ratio,
				Message: fmt.Sprintf("429s over budget for %v: %.1f%% of %d responses over the last %v, budget %.2f%%", overFor.Round(time.Second), 100*h.ratio, req, cfg.Window, 100*budget)})
		}
		if cfg.BreakAfter > 0 && overFor >= cfg.BreakAfter {
			m.openLocked(h, now, fmt.Sprintf("429s over budget for %v (%.1f%%, budget %.2f%%)", overFor.Round(time.Second), 100*h.ratio, 100*budget))
		}
	}
	m.historyLocked(now)
}

// fallingLocked is the falling-equilibrium rule on one host's capacity. An
// equilibrium is a capacity the learner settled at (phase settled, declared
// or shared): the capacities it passes through while it searches (a slow
// start overshoots) are not one, but a fall from an equilibrium shows in
// any phase.
func (m *Monitor) fallingLocked(h *hostMon, phase string, now time.Time) {
	cfg := &m.cfg
	if h.capacity <= 0 {
		return
	}
	c := h.perLane()
	// No equilibrium either while the host answers nothing but 429s or
	// is over its budget (as of the last tick): a host that never
	// answered 200 became "shared" at its first 429s, and the first
	// guess was then taken for an equilibrium that fell (a warning on
	// each of 1,000 hosts that only ever refused).
	req, thr := h.win.sum(now)
	proven := !h.over && (req == 0 || thr < req)
	switch phase {
	case "settled", "declared", "shared":
		if proven {
			h.peaks.add(now, c)
		}
	}
	peak, _ := h.peaks.peak(now)
	switch {
	case !h.falling && c <= (1-cfg.FallShare)*peak:
		h.falling, h.fallPeak = true, peak
		m.emitLocked(Event{At: now, Kind: KindFalling, Level: "warn", Host: h.name, Value: h.capacity,
			Message: fmt.Sprintf("falling equilibrium: learned capacity %s, down %.0f%% from %s within %v", perSecond(h.capacity), 100*(1-c/peak), perSecond(h.fellFrom()), cfg.FallSpan)})
	case h.falling && c >= 0.9*h.fallPeak:
		h.falling = false
		m.emitLocked(Event{At: now, Kind: KindFallingOver, Level: "info", Host: h.name, Value: h.capacity,
			Message: fmt.Sprintf("learned capacity back to %s (was %s before it fell)", perSecond(h.capacity), perSecond(h.fellFrom()))})
	case h.falling && c > (1-cfg.FallShare)*peak:
		h.falling = false
		m.emitLocked(Event{At: now, Kind: KindFallingOver, Level: "info", Host: h.name, Value: h.capacity,
			Message: fmt.Sprintf("learned capacity steady at %s, lower than the %s before it fell", perSecond(h.capacity), perSecond(h.fellFrom()))})
	}
}

// spikeLocked is the spike rule: most hosts that answer are over budget at
// once.
func (m *Monitor) spikeLocked(now time.Time) {
	cfg := &m.cfg
	active, over := 0, 0
	for _, h := range m.hosts {
		switch {
		case h.br.state != closed: // parked for being over budget
			active++
			over++
		case h.req > 0 || h.over: // over with a window too sparse to judge: still over
			active++
			if h.over {
				over++
			}
		}
	}
	share := 0.0
	if active > 0 {
		share = float64(over) / float64(active)
	}
	switch {
	case !m.spike && over >= cfg.SpikeMinHosts && share >= cfg.SpikeShare:
		m.spike = true
		m.emitLocked(Event{At: now, Kind: KindSpike, Level: "warn", Value: share,
			Message: fmt.Sprintf("429s over budget on %d of %d hosts at once: most likely a change on our side (concurrency, exits, a deploy), not the sites'", over, active)})
	case m.spike && (over < cfg.SpikeMinHosts || share < cfg.SpikeShare/2):
		m.spike = false
		m.emitLocked(Event{At: now, Kind: KindSpikeOver, Level: "info", Value: share,
			Message: fmt.Sprintf("the spike is over: %d of %d hosts over budget", over, active)})
	}
}

func perSecond(hz float64) string {
	if hz < 1 {
		return fmt.Sprintf("%.3g/min", hz*60)
	}
	return fmt.Sprintf("%.3g/s", hz)
}
