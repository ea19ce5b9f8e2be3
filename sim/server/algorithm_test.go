package server

import (
	"fmt"
	"testing"
	"time"
)

// t0 is aligned to every window used below (1 s, 10 s).
var t0 = time.Unix(1_000_000_000, 0)

func ms(n int) time.Duration  { return time.Duration(n) * time.Millisecond }
func sec(n int) time.Duration { return time.Duration(n) * time.Second }

type step struct {
	at      time.Duration // since t0
	allowed bool
	rem     int
	reset   time.Duration
	retry   time.Duration
}

func runSteps(t *testing.T, a Algo, p Policy, steps []step) {
	t.Helper()
	alg, err := NewAlgorithm(a, p)
	if err != nil {
		t.Fatalf("NewAlgorithm(%v, %+v) error %v", a, p, err)
	}
	runStepsOn(t, a, alg, steps)
}

// runStepsOn is runSteps on an algorithm already built.
func runStepsOn(t *testing.T, a Algo, alg Algorithm, steps []step) {
	t.Helper()
	for i, s := range steps {
		d := alg.Decide("k", t0.Add(s.at))
		got := step{s.at, d.Allowed, d.Remaining, d.Reset, d.RetryAfter}
		if got != s {
			t.Errorf("%v step %d: Decide(t0+%v) = %+v, want %+v", a, i, s.at, got, s)
		}
	}
}

func TestTokenBucket(t *testing.T) {
	runSteps(t, TokenBucket, Policy{Quota: 1, Window: time.Second, Burst: 2}, []step{
		{0, true, 1, sec(1), 0},
		{0, true, 0, sec(1), 0},
		{0, false, 0, sec(1), sec(1)},
		{ms(500), false, 0, ms(500), ms(500)},
		{sec(1), true, 0, sec(1), 0},
		{ms(1999), false, 0, ms(1), ms(1)},
		{sec(2), true, 0, sec(1), 0},
		{sec(10), true, 1, sec(1), 0}, // refilled to burst, not beyond
		{sec(10), true, 0, sec(1), 0},
		{sec(10), false, 0, sec(1), sec(1)},
	})
	// 2 r/s, burst 1: a token every 500 ms.
	runSteps(t, TokenBucket, Policy{Quota: 2, Window: time.Second, Burst: 1}, []step{
		{0, true, 0, ms(500), 0},
		{ms(499), false, 0, ms(1), ms(1)},
		{ms(500), true, 0, ms(500), 0},
		{ms(750), false, 0, ms(250), ms(250)},
	})
}

// TestBlockBucket follows vmod_vsthrottle.c: 2 per second is a bucket of
// 2 whole tokens, one per 500 ms since the last use; running out blocks
// the key for 3 s, and a request while blocked takes a token and marks a
// use (Reset is a token's time from the last use; RetryAfter the block's
// rest while it stands).
func TestBlockBucket(t *testing.T) {
	runSteps(t, BlockBucket, Policy{Quota: 2, Window: time.Second, Block: sec(3)}, []step{
		{0, true, 1, ms(500), 0},
		{ms(100), true, 0, ms(500), 0},
		{ms(200), false, 0, ms(400), sec(3)},    // out: blocked until 3.2 s, no use marked
		{ms(700), false, 0, ms(500), ms(2500)},  // 1 token earned since 100 ms, taken while blocked
		{ms(1300), false, 0, ms(500), ms(1900)}, // 600 ms: one more, taken
		{ms(3300), true, 1, ms(500), 0},         // the block over, 2 s: 4 earned, 2 kept, 1 taken
	})
	// Whole tokens: a bucket of 3 refilled one per 100 ms, asked every
	// 60 ms, passes its 3, then every other request (120 ms since the
	// last use earn one token; the 20 ms over are dropped), not 6 in
	// every 600 ms: 3 + 8 of 20.
	alg, err := NewAlgorithm(BlockBucket, Policy{Quota: 3, Window: ms(300)})
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for i := range 20 {
		if alg.Decide("k", t0.Add(time.Duration(i)*ms(60))).Allowed {
			passed++
		}
	}
	if passed != 11 {
		t.Errorf("every 60 ms on a bucket of 3 refilled one per 100 ms: %d passed, want 11", passed)
	}
}

func TestGCRA(t *testing.T) {
	runSteps(t, GCRA, Policy{Quota: 1, Window: time.Second, Burst: 2}, []step{
		{0, true, 1, sec(1), 0},
		{0, true, 0, sec(1), 0},
		{0, false, 0, sec(1), sec(1)},
		{sec(1), true, 0, sec(1), 0},
		{sec(10), true, 1, sec(1), 0},
	})
	// Burst 1: strict spacing of one emission interval.
	runSteps(t, GCRA, Policy{Quota: 1, Window: time.Second, Burst: 1}, []step{
		{0, true, 0, sec(1), 0},
		{ms(500), false, 0, ms(500), ms(500)},
		{sec(1), true, 0, sec(1), 0},
		{ms(1900), false, 0, ms(100), ms(100)},
		{sec(2), true, 0, sec(1), 0},
	})
}

func TestGCRASpacing(t *testing.T) {
	// At exactly the emission interval every request passes; a hair
	// faster and every other one fails.
	for _, tc := range []struct {
		gap  time.Duration
		want int
	}{
		{100 * time.Millisecond, 100},
		{99 * time.Millisecond, 50}, // each early one fails, so every other passes
	} {
		alg, _ := NewAlgorithm(GCRA, Policy{Quota: 10, Window: time.Second, Burst: 1})
		n := 0
		for i := range 100 {
			if alg.Decide("k", t0.Add(time.Duration(i)*tc.gap)).Allowed {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("GCRA 10 r/s, gap %v: %d of 100 allowed, want %d", tc.gap, n, tc.want)
		}
	}
}

func TestFixedWindow(t *testing.T) {
	runSteps(t, FixedWindow, Policy{Quota: 3, Window: 10 * time.Second}, []step{
		{0, true, 2, sec(10), 0},
		{sec(1), true, 1, sec(9), 0},
		{sec(2), true, 0, sec(8), 0},
		{ms(9999), false, 0, ms(1), ms(1)},
		{sec(10), true, 2, sec(10), 0},
		{sec(25), true, 2, sec(5), 0},
	})
}

func TestSlidingLog(t *testing.T) {
	runSteps(t, SlidingLog, Policy{Quota: 3, Window: 10 * time.Second}, []step{
		{0, true, 2, sec(10), 0},
		{sec(1), true, 1, sec(9), 0},
		{sec(2), true, 0, sec(8), 0},
		{sec(9), false, 0, sec(1), sec(1)},
		{sec(10), true, 0, sec(1), 0}, // the t=0 entry has expired
		{ms(10500), false, 0, ms(500), ms(500)},
	})
}

func TestSlidingWindow(t *testing.T) {
	steps := []step{}
	for range 10 {
		steps = append(steps, step{sec(5), true, 0, sec(5), 0})
	}
	for i := range steps {
		steps[i].rem = 9 - i
	}
	// With nothing remaining, reset is when the next request fits (the
	// counter has no window end that frees the quota).
	steps[9].reset = sec(6)
	steps = append(steps,
		// prev 0, cur 10: the window after, 10*(10-e)/10 + 1 <= 10 at e = 1 s.
		step{sec(5), false, 0, sec(6), sec(6)},
		step{ms(10999), false, 0, ms(1), ms(1)},
		step{sec(11), true, 0, sec(1), 0},
		step{sec(12), true, 0, sec(1), 0},
		// prev 10 weighs 8, cur 2: one more fits at e = 3 s.
		step{sec(12), false, 0, sec(1), sec(1)},
		step{sec(13), true, 0, sec(1), 0},
	)
	runSteps(t, SlidingWindow, Policy{Quota: 10, Window: 10 * time.Second}, steps)
}

func TestPenalising(t *testing.T) {
	runSteps(t, Penalising, Policy{Quota: 3, Window: 10 * time.Second}, []step{
		{0, true, 2, sec(10), 0},
		{sec(1), true, 1, sec(9), 0},
		{sec(2), true, 0, 11333333334, 0}, // the next request fits at 11.33 s
		// cur 4 after this one: the next window starts at weight 4, and
		// 4*(10-e)/10 + 1 <= 3 at e = 5 s.
		{sec(3), false, 0, sec(12), sec(12)},
		{sec(15), true, 0, ms(2500), 0},
	})
}

// A client that keeps sending at 1 r/s past the limit stays limited under
// the penalising counter, unlike the plain sliding window; once it waits the
// Retry-After it is allowed again.
func TestPenalisingKeepsLimited(t *testing.T) {
	p := Policy{Quota: 3, Window: 10 * time.Second}
	count := func(a Algo) (int, Decision, Algorithm) {
		alg, _ := NewAlgorithm(a, p)
		n := 0
		var last Decision
		for i := range 60 {
			last = alg.Decide("k", t0.Add(sec(i)))
			if last.Allowed {
				n++
			}
		}
		return n, last, alg
	}
	if n, _, _ := count(SlidingWindow); n <= 3 {
		t.Errorf("sliding window at 1 r/s for 60 s allowed %d, want > 3 (it recovers each window)", n)
	}
	n, last, alg := count(Penalising)
	if n != 3 {
		t.Errorf("penalising at 1 r/s for 60 s allowed %d, want 3 (the first window only)", n)
	}
	if last.RetryAfter != sec(9) {
		t.Errorf("penalising RetryAfter at t0+59s = %v, want 9s", last.RetryAfter)
	}
	if d := alg.Decide("k", t0.Add(sec(59)+last.RetryAfter)); !d.Allowed {
		t.Errorf("penalising after waiting RetryAfter: %+v, want allowed", d)
	}
}

// Allowed counts per window with a steady client 4× over the limit.
func TestAllowCountsPerWindow(t *testing.T) {
	p := Policy{Quota: 5, Window: 10 * time.Second, Burst: 5}
	for _, tc := range []struct {
		a    Algo
		want int // over 60 s at 2 r/s
	}{
		{TokenBucket, 5 + 29},    // burst, then a token per 2 s over 59.5 s
		{GCRA, 5 + 29},           // same shape as the token bucket
		{FixedWindow, 6 * 5},     // 5 per aligned window
		{SlidingLog, 6 * 5},      // 5 within any 10 s
		{SlidingWindow, 5 + 5*4}, // the previous window's weight costs one per window
		{Penalising, 5},          // never recovers while sending
	} {
		alg, _ := NewAlgorithm(tc.a, p)
		n := 0
		for i := range 120 {
			if alg.Decide("k", t0.Add(time.Duration(i)*ms(500))).Allowed {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("%v: %d allowed in 60 s at 2 r/s, want %d", tc.a, n, tc.want)
		}
	}
}

func TestFixedWindowEdgeBurst(t *testing.T) {
	// The known weakness: up to 2× quota across a window edge.
	alg, _ := NewAlgorithm(FixedWindow, Policy{Quota: 3, Window: 10 * time.Second})
	n := 0
	for i := range 20 {
		if alg.Decide("k", t0.Add(ms(9000+100*i))).Allowed {
			n++
		}
	}
	if n != 6 {
		t.Errorf("fixed window 3/10s across an edge: %d allowed, want 6", n)
	}
}

func TestKeysIndependent(t *testing.T) {
	for a := TokenBucket; a <= Penalising; a++ {
		alg, _ := NewAlgorithm(a, Policy{Quota: 1, Window: time.Second, Burst: 1})
		for _, k := range []string{"a", "b", "c"} {
			if d := alg.Decide(k, t0); !d.Allowed {
				t.Errorf("%v: first request of key %q rejected", a, k)
			}
		}
		if d := alg.Decide("a", t0); d.Allowed {
			t.Errorf("%v: second request of key a allowed", a)
		}
		if alg.Keys() != 3 {
			t.Errorf("%v: Keys() = %d, want 3", a, alg.Keys())
		}
	}
}

func TestSetPolicyCarriesState(t *testing.T) {
	for a := TokenBucket; a <= Penalising; a++ {
		alg, _ := NewAlgorithm(a, Policy{Quota: 2, Window: time.Second})
		alg.Decide("k", t0)
		alg.Decide("k", t0)
		if err := alg.SetPolicy(Policy{Quota: 4, Window: time.Second}); err != nil {
			t.Fatalf("%v: SetPolicy error %v", a, err)
		}
		if got := alg.Policy(); got != (Policy{Quota: 4, Window: time.Second, Burst: 4}) {
			t.Errorf("%v: Policy() = %+v after SetPolicy", a, got)
		}
		// Raising the limit must not hand out more than the new quota
		// within the same instant.
		n := 0
		for range 10 {
			if alg.Decide("k", t0).Allowed {
				n++
			}
		}
		if n > 2 {
			t.Errorf("%v: %d more allowed at the same instant after raising 2→4, want <= 2", a, n)
		}
		if err := alg.SetPolicy(Policy{Quota: -1}); err == nil {
			t.Errorf("%v: SetPolicy(quota -1) accepted", a)
		}
	}
}

func TestTokenBucketWindowChangeRescales(t *testing.T) {
	alg, _ := NewAlgorithm(TokenBucket, Policy{Quota: 1, Window: time.Second, Burst: 4})
	alg.Decide("k", t0)
	alg.Decide("k", t0) // 2 tokens left
	alg.SetPolicy(Policy{Quota: 2, Window: 2 * time.Second, Burst: 4})
	n := 0
	for range 10 {
		if alg.Decide("k", t0).Allowed {
			n++
		}
	}
	if n != 2 {
		t.Errorf("after a window change, %d tokens left, want 2", n)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []Policy{
		{Quota: -1},
		{Window: -time.Second},
		{Burst: -1},
		{Quota: 2, Window: 1}, // finer than 1 ns per request
		{Quota: 1 << 40, Window: 1 << 40},
	} {
		if _, err := NewAlgorithm(TokenBucket, p); err == nil {
			t.Errorf("NewAlgorithm(%+v) = nil error, want one", p)
		}
	}
	if _, err := NewAlgorithm(Algo(99), Policy{}); err == nil {
		t.Errorf("NewAlgorithm(99) = nil error, want ErrUnknownAlgo")
	}
	if got := (Policy{}).withDefaults(); got != (Policy{Quota: 1, Window: time.Second, Burst: 1}) {
		t.Errorf("Policy{}.withDefaults() = %+v", got)
	}
	if got := (Policy{Quota: 30, Window: time.Minute}).Rate(); got != 0.5 {
		t.Errorf("30/min Rate() = %v, want 0.5", got)
	}
}

func TestBeforeEpoch(t *testing.T) {
	// Virtual time may start anywhere; windows must still align.
	start := time.Unix(-25, 0)
	alg, _ := NewAlgorithm(FixedWindow, Policy{Quota: 1, Window: 10 * time.Second})
	d := alg.Decide("k", start)
	if !d.Allowed || d.Reset != 5*time.Second {
		t.Errorf("fixed window at -25s: %+v, want allowed, reset 5s", d)
	}
	d = alg.Decide("k", start.Add(4*time.Second))
	if d.Allowed {
		t.Errorf("fixed window at -21s: %+v, want rejected", d)
	}
}

func ExampleNewAlgorithm() {
	alg, _ := NewAlgorithm(GCRA, Policy{Quota: 1, Window: time.Second, Burst: 1})
	for _, at := range []time.Duration{0, 500 * time.Millisecond, time.Second} {
		d := alg.Decide("203.0.113.7", t0.Add(at))
		fmt.Println(at, d.Allowed, d.RetryAfter)
	}
	// Output:
	// 0s true 0s
	// 500ms false 500ms
	// 1s true 0s
}

// The sliding-window counter admits an evenly paced client at its steady
// rate (Quota−1)/Window, and not one a few percent faster: AllowedRate's
// denominator for it is what it really admits.
func TestSteadyRateIsWhatTheCounterAdmits(t *testing.T) {
	p := Policy{Quota: 10, Window: 10 * time.Second}
	site, err := New(Config{Algorithm: SlidingWindow, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	want := 0.9 // (10-1)/10 s
	if got := site.AllowedRate(1); got != want {
		t.Fatalf("AllowedRate(1) = %v, want %v", got, want)
	}
	rejected := func(rate float64) int {
		a, _ := NewAlgorithm(SlidingWindow, p)
		n := 0
		iv := time.Duration(float64(time.Second) / rate)
		for i := range 600 {
			at := t0.Add(time.Duration(i) * iv)
			if d := a.Decide("k", at); !d.Allowed && at.Sub(t0) > 30*time.Second {
				n++
			}
		}
		return n
	}
	if n := rejected(want * 0.999); n != 0 {
		t.Errorf("a client at 99.9%% of %v r/s was rejected %d times after 30 s, want none", want, n)
	}
	if n := rejected(want * 1.05); n == 0 {
		t.Errorf("a client 5%% above %v r/s was never rejected: the steady rate is higher than AllowedRate says", want)
	}
}
