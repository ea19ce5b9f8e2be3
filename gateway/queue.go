package gateway

import (
	"sync"
	"time"
)

// lines keeps the requests waiting for a lane of each host in the order
// they came: the first waits for the limiter, the others for their turn.
// Left to race for each freed lane, waiters were served in no order: with
// 16 clients on a host of 1.7 requests a second, one in twenty spent its
// whole 30-s budget behind later ones and got the gateway's 429, while the
// median waited 5 s. It is safe for concurrent use.
type lines struct {
	mu    sync.Mutex
	hosts map[string]*line
	swept time.Time // when lines idle past lineKept were last dropped
}

// line is one host's waiters, oldest first, and how fast it has served
// them.
type line struct {
	waiting []*turn
	// every is the recent time between two waiters served one after the
	// other (an average weighted to the latest), what a place in the line
	// is worth; last is when the latest was, zero once nobody waited after
	// it (the idle time before the next is no service time); seen is when
	// the line was last used.
	every      time.Duration
	last, seen time.Time
	// gaps is how many gaps the reading holds (up to 2; place).
	gaps uint8
}

// turn is one waiting request; ready is closed when it is first in line.
type turn struct{ ready chan struct{} }

func newLines() *lines { return &lines{hosts: map[string]*line{}} }

// busy reports whether requests wait for a lane of host: a newcomer goes
// behind them, not to a lane freed for the first.
func (q *lines) busy(host string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.hosts[host]
	return l != nil && len(l.waiting) > 0
}

// enter puts a request at the end of host's line. It returns its turn,
// how many wait ahead, and how long that many took to serve lately (0
// while the line has no such reading).
func (q *lines) enter(host string) (t *turn, ahead int, expect time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.hosts[host]
	if l == nil {
		l = &line{}
		q.hosts[host] = l
	}
	t = &turn{ready: make(chan struct{})}
	ahead = len(l.waiting)
	if ahead == 0 {
		close(t.ready)
	}
	l.waiting = append(l.waiting, t)
	return t, ahead, l.place(ahead)
}

// place is what ahead places in l's line take to serve at its recent pace,
// 0 while it has no reading: one gap, taken whole, is none to refuse on
// (the first served after an exit cooled a moment made a place worth ten
// seconds).
func (l *line) place(ahead int) time.Duration {
	if l.gaps < 2 {
		return 0
	}
	return time.Duration(ahead) * l.every
}

// leave takes t out of host's line; served says it got its lane. The next
// in line, if t was first, has its turn.
func (q *lines) leave(host string, t *turn, served bool, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.hosts[host]
	if l == nil {
		return
	}
	for i, w := range l.waiting {
		if w != t {
			continue
		}
		l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
		if i == 0 && len(l.waiting) > 0 {
			close(l.waiting[0].ready)
		}
		break
	}
	if served {
		if !l.last.IsZero() {
			gap := now.Sub(l.last)
			l.gaps = min(l.gaps+1, 2)
			if l.every == 0 {
				l.every = gap
			} else {
				// One long gap (every lane cooling a moment) moves the
				// reading by four times it at most: taken whole, a 10-s
				// gap made a place in a line of 200 worth 2.6 s, and
				// clients with a minute's budget were refused at once.
				l.every = (3*l.every + min(gap, 4*l.every)) / 4
			}
		}
		l.last = now
	}
	if len(l.waiting) == 0 {
		l.last = time.Time{}
	}
	l.seen = now
	if now.Sub(q.swept) > lineKept {
		q.swept = now
		for h, o := range q.hosts {
			if len(o.waiting) == 0 && now.Sub(o.seen) > lineKept {
				delete(q.hosts, h)
			}
		}
	}
}

// expect is how long the requests ahead of t in host's line take to serve
// at the line's recent pace (0 while it has no reading, or t is first): a
// waiter that entered with no reading learns it once the line has one.
func (q *lines) expect(host string, t *turn) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.hosts[host]
	if l == nil {
		return 0
	}
	for i, w := range l.waiting {
		if w == t {
			return l.place(i)
		}
	}
	return 0
}

// lineKept is how long a host's line, empty, keeps its pace reading: a
// burst to a host idle for a minute, its reading dropped, waited out every
// budget before the early 429 could say the line was too long.
const lineKept = 10 * time.Minute
