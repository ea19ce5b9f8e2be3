// Package memory is a frontier.Frontier held in the process's memory, for
// the simulator (which drives millions of requests through it in virtual
// time) and for tests.
//
// It is not durable: everything in it is lost when the process exits or
// the Store is dropped. Use frontier/sqlite for crawls.
//
// It follows the frontier.Frontier contract exactly as frontier/sqlite does
// (the same conformance suite), with one refinement: Claim and Ready order
// hosts strictly by when each was last served, including hosts whose work
// only just fell due, where frontier/sqlite appends those to the back of its
// round.
//
// # Cost
//
// With n unfinished jobs and H hosts: Push costs one frontier.Prepare (URL
// normalisation) per job plus O(log n + log H); Claim costs O(k (log n +
// log H)) for k jobs, plus O(log H) for each host it skips; ClaimHost,
// Complete, Retry, Park, Abandon, Release and Extend cost O(log n + log H);
// Ready costs O(m log H) for m hosts reported; Get and Counts cost O(1);
// Finished scans a bitmap of finished jobs, 64 jobs per word; Recover, rare
// by nature, costs O(n).
//
// # Memory
//
// A job costs about 220 bytes (measured: the job record 160, its entry in
// the deduplication set about 40, its heap entry 16 plus slack), plus its strings: the URL as pushed,
// the normalised key when it differs from the URL (it shares the URL's
// memory otherwise), the exit pin and the reason and result strings given
// to it. Host names are stored once per host. Nothing is freed when a job
// finishes: its record answers Get and Finished, and its key keeps a later
// Push of the same URL from adding it again.
package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"net/http"
	"sync"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

// DefaultLease is the visibility timeout when Config.Lease is zero: the
// same as frontier/sqlite's DefaultLease.
const DefaultLease = 5 * time.Minute

// MaxJobs is how many jobs a Store holds: job indices are 32-bit to keep
// the heaps small.
const MaxJobs = math.MaxInt32

// ErrFull: a Push would take the store past MaxJobs jobs.
var ErrFull = errors.New("frontier/memory: store is full")

// Config configures New. The zero value means the documented defaults.
type Config struct {
	// Lease is the visibility timeout: how long a claim holds a job before
	// it becomes claimable again. Zero means DefaultLease.
	Lease time.Duration
}

// Store is a frontier.Frontier in memory. It is safe for concurrent use by
// multiple goroutines: every operation holds one mutex throughout.
type Store struct {
	lease time.Duration

	mu     sync.Mutex
	closed bool

	// Jobs by index (ID - 1), in fixed-size chunks so that growing never
	// copies them and a *job stays valid.
	chunks []*[chunkSize]job
	n      int32 // number of jobs
	fin    []uint64

	gets   map[string]struct{}    // keys of GET jobs
	others map[methodKey]struct{} // keys of jobs with other methods

	byName  map[string]*host
	hosts   []*host // by id
	ready   hostHeap
	waiting hostHeap
	clock   int64 // last service stamp handed out

	counts  [frontier.Abandoned + 1]int
	reasons map[string]int

	// Scratch for Claim, kept to spare an allocation per call.
	open, round []*host
	taken       []int32
}

var _ frontier.Frontier = (*Store)(nil)

const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

type methodKey struct{ method, key string }

// job is one job as stored. Its ID is its index plus one; its host is an
// index into Store.hosts; its due time is in its host's heap while it is
// unfinished (see entry). Fields are ordered to pack without padding.
type job struct {
	url, key, method, exit, reason string
	resultExit, body               string
	extra                          *extra // nil: no header, no meta
	bytes, elapsed                 int64
	seq                            int64
	status                         int
	attempts                       int32
	host                           int32
	pos                            int32 // index in its host's heap; -1 if not there
	state                          frontier.State
	truncated                      bool
}

// extra is what few jobs have: their own request headers and metadata.
type extra struct {
	header http.Header
	meta   map[string]string
}

// New returns an empty Store.
func New(cfg Config) (*Store, error) {
	if cfg.Lease < 0 {
		return nil, fmt.Errorf("frontier/memory: negative Config.Lease %v", cfg.Lease)
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	return &Store{
		lease:   cfg.Lease,
		gets:    make(map[string]struct{}),
		others:  make(map[methodKey]struct{}),
		byName:  make(map[string]*host),
		ready:   hostHeap{byServed: true, in: inReady},
		waiting: hostHeap{in: inWaiting},
		reasons: make(map[string]int),
	}, nil
}

// Close empties the store and makes every later call fail with
// frontier.ErrClosed. It is safe to call more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.chunks, s.fin, s.n = nil, nil, 0
	s.gets, s.others, s.byName, s.hosts, s.reasons = nil, nil, nil, nil, nil
	s.ready.hs, s.waiting.hs, s.open, s.round, s.taken = nil, nil, nil, nil, nil
	return nil
}

func (s *Store) job(idx int32) *job {
	return &s.chunks[idx>>chunkBits][idx&(chunkSize-1)]
}

// check returns the error a call must fail with, if any. The caller holds
// s.mu.
func (s *Store) check(ctx context.Context) error {
	if s.closed {
		return frontier.ErrClosed
	}
	return ctx.Err()
}

// Time encoding: due times are int64 unix nanoseconds. The zero time
// ("immediately") sorts before every real instant, including those before
// 1970; instants beyond what int64 nanoseconds hold (before 1678, after
// 2262) are clamped to the nearest one that fits.
const (
	immediately = math.MinInt64
	maxSec      = math.MaxInt64/1_000_000_000 - 1 // whole seconds safely within range
)

func enc(t time.Time) int64 {
	switch s := t.Unix(); {
	case t.IsZero():
		return immediately
	case s > maxSec:
		return math.MaxInt64
	case s < -maxSec:
		return immediately + 1
	}
	return t.UnixNano()
}

func dec(v int64) time.Time {
	if v == immediately {
		return time.Time{}
	}
	return time.Unix(0, v)
}

// leaseUntil returns now plus the lease, saturating.
func (s *Store) leaseUntil(now int64) int64 {
	if now > math.MaxInt64-int64(s.lease) {
		return math.MaxInt64
	}
	return now + int64(s.lease)
}

// Push implements frontier.Frontier.
func (s *Store) Push(ctx context.Context, jobs []frontier.NewJob) (int, error) {
	prepared, err := frontier.PrepareAll(jobs)
	if err != nil {
		return 0, fmt.Errorf("frontier/memory: %w", err)
	}
	for i := range prepared {
		if j := &prepared[i]; j.Key == j.URL {
			j.Key = j.URL // share the URL's bytes; the key's own copy is freed
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return 0, fmt.Errorf("frontier/memory: push: %w", err)
	}
	if int64(s.n)+int64(len(prepared)) > MaxJobs {
		return 0, fmt.Errorf("%w: %d jobs held, %d pushed", ErrFull, s.n, len(prepared))
	}
	added := 0
	for i := range prepared {
		p := &prepared[i]
		if !s.addKey(p.Method, p.Key) {
			continue
		}
		h := s.byName[p.Host]
		if h == nil {
			h = &host{name: p.Host, id: int32(len(s.hosts)), pos: -1}
			s.byName[p.Host] = h
			s.hosts = append(s.hosts, h)
		}
		idx := s.n
		if idx&(chunkSize-1) == 0 {
			s.chunks = append(s.chunks, new([chunkSize]job))
		}
		if idx&63 == 0 {
			s.fin = append(s.fin, 0)
		}
		s.n++
		*s.job(idx) = job{
			url: p.URL, key: p.Key, method: p.Method, exit: p.Exit,
			host: h.id, state: frontier.Queued,
		}
		if p.Header != nil || p.Meta != nil {
			s.job(idx).extra = &extra{header: p.Header, meta: p.Meta}
		}
		s.qpush(h, entry{due: enc(p.Due), idx: idx})
		s.refile(h)
		added++
	}
	s.counts[frontier.Queued] += added
	return added, nil
}

// addKey records (method, key) and reports whether it was new.
func (s *Store) addKey(method, key string) bool {
	// GET, nearly every job, gets a set keyed by the URL alone: half the
	// size of an entry keyed by both.
	if method == "GET" {
		if _, ok := s.gets[key]; ok {
			return false
		}
		s.gets[key] = struct{}{}
		return true
	}
	k := methodKey{method, key}
	if _, ok := s.others[k]; ok {
		return false
	}
	s.others[k] = struct{}{}
	return true
}

// Claim implements frontier.Frontier. hostOK is called with the store's
// lock held: it must not call the Store.
func (s *Store) Claim(ctx context.Context, now time.Time, max int, hostOK func(host string) bool) ([]frontier.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("frontier/memory: claim: %w", err)
	}
	if max <= 0 {
		return nil, nil
	}
	n := enc(now)
	s.promote(n)
	chosen := s.open[:0]
	// Each host in the ready heap is looked at once: one that loses its
	// turn goes back with a stamp later than every host not yet looked at.
	for i := s.ready.len(); i > 0 && len(chosen) < max; i-- {
		h := s.ready.pop()
		if h.next() > n {
			s.waiting.push(h)
			continue
		}
		if hostOK != nil && !hostOK(h.name) {
			s.clock++
			h.served = s.clock
			s.ready.push(h)
			continue
		}
		chosen = append(chosen, h)
	}
	jobs := s.take(chosen, n, max)
	for i, h := range chosen {
		s.served(h, n)
		chosen[i] = nil
	}
	s.open = chosen[:0]
	return jobs, nil
}

// ClaimHost implements frontier.Frontier.
func (s *Store) ClaimHost(ctx context.Context, name string, now time.Time, max int) ([]frontier.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("frontier/memory: claim host %q: %w", name, err)
	}
	n := enc(now)
	h := s.byName[name]
	if max <= 0 || h == nil || len(h.q) == 0 || h.next() > n {
		return nil, nil
	}
	s.unfile(h)
	jobs := s.take(append(s.open[:0], h), n, max)
	s.served(h, n)
	s.open = s.open[:0]
	return jobs, nil
}

// take leases up to max jobs due at now from hosts, which are in no heap:
// one job from each host in turn, earliest due first within a host, so
// that max is shared evenly and what one host cannot use goes to the
// others. It returns the jobs in the order taken.
func (s *Store) take(hosts []*host, now int64, max int) []frontier.Job {
	if len(hosts) == 0 {
		return nil
	}
	avail := 0
	for _, h := range hosts {
		avail += len(h.q)
	}
	until := s.leaseUntil(now)
	out := make([]frontier.Job, 0, min(max, avail))
	taken := s.taken[:0]
	open := append(s.round[:0], hosts...)
	for len(out) < max && len(open) > 0 {
		k := 0
		for _, h := range open {
			if len(out) == max {
				break
			}
			if len(h.q) == 0 || h.next() > now {
				continue // done with this host
			}
			e := s.qremove(h, 0)
			j := s.job(e.idx)
			s.counts[j.state]--
			s.counts[frontier.Leased]++
			j.state = frontier.Leased
			j.seq++
			out = append(out, s.export(e.idx, j, until))
			taken = append(taken, e.idx)
			open[k] = h
			k++
		}
		open = open[:k]
	}
	clear(open[:cap(open)])
	s.round = open[:0]
	// Back into the heaps only now: with a lease that ends at or before
	// now (a clamped clock), a job could otherwise be taken twice.
	for _, idx := range taken {
		j := s.job(idx)
		s.qpush(s.hosts[j.host], entry{due: until, idx: idx})
	}
	s.taken = taken[:0]
	return out
}

// Ready implements frontier.Frontier. max <= 0 means all hosts.
func (s *Store) Ready(ctx context.Context, now time.Time, max int) (frontier.Ready, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return frontier.Ready{}, fmt.Errorf("frontier/memory: ready: %w", err)
	}
	n := enc(now)
	s.promote(n)
	var r frontier.Ready
	if want := s.ready.len(); want > 0 {
		if max > 0 {
			want = min(want, max)
		}
		r.Hosts = make([]string, 0, want)
	}
	// Pop the hosts in order of last service and put them back unchanged.
	back := s.open[:0]
	for s.ready.len() > 0 && (max <= 0 || len(r.Hosts) < max) {
		h := s.ready.pop()
		if h.next() > n {
			s.waiting.push(h)
			continue
		}
		r.Hosts = append(r.Hosts, h.name)
		back = append(back, h)
	}
	for i, h := range back {
		s.ready.push(h)
		back[i] = nil
	}
	s.open = back[:0]
	if s.waiting.len() > 0 {
		r.Next = dec(s.waiting.min().next())
	}
	return r, nil
}

// leased returns the job that l leases, and its host. The caller holds
// s.mu.
func (s *Store) leased(ctx context.Context, op string, l frontier.Lease) (*job, *host, error) {
	if err := s.check(ctx); err != nil {
		return nil, nil, fmt.Errorf("frontier/memory: %s job %d: %w", op, l.ID, err)
	}
	if l.ID < 1 || l.ID > int64(s.n) {
		return nil, nil, fmt.Errorf("frontier/memory: %s job %d: %w", op, l.ID, frontier.ErrNotFound)
	}
	j := s.job(int32(l.ID - 1))
	if j.state != frontier.Leased || j.seq != l.Seq {
		return nil, nil, fmt.Errorf("frontier/memory: %s job %d: %w: job is %s, claim %d; lease is claim %d",
			op, l.ID, frontier.ErrLeaseLost, j.state, j.seq, l.Seq)
	}
	return j, s.hosts[j.host], nil
}

// requeue moves a leased job to state to, due at due.
func (s *Store) requeue(j *job, h *host, to frontier.State, due int64) {
	s.counts[j.state]--
	s.counts[to]++
	j.state = to
	h.q[j.pos].due = due
	s.qfix(h, int(j.pos))
	s.refile(h)
}

// finish moves a leased job to a final state.
func (s *Store) finish(idx int32, j *job, h *host, to frontier.State) {
	s.counts[j.state]--
	s.counts[to]++
	j.state = to
	j.attempts++
	s.qremove(h, int(j.pos))
	s.refile(h)
	s.fin[idx>>6] |= 1 << (idx & 63)
}

// Extend implements frontier.Frontier.
func (s *Store) Extend(ctx context.Context, l frontier.Lease, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, h, err := s.leased(ctx, "extend", l)
	if err != nil {
		return err
	}
	s.requeue(j, h, frontier.Leased, enc(until))
	return nil
}

// Complete implements frontier.Frontier.
func (s *Store) Complete(ctx context.Context, l frontier.Lease, r frontier.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, h, err := s.leased(ctx, "complete", l)
	if err != nil {
		return err
	}
	s.finish(int32(l.ID-1), j, h, frontier.Done)
	j.status, j.bytes, j.elapsed, j.resultExit, j.body, j.truncated = r.Status, r.Bytes, int64(r.Elapsed), r.Exit, r.Body, r.Truncated
	return nil
}

// Retry implements frontier.Frontier.
func (s *Store) Retry(ctx context.Context, l frontier.Lease, at time.Time, charge bool, status int, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, h, err := s.leased(ctx, "retry", l)
	if err != nil {
		return err
	}
	if charge {
		j.attempts++
	}
	j.status, j.reason = status, reason
	s.requeue(j, h, frontier.Queued, enc(at))
	return nil
}

// Park implements frontier.Frontier.
func (s *Store) Park(ctx context.Context, l frontier.Lease, until time.Time, status int, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, h, err := s.leased(ctx, "park", l)
	if err != nil {
		return err
	}
	j.status, j.reason = status, reason
	s.requeue(j, h, frontier.Parked, enc(until))
	return nil
}

// Abandon implements frontier.Frontier.
func (s *Store) Abandon(ctx context.Context, l frontier.Lease, status int, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, h, err := s.leased(ctx, "abandon", l)
	if err != nil {
		return err
	}
	s.finish(int32(l.ID-1), j, h, frontier.Abandoned)
	j.status, j.reason = status, reason
	s.reasons[reason]++
	return nil
}

// Release implements frontier.Frontier.
func (s *Store) Release(ctx context.Context, l frontier.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, h, err := s.leased(ctx, "release", l)
	if err != nil {
		return err
	}
	s.requeue(j, h, frontier.Queued, immediately)
	return nil
}

// Get implements frontier.Frontier.
func (s *Store) Get(ctx context.Context, id int64) (frontier.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return frontier.Job{}, fmt.Errorf("frontier/memory: get job %d: %w", id, err)
	}
	if id < 1 || id > int64(s.n) {
		return frontier.Job{}, fmt.Errorf("frontier/memory: get job %d: %w", id, frontier.ErrNotFound)
	}
	return s.exportAt(int32(id - 1)), nil
}

// exportAt returns the job at idx as the frontier package shows it.
func (s *Store) exportAt(idx int32) frontier.Job {
	j := s.job(idx)
	var due int64
	if j.pos >= 0 && !j.state.Final() {
		due = s.hosts[j.host].q[j.pos].due
	}
	return s.export(idx, j, due)
}

// export returns j, at index idx with due time or lease expiry due, as the
// frontier package shows it.
func (s *Store) export(idx int32, j *job, due int64) frontier.Job {
	out := frontier.Job{
		ID:       int64(idx) + 1,
		URL:      j.url,
		Key:      j.key,
		Host:     s.hosts[j.host].name,
		Method:   j.method,
		Exit:     j.exit,
		State:    j.state,
		Attempts: int(j.attempts),
		Seq:      j.seq,
		Status:   j.status,
		Reason:   j.reason,
	}
	if j.extra != nil {
		out.Header, out.Meta = j.extra.header, j.extra.meta
	}
	switch j.state {
	case frontier.Queued, frontier.Parked:
		out.Due = dec(due)
	case frontier.Leased:
		out.LeaseUntil = dec(due)
	case frontier.Done:
		out.Result = frontier.Result{
			Status: j.status, Bytes: j.bytes, Exit: j.resultExit,
			Elapsed: time.Duration(j.elapsed), Body: j.body, Truncated: j.truncated,
		}
	}
	return out
}

// Counts implements frontier.Frontier.
func (s *Store) Counts(ctx context.Context) (frontier.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return frontier.Counts{}, fmt.Errorf("frontier/memory: counts: %w", err)
	}
	return frontier.Counts{
		Queued:            s.counts[frontier.Queued],
		Leased:            s.counts[frontier.Leased],
		Parked:            s.counts[frontier.Parked],
		Done:              s.counts[frontier.Done],
		Abandoned:         s.counts[frontier.Abandoned],
		AbandonedByReason: maps.Clone(s.reasons),
	}, nil
}

// Finished implements frontier.Frontier.
func (s *Store) Finished(ctx context.Context, after int64, limit int) ([]frontier.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("frontier/memory: finished: %w", err)
	}
	if limit <= 0 || after >= int64(s.n) {
		return nil, nil
	}
	// Job IDs above after are the indices from after on.
	start := max(after, 0)
	var out []frontier.Job
	for w := int(start >> 6); w < len(s.fin) && len(out) < limit; w++ {
		word := s.fin[w]
		if w == int(start>>6) {
			word &^= 1<<(start&63) - 1 // indices below start
		}
		for word != 0 && len(out) < limit {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			out = append(out, s.exportAt(int32(w<<6+b)))
		}
	}
	return out, nil
}

// Recover implements frontier.Frontier. It walks every unfinished job.
func (s *Store) Recover(ctx context.Context, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return 0, fmt.Errorf("frontier/memory: recover: %w", err)
	}
	n, recovered := enc(now), 0
	for _, h := range s.hosts {
		changed := false
		for i := range h.q {
			j := s.job(h.q[i].idx)
			if j.state == frontier.Leased {
				j.state = frontier.Queued
				h.q[i].due = n
				recovered++
				changed = true
			}
		}
		if changed {
			s.qinit(h)
			s.refile(h)
		}
	}
	s.counts[frontier.Leased] -= recovered
	s.counts[frontier.Queued] += recovered
	return recovered, nil
}
