package metrics

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exitgate/exitgate/verdict"
)

// Options tunes what Register exposes. The zero value means the defaults.
type Options struct {
	// ExitSeries bounds the exits with series of their own in
	// exitgate_exit_requests_total: the first ExitSeries exits to answer
	// keep theirs for the run, the others are summed under exit="_other",
	// so that a pool of thousands of exits does not make thousands of
	// series. Default 50; negative: none, all under "_other".
	ExitSeries int
	// HostSeries bounds the hosts with series of their own in the
	// per-host counters (exitgate_requests_total, _host_verdicts_total,
	// _held_back_seconds_total, _abandoned_total, the Retry-After
	// histogram) the same way: the first HostSeries hosts to be counted
	// keep theirs, the others add up under host="_other" (a crawl of
	// 1,000 hosts made 21,000 series, 1.5 MB a scrape). Default 200;
	// negative: none.
	HostSeries int
}

// OtherExits is the exit label under which exits beyond
// Options.ExitSeries are counted.
const OtherExits = "_other"

// OtherHosts is the host label under which hosts beyond
// Options.HostSeries are counted.
const OtherHosts = "_other"

// seriesChooser gives the first limit names series of their own, for the
// run (a counter must not move between series), and the rest other.
type seriesChooser struct {
	mu     sync.Mutex
	limit  int
	other  string
	chosen map[string]bool
}

// label is name's label: itself once chosen, else other.
func (c *seriesChooser) label(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.chosen[name] && len(c.chosen) < c.limit && name != c.other {
		c.chosen[name] = true
	}
	if c.chosen[name] {
		return name
	}
	return c.other
}

// Register exposes t on reg under the exitgate_ prefix, with the default
// Options. The counters are read from the tally at scrape time, so they
// always match the run's report. Call it once per tally.
func Register(reg prometheus.Registerer, t *Tally) error { return RegisterWith(reg, t, Options{}) }

// RegisterWith is Register with opts.
func RegisterWith(reg prometheus.Registerer, t *Tally, opts Options) error {
	for _, c := range Collectors(t, opts) {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Collectors returns the collectors RegisterWith registers: the Retry-After
// histogram (fed by t from now on) and the tally's counters. Call it once
// per tally.
func Collectors(t *Tally, opts Options) []prometheus.Collector {
	bound := func(n, def int) int {
		switch {
		case n == 0:
			return def
		case n < 0:
			return 0
		}
		return n
	}
	hosts := &seriesChooser{limit: bound(opts.HostSeries, 200), other: OtherHosts, chosen: map[string]bool{}}
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "exitgate_retry_after_seconds",
		Help:    "Retry-After values received, in seconds (hosts past the bound on host series under host=\"_other\").",
		Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600},
	}, []string{"host"})
	t.mu.Lock()
	t.onRetryAfter = func(host string, d time.Duration) { hist.WithLabelValues(hosts.label(host)).Observe(d.Seconds()) }
	t.mu.Unlock()
	return []prometheus.Collector{hist, &collector{t: t, exits: &seriesChooser{limit: bound(opts.ExitSeries, 50), other: OtherExits, chosen: map[string]bool{}}, hosts: hosts}}
}

var (
	descRequests = prometheus.NewDesc("exitgate_requests_total",
		"Requests sent, by host and response status (0 = transport error; aborted = cut short by the crawl's own stop).", []string{"host", "status"}, nil)
	descExitRequests = prometheus.NewDesc("exitgate_exit_requests_total",
		"Requests sent, by exit and verdict.", []string{"exit", "verdict"}, nil)
	descHostVerdicts = prometheus.NewDesc("exitgate_host_verdicts_total",
		"Responses by host and verdict.", []string{"host", "verdict"}, nil)
	descHeldBack = prometheus.NewDesc("exitgate_held_back_seconds_total",
		"Time a host had due work that the limiter held back (pacing, cooldowns, pauses).", []string{"host"}, nil)
	descAbandoned = prometheus.NewDesc("exitgate_abandoned_total",
		"URLs given up, by host and reason.", []string{"host", "reason"}, nil)
)

type collector struct {
	t            *Tally
	exits, hosts *seriesChooser // which have series of their own
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descExitRequests, descHostVerdicts, descHeldBack, descAbandoned} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.t.Snapshot(time.Now())
	// Hosts and exits keep the series they were given (counters must not
	// move between series); new ones get one while there is room, in name
	// order, and the rest add up under "_other".
	type key struct{ label, value string }
	var (
		requests = map[key]float64{}
		verdicts = map[key]float64{}
		abandons = map[key]float64{}
		heldBack = map[string]float64{}
	)
	hosts := slices.SortedFunc(slices.Values(s.Hosts), func(a, b Scoped) int { return strings.Compare(a.Name, b.Name) })
	for _, h := range hosts {
		l := c.hosts.label(h.Name)
		for status, n := range h.ByStatus {
			requests[key{l, strconv.Itoa(status)}] += float64(n)
		}
		if h.TransportErrors > 0 {
			requests[key{l, "0"}] += float64(h.TransportErrors)
		}
		if h.Aborted > 0 {
			requests[key{l, "aborted"}] += float64(h.Aborted)
		}
		for v, n := range h.ByVerdict {
			verdicts[key{l, v}] += float64(n)
		}
		heldBack[l] += h.HeldBackSeconds
		for reason, n := range h.Abandoned {
			if !verdict.NotFoundReason(reason) { // not abandoned: exitgate_requests_total{status="404"} counts them
				abandons[key{l, reason}] += float64(n)
			}
		}
	}
	for k, n := range requests {
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, n, k.label, k.value)
	}
	for k, n := range verdicts {
		ch <- prometheus.MustNewConstMetric(descHostVerdicts, prometheus.CounterValue, n, k.label, k.value)
	}
	for l, v := range heldBack {
		ch <- prometheus.MustNewConstMetric(descHeldBack, prometheus.CounterValue, v, l)
	}
	for k, n := range abandons {
		ch <- prometheus.MustNewConstMetric(descAbandoned, prometheus.CounterValue, n, k.label, k.value)
	}
	exitReqs := map[key]float64{}
	for _, e := range s.Exits {
		l := c.exits.label(e.Name)
		for v, n := range e.ByVerdict {
			exitReqs[key{l, v}] += float64(n)
		}
	}
	for k, n := range exitReqs {
		ch <- prometheus.MustNewConstMetric(descExitRequests, prometheus.CounterValue, n, k.label, k.value)
	}
}
