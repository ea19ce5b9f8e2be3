package monitor

import "time"

// slots is how many buckets a rolling window has: its precision is a
// twelfth of its span.
const slots = 12

// window counts responses and 429s over a rolling span in fixed memory.
// Not safe for concurrent use; the Monitor's lock guards it.
type window struct {
	width int64 // ns per bucket
	at    [slots]int64
	req   [slots]int32
	thr   [slots]int32
}

func newWindow(span time.Duration) window {
	return window{width: max(int64(span)/slots, 1)}
}

func (w *window) add(t time.Time, is429 bool) {
	b := t.UnixNano() / w.width
	i := int(uint64(b) % slots)
	if w.at[i] != b {
		w.at[i], w.req[i], w.thr[i] = b, 0, 0
	}
	w.req[i]++
	if is429 {
		w.thr[i]++
	}
}

// sum returns the responses and 429s of the buckets within the span that
// ends at now.
func (w *window) sum(now time.Time) (req, thr int) {
	b := now.UnixNano() / w.width
	for i := range w.at {
		if a := w.at[i]; a > b-slots && a <= b {
			req += int(w.req[i])
			thr += int(w.thr[i])
		}
	}
	return req, thr
}

func (w *window) reset() { *w = window{width: w.width} }

// peaks keeps the highest value seen per bucket over a rolling span, for
// the peak of a host's learned capacity.
type peaks struct {
	width int64
	at    [slots]int64
	max   [slots]float64
}

func newPeaks(span time.Duration) peaks { return peaks{width: max(int64(span)/slots, 1)} }

// reset forgets every value seen.
func (p *peaks) reset() { p.at, p.max = [slots]int64{}, [slots]float64{} }

func (p *peaks) add(t time.Time, v float64) {
	b := t.UnixNano() / p.width
	i := int(uint64(b) % slots)
	if p.at[i] != b {
		p.at[i], p.max[i] = b, v
		return
	}
	p.max[i] = max(p.max[i], v)
}

// peak is the highest value within the span that ends at now, and when
// the oldest bucket of the span began (how much history there is).
func (p *peaks) peak(now time.Time) (v float64, since time.Time) {
	b := now.UnixNano() / p.width
	oldest := b + 1
	for i := range p.at {
		if a := p.at[i]; a > b-slots && a <= b {
			v = max(v, p.max[i])
			oldest = min(oldest, a)
		}
	}
	return v, time.Unix(0, oldest*p.width)
}
