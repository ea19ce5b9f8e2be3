package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a private registry with the Go runtime and process
// collectors (go_*, process_*) registered: the base of exitgate's /metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(RuntimeCollectors()...)
	return reg
}

// RuntimeCollectors are the Go runtime and process collectors NewRegistry
// registers.
func RuntimeCollectors() []prometheus.Collector {
	return []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
}

// StateCollector is the collector RegisterState registers.
func StateCollector(state func() State) prometheus.Collector { return stateCollector(state) }

// State is a crawl's state at one instant, for the gauges RegisterState
// exposes. It is plain data.
type State struct {
	// Jobs in the frontier by state (Queued includes leased jobs;
	// NotFound are the 404s and 410s, not among the Abandoned); Known
	// says they were read at least once.
	Queued, Parked, Done, NotFound, Abandoned int
	Known                                     bool
	// InFlight is the requests in flight.
	InFlight int
	// Hosts are the hosts worth a series (the busiest, bounded).
	Hosts []HostState
}

// HostState is one host's learned state.
type HostState struct {
	Host    string
	Learned float64 // the learned rate, requests per second
	Lanes   int     // lanes (exits) in use
}

var (
	descJobs = prometheus.NewDesc("exitgate_jobs",
		"URL jobs in the frontier by state (queued includes those in flight).", []string{"state"}, nil)
	descInFlight = prometheus.NewDesc("exitgate_in_flight",
		"Requests in flight.", nil, nil)
	descLearned = prometheus.NewDesc("exitgate_host_learned_rate",
		"The rate the limiter learned a host allows, requests per second (the busiest hosts).", []string{"host"}, nil)
	descLanes = prometheus.NewDesc("exitgate_host_lanes",
		"Lanes (exits) in use on a host (the busiest hosts).", []string{"host"}, nil)
)

// RegisterState exposes gauges of the crawl's state, read from state at
// scrape time: exitgate_jobs{state}, exitgate_in_flight,
// exitgate_host_learned_rate{host}, exitgate_host_lanes{host}.
func RegisterState(reg prometheus.Registerer, state func() State) error {
	return reg.Register(stateCollector(state))
}

type stateCollector func() State

func (stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descInFlight, descLearned, descLanes} {
		ch <- d
	}
}

func (f stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := f()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if s.Known {
		for _, j := range []struct {
			state string
			n     int
		}{{"queued", s.Queued}, {"parked", s.Parked}, {"done", s.Done}, {"not_found", s.NotFound}, {"abandoned", s.Abandoned}} {
			g(descJobs, float64(j.n), j.state)
		}
	}
	g(descInFlight, float64(s.InFlight))
	for _, h := range s.Hosts {
		g(descLearned, h.Learned, h.Host)
		g(descLanes, float64(h.Lanes), h.Host)
	}
}
