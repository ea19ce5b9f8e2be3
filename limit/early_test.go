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
