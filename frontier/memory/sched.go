package memory

// This file holds the two kinds of heap the store schedules with. Both are
// written out by hand rather than with container/heap: its interface
// methods box every pushed element (an allocation per Claim) and cannot
// update the back-references (job.pos, host.pos) without a second lookup.
// None of this is safe for concurrent use; the Store's mutex guards it.

// entry is one unfinished job in its host's heap. due is the job's due
// time (queued, parked) or lease expiry (leased), in the encoding of enc;
// keeping it here rather than in the job makes sifting touch only the
// heap's own array.
type entry struct {
	due int64
	idx int32 // job index (ID - 1)
}

// before orders a host's jobs: earliest due first, then push order.
func (e entry) before(f entry) bool {
	return e.due < f.due || e.due == f.due && e.idx < f.idx
}

// Where a host is filed.
const (
	inNone    uint8 = iota // no unfinished jobs, or taken out for a claim
	inReady                // believed due: in Store.ready, by last service
	inWaiting              // not due at the last look: in Store.waiting, by next due
)

// host is the scheduling state of one host key.
type host struct {
	name string
	// q is a min-heap of the host's unfinished jobs (queued, parked and
	// leased alike, a leased job keyed by its lease expiry), so q[0].due
	// is exactly when the host next has claimable work.
	q []entry
	// served is the Store.clock stamp of the host's last service (a claim,
	// or a turn lost to hostOK); 0 if never served.
	served int64
	id     int32 // creation order: breaks ties between equal stamps
	in     uint8 // inNone, inReady or inWaiting
	pos    int32 // index in the ready or waiting heap
}

// next returns when the host next has claimable work. q must not be empty.
func (h *host) next() int64 { return h.q[0].due }

// jobs

func (s *Store) qset(h *host, i int, e entry) {
	h.q[i] = e
	s.job(e.idx).pos = int32(i)
}

func (s *Store) qup(h *host, i int) {
	e := h.q[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(h.q[p]) {
			break
		}
		s.qset(h, i, h.q[p])
		i = p
	}
	s.qset(h, i, e)
}

// qdown sifts h.q[i] down and reports whether it moved.
func (s *Store) qdown(h *host, i int) bool {
	n, e, i0 := len(h.q), h.q[i], i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.q[r].before(h.q[c]) {
			c = r
		}
		if !h.q[c].before(e) {
			break
		}
		s.qset(h, i, h.q[c])
		i = c
	}
	s.qset(h, i, e)
	return i > i0
}

func (s *Store) qfix(h *host, i int) {
	if !s.qdown(h, i) {
		s.qup(h, i)
	}
}

func (s *Store) qpush(h *host, e entry) {
	h.q = append(h.q, e)
	s.qup(h, len(h.q)-1)
}

// qremove takes h.q[i] out of the heap and returns it.
func (s *Store) qremove(h *host, i int) entry {
	e, last := h.q[i], len(h.q)-1
	if i != last {
		h.q[i] = h.q[last]
		h.q = h.q[:last]
		s.qfix(h, i)
	} else {
		h.q = h.q[:last]
	}
	s.job(e.idx).pos = -1
	// Give back the array of a host that had a burst of work, so that a
	// finished crawl does not keep its peak.
	if c := cap(h.q); c > 64 && len(h.q) < c/4 {
		h.q = append(make([]entry, 0, 2*len(h.q)), h.q...)
	}
	return e
}

// qinit restores the heap order of h.q after its due times changed in bulk.
func (s *Store) qinit(h *host) {
	for i := range h.q {
		s.job(h.q[i].idx).pos = int32(i)
	}
	for i := len(h.q)/2 - 1; i >= 0; i-- {
		s.qdown(h, i)
	}
}

// hosts

// hostHeap is a min-heap of hosts: by last service (the ready heap) or by
// next due time (the waiting heap), ties by creation order.
type hostHeap struct {
	hs       []*host
	byServed bool
	in       uint8 // what host.in says for a host in this heap
}

func (q *hostHeap) before(a, b *host) bool {
	if q.byServed {
		return a.served < b.served || a.served == b.served && a.id < b.id
	}
	an, bn := a.next(), b.next()
	return an < bn || an == bn && a.id < b.id
}

func (q *hostHeap) set(i int, h *host) {
	q.hs[i] = h
	h.pos = int32(i)
}

func (q *hostHeap) up(i int) {
	h := q.hs[i]
	for i > 0 {
		p := (i - 1) / 2
		if !q.before(h, q.hs[p]) {
			break
		}
		q.set(i, q.hs[p])
		i = p
	}
	q.set(i, h)
}

func (q *hostHeap) down(i int) bool {
	n, h, i0 := len(q.hs), q.hs[i], i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && q.before(q.hs[r], q.hs[c]) {
			c = r
		}
		if !q.before(q.hs[c], h) {
			break
		}
		q.set(i, q.hs[c])
		i = c
	}
	q.set(i, h)
	return i > i0
}

func (q *hostHeap) fix(i int) {
	if !q.down(i) {
		q.up(i)
	}
}

func (q *hostHeap) push(h *host) {
	h.in = q.in
	q.hs = append(q.hs, h)
	q.up(len(q.hs) - 1)
}

func (q *hostHeap) remove(i int) *host {
	h, last := q.hs[i], len(q.hs)-1
	if i != last {
		q.hs[i] = q.hs[last]
		q.hs[last] = nil
		q.hs = q.hs[:last]
		q.fix(i)
	} else {
		q.hs[last] = nil
		q.hs = q.hs[:last]
	}
	h.in, h.pos = inNone, -1
	return h
}

func (q *hostHeap) pop() *host { return q.remove(0) }

func (q *hostHeap) min() *host { return q.hs[0] }

func (q *hostHeap) len() int { return len(q.hs) }

// Filing. A host with unfinished jobs is in exactly one of the two heaps,
// except while a claim has taken it out. The waiting heap is kept exact;
// the ready heap may hold hosts that are no longer due (their next moved
// later, or the caller's clock went back), which Claim and Ready move to
// the waiting heap when they meet them.

// unfile takes h out of whichever heap holds it.
func (s *Store) unfile(h *host) {
	switch h.in {
	case inReady:
		s.ready.remove(int(h.pos))
	case inWaiting:
		s.waiting.remove(int(h.pos))
	}
}

// refile files h after its jobs changed.
func (s *Store) refile(h *host) {
	switch {
	case len(h.q) == 0:
		s.unfile(h)
	case h.in == inNone:
		// The waiting heap, not the ready one, even if it is due now: the
		// next promote moves it, and a host's place in the ready heap is
		// by last service, which does not change here.
		s.waiting.push(h)
	case h.in == inWaiting:
		s.waiting.fix(int(h.pos))
	}
}

// promote moves the hosts due at now from the waiting to the ready heap.
func (s *Store) promote(now int64) {
	for s.waiting.len() > 0 && s.waiting.min().next() <= now {
		s.ready.push(s.waiting.pop())
	}
}

// served stamps h as served last and files it; h must be in no heap.
func (s *Store) served(h *host, now int64) {
	s.clock++
	h.served = s.clock
	switch {
	case len(h.q) == 0:
	case h.next() <= now:
		s.ready.push(h)
	default:
		s.waiting.push(h)
	}
}
