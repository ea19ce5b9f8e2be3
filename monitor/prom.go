package monitor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/exitgate/exitgate/metrics"
)

var (
	descEvents = prometheus.NewDesc("exitgate_monitor_events_total",
		"Events of the monitor by kind: alerts (over_budget), breaker moves, spikes, early warnings, exit reputation.", []string{"kind"}, nil)
	descAlert = prometheus.NewDesc("exitgate_alert_active",
		"1 while an alert or early warning is in force on a host (kind over_budget, falling_equilibrium, retry_after_jump).", []string{"host", "kind"}, nil)
	descOverFor = prometheus.NewDesc("exitgate_host_over_budget_seconds",
		"How long a host has been over its 429 budget (hosts in an episode over budget only).", []string{"host"}, nil)
	descBudget = prometheus.NewDesc("exitgate_host_429_budget",
		"A host's 429 budget: the share of its responses that may be 429 (the hosts the monitor lists).", []string{"host"}, nil)
	descDefaultBudget = prometheus.NewDesc("exitgate_429_budget",
		"The default 429 budget of a host.", nil, nil)
	descBreaker = prometheus.NewDesc("exitgate_breaker_state",
		"A host's circuit breaker: 0 closed, 1 open (its URLs parked), 2 half-open (one probe); hosts whose breaker ever opened.", []string{"host"}, nil)
	descTrips = prometheus.NewDesc("exitgate_breaker_trips_total",
		"Times a host's circuit breaker opened.", []string{"host"}, nil)
	descReputation = prometheus.NewDesc("exitgate_exit_reputation",
		"1 for an exit whose reputation on a host is not good (state flagged, quarantined or banned).", []string{"exit", "host", "state"}, nil)
	descParked = prometheus.NewDesc("exitgate_parked_total",
		"URLs parked, by kind of reason.", []string{"reason"}, nil)
	descSpike = prometheus.NewDesc("exitgate_spike",
		"1 while most hosts are over their 429 budget at once (a change on our side).", nil, nil)
)

// Collector returns a Prometheus collector of the monitor's state, read at
// scrape time. Register it once.
func (m *Monitor) Collector() prometheus.Collector { return collector{m} }

type collector struct{ m *Monitor }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEvents, descAlert, descOverFor, descBudget, descDefaultBudget, descBreaker, descTrips, descReputation, descParked, descSpike} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, k := range Kinds {
		counter(descEvents, float64(m.ev.count[k]), k)
	}
	now := m.status.At
	for _, h := range m.hosts {
		if h.alerted {
			gauge(descAlert, 1, h.name, KindOverBudget)
		}
		if h.falling {
			gauge(descAlert, 1, h.name, KindFalling)
		}
		if h.jumped {
			gauge(descAlert, 1, h.name, KindRetryAfterJump)
		}
		if !h.overAt.IsZero() {
			gauge(descOverFor, max(now.Sub(h.overAt), 0).Seconds(), h.name)
		}
		if h.br.trips > 0 {
			gauge(descBreaker, float64(h.br.state), h.name)
			counter(descTrips, float64(h.br.trips), h.name)
		}
	}
	for _, hs := range m.status.Hosts {
		gauge(descBudget, hs.Budget, hs.Host)
	}
	gauge(descDefaultBudget, m.cfg.Budget)
	for k, l := range m.lanes {
		if l.state != repGood {
			gauge(descReputation, 1, k.exit, k.host, repNames[l.state])
		}
	}
	for r, n := range m.parkedBy {
		counter(descParked, float64(n), r)
	}
	spike := 0.0
	if m.spike {
		spike = 1
	}
	gauge(descSpike, spike)
}

// MetricsState is the crawl's state as of the last Tick, for the gauges of
// metrics.RegisterState.
func (m *Monitor) MetricsState() metrics.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.status
	st := metrics.State{
		Queued: s.Totals.Queued, Parked: s.Totals.Parked, Done: s.Totals.Done, NotFound: s.Totals.NotFound, Abandoned: s.Totals.Abandoned,
		InFlight: s.Totals.InFlight, Known: !m.countsAt.IsZero(),
	}
	for _, h := range s.Hosts {
		st.Hosts = append(st.Hosts, metrics.HostState{Host: h.Host, Learned: h.Capacity, Lanes: h.Lanes})
	}
	return st
}
