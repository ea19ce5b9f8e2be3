package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options tunes what Register exposes. The zero value means the defaults.
type Options struct {
	// ExitSeries bounds the exits with series of their own in
	// exitgate_exit_requests_total: the first ExitSeries exits to answer
	// keep theirs for the run, the others are summed under exit="_other",
	// so that a pool of thousands of exits does not make thousands of
	// series. Default 50; negative: none, all under "_other".
	ExitSeries int
}

// OtherExits is the exit label under which exits beyond
// Options.ExitSeries are counted.
const OtherExits = "_other"

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
	switch {
	case opts.ExitSeries == 0:
		opts.ExitSeries = 50
	case opts.ExitSeries < 0:
		opts.ExitSeries = 0
	}
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "exitgate_retry_after_seconds",
		Help:    "Retry-After values received, in seconds.",
		Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600},
	}, []string{"host"})
	t.mu.Lock()
	t.onRetryAfter = func(host string, d time.Duration) { hist.WithLabelValues(host).Observe(d.Seconds()) }
	t.mu.Unlock()
	return []prometheus.Collector{hist, &collector{t: t, limit: opts.ExitSeries, chosen: map[string]bool{}}}
}

var (
	descRequests = prometheus.NewDesc("exitgate_requests_total",
		"Requests sent, by host and response status (0 = transport error).", []string{"host", "status"}, nil)
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
	t     *Tally
	limit int

	mu     sync.Mutex
	chosen map[string]bool // exits with series of their own
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descExitRequests, descHostVerdicts, descHeldBack, descAbandoned} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.t.Snapshot(time.Now())
	for _, h := range s.Hosts {
		for status, n := range h.ByStatus {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), h.Name, strconv.Itoa(status))
		}
		if h.TransportErrors > 0 {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(h.TransportErrors), h.Name, "0")
		}
		for v, n := range h.ByVerdict {
			ch <- prometheus.MustNewConstMetric(descHostVerdicts, prometheus.CounterValue, float64(n), h.Name, v)
		}
		ch <- prometheus.MustNewConstMetric(descHeldBack, prometheus.CounterValue, h.HeldBackSeconds, h.Name)
		for reason, n := range h.Abandoned {
			ch <- prometheus.MustNewConstMetric(descAbandoned, prometheus.CounterValue, float64(n), h.Name, reason)
		}
	}
	// Exits keep the series they were given (counters must not move
	// between series); new ones get one while there is room, in name
	// order, and the rest add up under OtherExits.
	c.mu.Lock()
	other := map[string]int64{}
	for _, e := range s.Exits {
		if !c.chosen[e.Name] && len(c.chosen) < c.limit && e.Name != OtherExits {
			c.chosen[e.Name] = true
		}
		for v, n := range e.ByVerdict {
			if c.chosen[e.Name] {
				ch <- prometheus.MustNewConstMetric(descExitRequests, prometheus.CounterValue, float64(n), e.Name, v)
			} else {
				other[v] += n
			}
		}
	}
	c.mu.Unlock()
	for v, n := range other {
		ch <- prometheus.MustNewConstMetric(descExitRequests, prometheus.CounterValue, float64(n), OtherExits, v)
	}
}
