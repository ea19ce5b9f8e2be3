package limit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// busyRun drives one host of l as fast as it lets requests go for d, each
// answered at once by answer (given the request's number and when it went),
// and returns the successes and 503s in the last third of the run.
func busyRun(t *testing.T, l *limit.Limiter, d time.Duration, answer func(i int, at time.Time) limit.Outcome) (int, int) {
	t.Helper()
	at, end := t0, t0.Add(d)
	ok, busy := 0, 0
	for i := 0; at.Before(end) && i < 100_000; {
		tk, got, next := acquire(t, l, "h", limit.Want{}, at)
		if !got {
			if at = at.Add(time.Millisecond); next.After(at) {
				at = next
			}
			continue
		}
		o := answer(i, at)
		l.Done(tk, o, at)
		if at.After(t0.Add(2 * d / 3)) {
			switch o.Verdict {
			case verdict.OK:
				ok++
			case verdict.Busy:
				busy++
			}
		}
		i++
		at = at.Add(time.Millisecond)
	}
	return ok, busy
}

// shedding answers as a site of capacity(at) requests a second does: a 503
// past it, counted over the last second; a URL answered 503 is asked again
// as every third request, as a crawl retries it.
func shedding(capacity func(at time.Time) int) func(int, time.Time) limit.Outcome {
	var sent []time.Time
	var again []uint64
	return func(i int, at time.Time) limit.Outcome {
		u := uint64(i + 1)
		if len(again) > 0 && i%3 == 0 {
			u, again = again[0], again[1:]
		}
		sent = append(sent, at)
		n := 0
		for j := len(sent) - 1; j >= 0 && at.Sub(sent[j]) < time.Second; j-- {
			n++
		}
		if n > capacity(at) {
			again = append(again, u)
			return limit.Outcome{Verdict: verdict.Busy, URLHash: u}
		}
		return limit.Outcome{Verdict: verdict.OK, URLHash: u}
	}
}

// TestBusyMix: a site whose tenth pages answer 503 without Retry-After,
// whatever the pace, is not overloaded: what its 503s taught (a host's rate
// on a direct crawl, each lane's pace through ten exits, where each read as
// a per-IP limit's 429) is let go once the share of them stays at a
// fraction of the pace (0.9/s and 2.6/s of 36 before). A site that sheds
// load past 10/s keeps what it taught: its share of 503s falls with the
// pace, or its successes stay at its capacity.
func TestBusyMix(t *testing.T) {
	cfg := limit.Config{FirstGuess: limit.PerSecond(10), HostCeiling: limit.PerSecond(40)}
	for _, exits := range []int{1, 10} {
		t.Run(fmt.Sprintf("flaky pages, %d exits", exits), func(t *testing.T) {
			l := newLimiter(t, cfg, exits)
			ok, busy := busyRun(t, l, 90*time.Second, func(i int, _ time.Time) limit.Outcome {
				if i%10 == 9 {
					return limit.Outcome{Verdict: verdict.Busy}
				}
				return limit.Outcome{Verdict: verdict.OK}
			})
			h := hostOf(l.Snapshot(t0.Add(90*time.Second)), "h")
			t.Logf("host rate %v, lanes at %v, %d successes and %d 503s in the last 30 s", h.Rate, h.LaneRate, ok, busy)
			if !h.Rate.IsZero() || ok < 20*30 {
				t.Errorf("host rate %v, %d successes in the last 30 s; want no host rate and 20/s or more", h.Rate, ok)
			}
		})
	}
	t.Run("load", func(t *testing.T) {
		l := newLimiter(t, cfg, 1)
		ok, busy := busyRun(t, l, 90*time.Second, shedding(func(time.Time) int { return 10 }))
		h := hostOf(l.Snapshot(t0.Add(90*time.Second)), "h")
		t.Logf("host rate %v, %d successes and %d 503s in the last 30 s", h.Rate, ok, busy)
		if r := h.Rate.Hz(); r == 0 || r > 12 || busy > ok/10 {
			t.Errorf("host rate %v, %d successes and %d 503s in the last 30 s; want the overload's rate kept, at 10/s or so, and a 503 in ten at most", h.Rate, ok, busy)
		}
	})
	t.Run("capacity falls, ten exits", func(t *testing.T) {
		// 45/s, then 10/s from 60 s on (a reviewer's: read as the pages'
		// own once the share rose as the pace fell, then 40 503s a
		// second, all of them).
		l := newLimiter(t, cfg, 10)
		ok, busy := busyRun(t, l, 90*time.Second, shedding(func(at time.Time) int {
			if at.Sub(t0) >= 60*time.Second {
				return 10
			}
			return 45
		}))
		t.Logf("%d successes and %d 503s in the last 30 s", ok, busy)
		if busy > ok/4 {
			t.Errorf("%d successes and %d 503s in the last 30 s; want a 503 to four successes at most (228 and 20 before the share test)", ok, busy)
		}
	})
	t.Run("load, ten exits", func(t *testing.T) {
		l := newLimiter(t, cfg, 10)
		ok, busy := busyRun(t, l, 90*time.Second, shedding(func(time.Time) int { return 10 }))
		h := hostOf(l.Snapshot(t0.Add(90*time.Second)), "h")
		t.Logf("host rate %v, %d successes and %d 503s in the last 30 s", h.Rate, ok, busy)
		// (Its lanes read the 503s as per-IP limits, each lane a share
		// of the capacity: 4.1/s of 10, as before the share test.)
		if busy > ok/10 {
			t.Errorf("%d successes and %d 503s in the last 30 s; want a 503 in ten at most: not read as the pages' own", ok, busy)
		}
	})
}
