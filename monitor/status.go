package monitor

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/verdict"
)

// Status is what the dashboard and `exitgate status` show: the crawl's
// totals, its hosts and exits with what the monitor makes of them, what is
// parked and abandoned and why, the learner's recent change records and the
// monitor's recent events. It is plain data, JSON-friendly.
type Status struct {
	At      time.Time `json:"at"`
	Started time.Time `json:"started"`
	// Ended is when the crawl ended (Monitor.End), zero while it runs: the
	// dashboard and metrics stay up after it with --linger, its final
	// counts shown, and said live until then.
	Ended  time.Time `json:"ended,omitzero"`
	Totals Totals    `json:"totals"`
	// Budget is the default 429 budget (hosts list their own).
	Budget float64 `json:"budget"`
	// Spike: most hosts are over budget at once.
	Spike bool         `json:"spike"`
	Hosts []HostStatus `json:"hosts"`
	Exits []ExitStatus `json:"exits"`
	// Parked lists the hosts whose URLs are parked and why: an open
	// breaker, or a wait beyond --max-wait.
	Parked []ParkedHost `json:"parked"`
	// ParkedByReason counts the URLs parked in this run by kind of reason;
	// AbandonedByReason the URLs abandoned, by reason.
	ParkedByReason    map[string]int64 `json:"parked_by_reason"`
	AbandonedByReason map[string]int64 `json:"abandoned_by_reason"`
	// Changes are the learner's latest decisions across hosts, newest
	// first; Events the monitor's, newest first.
	Changes []limit.Change `json:"changes"`
	Events  []Event        `json:"events"`
	// History holds each listed host's recent points, when asked for.
	History []HostHistory `json:"history,omitempty"`
}

// Totals are the crawl's figures as a whole.
type Totals struct {
	Requests  int64   `json:"requests"`
	OK        int64   `json:"ok"`
	Throttled int64   `json:"throttled"`
	Ratio429  float64 `json:"ratio_429"` // over the whole run
	// Window429 is the 429 ratio over all hosts within Config.Window;
	// Rate the responses per second within it.
	Window429 float64 `json:"window_429"`
	Rate      float64 `json:"rate"`
	InFlight  int     `json:"in_flight"`
	URLs      int     `json:"urls"`
	Done      int     `json:"done"`
	NotFound  int     `json:"not_found"` // 404 and 410: not abandoned
	Abandoned int     `json:"abandoned"`
	Queued    int     `json:"queued"`
	Parked    int     `json:"parked"`
}

// HostStatus is one host as the monitor sees it.
type HostStatus struct {
	Host  string `json:"host"`
	Phase string `json:"phase,omitempty"`
	Scope string `json:"scope,omitempty"`
	// Rate is its responses per second within the window; Capacity what
	// the limiter learned it allows (requests per second).
	Rate     float64 `json:"rate"`
	Capacity float64 `json:"capacity"`
	Lanes    int     `json:"lanes"`
	// Ratio429 is its 429 ratio within the window, what its budget is
	// judged on: the responses of exits held back on it (quarantined or
	// banned) are left out. Budget is its budget.
	Ratio429 float64 `json:"ratio_429"`
	Budget   float64 `json:"budget"`
	Requests int64   `json:"requests"`
	// OverBudgetSeconds is how long it has been over budget (0: within).
	OverBudgetSeconds float64   `json:"over_budget_seconds"`
	Alert             bool      `json:"alert"`
	Breaker           string    `json:"breaker"` // closed, open, half-open
	BreakerUntil      time.Time `json:"breaker_until,omitzero"`
	BreakerTrips      int       `json:"breaker_trips,omitempty"`
	// Warnings are its early warnings in force (falling equilibrium,
	// Retry-After jump).
	Warnings []string `json:"warnings,omitempty"`
}

// ExitStatus is one exit across hosts, with its reputation on each host
// where it is not good.
type ExitStatus struct {
	ID        string  `json:"id"`
	Healthy   bool    `json:"healthy"`
	Requests  uint64  `json:"requests"`
	OK        uint64  `json:"ok"`
	Throttled uint64  `json:"throttled"`
	Ratio429  float64 `json:"ratio_429"`
	// Reputation is the worst of its hosts': good, flagged, quarantined or
	// banned; "unhealthy" when it fails as a proxy.
	Reputation       string     `json:"reputation"`
	QuarantinedUntil time.Time  `json:"quarantined_until,omitzero"` // as a proxy, everywhere
	Hosts            []ExitHost `json:"hosts,omitempty"`
}

// ExitHost is an exit's reputation on one host.
type ExitHost struct {
	Host       string    `json:"host"`
	Reputation string    `json:"reputation"`
	Pace       float64   `json:"pace"`  // its pace there, requests per second
	Peers      float64   `json:"peers"` // its peers' median pace
	Until      time.Time `json:"until,omitzero"`
	Why        string    `json:"why,omitempty"`
}

// ParkedHost is a host whose URLs are parked.
type ParkedHost struct {
	Host  string    `json:"host"`
	Until time.Time `json:"until"`
	Why   string    `json:"why"`
}

// HostHistory is one host's recent points, one per Tick: times in Unix
// milliseconds, rates in requests per second, ratios as shares.
type HostHistory struct {
	Host     string    `json:"host"`
	T        []int64   `json:"t"`
	Rate     []float64 `json:"rate"`
	Capacity []float64 `json:"capacity"`
	Ratio429 []float64 `json:"ratio_429"`
}

// history is a ring of a host's points.
type history struct {
	t                 []int64
	rate, capa, ratio []float32
	next              int
	full              bool
}

func newHistory(n int) *history {
	return &history{t: make([]int64, n), rate: make([]float32, n), capa: make([]float32, n), ratio: make([]float32, n)}
}

func (h *history) add(t time.Time, rate, capa, ratio float64) {
	i := h.next
	h.t[i], h.rate[i], h.capa[i], h.ratio[i] = t.UnixMilli(), float32(rate), float32(capa), float32(ratio)
	h.next++
	if h.next == len(h.t) {
		h.next, h.full = 0, true
	}
}

func (h *history) export(host string) HostHistory {
	out := HostHistory{Host: host}
	idx := func(f func(i int)) {
		if h.full {
			for i := h.next; i < len(h.t); i++ {
				f(i)
			}
		}
		for i := 0; i < h.next; i++ {
			f(i)
		}
	}
	idx(func(i int) {
		out.T = append(out.T, h.t[i])
		out.Rate = append(out.Rate, float64(h.rate[i]))
		out.Capacity = append(out.Capacity, float64(h.capa[i]))
		out.Ratio429 = append(out.Ratio429, float64(h.ratio[i]))
	})
	return out
}

// listedLocked returns the hosts Status lists: those with an alert, an
// open breaker or a warning, then the busiest, up to MaxHosts.
func (m *Monitor) listedLocked() []*hostMon {
	hs := make([]*hostMon, 0, len(m.hosts))
	for _, h := range m.hosts {
		hs = append(hs, h)
	}
	notable := func(h *hostMon) bool { return h.alerted || h.br.state != closed || h.falling || h.jumped || h.over }
	slices.SortFunc(hs, func(a, b *hostMon) int {
		if na, nb := notable(a), notable(b); na != nb {
			if na {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.req, a.req); c != 0 {
			return c
		}
		if c := cmp.Compare(b.total, a.total); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return hs[:min(len(hs), m.cfg.MaxHosts)]
}

// historyLocked adds a point to each listed host's history and forgets the
// history of hosts no longer listed.
func (m *Monitor) historyLocked(now time.Time) {
	listed := m.listedLocked()
	keep := make(map[*hostMon]bool, len(listed))
	for _, h := range listed {
		keep[h] = true
		if h.hist == nil {
			h.hist = newHistory(m.cfg.History)
		}
		h.hist.add(now, float64(h.req)/m.cfg.Window.Seconds(), h.capacity, h.ratio)
	}
	for _, h := range m.hosts {
		if !keep[h] {
			h.hist = nil
		}
	}
}

func (m *Monitor) statusLocked(now time.Time, snap limit.Snapshot, waiting []fetch.HostWait, tally *metrics.Counters) {
	cfg := &m.cfg
	s := Status{At: now, Started: m.started, Budget: cfg.Budget, Spike: m.spike, ParkedByReason: maps.Clone(m.parkedBy), AbandonedByReason: map[string]int64{}}
	var wreq, wthr int
	for _, h := range m.hosts {
		r, t := h.win.sum(now)
		wreq += r
		wthr += t
	}
	if wreq > 0 {
		s.Totals.Window429 = float64(wthr) / float64(wreq)
	}
	// Over what the window covers so far: divided by the whole window,
	// a crawl younger than it read 0.6 responses/s where the end report
	// said 5.46 successes/s.
	span := cfg.Window.Seconds()
	if !m.started.IsZero() {
		span = min(span, max(now.Sub(m.started).Seconds(), 1))
	}
	s.Totals.Rate = float64(wreq) / span
	s.Totals.InFlight = snap.InFlight
	if tally != nil {
		s.Totals.Requests, s.Totals.OK, s.Totals.Throttled = tally.Requests, tally.Successes, tally.Throttled429
		s.Totals.Ratio429 = tally.Ratio429()
		for reason, n := range tally.Abandoned {
			if !verdict.NotFoundReason(reason) {
				s.AbandonedByReason[reason] = n
			}
		}
	}
	c := m.counts
	// 404s and 410s are not found, not abandoned, as in the summary (the
	// dashboard, status and metrics said 4 abandoned where the summary
	// said 3 not found, 1 abandoned).
	nf := 0
	for reason, n := range c.AbandonedByReason {
		if verdict.NotFoundReason(reason) {
			nf += n
		}
	}
	s.Totals.URLs, s.Totals.Done, s.Totals.Abandoned, s.Totals.NotFound = c.Total(), c.Done, c.Abandoned-nf, nf
	s.Totals.Queued, s.Totals.Parked = c.Queued+c.Leased, c.Parked

	byHost := make(map[string]*limit.HostSnapshot, len(snap.Hosts))
	for i := range snap.Hosts {
		byHost[snap.Hosts[i].Host] = &snap.Hosts[i]
	}
	for _, h := range m.listedLocked() {
		hs := HostStatus{
			Host: h.name, Rate: float64(h.req) / span, Capacity: h.capacity,
			Ratio429: h.ratio, Budget: cfg.budget(h.name), Requests: h.total, Alert: h.alerted,
			Breaker: breakerNames[h.br.state], BreakerTrips: h.br.trips,
		}
		if sn := byHost[h.name]; sn != nil {
			hs.Phase, hs.Scope, hs.Lanes = sn.Phase, sn.Scope.String(), len(sn.Lanes)
		}
		if !h.overAt.IsZero() {
			hs.OverBudgetSeconds = now.Sub(h.overAt).Seconds()
		}
		if h.br.state == open {
			hs.BreakerUntil = h.br.until
			s.Parked = append(s.Parked, ParkedHost{Host: h.name, Until: h.br.until, Why: "circuit breaker open: " + h.br.why})
		}
		if h.falling {
			hs.Warnings = append(hs.Warnings, "falling equilibrium: capacity "+perSecond(h.capacity)+" from "+perSecond(h.fellFrom()))
		}
		if h.jumped {
			hs.Warnings = append(hs.Warnings, "Retry-After jumped from "+h.jumpBase.String())
		}
		s.Hosts = append(s.Hosts, hs)
	}
	for _, w := range waiting {
		if h := m.hosts[w.Host]; h != nil && h.br.state == open {
			continue // listed above, with the breaker's reason
		}
		s.Parked = append(s.Parked, ParkedHost{Host: w.Host, Until: w.Until, Why: "must wait beyond --max-wait: " + w.Why})
	}

	// Exits: the limiter's view, with the monitor's reputation per host.
	reps := map[string][]ExitHost{}
	for k, l := range m.lanes {
		if l.state == repGood {
			continue
		}
		reps[k.exit] = append(reps[k.exit], ExitHost{Host: k.host, Reputation: repNames[l.state], Pace: l.pace, Peers: l.peers, Until: l.until, Why: l.why})
	}
	for _, es := range snap.Exits {
		x := ExitStatus{ID: es.ID, Healthy: es.Healthy, Requests: es.Requests, OK: es.OK, Throttled: es.Throttled,
			QuarantinedUntil: es.QuarantinedUntil, Reputation: repNames[repGood], Hosts: reps[es.ID]}
		if es.Requests > 0 {
			x.Ratio429 = float64(es.Throttled) / float64(es.Requests)
		}
		slices.SortFunc(x.Hosts, func(a, b ExitHost) int { return strings.Compare(a.Host, b.Host) })
		worst := repGood
		for _, eh := range x.Hosts {
			worst = max(worst, slices.Index(repNames[:], eh.Reputation))
		}
		x.Reputation = repNames[worst]
		if !es.Healthy {
			x.Reputation = "unhealthy"
		}
		s.Exits = append(s.Exits, x)
	}
	slices.SortFunc(s.Exits, func(a, b ExitStatus) int {
		ba, bb := a.Reputation != "good", b.Reputation != "good"
		if ba != bb {
			if ba {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.Requests, a.Requests); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	s.Exits = s.Exits[:min(len(s.Exits), cfg.MaxExits)]

	for _, h := range snap.Hosts {
		s.Changes = append(s.Changes, h.Changes...)
	}
	slices.SortStableFunc(s.Changes, func(a, b limit.Change) int { return b.At.Compare(a.At) })
	s.Changes = s.Changes[:min(len(s.Changes), maxListed)]
	ev := m.ev.list()
	slices.Reverse(ev)
	s.Events = ev[:min(len(ev), maxListed)]
	s.Ended = m.ended
	m.status = s
}

// maxListed bounds the change records and events Status lists.
const maxListed = 50

// End records that the crawl ended at: Status says so from then on (the
// status held then stays what it shows).
func (m *Monitor) End(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended = at
	m.status.Ended = at
}

// Status returns the latest Status (as of the last Tick), with each listed
// host's history when history is set.
func (m *Monitor) Status(history bool) Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.status
	s.Hosts = slices.Clone(s.Hosts)
	if history {
		for _, h := range s.Hosts {
			if hm := m.hosts[h.Host]; hm != nil && hm.hist != nil {
				s.History = append(s.History, hm.hist.export(h.Host))
			}
		}
	}
	return s
}

// Events returns the kept events, oldest first.
func (m *Monitor) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ev.list()
}
