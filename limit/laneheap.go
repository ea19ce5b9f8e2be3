package limit

// A host keeps its lanes in a min-heap keyed by the earliest time each may
// send (ties to the least recently used, then to the exit's name), so
// picking a lane is O(log n). The order is total: which lane is on top never
// depends on the order lanes were pushed or fixed in, which follows a map's
// (a lane's pace set for every lane of the host), and a run in virtual time
// repeats for a seed (the simulated hosts-100 did not: the explorer's
// search passed to another lane from one run to the next).

func (h *host) less(i, j int) bool { return before(h.heap[i], h.heap[j]) }

// before is the heap's order.
func before(a, b *lane) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	if a.taken != b.taken {
		return int32(a.taken-b.taken) < 0 // wraps: compare by difference
	}
	return a.exit < b.exit
}

func (h *host) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.heap[i].idx, h.heap[j].idx = int32(i), int32(j)
}

func (h *host) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *host) down(i int) bool {
	i0, n := i, len(h.heap)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && h.less(j2, j) {
			j = j2
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *host) push(l *lane) {
	l.idx = int32(len(h.heap))
	h.heap = append(h.heap, l)
	h.up(int(l.idx))
}

func (h *host) remove(l *lane) {
	i := int(l.idx)
	if i < 0 {
		return
	}
	n := len(h.heap) - 1
	if i != n {
		h.swap(i, n)
	}
	h.heap[n] = nil
	h.heap = h.heap[:n]
	l.idx = -1
	if i != n && !h.down(i) {
		h.up(i)
	}
}

func (h *host) fix(l *lane) {
	if l.idx < 0 {
		return
	}
	if !h.down(int(l.idx)) {
		h.up(int(l.idx))
	}
}
