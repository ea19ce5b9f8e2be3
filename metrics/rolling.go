package metrics

import "time"

// RollingWindow is the span of the rolling 429 ratio.
const RollingWindow = 60 * time.Second

// rolling counts requests and 429s in one-second buckets over RollingWindow,
// in fixed memory. Not safe for concurrent use; Tally holds its lock.
type rolling struct {
	sec  [60]int64 // the unix second each bucket holds
	reqs [60]int64
	r429 [60]int64
}

func (r *rolling) add(at time.Time, is429 bool) {
	s := at.Unix()
	i := int(uint64(s) % 60)
	if r.sec[i] != s {
		r.sec[i], r.reqs[i], r.r429[i] = s, 0, 0
	}
	r.reqs[i]++
	if is429 {
		r.r429[i]++
	}
}

func (r *rolling) ratio(now time.Time) float64 {
	cut := now.Unix() - 60
	var reqs, n429 int64
	for i := range r.sec {
		if r.sec[i] > cut && r.sec[i] <= now.Unix() {
			reqs += r.reqs[i]
			n429 += r.r429[i]
		}
	}
	if reqs == 0 {
		return 0
	}
	return float64(n429) / float64(reqs)
}
