package limit

import (
	"sync"
	"time"
)

// LocalShare shares host-level state between Limiters of one process, in
// memory: what redisstate does between processes through Redis, without a
// round trip or an outage. The simulator's fleet of workers uses it; so
// can a program that runs several Limiters over one pool's partition.
type LocalShare struct {
	mu      sync.Mutex
	hosts   map[string]*localHost
	members int
	exits   int // the pool of every member (SetExits), 0 = unknown
}

type localHost struct {
	view  HostView
	sched Schedule
}

// NewLocalShare returns an empty LocalShare.
func NewLocalShare() *LocalShare { return &LocalShare{hosts: map[string]*localHost{}} }

// SetExits records how many exits the members hold together (the fleet's
// pool): their HostShares report it (Exits).
func (s *LocalShare) SetExits(n int) {
	s.mu.Lock()
	s.exits = n
	s.mu.Unlock()
}

// Member returns the HostShare of one Limiter: leads reports whether it
// leads a host's search (HostShare.Leads); nil: it leads every host.
func (s *LocalShare) Member(leads func(host string) bool) HostShare {
	s.mu.Lock()
	s.members++
	s.mu.Unlock()
	return &localMember{s: s, leads: leads}
}

func (s *LocalShare) host(name string) *localHost {
	h := s.hosts[name]
	if h == nil {
		h = &localHost{}
		s.hosts[name] = h
	}
	return h
}

type localMember struct {
	s     *LocalShare
	leads func(string) bool
}

func (m *localMember) Admit(host string, ceil, rate float64, now time.Time) (bool, time.Time) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	h := m.s.host(host)
	return h.sched.Admit(h.view.Pause, ceil, rate, 1, now)
}

func (m *localMember) Publish(host string, v HostView, _ time.Time) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	h := m.s.host(host)
	h.view = h.view.Merge(v)
}

func (m *localMember) View(host string) (HostView, bool) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	h, ok := m.s.hosts[host]
	if !ok {
		return HostView{}, false
	}
	return h.view, true
}

// Exits is the members' pool (SetExits), 0 when not set.
func (m *localMember) Exits() int {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.exits
}

// Workers is the number of members.
func (m *localMember) Workers() int {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return max(1, m.s.members)
}

func (m *localMember) Leads(host string) bool { return m.leads == nil || m.leads(host) }

// Schedule is one host's shared schedule, held in memory: the politeness
// ceiling and the host's own rate, each a GCRA with no burst, gated by the
// host's pause.
type Schedule struct{ ctat, rtat time.Time }

// Admit takes one request at now unless pause or the schedule holds it
// back, and then returns when to ask again. Requests are spaced n times the
// intervals of ceil and rate (req/s, 0 = none): n workers each keeping
// their share of a ceiling while they cannot agree on one schedule pass n.
func (s *Schedule) Admit(pause time.Time, ceil, rate, n float64, now time.Time) (bool, time.Time) {
	wait := pause
	if ceil > 0 && s.ctat.After(wait) {
		wait = s.ctat
	}
	if rate > 0 && s.rtat.After(wait) {
		wait = s.rtat
	}
	if wait.After(now) {
		return false, wait
	}
	if ceil > 0 {
		s.ctat = later(s.ctat, now).Add(time.Duration(float64(time.Second) * n / ceil))
	}
	if rate > 0 {
		s.rtat = later(s.rtat, now).Add(time.Duration(float64(time.Second) * n / rate))
	}
	return true, time.Time{}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
