package strategy

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

var t0 = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

var exits = []string{"exit-01", "exit-02", "exit-03", "exit-04"}

func build(t *testing.T, name string, rate float64) fetch.Limiter {
	t.Helper()
	spec, ok := ByName(name)
	if !ok {
		t.Fatalf("ByName(%q) not found", name)
	}
	l, err := spec.New(Env{Exits: exits, Rate: rate, Rand: rand.New(rand.NewPCG(7, 7))})
	if err != nil {
		t.Fatalf("%s: New: %v", name, err)
	}
	return l
}

type step struct {
	at       time.Duration
	wantOK   bool
	wantNext time.Duration // checked when !wantOK and >= 0; -1: any
}

// acquireAll runs acquires at explicit instants and checks each decision.
func acquireAll(t *testing.T, l fetch.Limiter, steps []step) []limit.Ticket {
	t.Helper()
	var got []limit.Ticket
	for i, s := range steps {
		tk, ok, next, err := l.Acquire("site.test", limit.Want{}, at(s.at))
		if err != nil {
			t.Fatalf("step %d: Acquire at %v: %v", i, s.at, err)
		}
		if ok != s.wantOK {
			t.Fatalf("step %d: Acquire at %v ok = %v, want %v (next %v)", i, s.at, ok, s.wantOK, next.Sub(t0))
		}
		if ok {
			if !slices.Contains(exits, tk.Exit) {
				t.Errorf("step %d: ticket exit %q not in the pool", i, tk.Exit)
			}
			got = append(got, tk)
		} else if s.wantNext >= 0 && !next.Equal(at(s.wantNext)) {
			t.Errorf("step %d: Acquire at %v next = %v, want %v", i, s.at, next.Sub(t0), s.wantNext)
		}
	}
	return got
}

func TestGlobalPerDomain(t *testing.T) {
	l := build(t, GlobalPerDomain, 2) // 2 r/s, burst 1
	tks := acquireAll(t, l, []step{
		{0, true, 0},
		{0, false, 500 * time.Millisecond},
		{300 * time.Millisecond, false, 500 * time.Millisecond},
		{500 * time.Millisecond, true, 0},
		{time.Second, true, 0},
	})
	// Another host has its own bucket.
	if _, ok, _, _ := l.Acquire("other.test", limit.Want{}, at(time.Second)); !ok {
		t.Errorf("Acquire(other.test) refused: buckets must be per host")
	}
	// A cancelled request gives its token back.
	l.Cancel(tks[2], at(time.Second))
	acquireAll(t, l, []step{{time.Second, true, 0}})
}

func TestPerWorker(t *testing.T) {
	l := build(t, PerWorker, 1)
	var steps []step
	for range Workers {
		steps = append(steps, step{0, true, 0})
	}
	// Worker 0's turn again: its request is still out.
	steps = append(steps, step{10 * time.Millisecond, false, 10 * time.Millisecond})
	tks := acquireAll(t, l, steps)
	l.Done(tks[0], limit.Outcome{Verdict: verdict.OK}, at(40*time.Millisecond))
	// Worker 0 is free again, but its own bucket refills at 1 r/s: its
	// shard waits until 1 s although the pool has idle exits.
	acquireAll(t, l, []step{
		{40 * time.Millisecond, false, time.Second},
		{time.Second, true, 0},
		// Next shard is worker 1, still busy.
		{time.Second, false, time.Second},
	})
	// Releasing a ticket twice is harmless.
	l.Done(tks[0], limit.Outcome{Verdict: verdict.OK}, at(time.Second))
}

func TestArticlePerHostAIMD(t *testing.T) {
	l := build(t, ArticlePerHost, 1)
	// Burst 4 at rate 2: four at once, then one per 500 ms.
	tks := acquireAll(t, l, []step{
		{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0},
		{0, false, 500 * time.Millisecond},
		{500 * time.Millisecond, true, 0},
	})
	// Success: +0.05 r/s. 2.05 r/s from empty: (1-0)/2.05 s.
	l.Done(tks[0], limit.Outcome{Verdict: verdict.OK}, at(500*time.Millisecond))
	acquireAll(t, l, []step{{500 * time.Millisecond, false, 500*time.Millisecond + 487804879}})
	// 429 with Retry-After 3 s: every worker on the host pauses until 3.6 s,
	// and the rate halves to 1.025 r/s.
	l.Done(tks[1], limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 3 * time.Second}, at(600*time.Millisecond))
	acquireAll(t, l, []step{
		{time.Second, false, 3600 * time.Millisecond},
		{3600 * time.Millisecond, true, 0}, // tokens refilled over 3.1 s at 2.05 r/s first
	})
	// A bare 429: the backoff is uniform in [0, 2^attempt) s; the pause
	// lies within it.
	l.Done(tks[2], limit.Outcome{Verdict: verdict.Throttled}, at(4*time.Second))
	_, ok, next, _ := l.Acquire("site.test", limit.Want{}, at(4*time.Second))
	if ok || next.Before(at(4*time.Second)) || next.After(at(6*time.Second)) {
		t.Errorf("after a bare 429 Acquire = %v, next %v, want a pause within [4s, 6s]", ok, next.Sub(t0))
	}
}

func TestAutoThrottle(t *testing.T) {
	l := build(t, ScrapyAutoThrottle, 1)
	tks := acquireAll(t, l, []step{{0, true, 0}})
	// The start delay is 5 s, randomised to [2.5 s, 7.5 s).
	_, ok, next, _ := l.Acquire("site.test", limit.Want{}, t0)
	if ok || next.Before(at(2500*time.Millisecond)) || !next.Before(at(7500*time.Millisecond)) {
		t.Fatalf("second Acquire = %v, next %v, want a gap in [2.5s, 7.5s)", ok, next.Sub(t0))
	}
	// A fast 429 (non-200) may not lower the delay: the gap after the next
	// request is still 5 s ± 50%.
	l.Done(tks[0], limit.Outcome{Verdict: verdict.Throttled, SentAt: t0}, at(40*time.Millisecond))
	tks = acquireAll(t, l, []step{{8 * time.Second, true, 0}})
	_, _, next, _ = l.Acquire("site.test", limit.Want{}, at(8*time.Second))
	if g := next.Sub(at(8 * time.Second)); g < 2500*time.Millisecond {
		t.Errorf("gap after a 429 = %v, want >= 2.5s (delay never lowered on non-200)", g)
	}
	// A 200 after 40 ms: delay = max(0.04, (5+0.04)/2) = 2.52 s.
	l.Done(tks[0], limit.Outcome{Verdict: verdict.OK, SentAt: at(8 * time.Second)}, at(8*time.Second+40*time.Millisecond))
	tks = acquireAll(t, l, []step{{16 * time.Second, true, 0}})
	_, _, next, _ = l.Acquire("site.test", limit.Want{}, at(16*time.Second))
	if g := next.Sub(at(16 * time.Second)); g < 1260*time.Millisecond || g >= 3780*time.Millisecond {
		t.Errorf("gap after a 200 in 40ms = %v, want 2.52s ± 50%%", g)
	}
	l.Done(tks[0], limit.Outcome{Verdict: verdict.OK}, at(16*time.Second))
}

func TestAutoThrottleConcurrencyCap(t *testing.T) {
	a := &autoThrottle{cfg: AutoThrottleConfig{PerDomain: 2, MaxDelay: time.Minute, TargetConcurrency: 1}, rot: newRotation(Env{Exits: exits, Rand: rand.New(rand.NewPCG(1, 1))}), slots: map[string]*slot{}}
	l := &lockedLimiter{inner: a}
	acquireAll(t, l, []step{{0, true, 0}, {0, true, 0}, {0, false, 0}})
}

func TestCollyLimitRule(t *testing.T) {
	l := build(t, CollyLimitRule, 1) // Parallelism 2, Delay 1 s, RandomDelay 0.5 s
	tks := acquireAll(t, l, []step{
		{0, true, 0}, {0, true, 0},
		{0, false, 0}, // both slots in flight: only a completion helps
	})
	// Round-robin proxies.
	if tks[0].Exit != "exit-01" || tks[1].Exit != "exit-02" {
		t.Errorf("exits = %s, %s, want exit-01, exit-02 (round robin)", tks[0].Exit, tks[1].Exit)
	}
	// The slot stays held for Delay + [0, RandomDelay) after the response.
	l.Done(tks[0], limit.Outcome{Verdict: verdict.OK}, at(100*time.Millisecond))
	_, ok, next, _ := l.Acquire("site.test", limit.Want{}, at(100*time.Millisecond))
	if ok || next.Before(at(1100*time.Millisecond)) || !next.Before(at(1600*time.Millisecond)) {
		t.Fatalf("Acquire after release = %v, next %v, want a slot free in [1.1s, 1.6s)", ok, next.Sub(t0))
	}
	acquireAll(t, l, []step{{1600 * time.Millisecond, true, 0}})
}

func TestNoLimiter(t *testing.T) {
	l := build(t, NoLimiter, 1)
	var steps []step
	for range 100 {
		steps = append(steps, step{0, true, 0})
	}
	acquireAll(t, l, steps)
}

func TestLimitBacked(t *testing.T) {
	for _, name := range []string{Exitgate, ArticlePerExit} {
		l := build(t, name, 1)
		tk, ok, _, err := l.Acquire("site.test", limit.Want{}, t0)
		if err != nil || !ok || !slices.Contains(exits, tk.Exit) {
			t.Fatalf("%s: Acquire = %+v, %v, %v; want a ticket on a pool exit", name, tk, ok, err)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at(40*time.Millisecond))
	}
}

// Every strategy honours a pinned exit, refuses an unknown one, and keeps
// Done idempotent.
func TestCommonContract(t *testing.T) {
	for _, spec := range All() {
		t.Run(spec.Name, func(t *testing.T) {
			l := build(t, spec.Name, 1)
			tk, ok, _, err := l.Acquire("site.test", limit.Want{Pin: "exit-03"}, t0)
			if err != nil || !ok || tk.Exit != "exit-03" {
				t.Fatalf("Acquire(pin exit-03) = %+v, %v, %v; want a ticket on exit-03", tk, ok, err)
			}
			l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at(time.Millisecond))
			l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at(time.Millisecond))
			if _, _, _, err := l.Acquire("site.test", limit.Want{Pin: "nope"}, at(time.Hour)); !errors.Is(err, limit.ErrUnknownExit) {
				t.Errorf("Acquire(pin nope) err = %v, want ErrUnknownExit", err)
			}
			if _, _, _, err := l.Acquire("", limit.Want{}, at(time.Hour)); err == nil {
				t.Errorf("Acquire(\"\") err = nil, want an error")
			}
			if _, err := spec.New(Env{}); err == nil {
				t.Errorf("New(no exits) err = nil, want an error")
			}
			if spec.Source == "" || spec.Summary == "" {
				t.Errorf("spec %s lacks a source or summary", spec.Name)
			}
		})
	}
}

// The same seed gives the same exit sequence.
func TestDeterministic(t *testing.T) {
	seq := func() []string {
		l := build(t, NoLimiter, 1)
		var out []string
		for range 20 {
			tk, _, _, _ := l.Acquire("site.test", limit.Want{}, t0)
			out = append(out, tk.Exit)
		}
		return out
	}
	a, b := seq(), seq()
	if !slices.Equal(a, b) {
		t.Errorf("exit sequences differ for one seed:\n%v\n%v", a, b)
	}
}

// The told reference paces every exit at ToldShare of the true rate, each
// exit in turn, and waits out a Retry-After on the exit that drew it.
func TestTold(t *testing.T) {
	l := build(t, Told, 2/ToldShare) // told: 2 per second per exit
	seen := map[string]bool{}
	for _, tk := range acquireAll(t, l, []step{{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, -1}}) {
		seen[tk.Exit] = true
	}
	if len(seen) != len(exits) {
		t.Fatalf("4 requests at once went to %d exits, want each of the 4", len(seen))
	}
	_, ok, next, _ := l.Acquire("site.test", limit.Want{}, t0)
	if ok || next.Sub(t0) < 499*time.Millisecond || next.Sub(t0) > 501*time.Millisecond {
		t.Fatalf("a fifth request at once: ok %v, next in %v; want a refusal until 500 ms", ok, next.Sub(t0))
	}
	tk, ok, _, _ := l.Acquire("site.test", limit.Want{Pin: "exit-02"}, at(500*time.Millisecond))
	if !ok {
		t.Fatal("exit-02 refused after its interval")
	}
	l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 10 * time.Second}, at(600*time.Millisecond))
	if _, ok, next, _ := l.Acquire("site.test", limit.Want{Pin: "exit-02"}, at(5*time.Second)); ok || !next.Equal(at(10600*time.Millisecond)) {
		t.Errorf("exit-02 during its Retry-After: ok %v, next %v; want a refusal until 10.6 s", ok, next.Sub(t0))
	}
	// A cancelled request gives its slot back.
	tk, ok, _, _ = l.Acquire("site.test", limit.Want{Pin: "exit-03"}, at(20*time.Second))
	if !ok {
		t.Fatal("exit-03 refused")
	}
	l.Cancel(tk, at(20*time.Second))
	if _, ok, _, _ := l.Acquire("site.test", limit.Want{Pin: "exit-03"}, at(20*time.Second)); !ok {
		t.Error("exit-03 refused after its request was cancelled")
	}
	if Baseline(Told) || slices.ContainsFunc(All(), func(s Spec) bool { return s.Name == Told }) || !slices.Contains(Names(), Told) {
		t.Error("told: want a reference named by Names and ByName, not a baseline and not in All")
	}
}
