package limit_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// serverStarted is go-chi/httprate v0.16's sliding-window counter per exit
// as a real server runs it (sim/server's twin, httpRate): its windows of w
// start when the server does, at started, not on a whole second, and its
// X-RateLimit-Reset is the window's end in Unix seconds rounded down, so a
// client reads a reset up to a second before the window ends (0 once that
// second has begun). A request passes while the estimate, rounded, plus one
// stays within n; a 429 says Retry-After: the window.
func serverStarted(n float64, w time.Duration, started time.Time) headroomServer {
	type win struct {
		idx       int64
		prev, cur float64
	}
	ws := map[string]*win{}
	return func(exit string, now time.Time) limit.Outcome {
		idx := int64(now.Sub(started) / w)
		start := started.Add(time.Duration(idx) * w)
		s := ws[exit]
		switch {
		case s == nil:
			s = &win{idx: idx}
			ws[exit] = s
		case idx == s.idx+1:
			s.idx, s.prev, s.cur = idx, s.cur, 0
		case idx != s.idx:
			s.idx, s.prev, s.cur = idx, 0, 0
		}
		frac := float64(start.Add(w).Sub(now)) / float64(w)
		est := math.Round(s.prev*frac + s.cur)
		reset := time.Unix(start.Add(w).Unix(), 0) // whole seconds, rounded down
		o := limit.Outcome{Quota: n, HasRemaining: true, ResetIn: max(0, reset.Sub(now))}
		if est+1 > n {
			o.Verdict, o.RetryAfter, o.Remaining = verdict.Throttled, w, max(0, n-est)
			return o
		}
		s.cur++
		o.Remaining = n - est - 1
		return o
	}
}

// TestFirstResetEarly: httprate's 30 per 10 s, its windows started with its
// server some way before the crawl's first request, in every phase of the
// window and of the second. A first reset a second or two away read as a
// window of a second or two, and lanes that spent all of it and went at the
// stated reset (up to a second early, the window still full), or just
// after the real one (the window just ended weighing in whole), drew a 429
// and Retry-After: 10 s on every lane: at 37% of start phases the whole
// pool idled for 10 s. Now a short guess keeps part of what remains back
// (quota.reserve), and an answer after the stated reset still counts
// (quota.early): no 429 in any phase, and the lanes settle at the limit
// less the sliding headroom.
func TestFirstResetEarly(t *testing.T) {
	const lanes = 4
	bad := 0
	for up := 250 * time.Millisecond; up <= 10*time.Second; up += 250 * time.Millisecond {
		for _, phase := range []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond, 900 * time.Millisecond} {
			start := time.Unix(1000, int64(phase))
			srv := serverStarted(30, 10*time.Second, start.Add(-up))
			l := newLimiter(t, limit.Config{}, lanes)
			now, n429, ok := start, 0, 0
			for now.Sub(start) < 40*time.Second {
				tk, got, next := acquire(t, l, "h", limit.Want{}, now)
				if !got {
					now = next
					continue
				}
				o := srv(tk.Exit, now)
				if o.Verdict == verdict.Throttled {
					n429++
				} else {
					ok++
				}
				l.Done(tk, o, now.Add(5*time.Millisecond))
			}
			h := hostOf(l.Snapshot(now), "h")
			rate := h.LaneRate.Hz() / 3
			if n429 == 0 && rate >= 0.9 && rate <= 1 {
				continue
			}
			if bad++; bad > 5 {
				continue
			}
			t.Errorf("server up %v, first request %v into a second: %d 429s in %d requests, lanes at %.3f of the limit (want no 429, 0.90-1.00)",
				up, phase, n429, n429+ok, rate)
			for _, ch := range h.Changes {
				t.Logf("%v %s %s %s %g -> %g: %s", ch.At.Sub(start).Round(time.Millisecond), ch.Rule, ch.Lane, ch.What, ch.From, ch.To, ch.Why)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s of 160 start phases failed", fmt.Sprint(bad))
	}
}
