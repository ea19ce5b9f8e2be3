package gateway

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// stats counts what the gateway did with its clients' requests, beyond the
// attempts the Tally counts.
type stats struct {
	requests  atomic.Int64 // client requests to forward (not tunnels)
	done      atomic.Int64 // answered by the server with a success
	retries   atomic.Int64
	tunnels   atomic.Int64 // CONNECT tunnels opened, intercepted or not
	passed    atomic.Int64 // of which passed through
	conns     atomic.Int64 // client connections open
	inFlight  atomic.Int64
	mu        sync.Mutex
	outcomes  map[string]int64 // requests not done, by why: "status 404", "wait budget spent", ...
	refusals  map[string]int64 // refused, by reason
	throttled atomic.Int64     // answered 429 by the gateway: the wait budget ran out
}

func (s *stats) outcome(why string) {
	s.mu.Lock()
	if s.outcomes == nil {
		s.outcomes = map[string]int64{}
	}
	s.outcomes[why]++
	s.mu.Unlock()
}

func (s *stats) refused(reason string) {
	s.mu.Lock()
	if s.refusals == nil {
		s.refusals = map[string]int64{}
	}
	s.refusals[reason]++
	s.mu.Unlock()
}

// Stats is what a Gateway did so far: a copy, safe to keep and read.
type Stats struct {
	// Requests counts the client requests forwarded or refused (tunnels
	// not included; the requests inside intercepted tunnels are).
	Requests int64 `json:"requests"`
	// Done counts those the server answered with a success (2xx, 3xx).
	Done int64 `json:"done"`
	// Retries counts attempts sent again through another exit.
	Retries int64 `json:"retries"`
	// NotDone counts the rest by why: "status 404" (the server's answer,
	// passed on), "wait budget spent" (the gateway's 429), "no working
	// exit", "upstream timeout", ...
	NotDone map[string]int64 `json:"not_done"`
	// Refused counts requests and tunnels refused, by reason: "private
	// target", "loop", "connect port", "no credentials", ...
	Refused map[string]int64 `json:"refused"`
	// BudgetSpent counts the 429s the gateway answered because no exit
	// could send within the request's wait budget.
	BudgetSpent int64 `json:"wait_budget_spent"`
	// Tunnels counts CONNECT tunnels opened; Passthrough those not
	// intercepted.
	Tunnels     int64 `json:"tunnels"`
	Passthrough int64 `json:"passthrough_tunnels"`
	// Conns is the client connections open now; InFlight the requests
	// being forwarded now.
	Conns    int64 `json:"connections_open"`
	InFlight int64 `json:"in_flight"`
	// Sessions is the sticky sessions remembered now.
	Sessions int `json:"sessions"`
}

// Stats returns what the gateway did so far.
func (g *Gateway) Stats() Stats {
	s := &g.stats
	s.mu.Lock()
	out := Stats{NotDone: maps.Clone(s.outcomes), Refused: maps.Clone(s.refusals)}
	s.mu.Unlock()
	if out.NotDone == nil {
		out.NotDone = map[string]int64{}
	}
	if out.Refused == nil {
		out.Refused = map[string]int64{}
	}
	out.Requests, out.Done, out.Retries = s.requests.Load(), s.done.Load(), s.retries.Load()
	out.BudgetSpent, out.Tunnels, out.Passthrough = s.throttled.Load(), s.tunnels.Load(), s.passed.Load()
	out.Conns, out.InFlight = s.conns.Load(), s.inFlight.Load()
	out.Sessions = g.sessions.len()
	return out
}

var (
	descClient = prometheus.NewDesc("exitgate_gateway_requests_total",
		"Client requests the gateway handled, by outcome: done, or why not (status N, wait budget spent, refused: REASON, ...).", []string{"outcome"}, nil)
	descTunnels = prometheus.NewDesc("exitgate_gateway_tunnels_total",
		"CONNECT tunnels opened, by mode (intercepted, passthrough).", []string{"mode"}, nil)
	descConns = prometheus.NewDesc("exitgate_gateway_client_connections",
		"Client connections open.", nil, nil)
	descInFlight = prometheus.NewDesc("exitgate_gateway_in_flight",
		"Client requests being forwarded.", nil, nil)
	descSessions = prometheus.NewDesc("exitgate_gateway_sessions",
		"Sticky sessions remembered.", nil, nil)
)

// Collector returns a Prometheus collector of the gateway's own counts.
// Register metrics.Register for the attempts (the same as a crawl's) and
// this one beside it.
func (g *Gateway) Collector() prometheus.Collector { return collector{g} }

type collector struct{ g *Gateway }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClient, descTunnels, descConns, descInFlight, descSessions} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.g.Stats()
	ch <- prometheus.MustNewConstMetric(descClient, prometheus.CounterValue, float64(s.Done), "done")
	for why, n := range s.NotDone {
		ch <- prometheus.MustNewConstMetric(descClient, prometheus.CounterValue, float64(n), why)
	}
	for why, n := range s.Refused {
		ch <- prometheus.MustNewConstMetric(descClient, prometheus.CounterValue, float64(n), "refused: "+why)
	}
	ch <- prometheus.MustNewConstMetric(descTunnels, prometheus.CounterValue, float64(s.Tunnels-s.Passthrough), "intercepted")
	ch <- prometheus.MustNewConstMetric(descTunnels, prometheus.CounterValue, float64(s.Passthrough), "passthrough")
	ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(s.Conns))
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(s.InFlight))
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(s.Sessions))
}
