package limit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

func newTestLimiter(t *testing.T, cfg limit.Config, ids ...string) *limit.Limiter {
	t.Helper()
	l, err := limit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var es []limit.Exit
	for _, id := range ids {
		es = append(es, limit.Exit{ID: id})
	}
	l.SetExits(es)
	return l
}

// TestWaitPaces: Wait blocks exactly one interval between requests on one
// lane, and honours a cooldown.
func TestWaitPaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, limit.Config{}, "a")
		ctx := context.Background()
		start := time.Now()
		tk, err := l.Wait(ctx, "h", limit.Want{})
		if err != nil {
			t.Fatal(err)
		}
		l.Done(tk, limit.Outcome{}, time.Now())
		tk, err = l.Wait(ctx, "h", limit.Want{})
		if err != nil {
			t.Fatal(err)
		}
		// One interval at 0.97 x 30/min, less the up-to-2ms slop that
		// absorbs timer lateness.
		if d := time.Since(start); d != startInterval-2*time.Millisecond {
			t.Errorf("second Wait returned after %v, want %v", d, startInterval-2*time.Millisecond)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: time.Minute}, time.Now())
		mark := time.Now()
		if _, err := l.Wait(ctx, "h", limit.Want{}); err != nil {
			t.Fatal(err)
		}
		// The 429 came at twice the pace the lane is slowed to (one per
		// minute now): the wait ends where that pace puts the next
		// request, a quarter after the Retry-After at most.
		if d := time.Since(mark); d < time.Minute || d > time.Minute+time.Minute/4 {
			t.Errorf("Wait after Retry-After 1m returned after %v, want 1m to 1m15s", d)
		}
	})
}

// TestWaitCancel: a canceled Wait returns the context's error and holds
// nothing.
func TestWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, limit.Config{}, "a")
		tk, _ := l.Wait(context.Background(), "h", limit.Want{})
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: time.Hour}, time.Now())
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := l.Wait(ctx, "h", limit.Want{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait under a 1h cooldown with a 1s deadline = %v, want DeadlineExceeded", err)
		}
		if n := l.Snapshot(time.Now()).InFlight; n != 0 {
			t.Errorf("in flight after a canceled Wait: %d, want 0", n)
		}
	})
}

// TestWaitConcurrencyFrees: a Wait blocked only by the host concurrency cap
// goes once a request finishes.
func TestWaitConcurrencyFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, limit.Config{HostConcurrency: 1}, "a", "b")
		first, _ := l.Wait(context.Background(), "h", limit.Want{})
		got := make(chan limit.Ticket)
		go func() {
			tk, err := l.Wait(context.Background(), "h", limit.Want{})
			if err != nil {
				t.Error(err)
			}
			got <- tk
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("second Wait went while the only slot was held")
		default:
		}
		l.Done(first, limit.Outcome{}, time.Now())
		tk := <-got
		if tk.Exit == first.Exit {
			t.Errorf("second request reused %s; the other exit was idle longer", tk.Exit)
		}
	})
}

// TestWaitFailsFastPastDeadline: a wait that would end after the context's
// deadline returns at once, as x/time/rate's does, so that a caller with a
// deadline (an http.Client timeout, say) can route the request elsewhere
// instead of spending its whole budget waiting.
func TestWaitFailsFastPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, limit.Config{}, "a")
		tk, _ := l.Wait(context.Background(), "h", limit.Want{})
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: time.Minute}, time.Now())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err := l.Wait(ctx, "h", limit.Want{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Wait returned after %v, want at once (the minute's wait passes the 10s deadline)", d)
		}
	})
}

// TestWaitWakesOnFasterPace: a Wait sleeping out an interval at the slow
// start pace ends as soon as a success doubles the pace, at the next
// request's time under the new one, not the old. (Sleeping it out cost the
// ramp an old interval per doubling: four seconds to reach 10/s.)
func TestWaitWakesOnFasterPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, limit.Config{}, "a")
		ctx := context.Background()
		start := time.Now()
		tk, err := l.Wait(ctx, "h", limit.Want{})
		if err != nil {
			t.Fatal(err)
		}
		l.Done(tk, limit.Outcome{}, time.Now())
		tk, err = l.Wait(ctx, "h", limit.Want{})
		if err != nil {
			t.Fatal(err)
		}
		third := make(chan time.Duration, 1)
		go func() {
			tk, err := l.Wait(ctx, "h", limit.Want{})
			if err != nil {
				t.Error(err)
			}
			third <- time.Since(start)
			l.Done(tk, limit.Outcome{}, time.Now())
		}()
		synctest.Wait() // the third Wait sleeps, timed at the start pace
		time.Sleep(5 * time.Millisecond)
		// Two successes over an interval: the ramp doubles the pace.
		l.Done(tk, limit.Outcome{}, time.Now())
		got := <-third
		if got >= 2*startInterval-2*time.Millisecond {
			t.Fatalf("third Wait returned after %v: slept out the start pace's interval (%v) after the pace doubled", got, startInterval)
		}
		// The second answer took 5 ms, the first none: the next request
		// keeps an interval after the second reached the server (at most
		// 5 ms later), less the slop.
		if want := startInterval + startInterval/2; got < want-3*time.Millisecond || got > want+5*time.Millisecond {
			t.Errorf("third Wait returned after %v, want about %v (an interval at the start pace, then one at twice it)", got, want)
		}
	})
}

// TestWaitWakesOnNewExits: a Wait asleep for a lane of a pool of one asks
// again when SetExits adds exits, and goes on one of them at once; it slept
// out the old pool's wait (10 s at 6/min).
func TestWaitWakesOnNewExits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, limit.Config{FirstGuess: limit.PerMinute(6)}, "a")
		tk, err := l.Wait(context.Background(), "h", limit.Want{})
		if err != nil {
			t.Fatal(err)
		}
		l.Done(tk, limit.Outcome{}, time.Now())
		start := time.Now()
		go func() {
			time.Sleep(200 * time.Millisecond)
			l.SetExits([]limit.Exit{{ID: "a"}, {ID: "b"}, {ID: "c"}})
		}()
		tk, err = l.Wait(context.Background(), "h", limit.Want{})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 300*time.Millisecond || tk.Exit == "a" {
			t.Errorf("Wait returned after %v on exit %q, want at about 200ms on a new exit", d, tk.Exit)
		}
	})
}

// TestExitLimitsRead: an exit's provider rate that is not a rate is none
// and said so; one below a request a year is one a year, not none (1e-300/s
// overflowed its interval and let every request through).
func TestExitLimitsRead(t *testing.T) {
	var log bytes.Buffer
	l, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(100), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	l.SetExits([]limit.Exit{{ID: "nan", Rate: limit.Rate{N: math.NaN()}}, {ID: "tiny", Rate: limit.Rate{N: 1e-300}}, {ID: "neg", Concurrency: -1}})
	for _, want := range []string{"exit=nan", "is not a rate", "exit=tiny", "below one a year", "exit=neg", "negative"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	// The same list again is the same pool: no second warning (NaN never
	// equals itself, and every call woke every Wait and warned again).
	n := strings.Count(log.String(), "exit=nan")
	l.SetExits([]limit.Exit{{ID: "nan", Rate: limit.Rate{N: math.NaN()}}, {ID: "tiny", Rate: limit.Rate{N: 1e-300}}, {ID: "neg", Concurrency: -1}})
	if m := strings.Count(log.String(), "exit=nan"); m != n {
		t.Errorf("the same list set again warned again (%d warnings, then %d)", n, m)
	}
	now := time.Now()
	granted := 0
	for range 3 {
		if tk, ok, _, _ := l.Acquire("h", limit.Want{Pin: "tiny"}, now); ok {
			granted++
			l.Done(tk, limit.Outcome{}, now)
		}
	}
	if granted != 1 {
		t.Errorf("exit at 1e-300/s: %d of 3 granted at once, want 1 (one a year)", granted)
	}
}

// TestZeroLimiterSaysNew: the zero Limiter's Acquire says it was not made by
// New (it said ErrNoExits), and its other methods panic saying so (a nil
// pointer dereference said nothing).
func TestZeroLimiterSaysNew(t *testing.T) {
	var l limit.Limiter
	if _, _, _, err := l.Acquire("h", limit.Want{}, time.Now()); !errors.Is(err, limit.ErrNotNew) {
		t.Errorf("zero Limiter's Acquire: %v, want ErrNotNew", err)
	}
	for name, f := range map[string]func(){
		"SetExits": func() { l.SetExits(nil) },
		"Wait":     func() { l.Wait(context.Background(), "h", limit.Want{}) },
		"Snapshot": func() { l.Snapshot(time.Now()) },
		"Done":     func() { l.Done(limit.Ticket{}, limit.Outcome{}, time.Now()) },
		"Abandon":  func() { l.Abandon(limit.Ticket{}, time.Now()) },
		"HostFull": func() { l.HostFull("h") },
		"Learned":  func() { l.Learned(time.Now()) },
	} {
		func() {
			defer func() {
				if r := recover(); r != limit.ErrNotNew {
					t.Errorf("zero Limiter's %s panicked with %v, want ErrNotNew", name, r)
				}
			}()
			f()
		}()
	}
}
