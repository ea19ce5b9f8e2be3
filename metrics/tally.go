// Package metrics counts what happened during a run — requests, statuses,
// verdicts, 429s, time held back by the limiter, abandoned URLs — per host and per exit, and
// exposes the counts two ways: a Snapshot for reports and the dashboard, and a
// Prometheus collector over the same numbers, so the report and /metrics can
// never disagree.
package metrics

import (
	"sort"
	"sync"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// Event is one finished request attempt.
type Event struct {
	Host    string
	Exit    string
	Status  int // 0 when no response arrived (transport error)
	Verdict verdict.Verdict
	// RetryAfter is the server's requested wait; HasRetryAfter says it was sent.
	RetryAfter    time.Duration
	HasRetryAfter bool
	Latency       time.Duration
	Bytes         int64
	At            time.Time // when the response (or error) arrived
	// Aborted marks a request sent and then cut short by the crawl's own
	// stop (a second signal, --duration's drain): counted as sent, with
	// no answer and no verdict, and not shown to subscribers.
	Aborted bool
}

// Counters are the totals for one scope (the run, a host or an exit).
type Counters struct {
	Requests        int64            `json:"requests"`
	Successes       int64            `json:"successes"`
	ByStatus        map[int]int64    `json:"responses_by_status"`
	ByVerdict       map[string]int64 `json:"by_verdict"`
	Throttled429    int64            `json:"responses_429"`
	TransportErrors int64            `json:"transport_errors"`
	// Aborted counts requests the crawl's own stop cut short (Event.Aborted).
	Aborted int64 `json:"aborted,omitempty"`
	Bytes   int64 `json:"bytes"`
	// HeldBackSeconds is how long the scope had due work that the limiter
	// held back: pacing, cooldowns and pauses.
	HeldBackSeconds float64 `json:"held_back_seconds"`
	// Done counts URLs finished with a response worth keeping, Retries the
	// requests sent again for a URL (robots.txt and redirect hops are
	// neither).
	Done int64 `json:"done"`
	// Truncated counts the done URLs whose body was cut at the body
	// limit (--max-body).
	Truncated  int64            `json:"truncated,omitempty"`
	Retries    int64            `json:"retries"`
	Abandoned  map[string]int64 `json:"abandoned"`
	latencySum time.Duration
}

// Ratio429 is the share of requests answered 429.
func (c Counters) Ratio429() float64 {
	if c.Requests == 0 {
		return 0
	}
	return float64(c.Throttled429) / float64(c.Requests)
}

// MeanLatency is the mean time to a response or error.
func (c Counters) MeanLatency() time.Duration {
	if c.Requests == 0 {
		return 0
	}
	return c.latencySum / time.Duration(c.Requests)
}

func (c *Counters) add(e Event) {
	c.Requests++
	if e.Aborted {
		c.Aborted++
		c.latencySum += e.Latency
		return
	}
	if c.ByStatus == nil {
		c.ByStatus = map[int]int64{}
		c.ByVerdict = map[string]int64{}
	}
	if e.Status == 0 {
		c.TransportErrors++
	} else {
		c.ByStatus[e.Status]++
	}
	if e.Status == 429 {
		c.Throttled429++
	}
	if e.Verdict == verdict.OK {
		c.Successes++
	}
	c.ByVerdict[e.Verdict.String()]++
	c.Bytes += e.Bytes
	c.latencySum += e.Latency
}

func (c *Counters) abandon(reason string) {
	if c.Abandoned == nil {
		c.Abandoned = map[string]int64{}
	}
	c.Abandoned[reason]++
}

func (c Counters) clone() Counters {
	out := c
	out.ByStatus = cloneMap(c.ByStatus)
	out.ByVerdict = cloneMap(c.ByVerdict)
	out.Abandoned = cloneMap(c.Abandoned)
	return out
}

func cloneMap[K comparable](m map[K]int64) map[K]int64 {
	out := make(map[K]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Tally accumulates Events. It is safe for concurrent use; its zero value is
// not usable, call NewTally.
type Tally struct {
	mu      sync.Mutex
	start   time.Time
	total   Counters
	hosts   map[string]*Counters
	exits   map[string]*Counters
	rolling rolling
	// retryAfter receives each Retry-After, for the histogram.
	onRetryAfter func(host string, d time.Duration)
	// subs receive every event (Subscribe).
	subs []func(Event)
	// maxHosts bounds hosts (LimitHosts; 0: none).
	maxHosts int
	// heldTo is, per host, the end of the last hold counted by
	// HeldBackUntil: the part of it after a snapshot's time has not
	// happened yet and is left out of that snapshot.
	heldTo map[string]time.Time
}

// NewTally starts a tally whose effective rate is measured from start.
func NewTally(start time.Time) *Tally {
	return &Tally{start: start, hosts: map[string]*Counters{}, exits: map[string]*Counters{}}
}

// Record counts one finished request attempt.
func (t *Tally) Record(e Event) {
	t.mu.Lock()
	t.total.add(e)
	t.host(e.Host).add(e)
	if e.Exit != "" {
		counter(t.exits, e.Exit).add(e)
	}
	t.rolling.add(e.At, e.Status == 429)
	hook, subs := t.onRetryAfter, t.subs
	t.mu.Unlock()
	if e.Aborted {
		return // no answer to judge
	}
	if hook != nil && e.HasRetryAfter {
		hook(e.Host, e.RetryAfter)
	}
	for _, f := range subs {
		f(e)
	}
}

// Subscribe has f called with every event Record counts from now on, after
// it is counted and without the tally's lock held, on the goroutine that
// records it (the engine's, which holds its own lock: f must be quick and
// must not call back into the engine). A monitor watches a run this way
// (package monitor).
func (t *Tally) Subscribe(f func(Event)) {
	t.mu.Lock()
	t.subs = append(t.subs[:len(t.subs):len(t.subs)], f)
	t.mu.Unlock()
}

// Abandon counts one URL given up for reason, on host and on the exit of
// its last attempt ("" when none answered for it).
func (t *Tally) Abandon(host, exit, reason string) {
	t.mu.Lock()
	t.total.abandon(reason)
	t.host(host).abandon(reason)
	if exit != "" {
		counter(t.exits, exit).abandon(reason)
	}
	t.mu.Unlock()
}

// Done counts one URL finished through exit.
func (t *Tally) Done(host, exit string) {
	t.add(host, exit, func(c *Counters) { c.Done++ })
}

// Truncated counts one done URL whose body was cut at the body limit.
func (t *Tally) Truncated(host, exit string) {
	t.add(host, exit, func(c *Counters) { c.Truncated++ })
}

// add applies inc to the totals, host's counters and exit's ("": none).
func (t *Tally) add(host, exit string, inc func(*Counters)) {
	t.mu.Lock()
	inc(&t.total)
	inc(t.host(host))
	if exit != "" {
		inc(counter(t.exits, exit))
	}
	t.mu.Unlock()
}

// Retry counts one request sent again for a URL sent before, through exit
// ("": none known).
func (t *Tally) Retry(host, exit string) {
	t.mu.Lock()
	t.total.Retries++
	t.host(host).Retries++
	if exit != "" {
		// per_exit's retries read 0 while per_host and the total had them.
		counter(t.exits, exit).Retries++
	}
	t.mu.Unlock()
}

// HeldBackUntil counts host's due work held back by the limiter from from
// until to, which may be ahead: a snapshot counts only what elapsed by its
// time (a day's Retry-After once read 86,407 s held back after a 7-s run).
func (t *Tally) HeldBackUntil(host string, from, to time.Time) {
	if !to.After(from) {
		return
	}
	t.HeldBack(host, to.Sub(from))
	t.mu.Lock()
	if t.heldTo == nil {
		t.heldTo = map[string]time.Time{}
	}
	if _, own := t.hosts[host]; own || t.maxHosts == 0 {
		t.heldTo[host] = to
	}
	t.mu.Unlock()
}

// HeldBack adds d to the time host had due work that the limiter held back.
func (t *Tally) HeldBack(host string, d time.Duration) {
	if d <= 0 {
		return
	}
	t.mu.Lock()
	t.total.HeldBackSeconds += d.Seconds()
	t.host(host).HeldBackSeconds += d.Seconds()
	t.mu.Unlock()
}

// LimitHosts keeps counters of their own for the first n hosts at most, and
// folds every later one into OtherHosts (as the metrics' series do): a gateway in front of a broad
// crawl met 8,000 hosts in minutes and kept each one's counters for good,
// its memory and its summary growing with every new host.
func (t *Tally) LimitHosts(n int) {
	t.mu.Lock()
	t.maxHosts = n
	t.mu.Unlock()
}

// host is host's counters, or OtherHosts' past the limit. t.mu is held.
func (t *Tally) host(host string) *Counters {
	if c := t.hosts[host]; c != nil {
		return c
	}
	if t.maxHosts > 0 && len(t.hosts) >= t.maxHosts {
		host = OtherHosts
	}
	return counter(t.hosts, host)
}

func counter(m map[string]*Counters, key string) *Counters {
	c := m[key]
	if c == nil {
		c = &Counters{}
		m[key] = c
	}
	return c
}

// Scoped is the counters of one host or exit.
type Scoped struct {
	Name string `json:"name"`
	Counters
}

// Snapshot is a consistent copy of a Tally at one instant.
type Snapshot struct {
	Start      time.Time `json:"start"`
	At         time.Time `json:"at"`
	Total      Counters  `json:"total"`
	Hosts      []Scoped  `json:"hosts"`
	Exits      []Scoped  `json:"exits"`
	Rolling429 float64   `json:"rolling_429_ratio"` // over the last RollingWindow
}

// Elapsed is the time from the start of the tally to the snapshot.
func (s Snapshot) Elapsed() time.Duration { return s.At.Sub(s.Start) }

// EffectiveRate is URLs done per second since the start.
func (s Snapshot) EffectiveRate() float64 {
	sec := s.Elapsed().Seconds()
	if sec <= 0 {
		return 0
	}
	return float64(s.Total.Done) / sec
}

// RetriesPerSuccess is the requests sent again per URL done.
func (c Counters) RetriesPerSuccess() float64 {
	if c.Done == 0 {
		return 0
	}
	return float64(c.Retries) / float64(c.Done)
}

// Snapshot copies the tally at now; hosts and exits are sorted by name.
func (t *Tally) Snapshot(now time.Time) Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{Start: t.start, At: now, Total: t.total.clone(), Rolling429: t.rolling.ratio(now)}
	s.Hosts = scopedList(t.hosts)
	s.Exits = scopedList(t.exits)
	for i, h := range s.Hosts {
		if to, ok := t.heldTo[h.Name]; ok && to.After(now) {
			ahead := min(to.Sub(now).Seconds(), h.HeldBackSeconds)
			s.Hosts[i].HeldBackSeconds -= ahead
			s.Total.HeldBackSeconds = max(0, s.Total.HeldBackSeconds-ahead)
		}
	}
	return s
}

// Total copies the run's totals at now: a Snapshot without the hosts and
// exits, for who reads often.
func (t *Tally) Total() Counters {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total.clone()
}

// Start is when the tally started.
func (t *Tally) Start() time.Time { return t.start }

func scopedList(m map[string]*Counters) []Scoped {
	out := make([]Scoped, 0, len(m))
	for k, c := range m {
		out = append(out, Scoped{Name: k, Counters: c.clone()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
