// Package memstore is the in-memory limit.Store: the embedded default for one
// process. State is bounded: lanes and hosts idle for Rules.IdleTTL are
// dropped (an idle lane costs about 200 bytes; see TestIdleLaneBytes).
// Hosts are spread over 64 shards, each with its own mutex, so decisions on
// different hosts rarely contend; one host's decisions are serialised, which
// is what makes each of them atomic.
package memstore

import (
	"context"
	"hash/maphash"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exitgate/exitgate/limit"
)

const nShards = 64

// Store is an in-memory limit.Store. The zero value is not usable; call New.
// It is safe for concurrent use.
type Store struct {
	seed    maphash.Seed
	sweepAt atomic.Int64
	shards  [nShards]shard

	exMu  sync.RWMutex // guards exits; taken after a shard lock, never before
	exits map[string]*limit.ExitState
	rules *limit.Rules // for exitReady; set by the first operation
	ready limit.ExitReadyFunc
}

type shard struct {
	mu    sync.Mutex
	hosts map[string]*limit.HostState
	_     [40]byte // keep shard locks on separate cache lines
}

// New returns an empty Store.
func New() *Store {
	s := &Store{seed: maphash.MakeSeed(), exits: make(map[string]*limit.ExitState)}
	for i := range s.shards {
		s.shards[i].hosts = make(map[string]*limit.HostState)
	}
	return s
}

func (s *Store) shard(host string) *shard {
	return &s.shards[maphash.String(s.seed, host)%nShards]
}

// exitReady reads one exit's readiness; called with a shard lock held.
func (s *Store) exitReady(r *limit.Rules) limit.ExitReadyFunc {
	return func(id string, now int64) (int64, bool) {
		s.exMu.RLock()
		e := s.exits[id]
		var t int64
		var g bool
		if e != nil {
			t, g = limit.ExitReadyAt(r, e, now)
		}
		s.exMu.RUnlock()
		return t, g
	}
}

// Acquire implements limit.Store.
func (s *Store) Acquire(_ context.Context, req *limit.AcquireRequest) (limit.AcquireResult, error) {
	now := req.Now.UnixNano()
	if ttl := req.Rules.IdleTTL; now-s.sweepAt.Load() > ttl/4 {
		s.sweep(req.Now, ttl)
	}
	sh := s.shard(req.Host)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.hosts[req.Host]
	if h == nil {
		h = limit.NewHostState()
		sh.hosts[req.Host] = h
	}
	return limit.AcquireHost(req.Rules, h, req.Pool, req, s.readyFunc(req.Rules)), nil
}

// sweep drops idle hosts from every shard: a full scan at most every
// IdleTTL/4, amortised over all decisions. One goroutine sweeps at a time.
func (s *Store) sweep(now time.Time, ttl int64) {
	old := s.sweepAt.Load()
	if !s.sweepAt.CompareAndSwap(old, now.UnixNano()) {
		return
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, h := range sh.hosts {
			if h.Idle(now, time.Duration(ttl)) {
				delete(sh.hosts, k)
			}
		}
		sh.mu.Unlock()
	}
}

func (s *Store) readyFunc(r *limit.Rules) limit.ExitReadyFunc {
	s.exMu.RLock()
	f := s.ready
	same := s.rules == r
	s.exMu.RUnlock()
	if same && f != nil {
		return f
	}
	s.exMu.Lock()
	defer s.exMu.Unlock()
	if s.rules != r || s.ready == nil {
		s.rules, s.ready = r, s.exitReady(r)
	}
	return s.ready
}

// Release implements limit.Store.
func (s *Store) Release(_ context.Context, req *limit.ReleaseRequest) (bool, error) {
	sh := s.shard(req.Ticket.Host)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.hosts[req.Ticket.Host]
	if h == nil {
		return false, nil
	}
	return limit.ReleaseHost(req.Rules, h, req), nil
}

// SetExits implements limit.Store.
func (s *Store) SetExits(_ context.Context, pool *limit.Pool, _ time.Time) error {
	s.exMu.Lock()
	defer s.exMu.Unlock()
	keep := make(map[string]*limit.ExitState, pool.Len())
	for i := range pool.Len() {
		e := pool.At(i)
		st := s.exits[e.ID]
		if st == nil {
			st = limit.NewExitState(e)
		} else {
			st.Configure(e)
		}
		keep[e.ID] = st
	}
	s.exits = keep
	return nil
}

// TakeExit implements limit.Store.
func (s *Store) TakeExit(_ context.Context, req *limit.ExitRequest) (limit.ExitGrant, error) {
	s.exMu.Lock()
	defer s.exMu.Unlock()
	e := s.exits[req.Exit]
	if e == nil {
		return limit.ExitGrant{OK: true}, nil // left the pool; nothing to charge
	}
	return limit.TakeExit(req.Rules, e, req.Now.UnixNano()), nil
}

// ReleaseExit implements limit.Store.
func (s *Store) ReleaseExit(_ context.Context, req *limit.ExitRelease) error {
	s.exMu.Lock()
	defer s.exMu.Unlock()
	if e := s.exits[req.Exit]; e != nil {
		limit.ReleaseExit(req.Rules, e, req)
	}
	return nil
}

// Snapshot implements limit.Store. Hosts and exits are sorted by name.
func (s *Store) Snapshot(_ context.Context, r *limit.Rules, now time.Time) (limit.Snapshot, error) {
	var snap limit.Snapshot
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, h := range sh.hosts {
			snap.Hosts = append(snap.Hosts, limit.SnapshotHost(r, k, h, now))
		}
		sh.mu.Unlock()
	}
	s.exMu.RLock()
	for _, e := range s.exits {
		snap.Exits = append(snap.Exits, limit.SnapshotExit(r, e, now))
	}
	s.exMu.RUnlock()
	sort.Slice(snap.Hosts, func(i, j int) bool { return snap.Hosts[i].Host < snap.Hosts[j].Host })
	sort.Slice(snap.Exits, func(i, j int) bool { return snap.Exits[i].ID < snap.Exits[j].ID })
	return snap, nil
}

var _ limit.Store = (*Store)(nil)
