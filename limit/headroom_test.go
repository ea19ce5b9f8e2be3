package limit_test

import (
	"math"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// headroomServer answers one request through exit at now: its verdict and
// what it declares.
type headroomServer func(exit string, now time.Time) limit.Outcome

// tokenBucket is a bucket per exit of rate per second and burst 1 that
// declares limit with nothing remaining and a reset of reset after every
// request, as tollbooth (limit 4, reset 1 s) and throttled (limit 1, reset
// 2 s at 1 per 2 s) do.
func tokenBucket(rate, limit_ float64, reset time.Duration) headroomServer {
	iv := time.Duration(float64(time.Second) / rate)
	tat := map[string]time.Time{}
	return func(exit string, now time.Time) limit.Outcome {
		o := limit.Outcome{Quota: limit_, HasRemaining: true, HasReset: true, ResetIn: reset}
		if now.Before(tat[exit]) {
			o.Verdict = verdict.Throttled
			return o
		}
		tat[exit] = now.Add(iv)
		return o
	}
}

// slidingCounter is go-chi/httprate's sliding-window counter per exit (as
// sim/server's twin), its windows on the epoch's grid and its reset exact
// (httprateCounter).
func slidingCounter(n float64, w time.Duration) headroomServer {
	return httprateCounter(n, w, time.Unix(0, 0), false)
}

// httprateCounter is go-chi/httprate v0.16's sliding-window counter per
// exit (sim/server's twin, httpRate): the last window's count weighted by
// what of it is still in the window, plus this window's, rounded; a
// request that would take it past n is pushed back with Retry-After: the
// window. Its windows of w start at started (a real server's start with
// it, not on a whole second); with wholeSeconds its X-RateLimit-Reset is
// the window's end in Unix seconds rounded down, as the real one sends it,
// so a client reads a reset up to a second before the window ends (0 once
// that second has begun).
func httprateCounter(n float64, w time.Duration, started time.Time, wholeSeconds bool) headroomServer {
	ws := slidingWindows{w: w, started: started}
	return func(exit string, now time.Time) limit.Outcome {
		s, end := ws.at(exit, now)
		est := math.Round(s.prev*float64(end.Sub(now))/float64(w) + s.cur)
		reset := end
		if wholeSeconds {
			reset = time.Unix(end.Unix(), 0)
		}
		o := limit.Outcome{Quota: n, HasRemaining: true, HasReset: true, ResetIn: max(0, reset.Sub(now))}
		if est+1 > n {
			o.Verdict, o.RetryAfter, o.Remaining = verdict.Throttled, w, max(0, n-est)
			return o
		}
		s.cur++
		o.Remaining = n - est - 1
		return o
	}
}

// slidingWindows keeps a sliding-window counter's two counts per exit: of
// the window of w (from started on) a request comes in, and of the one
// before it.
type slidingWindows struct {
	w       time.Duration
	started time.Time
	ws      map[string]*slidingWin
}

type slidingWin struct {
	idx       int64
	prev, cur float64
}

// at returns exit's counts with now's window the current one, and that
// window's end.
func (sw *slidingWindows) at(exit string, now time.Time) (*slidingWin, time.Time) {
	if sw.ws == nil {
		sw.ws = map[string]*slidingWin{}
	}
	idx := int64(now.Sub(sw.started) / sw.w)
	s := sw.ws[exit]
	switch {
	case s == nil:
		s = &slidingWin{idx: idx}
		sw.ws[exit] = s
	case idx == s.idx+1:
		s.idx, s.prev, s.cur = idx, s.cur, 0
	case idx != s.idx:
		s.idx, s.prev, s.cur = idx, 0, 0
	}
	return s, sw.started.Add(time.Duration(idx+1) * sw.w)
}

// runHeadroom crawls host h through exits lanes for d, each request
// answered 5 ms after it goes, and returns the limiter, the 429s and the
// successes.
func runHeadroom(t *testing.T, lanes int, srv headroomServer, d time.Duration) (*limit.Limiter, time.Time, int, int) {
	t.Helper()
	l := newLimiter(t, limit.Config{}, lanes)
	start := time.Unix(1000, 0)
	ok := 0
	now, n429 := crawlHost(t, l, srv, start, start.Add(d), func(time.Time) { ok++ })
	return l, now, n429, ok
}

// crawlWarm runs crawlHost from start to end and counts the successes:
// all of them, and those from warm on.
func crawlWarm(t *testing.T, l *limit.Limiter, srv headroomServer, start, warm, end time.Time) (now time.Time, ok, okWarm, n429 int) {
	t.Helper()
	now, n429 = crawlHost(t, l, srv, start, end, func(at time.Time) {
		ok++
		if !at.Before(warm) {
			okWarm++
		}
	})
	return now, ok, okWarm, n429
}

// crawlHost crawls host h with l against srv from start until end, each
// request answered 5 ms after it goes, calling ok at each success's time;
// it returns when it stopped and the 429s.
func crawlHost(t *testing.T, l *limit.Limiter, srv headroomServer, start, end time.Time, ok func(time.Time)) (time.Time, int) {
	t.Helper()
	now, n429 := start, 0
	for now.Before(end) {
		tk, got, next := acquire(t, l, "h", limit.Want{}, now)
		if !got {
			now = next
			continue
		}
		o := srv(tk.Exit, now)
		if o.Verdict == verdict.Throttled {
			n429++
		} else {
			ok(now)
		}
		l.Done(tk, o, now.Add(5*time.Millisecond))
	}
	return now, n429
}

// TestHeadroomCheck is the headroom rule: a declared quota of unknown kind
// keeps a sliding counter's headroom only if one lane sent without it is
// pushed back.
func TestHeadroomCheck(t *testing.T) {
	for _, c := range []struct {
		name  string
		srv   headroomServer
		limit float64 // of one lane, per second
		// want is the least share of limit the lanes end at, most the
		// largest; max429 the 429s the run may draw.
		least, most float64
		max429      int
	}{
		{"tollbooth 4/s, burst 1, declares 4 with nothing remaining", tokenBucket(4, 4, time.Second), 4, 0.95, 1, 0},
		{"throttled 1 per 2 s, declares 1, reset 2 s in whole seconds", tokenBucket(0.5, 1, 2*time.Second), 0.5, 0.95, 1, 0},
		{"a sliding counter of 4 per second: the headroom stands", slidingCounter(4, time.Second), 4, 0.8, 0.88, 3},
		// A limit of 5: a headroom of 12%, checked (flask-limiter's
		// moving 5 per second sat at 88% of it).
		{"a bucket of 5/s declares 5: the headroom goes", tokenBucket(5, 5, time.Second), 5, 0.95, 1, 0},
		{"a sliding counter of 5 per second: the headroom stands", slidingCounter(5, time.Second), 5, 0.84, 0.9, 3},
		{"a sliding counter of 10 per second: headroom too small to check", slidingCounter(10, time.Second), 10, 0.9, 0.95, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, now, n429, ok := runHeadroom(t, 3, c.srv, 60*time.Second)
			h := hostOf(l.Snapshot(now), "h")
			got := h.LaneRate.Hz() / c.limit
			if got < c.least || got > c.most || n429 > c.max429 {
				t.Errorf("lanes at %.3f of the limit (want %.2f-%.2f), %d 429s in %d requests (want at most %d); changes:", got, c.least, c.most, n429, n429+ok, c.max429)
				for _, ch := range h.Changes {
					t.Logf("%v %s %s %s %g -> %g: %s", ch.At.Sub(time.Unix(1000, 0)), ch.Rule, ch.Lane, ch.What, ch.From, ch.To, ch.Why)
				}
			}
		})
	}
}

// TestSlidingCounterReset: a sliding-window counter's reset at its window's
// end frees nothing at once (the window just ended weighs in whole), so a
// lane told nothing remains goes one interval at the declared rate after
// the answer, not at a near reset. Waiting for the reset cost httprate's 10
// per minute a request per lane per window: a gap of 10 s, not 6 s.
func TestSlidingCounterReset(t *testing.T) {
	l := newLimiter(t, limit.Config{}, 3)
	srv := slidingCounter(10, time.Minute)
	start := time.Unix(1000, 0)
	now, last := start, map[string]time.Time{}
	n429, ok, worst := 0, 0, time.Duration(0)
	for now.Sub(start) < 300*time.Second {
		tk, got, next := acquire(t, l, "h", limit.Want{}, now)
		if !got {
			now = next
			continue
		}
		if o := srv(tk.Exit, now); o.Verdict == verdict.Throttled {
			n429++
			delete(last, tk.Exit) // its Retry-After is no pacing gap
			l.Done(tk, o, now.Add(5*time.Millisecond))
			continue
		} else {
			ok++
			l.Done(tk, o, now.Add(5*time.Millisecond))
		}
		if p, seen := last[tk.Exit]; seen && p.Sub(start) > time.Minute {
			worst = max(worst, now.Sub(p))
		}
		last[tk.Exit] = now
	}
	// Paced at 10 per minute less a sliding counter's headroom: 6.4 s
	// apart; a wait for the reset left up to 10 s.
	if worst > 7*time.Second || n429 > 1 {
		h := hostOf(l.Snapshot(now), "h")
		t.Errorf("after the first minute successes up to %v apart on one lane (want at most 7s), %d 429s in %d requests (want at most one); lanes at %v", worst, n429, n429+ok, h.LaneRate)
		for _, c := range h.Changes {
			t.Log(c)
		}
	}
}

// TestFixedWindowWholeSeconds: express-rate-limit's fixed window opens with
// a client's first request and tells its reset in whole seconds, and lanes
// paced exactly at it answer at whole seconds from that request, where a
// millisecond either way moves the rounded reset by a second. Read as a new
// window with little remaining, that made the quota a sliding counter's and
// the lanes fell to Settle under its rate; a declared window moves the
// reset by at least half of itself.
func TestFixedWindowWholeSeconds(t *testing.T) {
	type win struct {
		end  time.Time
		hits float64
	}
	const n = 30
	ws := map[string]*win{}
	flip := 0
	srv := func(exit string, now time.Time) limit.Outcome {
		w := ws[exit]
		if w == nil || !now.Before(w.end) {
			w = &win{end: now.Add(time.Minute)}
			ws[exit] = w
		}
		flip++
		jitter := time.Duration(2*(flip%2)-1) * time.Millisecond // -1, +1 ms: each lane in turn
		left := w.end.Sub(now) + jitter
		o := limit.Outcome{Quota: n, Window: time.Minute, HasRemaining: true,
			HasReset: true, ResetIn: time.Duration(math.Ceil(left.Seconds())) * time.Second}
		if w.hits >= n {
			o.Verdict, o.RetryAfter = verdict.Throttled, o.ResetIn
			return o
		}
		w.hits++
		o.Remaining = n - w.hits
		return o
	}
	l, now, n429, ok := runHeadroom(t, 3, srv, 5*time.Minute)
	h := hostOf(l.Snapshot(now), "h")
	if got := h.LaneRate.Hz(); got < 0.99*n/60 || n429 > 1 {
		t.Errorf("lanes at %.3f/s of a fixed window's %.3f/s (want its rate exactly), %d 429s in %d requests; changes:", got, float64(n)/60, n429, n429+ok)
		for _, ch := range h.Changes {
			t.Logf("%v %s %s %s %g -> %g: %s", ch.At.Sub(time.Unix(1000, 0)), ch.Rule, ch.Lane, ch.What, ch.From, ch.To, ch.Why)
		}
	}
}
