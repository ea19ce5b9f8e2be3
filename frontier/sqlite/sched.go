package sqlite

import "container/heap"

// host is the in-memory scheduling state of one host key. The database is
// the truth; this index is derived from it when the store opens and kept in
// step by every change, so that asking which hosts have due work costs no
// query.
type host struct {
	id   int64
	name string
	// active: the host has unfinished jobs. next: the smallest due value
	// among them (a lease expiry for leased jobs), in unix nanoseconds.
	active bool
	next   int64

	heapIdx    int // index in sched.waiting; -1 when not there
	inRing     bool
	prev, succ *host // ring links
}

// sched places every active host either in the ring (believed due, in
// round-robin order, least recently served at the front) or in the waiting
// heap (ordered by next). A host in the ring whose next moved into the
// future, or that ran out of work, is corrected lazily when a walk meets
// it; a host in the heap is kept exact. Not safe for concurrent use: the
// Store's mutex guards it.
type sched struct {
	byName map[string]*host
	byID   map[int64]*host

	head, tail *host
	ringLen    int

	waiting hostHeap
}

func newSched() *sched {
	return &sched{byName: make(map[string]*host), byID: make(map[int64]*host)}
}

func (s *sched) add(id int64, name string) *host {
	h := &host{id: id, name: name, heapIdx: -1}
	s.byName[name] = h
	s.byID[id] = h
	return h
}

// set records a host's new state and files it where it belongs.
func (s *sched) set(h *host, active bool, next int64) {
	h.active, h.next = active, next
	switch {
	case h.heapIdx >= 0 && !active:
		heap.Remove(&s.waiting, h.heapIdx)
	case h.heapIdx >= 0:
		heap.Fix(&s.waiting, h.heapIdx)
	case !h.inRing && active:
		heap.Push(&s.waiting, h)
	}
}

// promote moves the hosts whose work is due at now into the ring.
func (s *sched) promote(now int64) {
	for len(s.waiting) > 0 && s.waiting[0].next <= now {
		s.pushBack(heap.Pop(&s.waiting).(*host))
	}
}

// settle takes a host out of the ring that a walk found not due at now.
func (s *sched) settle(h *host) {
	s.remove(h)
	if h.active {
		heap.Push(&s.waiting, h)
	}
}

// served files a host after a claim: to the back of the ring if it still
// has due work, else into the heap.
func (s *sched) served(h *host, now int64) {
	if h.inRing {
		s.remove(h)
	}
	if h.heapIdx >= 0 {
		heap.Fix(&s.waiting, h.heapIdx)
		return
	}
	if h.active && h.next <= now {
		s.pushBack(h)
	} else if h.active {
		heap.Push(&s.waiting, h)
	}
}

// nextWaiting returns the smallest next of the hosts not in the ring.
func (s *sched) nextWaiting() (int64, bool) {
	if len(s.waiting) == 0 {
		return 0, false
	}
	return s.waiting[0].next, true
}

func (s *sched) pushBack(h *host) {
	h.prev, h.succ = s.tail, nil
	if s.tail != nil {
		s.tail.succ = h
	} else {
		s.head = h
	}
	s.tail = h
	h.inRing = true
	s.ringLen++
}

func (s *sched) remove(h *host) {
	if h.prev != nil {
		h.prev.succ = h.succ
	} else {
		s.head = h.succ
	}
	if h.succ != nil {
		h.succ.prev = h.prev
	} else {
		s.tail = h.prev
	}
	h.prev, h.succ, h.inRing = nil, nil, false
	s.ringLen--
}

// hostHeap is a min-heap of hosts by next.
type hostHeap []*host

func (q hostHeap) Len() int { return len(q) }
func (q hostHeap) Less(i, j int) bool {
	// Ties by age, so that hosts due at once enter the ring in the order
	// they were first pushed.
	return q[i].next < q[j].next || q[i].next == q[j].next && q[i].id < q[j].id
}
func (q hostHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].heapIdx = i
	q[j].heapIdx = j
}
func (q *hostHeap) Push(x any) {
	h := x.(*host)
	h.heapIdx = len(*q)
	*q = append(*q, h)
}
func (q *hostHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	h.heapIdx = -1
	return h
}
