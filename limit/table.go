package limit

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The limiter's state lives in memory, bounded: lanes and hosts idle for
// IdleTTL are dropped. Hosts are spread over shards, each with its own mutex,
// so decisions on different hosts rarely contend; one host's decisions are
// serialised, which is what makes each of them atomic. (A shared store for
// many processes partitions exits among workers instead of sharing this
// state; see the Redis issue.)

const nShards = 64

type table struct {
	seed    maphash.Seed
	sweepAt atomic.Int64
	shards  [nShards]shard

	exMu  sync.RWMutex // guards exits; taken after a shard lock, never before
	exits map[string]*exitState
}

type shard struct {
	mu    sync.Mutex
	hosts map[string]*host
	_     [40]byte // keep shard locks on separate cache lines
}

func newTable() *table {
	t := &table{seed: maphash.MakeSeed(), exits: make(map[string]*exitState)}
	for i := range t.shards {
		t.shards[i].hosts = make(map[string]*host)
	}
	return t
}

func (t *table) shard(name string) *shard {
	return &t.shards[maphash.String(t.seed, name)%nShards]
}

// sweep drops idle hosts from every shard: a full scan at most every
// ttl/4, amortised over all decisions. One goroutine sweeps at a time.
func (t *table) sweep(now, ttl int64) {
	old := t.sweepAt.Load()
	if now-old <= ttl/4 || !t.sweepAt.CompareAndSwap(old, now) {
		return
	}
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for k, h := range sh.hosts {
			if h.idle(now, ttl) {
				delete(sh.hosts, k)
			}
		}
		sh.mu.Unlock()
	}
}

// exitReady reads one exit's readiness; called with a shard lock held.
func (t *table) exitReady(r *rules) exitReadyFunc {
	return func(id string, now int64) (int64, bool) {
		t.exMu.RLock()
		defer t.exMu.RUnlock()
		if e := t.exits[id]; e != nil {
			return e.readyAt(r, now)
		}
		return 0, false
	}
}

// setExits installs the pool's provider limits, keeping the health of exits
// that stay and dropping exits that left.
func (t *table) setExits(p *exitPool) {
	t.exMu.Lock()
	defer t.exMu.Unlock()
	keep := make(map[string]*exitState, p.Len())
	for _, e := range p.exits {
		st := t.exits[e.ID]
		if st == nil {
			st = newExitState(e)
		} else {
			st.configure(e)
		}
		keep[e.ID] = st
	}
	t.exits = keep
}

func (t *table) exit(id string, f func(*exitState)) {
	t.exMu.Lock()
	defer t.exMu.Unlock()
	if e := t.exits[id]; e != nil {
		f(e)
	}
}

// exitPool is an immutable, indexed set of exits: what SetExits installed. Safe
// for concurrent use.
type exitPool struct {
	ver   uint64
	exits []Exit
	idx   map[string]int32
}

var poolVersions atomic.Uint64

// newPool indexes exits; later duplicates of an ID replace earlier ones and
// entries with an empty ID are dropped.
func newPool(exits []Exit) *exitPool {
	p := &exitPool{ver: poolVersions.Add(1), idx: make(map[string]int32, len(exits))}
	for _, e := range exits {
		if e.ID == "" {
			continue
		}
		if i, ok := p.idx[e.ID]; ok {
			p.exits[i] = e
			continue
		}
		p.idx[e.ID] = int32(len(p.exits))
		p.exits = append(p.exits, e)
	}
	return p
}

// Len is the number of exits.
func (p *exitPool) Len() int {
	if p == nil {
		return 0
	}
	return len(p.exits)
}

func (p *exitPool) lookup(id string) bool {
	if p == nil {
		return false
	}
	_, ok := p.idx[id]
	return ok
}

// since is when the exit id came from another Limiter (Exit.Since), in
// ns; 0 if never or unknown.
func (p *exitPool) since(id string) int64 {
	if i, ok := p.idx[id]; ok {
		return unixNano(p.exits[i].Since)
	}
	return 0
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func samePool(a, b *exitPool) bool {
	return slices.EqualFunc(a.exits, b.exits, func(x, y Exit) bool {
		// Rates as configure reads them: a NaN one is none on both
		// sides (compared as given, NaN never equals itself, and every
		// call with the same list woke every Wait and warned again).
		return x.ID == y.ID && exitRate(x.Rate) == exitRate(y.Rate) && x.Concurrency == y.Concurrency && x.Since.Equal(y.Since)
	})
}
