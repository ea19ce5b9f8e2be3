package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Register exposes t on reg under the exitgate_ prefix. The counters are read
// from the tally at scrape time, so they always match the run's report. Call
// it once per tally.
func Register(reg prometheus.Registerer, t *Tally) error {
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "exitgate_retry_after_seconds",
		Help:    "Retry-After values received, in seconds.",
		Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600},
	}, []string{"host"})
	if err := reg.Register(hist); err != nil {
		return err
	}
	t.mu.Lock()
	t.onRetryAfter = func(host string, d time.Duration) { hist.WithLabelValues(host).Observe(d.Seconds()) }
	t.mu.Unlock()
	return reg.Register(&collector{t: t})
}

var (
	descRequests = prometheus.NewDesc("exitgate_requests_total",
		"Requests sent, by host and response status (0 = transport error).", []string{"host", "status"}, nil)
	descExitRequests = prometheus.NewDesc("exitgate_exit_requests_total",
		"Requests sent, by exit and verdict.", []string{"exit", "verdict"}, nil)
	descHostVerdicts = prometheus.NewDesc("exitgate_host_verdicts_total",
		"Responses by host and verdict.", []string{"host", "verdict"}, nil)
	descRatio = prometheus.NewDesc("exitgate_429_ratio",
		"Share of responses that were 429 over the last minute.", nil, nil)
	descHeldBack = prometheus.NewDesc("exitgate_held_back_seconds_total",
		"Time a host had due work that the limiter held back (pacing, cooldowns, pauses).", []string{"host"}, nil)
	descAbandoned = prometheus.NewDesc("exitgate_abandoned_total",
		"URLs given up, by host and reason.", []string{"host", "reason"}, nil)
)

type collector struct{ t *Tally }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descExitRequests, descHostVerdicts, descRatio, descHeldBack, descAbandoned} {
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
	for _, e := range s.Exits {
		for v, n := range e.ByVerdict {
			ch <- prometheus.MustNewConstMetric(descExitRequests, prometheus.CounterValue, float64(n), e.Name, v)
		}
	}
	ch <- prometheus.MustNewConstMetric(descRatio, prometheus.GaugeValue, s.Rolling429)
}
