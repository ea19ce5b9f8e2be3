package limit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// serverStarted is httprate's counter as a real server runs it: windows
// from its start, its reset in whole seconds rounded down.
func serverStarted(n float64, w time.Duration, started time.Time) headroomServer {
	return httprateCounter(n, w, started, true)
}

// TestFirstResetEarly: httprate's 30 per 10 s, its windows started with its
// server some way before the crawl's first request, in every phase of the
// window and of the second, each answer a round trip after its request. A
// first reset a second or two away read as a window of a second or two,
// and lanes that spent all of it and went at the stated reset (up to a
// second early, the window still full), or just after the real one (the
// window just ended weighing in whole), drew a 429 and Retry-After: 10 s on
// every lane: at 37% of start phases the whole pool idled for 10 s. Now a
// short guess keeps part of what remains back (quota.reserve), a lane past
// its guessed reset sends one request and waits for its answer, and an
// answer after the stated reset still counts (quota.early): no 429 in any
// phase, and the lanes settle at the limit less the sliding headroom.
func TestFirstResetEarly(t *testing.T) {
	const lanes = 4
	for _, rtt := range []time.Duration{5 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond} {
		t.Run(fmt.Sprint("round trip ", rtt), func(t *testing.T) {
			bad := 0
			for up := 250 * time.Millisecond; up <= 10*time.Second; up += 250 * time.Millisecond {
				for _, phase := range []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond, 900 * time.Millisecond} {
					start := time.Unix(1000, int64(phase))
					n429, ok, l, now := crawlRTT(t, lanes, serverStarted(30, 10*time.Second, start.Add(-up)), start, 40*time.Second, rtt)
					h := hostOf(l.Snapshot(now), "h")
					rate := h.LaneRate.Hz() / 3
					if n429 == 0 && rate >= 0.9 && rate <= 1 {
						continue
					}
					if bad++; bad > 3 {
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
				t.Errorf("%d of 160 start phases failed", bad)
			}
		})
	}
}

// crawlRTT crawls host h through lanes exits from start for d, each
// request answered by srv when it arrives (half the round trip rtt after it
// went) and the answer reaching the limiter rtt after it went, and returns
// the 429s, the successes, the limiter and the time it stopped.
func crawlRTT(t *testing.T, lanes int, srv headroomServer, start time.Time, d, rtt time.Duration) (n429, ok int, l *limit.Limiter, now time.Time) {
	t.Helper()
	type answer struct {
		tk limit.Ticket
		o  limit.Outcome
		at time.Time
	}
	l = newLimiter(t, limit.Config{}, lanes)
	var out []answer // in the order sent, so in the order answered
	now = start
	for now.Sub(start) < d {
		for len(out) > 0 && !out[0].at.After(now) {
			l.Done(out[0].tk, out[0].o, out[0].at)
			out = out[1:]
		}
		tk, got, next := acquire(t, l, "h", limit.Want{}, now)
		if !got {
			if len(out) > 0 && out[0].at.Before(next) {
				next = out[0].at
			}
			now = next
			continue
		}
		o := srv(tk.Exit, now.Add(rtt/2))
		if o.Verdict == verdict.Throttled {
			n429++
		} else {
			ok++
		}
		out = append(out, answer{tk, o, now.Add(rtt)})
	}
	return n429, ok, l, now
}

// TestEarlyAnswerWakes: an answer that brings a lane's next send forward
// (a reset told early: the window ends within the second, not a guessed
// window later) reports the host faster, so that a caller holding the host
// until the old instant asks again; the engine and Wait sleep until the
// instant Acquire last gave. Without it, lanes slept up to 4 s past it.
func TestEarlyAnswerWakes(t *testing.T) {
	l := newLimiter(t, limit.Config{}, 1)
	start := time.Unix(1000, 0)
	// The window ends 5.7 s in, told 5 s: read as 5 s, and past the
	// stated reset the lane's own clock begins a window of 5 s more.
	srv := serverStarted(30, 10*time.Second, start.Add(-4300*time.Millisecond))
	now := start
	for now.Sub(start) < 5500*time.Millisecond {
		tk, got, next := acquire(t, l, "h", limit.Want{}, now)
		if !got {
			now = next
			continue
		}
		o := srv(tk.Exit, now)
		done := now.Add(time.Millisecond)
		faster := l.DoneFaster(tk, o, done)
		if o.HasRemaining && o.ResetIn == 0 && o.Verdict != verdict.Throttled {
			// The first answer past the stated reset (5 s): the lane had
			// begun a guessed window of its own, held until its end (10 s).
			if !faster {
				t.Errorf("%v: an answer past its stated reset, %g remaining: DoneFaster false, want true", now.Sub(start), o.Remaining)
			}
			if _, _, next := acquire(t, l, "h", limit.Want{}, done); next.Sub(done) > time.Second {
				t.Errorf("after it, next send in %v, want within the second", next.Sub(done))
			}
			return
		}
		now = done
	}
	t.Fatal("no answer past the stated reset came")
}

// goLimiter is sethvargo/go-limiter's memorystore behind its httplimit
// middleware: n requests per window w per exit, each exit's windows
// starting at its first request, X-RateLimit-Reset an HTTP date (whole
// seconds, rounded down, so up to a second before the window ends; a reset
// passed reads as zero), Retry-After the same date on a 429.
func goLimiter(n float64, w time.Duration) headroomServer {
	type bucket struct {
		start time.Time
		tick  int64
		left  float64
	}
	bs := map[string]*bucket{}
	return func(exit string, now time.Time) limit.Outcome {
		b := bs[exit]
		if b == nil {
			b = &bucket{start: now, left: n}
			bs[exit] = b
		}
		if tick := int64(now.Sub(b.start) / w); tick > b.tick {
			b.tick, b.left = tick, n
		}
		end := b.start.Add(time.Duration(b.tick+1) * w)
		o := limit.Outcome{Quota: n, HasRemaining: true, HasReset: true, ResetIn: max(0, time.Unix(end.Unix(), 0).Sub(now))}
		if b.left < 1 {
			o.Verdict, o.RetryAfter = verdict.Throttled, max(o.ResetIn, 0)
			return o
		}
		b.left--
		o.Remaining = b.left
		return o
	}
}

// TestFixedWindowStatedEarly: go-limiter's 3 per second, each exit's
// windows opened by its first request, its resets stated in whole seconds
// rounded down, in every phase of the second. A lane whose last request of
// a window went after the stated reset but before the real one began a
// window by its own clock there: the server's 0 remaining held it until the
// second after, idling it for most of the server's next window, and its
// own count of the window before (one request) never showed a busy window
// freed whole, so the window never read as fixed and the lane sent two
// requests a window for good (66.7% of the limit, no 429: the real run's
// phase, 0.3 s, one run in ten). And an answer past its stated reset (late
// in its window) with little remaining read the window as a sliding
// counter's, where 0.8 s into a second is the fixed window's end: the exact
// pace lost for 12 s (92% over the run). The server's own count, the lowest
// Remaining it answered for a window, shows the window busy whatever the
// lane's clock, and past a stated reset only a first hit tells the kind.
func TestFixedWindowStatedEarly(t *testing.T) {
	const lanes, limitN = 4, 3.0
	bad := 0
	for phase := time.Duration(0); phase < time.Second; phase += 25 * time.Millisecond {
		start := time.Unix(1000, int64(phase))
		l := newLimiter(t, limit.Config{}, lanes)
		srv := goLimiter(limitN, time.Second)
		warm := start.Add(20 * time.Second)
		now, all, late, n429 := crawlWarm(t, l, srv, start, warm, start.Add(40*time.Second))
		use := float64(late) / (lanes * limitN * now.Sub(warm).Seconds())
		whole := float64(all) / (lanes * limitN * now.Sub(start).Seconds())
		if n429 == 0 && use >= 0.95 && whole >= 0.95 {
			continue
		}
		if bad++; bad > 3 {
			continue
		}
		t.Errorf("first request %v into a second: %d 429s, %.1f%% of the limit after 20 s, %.1f%% over 40 s (want no 429, at least 95%% both)", phase, n429, 100*use, 100*whole)
		for _, ch := range hostOf(l.Snapshot(now), "h").Changes {
			t.Logf("%v %s %s %s %g -> %g: %s", ch.At.Sub(start).Round(time.Millisecond), ch.Rule, ch.Lane, ch.What, ch.From, ch.To, ch.Why)
		}
	}
	if bad > 0 {
		t.Errorf("%d of 40 start phases failed", bad)
	}
}
