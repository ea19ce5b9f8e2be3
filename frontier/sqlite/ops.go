package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/exitgate/exitgate/frontier"
)

// insRows is how many jobs one INSERT statement adds. A statement per job
// spends more in binding, locking and stepping than SQLite spends in its
// b-trees.
const insRows = 128

// Push implements frontier.Frontier. All jobs are added in one
// transaction: push in batches of a few thousand.
func (s *Store) Push(ctx context.Context, jobs []frontier.NewJob) (int, error) {
	p, err := frontier.PrepareBatch(jobs)
	if err != nil {
		return 0, fmt.Errorf("frontier/sqlite: %w", err)
	}
	return s.PushPrepared(ctx, p)
}

var _ frontier.PreparedPusher = (*Store)(nil)

// PushPrepared implements frontier.PreparedPusher.
func (s *Store) PushPrepared(ctx context.Context, p frontier.Prepared) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	added := 0
	err := s.inTx(ctx, func() (func(), error) {
		newHosts := make(map[string]int64)
		jobs := byHost(p.Jobs())
		hosts := make([]int64, len(jobs))
		for i, j := range jobs {
			if h := s.sched.byName[j.Host]; h != nil {
				hosts[i] = h.id
			} else if id, ok := newHosts[j.Host]; ok {
				hosts[i] = id
			} else {
				res, err := s.st.insHost.ExecContext(ctx, j.Host)
				if err != nil {
					return nil, err
				}
				if hosts[i], err = res.LastInsertId(); err != nil {
					return nil, err
				}
				newHosts[j.Host] = hosts[i]
			}
		}
		// The earliest due among the added jobs of each host, first seen
		// first. A statement that adds fewer rows than it was given (some
		// were duplicates) does not say which: its hosts' earliest due is
		// read back from the file instead.
		mins := make(map[int64]int64)
		var order []int64
		reread := make(map[int64]bool)
		var ins inserter
		for lo := 0; lo < len(jobs); {
			n, st, args := ins.next(s, jobs[lo:], hosts[lo:])
			res, err := st.ExecContext(ctx, args...)
			if err != nil {
				return nil, err
			}
			got, err := res.RowsAffected()
			if err != nil {
				return nil, err
			}
			added += int(got)
			for i := lo; i < lo+n; i++ {
				hid := hosts[i]
				if got != int64(n) {
					reread[hid] = true
				}
				if got == 0 && n == 1 {
					continue // the one job was a duplicate: no change
				}
				due := enc(jobs[i].Due)
				if m, ok := mins[hid]; !ok {
					mins[hid] = due
					order = append(order, hid)
				} else if due < m {
					mins[hid] = due
				}
			}
			lo += n
		}
		exact := make(map[int64]hostNext, len(reread))
		for hid := range reread {
			active, next, err := s.minDue(ctx, hid)
			if err != nil {
				return nil, err
			}
			exact[hid] = hostNext{active, next}
		}
		return func() {
			for name, id := range newHosts {
				s.sched.add(id, name)
			}
			for _, hid := range order {
				h := s.sched.byID[hid]
				if hn, ok := exact[hid]; ok {
					s.sched.set(h, hn.active, hn.next)
					continue
				}
				due := mins[hid]
				if h.active && h.next < due {
					due = h.next
				}
				s.sched.set(h, true, due)
			}
			s.counts[frontier.Queued] += added
		}, nil
	})
	if err != nil {
		return 0, fmt.Errorf("frontier/sqlite: push: %w", err)
	}
	return added, nil
}

// byHost returns the jobs grouped by host, the hosts in the order of their
// first job, each host's jobs in their order: a list over many hosts in
// turn (one URL of each, then the next of each) becomes one run of keys per
// host (inserter.next), and its rows go to the b-trees host by host. The
// order among hosts is the scheduler's to make, not the rows'; within a host
// the order of the rows (claim order for equal due times) is the list's.
// 1,000,000 URLs over 1,000 hosts in turn load at 191k-225k URLs/s instead
// of 145k (BenchmarkPushFile, in BulkLoad both), with a third of the
// allocations (runs of keys instead of statements of 128 rows).
func byHost(prepared []frontier.Job) []*frontier.Job {
	jobs := make([]*frontier.Job, len(prepared))
	ranks := make([]int32, len(prepared)) // each job's host, by its first job's order
	rank := make(map[string]int32)
	var count []int
	last := ""
	r := int32(-1)
	for i := range prepared {
		if h := prepared[i].Host; h != last || r < 0 {
			var ok bool
			if r, ok = rank[h]; !ok {
				r = int32(len(count))
				rank[h] = r
				count = append(count, 0)
			}
			last = h
		}
		ranks[i] = r
		count[r]++
	}
	at := make([]int, len(count)) // where each host's next job goes
	for r := 1; r < len(count); r++ {
		at[r] = at[r-1] + count[r-1]
	}
	for i := range prepared {
		jobs[at[ranks[i]]] = &prepared[i]
		at[ranks[i]]++
	}
	return jobs
}

// inserter binds the values of the next INSERT of a push, reusing its
// buffers from one statement to the next.
type inserter struct {
	args []any
	// keys is the JSON array of a run's keys, rebuilt in place for each
	// run: the driver copies bound text into SQLite's memory before Exec
	// returns (modernc's bindText), so the string over it is never read
	// after (a new string per run was half of a URL file's allocations).
	keys []byte
}

// next picks the statement that adds the first jobs (host IDs in hosts)
// and binds its values; it returns how many jobs it adds. A run of jobs that
// share method, host and due goes as one JSON array of keys (the usual URL
// list); otherwise insRows jobs at once, with only what they set (plain) or
// every column; the last few one by one.
func (ins *inserter) next(s *Store, jobs []*frontier.Job, hosts []int64) (int, *sql.Stmt, []any) {
	args := ins.args[:0]
	defer func() { ins.args = args[:0] }()
	if n := plainRun(jobs[:min(maxRun, len(jobs))], hosts); n >= minRun {
		k := append(ins.keys[:0], '[')
		for i := range n {
			if i > 0 {
				k = append(k, ',')
			}
			k = append(k, '"')
			k = append(k, jobs[i].Key...)
			k = append(k, '"')
		}
		k = append(k, ']')
		ins.keys = k
		args = append(args, unsafe.String(&k[0], len(k)), jobs[0].Method, hosts[0], enc(jobs[0].Due))
		return n, s.st.insRun, args
	}
	if len(jobs) >= insRows && allPlain(jobs[:insRows]) {
		for i := range insRows {
			args = append(args, jobs[i].Key, jobs[i].Method, hosts[i], enc(jobs[i].Due))
		}
		return insRows, s.st.insPlain, args
	}
	n, st := insRows, s.st.insJobs
	if len(jobs) < insRows {
		n, st = 1, s.st.insJob
	}
	for i := range n {
		j := jobs[i]
		var url any // NULL: same as key
		if j.URL != j.Key {
			url = j.URL
		}
		args = append(args, j.Key, j.Method, url, hosts[i], j.Exit, enc(j.Due), encExtra(j.Header), encExtra(j.Meta))
	}
	return n, st, args
}

// maxRun and minRun bound the jobs insRun adds at once: it pays from a few
// dozen on.
const (
	maxRun = 1024
	minRun = 32
)

// plainRun returns how many jobs from the start of jobs (with host IDs
// hosts) insRun can add at once: jobs that are their own key, JSON-safe,
// with no exit pin, header or meta, and the first job's method, host and
// due.
func plainRun(jobs []*frontier.Job, hosts []int64) int {
	if len(jobs) == 0 {
		return 0
	}
	first := jobs[0]
	for i, j := range jobs {
		if j.URL != j.Key || j.Exit != "" || j.Header != nil || j.Meta != nil ||
			j.Method != first.Method || hosts[i] != hosts[0] || !j.Due.Equal(first.Due) || !jsonSafe(j.Key) {
			return i
		}
	}
	return len(jobs)
}

// jsonSafe reports whether s may stand between JSON quotes as it is.
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == 0x7f {
			return false
		}
	}
	return utf8.ValidString(s)
}

// allPlain reports whether every job is its own key and has no exit pin,
// header or meta: what insPlain writes.
func allPlain(jobs []*frontier.Job) bool {
	for _, j := range jobs {
		if j.URL != j.Key || j.Exit != "" || j.Header != nil || j.Meta != nil {
			return false
		}
	}
	return true
}

// Claim implements frontier.Frontier. hostOK is called with the store's
// lock held: it must not call the Store.
func (s *Store) Claim(ctx context.Context, now time.Time, max int, hostOK func(host string) bool) ([]frontier.Job, error) {
	if max <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, frontier.ErrClosed
	}
	n := enc(now)
	sc := s.sched
	sc.promote(n)
	var chosen []*host
	for i := sc.ringLen; i > 0 && len(chosen) < max; i-- {
		h := sc.head
		if !h.active || h.next > n {
			sc.settle(h)
			continue
		}
		sc.remove(h)
		if hostOK != nil && !hostOK(h.name) {
			sc.pushBack(h) // loses its turn
			continue
		}
		chosen = append(chosen, h)
	}
	jobs, err := s.claimLocked(ctx, chosen, n, max)
	for _, h := range chosen {
		sc.served(h, n)
	}
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: claim: %w", err)
	}
	return jobs, nil
}

// ClaimHost implements frontier.Frontier.
func (s *Store) ClaimHost(ctx context.Context, name string, now time.Time, max int) ([]frontier.Job, error) {
	if max <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, frontier.ErrClosed
	}
	n := enc(now)
	h := s.sched.byName[name]
	if h == nil || !h.active || h.next > n {
		return nil, nil
	}
	if h.inRing {
		s.sched.remove(h)
	}
	jobs, err := s.claimLocked(ctx, []*host{h}, n, max)
	s.sched.served(h, n)
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: claim host %q: %w", name, err)
	}
	return jobs, nil
}

// claimLocked leases up to max due jobs from hosts, sharing max evenly and
// handing what a host cannot use to the others, and returns the jobs
// interleaved host by host. It updates the hosts' active and next fields
// but does not file them in the schedule: the caller does.
func (s *Store) claimLocked(ctx context.Context, hosts []*host, now int64, max int) ([]frontier.Job, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	until := int64(maxNanos)
	if now < maxNanos-int64(s.cfg.Lease) {
		until = now + int64(s.cfg.Lease)
	}
	got := make([][]frontier.Job, len(hosts))
	nexts := make([]hostNext, len(hosts))
	for i, h := range hosts {
		nexts[i] = hostNext{h.active, h.next}
	}
	err := s.inTx(ctx, func() (func(), error) {
		var delta [frontier.Abandoned + 1]int
		remaining := max
		open := make([]int, len(hosts))
		for i := range open {
			open[i] = i
		}
		for remaining > 0 && len(open) > 0 {
			per, extra := remaining/len(open), remaining%len(open)
			var more []int
			for k, i := range open {
				q := per
				if k < extra {
					q++
				}
				if q == 0 { // not this round: fewer jobs wanted than hosts
					more = append(more, i)
					continue
				}
				js, hn, err := s.leaseDue(ctx, hosts[i], now, until, q, &delta)
				if err != nil {
					return nil, err
				}
				nexts[i] = hn
				got[i] = append(got[i], js...)
				remaining -= len(js)
				if len(js) == q {
					more = append(more, i)
				}
			}
			open = more
		}
		return func() {
			for i, h := range hosts {
				h.active, h.next = nexts[i].active, nexts[i].next
			}
			for st, d := range delta {
				s.counts[st] += d
			}
		}, nil
	})
	if err != nil {
		return nil, err
	}
	var jobs []frontier.Job
	for round := 0; ; round++ {
		took := false
		for _, js := range got {
			if round < len(js) {
				jobs = append(jobs, js[round])
				took = true
			}
		}
		if !took {
			return jobs, nil
		}
	}
}

// hostNext is what the in-memory index holds for a host: whether it has
// unfinished jobs, and the earliest due among them.
type hostNext struct {
	active bool
	next   int64
}

// leaseDue leases up to q due jobs of one host and returns them with the
// host's new earliest due. It reads the head of the host's jobs in claim
// order, one row past what it may take: the jobs it leases are a prefix of
// that order, so one UPDATE leases them all, and the first row it does not
// take bounds every row after it, so the new earliest due is known without
// another query.
func (s *Store) leaseDue(ctx context.Context, h *host, now, until int64, q int, delta *[frontier.Abandoned + 1]int) ([]frontier.Job, hostNext, error) {
	rows, err := s.st.selHead.QueryContext(ctx, h.id, q+1)
	if err != nil {
		return nil, hostNext{}, err
	}
	var jobs []frontier.Job
	var lastDue int64
	var hn hostNext
	for rows.Next() {
		var j frontier.Job
		var url sql.NullString
		var state int
		var due int64
		var header, meta string
		if err := rows.Scan(&j.ID, &j.Key, &j.Method, &url, &j.Exit, &state, &due, &j.Attempts, &j.Seq, &j.Status, &j.Reason, &header, &meta); err != nil {
			rows.Close()
			return nil, hostNext{}, err
		}
		if err := decExtra(header, &j.Header); err != nil {
			rows.Close()
			return nil, hostNext{}, fmt.Errorf("job %d header: %w", j.ID, err)
		}
		if err := decExtra(meta, &j.Meta); err != nil {
			rows.Close()
			return nil, hostNext{}, fmt.Errorf("job %d meta: %w", j.ID, err)
		}
		if len(jobs) == q || due > now {
			hn = hostNext{active: true, next: due}
			break
		}
		j.URL = j.Key
		if url.Valid {
			j.URL = url.String
		}
		j.Host = h.name
		j.State = frontier.Leased
		j.Seq++
		j.LeaseUntil = dec(until)
		delta[state]--
		delta[frontier.Leased]++
		jobs = append(jobs, j)
		lastDue = due
	}
	if err := rows.Close(); err != nil {
		return nil, hostNext{}, err
	}
	if len(jobs) == 0 {
		return nil, hn, nil
	}
	res, err := s.st.lease.ExecContext(ctx, until, h.id, lastDue, len(jobs))
	if err != nil {
		return nil, hostNext{}, err
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(jobs)) {
		return nil, hostNext{}, fmt.Errorf("leased %d rows of host %q, want %d (%v)", n, h.name, len(jobs), err)
	}
	if !hn.active || until < hn.next {
		hn = hostNext{active: true, next: until}
	}
	return jobs, hn, nil
}

// minDue returns whether a host has unfinished jobs and their earliest due.
func (s *Store) minDue(ctx context.Context, hostID int64) (bool, int64, error) {
	var next int64
	err := s.st.minDue.QueryRowContext(ctx, hostID).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil
	}
	return err == nil, next, err
}

// Ready implements frontier.Frontier. max <= 0 means all hosts.
func (s *Store) Ready(ctx context.Context, now time.Time, max int) (frontier.Ready, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return frontier.Ready{}, frontier.ErrClosed
	}
	n := enc(now)
	sc := s.sched
	sc.promote(n)
	var r frontier.Ready
	for h := sc.head; h != nil && (max <= 0 || len(r.Hosts) < max); {
		succ := h.succ
		if !h.active || h.next > n {
			sc.settle(h)
		} else {
			r.Hosts = append(r.Hosts, h.name)
		}
		h = succ
	}
	if next, ok := sc.nextWaiting(); ok {
		r.Next = dec(next)
	}
	return r, nil
}

// settleOp is one change to a leased job, waiting to be committed.
type settleOp struct {
	ctx    context.Context
	name   string
	l      frontier.Lease
	to     frontier.State
	reason string // counted when to is Abandoned
	upd    *sql.Stmt
	args   []any  // upd's arguments before the job ID
	due    *int64 // the job's due after the change; nil when it finishes

	err  error
	done chan struct{}
}

// settle changes a leased job under lease l with upd(args..., id) and
// moves it to state to.
//
// Changes from concurrent callers are committed together (group commit):
// each caller queues its change and takes the store's lock; whoever gets
// the lock first commits everything queued in one transaction, and the
// others find their change done. One commit, and with SyncFull one fsync,
// then serves many workers. Each change is still checked and applied on
// its own: one lost lease fails only its own call.
func (s *Store) settle(ctx context.Context, name string, l frontier.Lease, to frontier.State, reason string, due *int64, upd *sql.Stmt, args ...any) error {
	o := &settleOp{ctx: ctx, name: name, l: l, to: to, reason: reason, due: due, upd: upd, args: args, done: make(chan struct{})}
	s.qmu.Lock()
	s.queue = append(s.queue, o)
	s.qmu.Unlock()
	s.mu.Lock()
	select {
	case <-o.done: // committed by the caller that held the lock before us
	default:
		s.qmu.Lock()
		batch := s.queue
		s.queue = nil
		s.qmu.Unlock()
		s.commitBatch(ctx, batch)
	}
	s.mu.Unlock()
	<-o.done
	if o.err != nil {
		return fmt.Errorf("frontier/sqlite: %s job %d: %w", name, l.ID, o.err)
	}
	return nil
}

// commitBatch applies queued changes in one transaction and closes their
// done channels. The caller holds s.mu.
func (s *Store) commitBatch(ctx context.Context, batch []*settleOp) {
	var applies []func()
	nexts := make(map[*host]hostNext) // as changed by the batch so far
	err := s.inTx(context.WithoutCancel(ctx), func() (func(), error) {
		for _, o := range batch {
			if err := o.ctx.Err(); err != nil {
				o.err = err
				continue
			}
			apply, err := s.settleOne(o, nexts)
			if errors.Is(err, frontier.ErrNotFound) || errors.Is(err, frontier.ErrLeaseLost) {
				o.err = err // nothing written for this op; the others go on
				continue
			}
			if err != nil {
				return nil, err
			}
			applies = append(applies, apply)
		}
		return func() {
			for _, apply := range applies {
				apply()
			}
			for h, hn := range nexts {
				s.sched.set(h, hn.active, hn.next)
			}
		}, nil
	})
	if err == nil && len(applies) > 0 {
		s.stats.Commits++
		s.stats.Changes += int64(len(applies))
	}
	for _, o := range batch {
		if err != nil && o.err == nil {
			o.err = err
		}
		close(o.done)
	}
}

// settleOne checks and writes one change inside commitBatch's
// transaction, and records the host's new earliest due in nexts.
func (s *Store) settleOne(o *settleOp, nexts map[*host]hostNext) (func(), error) {
	ctx := context.WithoutCancel(o.ctx)
	var hostID, seq, due int64
	var state frontier.State
	err := s.st.getLease.QueryRowContext(ctx, o.l.ID).Scan(&hostID, &state, &seq, &due)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, frontier.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if state != frontier.Leased || seq != o.l.Seq {
		return nil, fmt.Errorf("%w: job is %s, claim %d; lease is claim %d", frontier.ErrLeaseLost, state, seq, o.l.Seq)
	}
	if _, err := o.upd.ExecContext(ctx, append(o.args, o.l.ID)...); err != nil {
		return nil, err
	}
	h := s.sched.byID[hostID]
	if h == nil {
		return nil, fmt.Errorf("job %d has unknown host %d", o.l.ID, hostID)
	}
	cur, ok := nexts[h]
	if !ok {
		cur = hostNext{h.active, h.next}
	}
	if cur.active && due > cur.next {
		// Another job holds the host's earliest due: the host keeps it,
		// unless this job's new due comes first. The common case (a
		// lease expiry is rarely the earliest due) needs no query.
		if o.due != nil && *o.due < cur.next {
			cur.next = *o.due
		}
	} else {
		active, next, err := s.minDue(ctx, hostID)
		if err != nil {
			return nil, err
		}
		cur = hostNext{active, next}
	}
	nexts[h] = cur
	return func() {
		s.counts[frontier.Leased]--
		s.counts[o.to]++
		if o.to == frontier.Abandoned {
			s.reasons[o.reason]++
		}
	}, nil
}

// Extend implements frontier.Frontier.
func (s *Store) Extend(ctx context.Context, l frontier.Lease, until time.Time) error {
	d := enc(until)
	return s.settle(ctx, "extend", l, frontier.Leased, "", &d, s.st.extend, d)
}

// Complete implements frontier.Frontier.
func (s *Store) Complete(ctx context.Context, l frontier.Lease, r frontier.Result) error {
	return s.settle(ctx, "complete", l, frontier.Done, "", nil, s.st.complete,
		r.Status, r.Bytes, int64(r.Elapsed), r.Exit, r.Body, r.Truncated)
}

// Retry implements frontier.Frontier.
func (s *Store) Retry(ctx context.Context, l frontier.Lease, at time.Time, charge bool, status int, reason string) error {
	c := 0
	if charge {
		c = 1
	}
	d := enc(at)
	return s.settle(ctx, "retry", l, frontier.Queued, "", &d, s.st.retry, d, c, status, reason)
}

// Park implements frontier.Frontier.
func (s *Store) Park(ctx context.Context, l frontier.Lease, until time.Time, status int, reason string) error {
	d := enc(until)
	return s.settle(ctx, "park", l, frontier.Parked, "", &d, s.st.park, d, status, reason)
}

// Abandon implements frontier.Frontier.
func (s *Store) Abandon(ctx context.Context, l frontier.Lease, status int, reason string) error {
	return s.settle(ctx, "abandon", l, frontier.Abandoned, reason, nil, s.st.abandon, status, reason)
}

// Release implements frontier.Frontier.
func (s *Store) Release(ctx context.Context, l frontier.Lease) error {
	var d int64 // due immediately
	return s.settle(ctx, "release", l, frontier.Queued, "", &d, s.st.release)
}

// Get implements frontier.Frontier.
func (s *Store) Get(ctx context.Context, id int64) (frontier.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return frontier.Job{}, frontier.ErrClosed
	}
	j, err := s.scanJob(s.st.get.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = frontier.ErrNotFound
	}
	if err != nil {
		return frontier.Job{}, fmt.Errorf("frontier/sqlite: get job %d: %w", id, err)
	}
	return j, nil
}

// Finished implements frontier.Frontier.
func (s *Store) Finished(ctx context.Context, after int64, limit int) ([]frontier.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, frontier.ErrClosed
	}
	rows, err := s.st.finished.QueryContext(ctx, after, limit)
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: finished: %w", err)
	}
	defer rows.Close()
	var jobs []frontier.Job
	for rows.Next() {
		j, err := s.scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("frontier/sqlite: finished: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("frontier/sqlite: finished: %w", err)
	}
	return jobs, nil
}

func (s *Store) scanJob(r interface{ Scan(...any) error }) (frontier.Job, error) {
	var j frontier.Job
	var url sql.NullString
	var hostID, due, elapsed int64
	var header, meta string
	err := r.Scan(&j.ID, &j.Key, &j.Method, &url, &hostID, &j.Exit, &j.State, &due, &j.Attempts, &j.Seq,
		&j.Status, &j.Reason, &j.Result.Bytes, &elapsed, &j.Result.Exit, &j.Result.Body, &j.Result.Truncated, &header, &meta)
	if err != nil {
		return frontier.Job{}, err
	}
	if err := decExtra(header, &j.Header); err != nil {
		return frontier.Job{}, fmt.Errorf("job %d header: %w", j.ID, err)
	}
	if err := decExtra(meta, &j.Meta); err != nil {
		return frontier.Job{}, fmt.Errorf("job %d meta: %w", j.ID, err)
	}
	j.URL = j.Key
	if url.Valid {
		j.URL = url.String
	}
	if h := s.sched.byID[hostID]; h != nil {
		j.Host = h.name
	}
	switch j.State {
	case frontier.Leased:
		j.LeaseUntil = dec(due)
	case frontier.Queued, frontier.Parked:
		j.Due = dec(due)
	case frontier.Done:
		j.Result.Status = j.Status
		j.Result.Elapsed = time.Duration(elapsed)
	}
	return j, nil
}

// Counts implements frontier.Frontier. It costs no query.
func (s *Store) Counts(ctx context.Context) (frontier.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return frontier.Counts{}, frontier.ErrClosed
	}
	return s.countsLocked(), nil
}

func (s *Store) countsLocked() frontier.Counts {
	return frontier.Counts{
		Queued:            s.counts[frontier.Queued],
		Leased:            s.counts[frontier.Leased],
		Parked:            s.counts[frontier.Parked],
		Done:              s.counts[frontier.Done],
		Abandoned:         s.counts[frontier.Abandoned],
		AbandonedByReason: maps.Clone(s.reasons),
	}
}

// Recover implements frontier.Frontier.
func (s *Store) Recover(ctx context.Context, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	err := s.inTx(ctx, func() (func(), error) {
		res, err := s.conn.ExecContext(ctx, "UPDATE jobs SET state = 1, due = ? WHERE state = 2", enc(now))
		if err != nil {
			return nil, err
		}
		if n, err = res.RowsAffected(); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		// Read the new state inside the transaction; install it only
		// once the commit succeeded.
		return s.loadState(ctx)
	})
	if err != nil {
		return 0, fmt.Errorf("frontier/sqlite: recover: %w", err)
	}
	if n > 0 {
		s.log.Info("frontier recovered leases", "jobs", n)
	}
	return int(n), nil
}
