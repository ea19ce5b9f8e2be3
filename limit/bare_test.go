package limit

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// The rules for servers that say nothing but 429: no header, no
// Retry-After. Each case comes from a real limiter on loopback whose twin
// reproduced it (sim/server).

// TestRetriesCounted: the explorer's retries after its first 429 without a
// Retry-After, on a server that counts the requests it rejects (haproxy
// tracking before its deny). After a short first run (5 successes) the
// second retry waits at least the shortest common window: at the first
// run's length it was pushed back too, and 5 per 10 s read as 5 per
// minute. A long run (20) keeps its own length (haproxy's 20 per 10 s
// recovers 8.6 s after its 429). Pushed back after the longest usual
// window, the lane waits a whole window again from then: short backoffs
// kept haproxy's 6 per minute limited, five 429s in 40 s. In between, a
// retry half a minute (and a count's slack) after the run's first success
// tells a window of 30 s (TestHalfMinuteWindow).
func TestRetriesCounted(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name    string
		n1      int32
		t1      float64
		atLeast float64 // the second retry's wait, seconds
	}{
		{"a short run: the shortest common window", 5, 5.2, 10},
		{"a long run: its own length", 20, 8.2, 8.2},
	} {
		h, e := bareFirst429(r, 1.94, tc.n1, 1, tc.t1)
		try1 := tc.t1 + secs(e.cool-sec(tc.t1))
		r.cooldown(h, e, 1.94, 0, false, sec(try1), 0.5) // the first retry, pushed back
		wait := secs(e.cool - sec(try1))
		if wait < tc.atLeast-1e-6 {
			t.Errorf("%s: second retry %.2fs after the first, want at least %v", tc.name, wait, tc.atLeast)
		}
		if tc.n1 >= fewRun && wait > tc.atLeast+1e-6 {
			t.Errorf("%s: second retry %.2fs after the first, want the run's %v", tc.name, wait, tc.atLeast)
		}
		try2 := try1 + wait
		r.cooldown(h, e, 1.94, 0, false, sec(try2), 0.5) // the second retry, pushed back
		half := try2 + secs(e.cool-sec(try2))
		pushed := uint8(3)
		if tc.n1 >= fewRun {
			// A run of many tries a third of a minute first.
			if want := secs(int64(thirdWindow) + countedSlack(thirdWindow, tc.n1, 3)); math.Abs(half-want) > 1e-6 {
				t.Errorf("%s: third retry at %.2fs, want a third of a minute after the run's first success, and a count's slack after three 429s (%.2fs)", tc.name, half, want)
			}
			r.cooldown(h, e, 1.94, 0, false, sec(half), 0.5) // pushed back a third of a minute on
			half += secs(e.cool - sec(half))
			pushed++
		}
		if want := secs(int64(halfWindow) + countedSlack(halfWindow, tc.n1, pushed)); math.Abs(half-want) > 1e-6 {
			t.Errorf("%s: retry at %.2fs, want half a minute after the run's first success, and a count's slack after %d 429s (%.2fs)", tc.name, half, pushed, want)
		}
		r.cooldown(h, e, 1.94, 0, false, sec(half), 0.5) // pushed back half a minute on
		try3 := half + secs(e.cool-sec(half))
		if want := secs(maxRecovery + maxRecovery/24); math.Abs(try3-want) > 1e-6 {
			t.Errorf("%s: fourth retry at %.2fs, want the longest usual window after the run's first success, and a twenty-fourth (%.2fs)", tc.name, try3, want)
		}
		r.cooldown(h, e, 1.94, 0, false, sec(try3), 0.5) // pushed back after the longest window
		if tc.n1 >= fewRun {
			// A long run waits for the longest window from its 429
			// first (TestWindowOpenedInRun).
			try3 = secs(e.cool - at0)
			r.cooldown(h, e, 1.94, 0, false, sec(try3), 0.5)
		}
		if got := e.cool - sec(try3); got < maxRecovery {
			t.Errorf("%s: after the longest window pushed back, waits %v, want a whole window (%v)", tc.name, time.Duration(got), time.Duration(maxRecovery))
		}
	}
}

// bareFirst429 builds a host of lanes e and f whose explorer e ended its
// ramp with a 429 without Retry-After at x, after n1 successes in t1
// seconds (run of them at x), and rests it as the first 429 does.
func bareFirst429(r *rules, x float64, n1, run int32, t1 float64) (*host, *lane) {
	h := hostWith(r, "e", "f")
	e := h.lanes["e"]
	r.endRamp(h, e, x, series{at: sec(0), ok: n1, run: run}, 0, sec(t1))
	r.cooldown(h, e, x, 0, false, sec(t1), 0.5) // the first 429
	return h, e
}

// TestWindowedExplorerWaits: the explorer searching a host that counts over
// a window, pushed back without a Retry-After, waits that window before its
// next request (haproxy's 2 per 10 s without a header: a retry two intervals
// on was pushed back again by the rejected requests the server counted, and
// the bisection fell to 29% of the limit). A settled host's lane, or a
// re-probe, backs off as before.
func TestWindowedExplorerWaits(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name  string
		phase uint8
		quota time.Duration
		span  int64
		want  time.Duration
	}{
		{"the quota's try", expBisect, 10 * time.Second, 0, 10 * time.Second},
		{"bisecting under a window read from the recovery", expBisect, 0, int64(25 * time.Second), 20 * time.Second},
		{"settled: a backoff", expSettled, 10 * time.Second, 0, 0},
	} {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		h.exp.phase, h.exp.quotaW = tc.phase, tc.quota
		h.cap.windowed, h.cap.span = true, tc.span
		now := sec(30)
		r.cooldown(h, e, 0.485, 0, false, now, 0.5)
		got := time.Duration(e.cool - now)
		if tc.want > 0 && got != tc.want {
			t.Errorf("%s: waits %v, want %v", tc.name, got, tc.want)
		}
		if tc.want == 0 && got >= 10*time.Second {
			t.Errorf("%s: waits %v, want a backoff of a few intervals", tc.name, got)
		}
	}
}

// settledOnQuota builds a host of ten lanes settled on 5 per 10 s, read
// from a first run of 5 successes in 5.2 s, a retry pushed back 2.1 s after
// its 429 and one passed 12.1 s after it (go-chi/httprate's 5 per 10 s
// without headers).
func settledOnQuota(t *testing.T, r *rules) *host {
	t.Helper()
	h := readOnQuota(t, r)
	passProof(r, h, h.lanes["a"], sec(17.3))
	return h
}

// readOnQuota is settledOnQuota before the explorer a proved the quota
// (proveQuota): its recovering retry passed at 17.3 s.
func readOnQuota(t *testing.T, r *rules) *host {
	t.Helper()
	return readQuota(t, r, 5, 1.94)
}

// readQuota is a host of ten lanes whose explorer a ran n successes in
// 5.2 s at the ramp's pace x (half of it passed before), was pushed back,
// and again 2.1 s later, and passed 12.1 s after its 429: n per 10 s read.
func readQuota(t *testing.T, r *rules, n int32, x float64) *host {
	t.Helper()
	h := hostWith(r, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	a := h.lanes["a"]
	h.cap.pass = x / 2 // the ramp passed the step before
	r.endRamp(h, a, x, series{at: sec(0), ok: n, run: 1}, 0, sec(5.2))
	r.cooldown(h, a, x, 0, false, sec(5.2), 0.5)
	r.cooldown(h, a, x, 0, false, sec(7.3), 0.5)
	r.exploreOK(h, a, sec(17.3), sec(17.3))
	if h.exp.phase != expSettled || h.cap.quotaN != float64(n) || h.cap.quotaW != int64(10*time.Second) {
		t.Fatalf("not settled on %d per 10 s: phase %s, quota %v per %v", n, phaseNames[h.exp.phase], h.cap.quotaN, time.Duration(h.cap.quotaW))
	}
	return h
}

// TestQuotaEdge: a host settled on a window's quota read without a header,
// pushed back at that pace, keeps a sliding-window counter's headroom (1 -
// 0.6/N of the quota) on every lane and stays settled: read as a lane's own
// budget, then as a fall, httprate's 5 per 10 s drew ten 429s at once every
// minute and searched again from 66% of the limit. The other lanes pushed
// back at the same edge, within two windows, change nothing more (and at
// an edge each other lane skips a request: its counter still holds what it
// sent at the faster pace); pushed back at the headroom later, the host
// keeps a whole request (the second edge); under that (half the lanes at
// once), the limit moved and the host falls back.
func TestQuotaEdge(t *testing.T) {
	r := testRules(t, Config{})
	h := settledOnQuota(t, r)
	b, c := h.lanes["b"], h.lanes["c"]
	x := b.pace
	if !near(x, r.settle*0.5) {
		t.Fatalf("followers at %v, want Settle under 5 per 10 s (%v)", x, r.settle*0.5)
	}
	c.tat = sec(40.5) // its next send, at the quota's pace
	cTat := c.tat
	r.follow429(h, b, x, series{}, sec(40))
	want := (1 - slidingRoom/5) * 0.5
	for _, l := range h.lanes {
		if !near(l.pace, want) {
			t.Errorf("lane %s at %v after the edge, want %v", l.exit, l.pace, want)
		}
	}
	// Every other lane skips a request: its counter still holds what it
	// sent at the faster pace.
	if got, least := c.tat, cTat+interval(want); got < least {
		t.Errorf("another lane's next send %v after the edge, want a skipped request: at least %v", time.Duration(got-cTat), time.Duration(least-cTat))
	}
	if h.exp.phase != expSettled {
		t.Errorf("phase %s after the edge, want settled", phaseNames[h.exp.phase])
	}
	r.follow429(h, c, x, series{}, sec(40.2)) // the same edge, another lane
	if !near(c.pace, want) || h.exp.phase != expSettled || c.own() > 0 {
		t.Errorf("another lane at the same edge: its pace %v (own %v), phase %s; want %v, settled", c.pace, c.own(), phaseNames[h.exp.phase], want)
	}
	// Each lane reaches the edge once: the same lane pushed back again
	// within the span is under the headroom (nginx's 10r/m with a burst of
	// 10 read as 12 per 10 s drew 60 429s in the 10 s each was read as the
	// edge).
	again := settledOnQuota(t, r)
	ab := again.lanes["b"]
	r.follow429(again, ab, x, series{}, sec(40))
	r.follow429(again, ab, ab.pace, series{}, sec(42))
	if ab.own() == 0 && again.exp.phase == expSettled && near(again.cap.follow, want) {
		t.Errorf("the edge's lane pushed back again 2 s on: nothing read, want its own ceiling or a fall back")
	}
	// Another lane pushed back at the headroom within two windows of the
	// edge: what it sent at the faster pace still counts in a sliding
	// counter's estimate (it weighs the window before too); the same edge.
	d := h.lanes["d"]
	r.follow429(h, d, want, series{}, sec(55))
	if !near(h.cap.follow, want) || h.exp.phase != expSettled || d.own() > 0 {
		t.Errorf("a lane at the headroom 15 s after the edge: follow %v (own %v), phase %s; want %v, settled", h.cap.follow, d.own(), phaseNames[h.exp.phase], want)
	}
	// Pushed back at the headroom two windows on: a counter that counts the
	// request itself in full keeps a whole request (the second edge, 1 -
	// 1.2/N), settled still; the simulator's sliding 10 per 10 s fell to a
	// careful search from 64% of it before.
	r.follow429(h, h.lanes["e"], want, series{}, sec(61))
	want2 := (1 - 2*slidingRoom/5) * 0.5
	if !near(h.cap.follow, want2) || h.exp.phase != expSettled {
		t.Errorf("pushed back at the headroom 21 s after the edge: follow %v, phase %s; want %v, settled", h.cap.follow, phaseNames[h.exp.phase], want2)
	}
	for i, name := range []string{"c", "d", "e", "f", "g"} { // half the lanes at once
		now := sec(90 + 0.1*float64(i))
		h.addEvidence(r, evEntry{exit: name, at: now, pace: want2}) // as the outcome does
		r.follow429(h, h.lanes[name], want2, series{}, now)
	}
	if h.exp.phase == expSettled && near(h.cap.follow, want2) {
		t.Errorf("pushed back under the second edge's headroom: still settled at %v, want a fall back", h.cap.follow)
	}
}

// TestLongEdge: a quota over 10 keeps slidingRoom more at each edge past
// the second while its lanes keep longEdgeRoom of it: a window read as the
// shortest usual one may be a second longer (mod_qos's 19 per 11 s read as
// 19 per 10 s passes at 88%, fell to a careful search from 66% after 94%).
// Under longEdgeRoom the host falls back as before.
func TestLongEdge(t *testing.T) {
	r := testRules(t, Config{})
	h := readQuota(t, r, 19, 3.88)
	passProof(r, h, h.lanes["a"], sec(17.3))
	at := 40.0
	for k := 1; k <= 4; k++ {
		r.follow429(h, h.lanes["b"], h.cap.follow, series{}, sec(at))
		want := (1 - float64(k)*slidingRoom/19) * 1.9
		if !near(h.cap.follow, want) || h.exp.phase != expSettled || int(h.cap.edges) != k {
			t.Fatalf("edge %d: follow %v, phase %s, edges %d; want %v, settled, %d", k, h.cap.follow, phaseNames[h.exp.phase], h.cap.edges, want, k)
		}
		at += 21 // past two windows: a new edge, not the same one
	}
	x := h.cap.follow
	for i, name := range []string{"c", "d", "e", "f", "g"} { // half the lanes at once
		now := sec(at + 0.1*float64(i))
		h.addEvidence(r, evEntry{exit: name, at: now, pace: x}) // as the outcome does
		r.follow429(h, h.lanes[name], x, series{}, now)
	}
	if h.cap.edges != 4 || h.exp.phase == expSettled && near(h.cap.follow, x) {
		t.Errorf("pushed back at %.0f%% of the quota: edges %d, still settled at %v; want a fall back (a fifth edge keeps under %v)", 100*x/1.9, h.cap.edges, h.cap.follow, longEdgeRoom)
	}
}

// TestStagger: the lanes of a host settled on a window's quota that would
// send together are spread over one interval at their pace, in the order
// of their exits, and only held back; over an interval longer than
// staggerMax they are left alone.
func TestStagger(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name   string
		pace   float64
		spread bool
	}{
		{"2 s apart", 0.485, true},
		{"10 s apart", 0.097, false},
	} {
		h := hostWith(r, "d", "b", "a", "c")
		h.cap.follow, h.cap.quotaN, h.cap.quotaW = tc.pace, 5, int64(10*time.Second)
		base := sec(20)
		for _, l := range h.lanes {
			r.setPace(h, l, tc.pace)
			l.tat = base
		}
		r.stagger(h)
		iv := interval(tc.pace)
		for i, name := range []string{"a", "b", "c", "d"} {
			want := base
			if tc.spread {
				want += int64(i) * iv / 4
			}
			if got := h.lanes[name].tat; got != want {
				t.Errorf("%s: lane %s next at %v, want %v", tc.name, name, time.Duration(got-base), time.Duration(want-base))
			}
		}
	}
}

// TestSecondWindowRetry: after a first run that outlasted a second, a 429
// drawn at a pace that runs a second's window of two or more out, and a
// first retry (a bucket's refill) pushed back too, is retried once a window
// of a second has surely ended (flask-limiter's 10 per second without
// headers: the next retry came a run's length on, and a run of 32 over
// 8.9 s read as 32 per 10 s). A slower pace, a short run or one within a
// second go on to the run's length.
func TestSecondWindowRetry(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name string
		x    float64
		n1   int32
		t1   float64
		want bool // the second retry waits for a second's window
	}{
		{"fast pace, long run: a second's window", 15.5, 32, 8.9, true},
		{"slow pace: the run's length", 1.94, 12, 5.7, false},
		{"a short run: the shortest common window", 15.5, 6, 1.5, false},
		{"a run within a second: the run's length", 15.5, 12, 0.9, false},
		{"a second of the pace passed: the run's length", 7.76, 20, 8.2, false},
	} {
		run := int32(3)
		if tc.x == 7.76 {
			run = 8 // haproxy's 20 per 10 s
		}
		h, e := bareFirst429(r, tc.x, tc.n1, run, tc.t1)
		try1 := e.cool
		if try1-sec(tc.t1) >= secondWindow {
			t.Fatalf("%s: first retry after %v, want a bucket's refill, under a second", tc.name, time.Duration(try1-sec(tc.t1)))
		}
		r.cooldown(h, e, tc.x, 0, false, try1, 0.5)
		got := e.cool - sec(tc.t1)
		if tc.want && got != secondWindow || !tc.want && got == secondWindow {
			t.Errorf("%s: second retry %v after the 429, want a second's window: %v", tc.name, time.Duration(got), tc.want)
		}
		if tc.want {
			// Pushed back there too: the schedule goes on (the run's
			// length).
			try2 := e.cool
			r.cooldown(h, e, tc.x, 0, false, try2, 0.5)
			if got := e.cool - try2; got < sec(tc.t1)-at0 {
				t.Errorf("%s: third retry %v after the second, want the run's length %vs", tc.name, time.Duration(got), tc.t1)
			}
		}
	}
}

// TestWindowOpenedInRun: a retry a longest usual window after a long
// run's first success pushed back, before that window from the 429: the
// window opened within the run, or a count over two periods still holds
// the run and its retries (haproxy's 100 per minute, pushed back at 62.5 s
// and then waiting a whole minute more, passed at 71 s). The lane waits
// for the longest window from the 429, not a whole window more. After a
// short run the retries weigh too much in such a count: a whole window.
func TestWindowOpenedInRun(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name  string
		n1    int32
		t1    float64
		tries int // retries before the one a window from the run's start
		whole bool
	}{
		{"a long run", 60, 20, 4, false},                  // the 429, a bucket's refill, a second's window, half a minute (the run outlasted 10 s)
		{"haproxy's 100 per minute", 100, 10.9, 5, false}, // and a third of a minute: the run was under it
		{"a short run", 6, 5.7, 4, true},                  // no second's window after a short run: its length (10 s at least) instead
	} {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		r.endRamp(h, e, 3.88, series{at: sec(0), ok: tc.n1, run: 3}, 0, sec(tc.t1))
		now := sec(tc.t1)
		for range tc.tries {
			r.cooldown(h, e, 3.88, 0, false, now, 0.5)
			now = e.cool
		}
		if want := at0 + int64(maxRecovery+maxRecovery/24); now != want {
			t.Fatalf("%s: retry at %v, want a window and a twenty-fourth from the run's start (%v)", tc.name, time.Duration(now-at0), time.Duration(want-at0))
		}
		r.cooldown(h, e, 3.88, 0, false, now, 0.5)
		want := sec(tc.t1) + maxRecovery
		if tc.whole {
			want = now + maxRecovery
		}
		if e.cool != want {
			t.Errorf("%s: pushed back a window after the run's start: next at %v, want %v", tc.name, time.Duration(e.cool-at0), time.Duration(want-at0))
		}
	}
}

// TestSecondWindowConfirm: a retry a second's window after the 429 that
// passes is a recovery only once the lane has held its pace for
// secondConfirm after it; pushed back meanwhile (a sliding counter of a
// longer window let the retry through as its count decayed: httprate's 30
// per 10 s), the retries go on as if it had been pushed back, and the
// recovery is read later, as a window, with the first retry's pushback as
// the time it had not yet come by. Confirmed, the search's steps prove
// themselves over secondConfirm, as on a window.
func TestSecondWindowConfirm(t *testing.T) {
	r := testRules(t, Config{})
	start := func() (*host, *lane, int64) {
		h, e := bareFirst429(r, 15.5, 32, 10, 8.9)
		r.cooldown(h, e, 7.76, 0, false, e.cool, 0.5) // the bucket's retry, pushed back
		if !h.exp.secTry {
			t.Fatal("no retry a second's window on")
		}
		return h, e, e.cool
	}

	// Held for two seconds at 7.76/s: a window of a second.
	h, e, try := start()
	for i := range 17 {
		at := try + int64(float64(i)/7.76*1e9)
		r.exploreOK(h, e, at, at+int64(time.Millisecond))
		if i < 15 && h.exp.awaitAt == 0 {
			t.Fatalf("recovered after %d successes in %v, before %v held", i+1, time.Duration(at-try), time.Duration(secondConfirm))
		}
	}
	if h.exp.awaitAt != 0 {
		t.Fatal("held for two seconds: not recovered")
	}
	if h.cap.windowed {
		t.Errorf("recovered %v after the 429: read as a window", time.Duration(try-sec(8.9)))
	}
	if !h.cap.careful || h.cap.span < secondConfirm {
		t.Errorf("a window of a second: careful %v over %v, want careful steps over %v at least (no burst carries a pace past a second)", h.cap.careful, time.Duration(h.cap.span), time.Duration(secondConfirm))
	}

	// Pushed back within them: the schedule goes on (the run's length),
	// the retry counted as pushed back.
	h, e, try = start()
	r.exploreOK(h, e, try, try+int64(time.Millisecond))
	r.exploreOK(h, e, try+int64(0.13e9), try+int64(0.131e9))
	at := try + int64(0.26e9)
	r.cooldown(h, e, 7.76, 0, false, at, 0.5)
	if h.exp.awaitAt == 0 || h.exp.secTry {
		t.Fatalf("pushed back in the test: awaiting %v, testing %v; want awaiting, not testing", h.exp.awaitAt != 0, h.exp.secTry)
	}
	if got := h.exp.recLo; got <= 0 || got >= secondWindow {
		t.Errorf("pushed back in the test: not recovered by %v, want the first retry's, under a second (the test is for a window of a second; a count over two periods rejects a moment after a longer window ends)", time.Duration(got))
	}
	if got := e.cool - at; got < int64(8*time.Second) {
		t.Errorf("pushed back in the test: next retry in %v, want the run's length", time.Duration(got))
	}
}

// TestProbeHold: the explorer's retry while it measures the first 429's
// recovery is one request: the lane takes no other until it is answered
// (for probeHold at most), then goes on at its pace. Through a proxy whose
// connection had gone idle, a second request went before the first was
// answered, and haproxy counted every retry twice.
func TestProbeHold(t *testing.T) {
	r := testRules(t, Config{})
	h, e := bareFirst429(r, 15.5, 32, 10, 8.9)
	pool := newPool([]Exit{{ID: "e"}, {ID: "f"}})
	ready := func(string, int64) (int64, bool) { return 0, false }
	at := e.cool
	first := r.acquire(h, pool, "h", Want{Pin: "e"}, at, ready)
	if !first.ok {
		t.Fatalf("the retry was not let go at its time")
	}
	iv := interval(e.pace)
	if res := r.acquire(h, pool, "h", Want{Pin: "e"}, at+2*iv, ready); res.ok {
		t.Fatalf("a second request went %v after the retry, before its answer", time.Duration(2*iv))
	}
	// Answered: the lane's pace again.
	answered := at + 2*iv
	if !r.release(h, first.ticket, relDone, &Outcome{Verdict: verdict.OK}, answered, 0.5) {
		t.Fatal("release")
	}
	if got := r.laneReady(e); got > answered+iv {
		t.Errorf("after the answer the lane waits until %v, want its pace (%v after the answer)", time.Duration(got-answered), time.Duration(iv))
	}
	// Not the explorer, or not measuring: no hold.
	f := h.lanes["f"]
	fr := r.acquire(h, pool, "h", Want{Pin: "f"}, at, ready)
	if !fr.ok {
		t.Fatal("follower not let go")
	}
	if got := r.laneReady(f); got > at+interval(f.pace) {
		t.Errorf("a follower's next request held until %v, want its pace", time.Duration(got-at))
	}
}

// TestHalfMinuteWindow: a window of 30 s without a header (haproxy's and
// flask-limiter's 10 per 30 s read as 10 per minute, 48% of the limit).
// The retry that tells it comes half a minute after the run's first
// success and the slack a count over two periods needs to let go of the
// run and its 429s (countedSlack), after the retry as long as the run,
// which a run of 10 s or more skips (it cannot tell the shortest common
// window). Passed there, the host settles at the run's quota over 30 s.
func TestHalfMinuteWindow(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name string
		n1   int32
		t1   float64
		at   float64 // the half minute's retry, from the run's start
	}{
		{"10 in 6.7 s", 10, 6.7, 30 + 30*5.0/14},   // a bucket's refill, the run's length (13.4 s from its start), a third of a minute: 4 429s
		{"25 in 12.5 s", 25, 12.5, 30 + 30*4.0/28}, // a bucket's refill: not the run's length (26 s); a third of a minute; 3 429s
	} {
		h, e := bareFirst429(r, 1.94, tc.n1, 2, tc.t1)
		f := h.lanes["f"]
		for e.cool < sec(tc.at-1) {
			r.cooldown(h, e, 1.94, 0, false, e.cool, 0.5) // a retry, pushed back
		}
		if want := sec(tc.at); math.Abs(float64(e.cool-want)) > 1e3 {
			t.Fatalf("%s: retry at %v, want half a minute and a count's slack from the run's start (%v)", tc.name, time.Duration(e.cool-at0), time.Duration(want-at0))
		}
		r.exploreOK(h, e, e.cool, e.cool)
		passProof(r, h, e, e.cool)
		if h.exp.phase != expSettled {
			t.Fatalf("%s: passed half a minute on: phase %s, want settled", tc.name, phaseNames[h.exp.phase])
		}
		if want := r.settle * float64(tc.n1) / 30; !near(f.pace, want) {
			t.Errorf("%s: follower at %.4g/s, want Settle under %d per 30 s (%.4g/s)", tc.name, f.pace, tc.n1, want)
		}
	}
}

// TestFollowerHead: haproxy's 20 per 10 s, three workers. A worker joining
// the fleet took the first explorer's exit, and the lane that explores
// instead had sent a request as a follower 4 s before its ramp, in the
// series its first run counts from: 22 successes in 12.2 s, read as 22 per
// 20 s (73% of the limit) where one worker reads 20 in 8.2 s as 20 per
// 10 s. The ramp's first pass records what the lane passed as a follower,
// and that is the run's head: the run and the retries are one worker's.
func TestFollowerHead(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	f := h.lanes["f"]
	f.serAt, f.serSent, f.serOK = sec(0), 1, 1 // a follower's request at 0 s
	h.exp.exit = ""
	r.adoptExplorer(h, f, sec(3.99))
	for _, at := range []float64{3.99, 6.05} { // the ramp's first pace, 0.485/s
		f.serSent++
		f.serOK++
		r.exploreOK(h, f, sec(at), sec(at+0.01))
	}
	if st := h.exp.steps; len(st) != 2 || !st[0].follower || st[0].n != 1 || st[0].d != sec(3.99)-at0 || st[1].n != 2 {
		t.Fatalf("the ramp's first pass on a lane that followed: steps %+v; want the follower's 1 success over 3.99 s, then the ramp's 2", st)
	}

	ramp := []rampRunRec{{pace: 0.485, n: 2}, {pace: 0.97, n: 2}, {pace: 1.94, n: 3}, {pace: 3.88, n: 5}, {pace: 7.76, n: 8}}
	type reading struct {
		n1    int32
		t1    int64
		cools [3]int64
	}
	read := func(steps []rampRunRec, ok int32, t1 float64) reading {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		h.exp.steps, h.exp.rampExit = steps, "e"
		r.endRamp(h, e, 15.52, series{at: sec(0), ok: ok, run: 1}, 0, sec(t1))
		rd := reading{n1: h.exp.n1, t1: h.exp.t1}
		r.cooldown(h, e, 15.52, 0, false, sec(t1), 0.5) // the first 429
		for i := range rd.cools {
			rd.cools[i] = e.cool - sec(t1)
			r.cooldown(h, e, 15.52, 0, false, e.cool, 0.5) // each retry pushed back
		}
		return rd
	}
	ms := func(a, b int64) bool { return a-b < 1e6 && b-a < 1e6 } // within a millisecond
	for _, tc := range []struct {
		name  string
		steps []rampRunRec
		ok    int32
		t1    float64
	}{
		{"haproxy 20 per 10 s", ramp, 21, 8.19},
		// gofiber's sliding 10 per 10 s: the follower's request is a
		// tenth of the run, more than the ramp's head may hold.
		{"fiber 10 per 10 s", ramp[:3], 8, 6.44},
	} {
		one := read(tc.steps, tc.ok, tc.t1)
		fleet := read(append([]rampRunRec{{n: 1, d: sec(3.99) - at0, follower: true}}, tc.steps...), tc.ok+1, tc.t1+3.99)
		// The same run and the same first retries; a retry timed from the
		// run's first request (a window it opened) comes as much earlier
		// as the follower's request came before the ramp, or the same.
		same := fleet.n1 == one.n1 && ms(fleet.t1, one.t1) && ms(fleet.cools[0], one.cools[0]) && ms(fleet.cools[1], one.cools[1])
		if d := one.cools[2] - fleet.cools[2]; d < -1e6 || d > sec(3.99)-at0+1e6 {
			same = false
		}
		if !same {
			t.Errorf("%s, a follower's request before the ramp: run %d in %v, retries %v after the 429; want one worker's %d in %v, %v",
				tc.name, fleet.n1, time.Duration(fleet.t1), fleet.cools, one.n1, time.Duration(one.t1), one.cools)
		}
	}
}

// TestCountedSlack: how long after a window haproxy's count over two
// periods lets a retry through: its estimate, (n1+pushed) weighted by what
// is left of the previous period, plus the retry, must not pass n1.
func TestCountedSlack(t *testing.T) {
	for _, tc := range []struct {
		n1     int32
		pushed uint8
		want   time.Duration
	}{
		{10, 3, 30 * time.Second * 4 / 13},
		{50, 4, 30 * time.Second * 5 / 54},
		{100, 2, 30 * time.Second / 24}, // at least a twenty-fourth
		{6, 4, 15 * time.Second},        // at most half
	} {
		got := time.Duration(countedSlack(halfWindow, tc.n1, tc.pushed))
		if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%d successes, %d 429s: %v, want %v", tc.n1, tc.pushed, got, tc.want)
		}
		// What haproxy estimates a slack later, with the retry: at most n1.
		if f := float64(got) / float64(halfWindow); f < 0.5 && float64(tc.n1+int32(tc.pushed))*(1-f)+1 > float64(tc.n1)+1e-6 {
			t.Errorf("%d successes, %d 429s: a slack of %v leaves haproxy's estimate above the quota", tc.n1, tc.pushed, got)
		}
	}
}

// TestRampHead: a first run that ran a large quota out took ten seconds or
// more of the ramp, nearly all of it in the last few (haproxy's 100 per
// 10 s without a header: 107 successes in 11.1 s, 103 in the last 6.4).
// The ramp's slow first steps are left out of the run: its retry at the
// run's own length tests a window of 10 s, where the whole run's length
// skipped to half a minute and read the limit as 107 per 30 s (34% of it).
// A window as long as the whole run still counts it all, and so does one
// opened by the run's first request (flask-limiter's fixed 60 per minute:
// pushed back 22.4 s after the 429 reads a minute, not half a minute).
func TestRampHead(t *testing.T) {
	r := testRules(t, Config{})
	ramp := []rampRunRec{{pace: 0.485, n: 2}, {pace: 0.97, n: 2}, {pace: 1.94, n: 3}, {pace: 3.88, n: 5}, {pace: 7.76, n: 9}, {pace: 15.52, n: 17}, {pace: 31.04, n: 32}}
	for _, tc := range []struct {
		name      string
		ok, run   int32
		t1        float64
		steps     []rampRunRec
		wantHead  int32
		wantRetry float64 // the retry after the second-window one, seconds after it
	}{
		{"100 per 10 s: the head left out", 107, 37, 11.06, ramp, 4, 6.4},
		{"a run under nine seconds: as it was", 50, 13, 8.5, ramp[:6], 0, 8.5},
		{"steps that do not add up to the run: as it was", 110, 37, 11.06, ramp, 0, 8.7}, // a third of a minute from the run's start (20.8 s)
	} {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		h.exp.steps, h.exp.rampExit = tc.steps, "e"
		r.endRamp(h, e, 50, series{at: sec(0), ok: tc.ok, run: tc.run}, 0, sec(tc.t1))
		if h.exp.headN != tc.wantHead || h.exp.n1+h.exp.headN != tc.ok {
			t.Errorf("%s: head of %d and a run of %d, want a head of %d of %d", tc.name, h.exp.headN, h.exp.n1, tc.wantHead, tc.ok)
		}
		r.cooldown(h, e, 50, 0, false, sec(tc.t1), 0.5) // the first 429
		now := tc.t1 + secs(e.cool-sec(tc.t1))
		r.cooldown(h, e, 50, 0, false, sec(now), 0.5) // the bucket's retry, pushed back
		if h.exp.secTry {
			now += secs(e.cool - sec(now))
			r.cooldown(h, e, 50, 0, false, sec(now), 0.5) // the second's window, pushed back
		}
		if got := secs(e.cool - sec(now)); math.Abs(got-tc.wantRetry) > 0.2 && (tc.wantRetry < 30 || got < 15) {
			t.Errorf("%s: next retry %.1fs on, want about %.1fs", tc.name, got, tc.wantRetry)
		}
	}
	for _, tc := range []struct {
		name                 string
		t1, head, recLo, rec float64
		third                bool
		want                 time.Duration
	}{
		{"haproxy's 100 per 10 s", 6.4, 4.6, 0.1, 7.6, false, 10 * time.Second},
		{"the same run counted whole", 11.06, 0, 0.1, 7.6, false, 0},
		{"flask-limiter's fixed 60 per minute", 6.9, 3.1, 22.4, 52.5, false, time.Minute},
		// The retry a third of a minute from the run's start passed
		// (haproxy's 15 per 20 s without a header).
		{"15 per 20 s, its retry tried", 7.5, 0, 8.5, 16.9, true, 20 * time.Second},
		// Not tried (a run of few): between 17.8 s and 43 s it is half a
		// minute, as before (haproxy's 6 per 30 s read as 6 per 20 s
		// drew 10% of 429s).
		{"6 per 30 s, no such retry", 5.7, 0, 12.1, 37.7, false, 30 * time.Second},
		// Retries a minute apart past the longest common window: the
		// usual window between two of them.
		{"30 per 5 minutes", 8.8, 0, 240, 300, false, 5 * time.Minute},
		{"20 per 2 minutes", 8.8, 0, 60, 120, false, 2 * time.Minute},
	} {
		w, ok := shortestWindow(int64(tc.t1*1e9), int64(tc.head*1e9), int64(tc.recLo*1e9), int64(tc.rec*1e9), tc.third)
		if !ok {
			w = 0
		}
		if w != tc.want {
			t.Errorf("%s: read as %v, want %v", tc.name, w, tc.want)
		}
	}
}

// TestPairLimit: the ramp's first pace pushed back at its second request,
// without a Retry-After (nginx's limit_req at 20r/m, no burst: one request
// per 3 s, against the ramp's 2.06 s). The retry that measures the recovery
// goes at its cooldown, not an interval of a slower pace later (which read
// as a window of 10 s: 1 per 10 s, 30% of the limit); it passed 6.2 s after
// the success, so the interval is between 2.06 s and 6.2 s, and the search
// climbs from the slower to the next round limit (12 a minute, Settle
// under it), each step proven by one request more, and settles at its
// first failed step.
func TestPairLimit(t *testing.T) {
	r := testRules(t, Config{})
	h, e := bareFirst429(r, 0.485, 1, 1, 2.06)
	retry := r.laneReady(e)
	if got := secs(retry - at0); got > 2.06+4.2 {
		t.Fatalf("the recovery's retry at %.2fs, want at its cooldown (about 6.2s)", got)
	}
	r.exploreOK(h, e, retry, retry+int64(time.Millisecond))
	c := &h.cap
	lo := 1 / secs(retry-at0)
	if !c.pair || math.Abs(c.pass-lo) > 1e-9 || c.hi != 0.485 {
		t.Fatalf("after the retry passed: pair %v, passed %.3g, ceiling %.3g; want a pace limit, %.3g passed, 0.485 the ceiling", c.pair, c.pass, c.hi, lo)
	}
	if want := r.settle * 12 / 60; math.Abs(e.pace-want) > 1e-9 {
		t.Errorf("the explorer tries %.4g/s, want Settle under 12 a minute, the next round limit above what passed (%.3g/s): %.4g/s", e.pace, lo, want)
	}
	if span := h.proofSpan(e.pace); span != interval(e.pace) {
		t.Errorf("a step is proven over %v, want one interval (two requests)", time.Duration(span))
	}
	now := retry + 3*interval(e.pace)
	r.explore429(h, e, e.pace, 1, now) // the step is pushed back
	if h.exp.phase != expSettled {
		t.Errorf("a failed step: phase %s, want settled under what passed", phaseNames[h.exp.phase])
	}
	// Settled at the first failed step by design, not for want of a 429:
	// the successes after it do not take the search up again (it settled
	// at once, two change records every request, and the last few kept
	// per host were nothing else).
	h.c.OK = 3 * earnEvery
	n := len(h.log.recent())
	for i := range 3 {
		r.reprobeDue(h, e, now+int64(i+1)*interval(e.pace))
	}
	if h.exp.phase != expSettled || len(h.log.recent()) != n {
		t.Errorf("after successes: phase %s, %d change records more; want settled and none", phaseNames[h.exp.phase], len(h.log.recent())-n)
	}
}

// TestPairRung: the steps of a pace limit's search are round limits, Settle
// under them: the next above what passed, or where what was pushed back is
// far above, the one at or under the middle; none in between ends it.
func TestPairRung(t *testing.T) {
	r := testRules(t, Config{})
	perMin := func(n float64) float64 { return n / 60 }
	for _, c := range []struct {
		name     string
		base, hi float64
		want     float64 // per minute, Settle under it; 0: none
	}{
		{"a retry's 6.2 s passed, the ramp's 0.485/s pushed back", 1 / 6.2, 0.485, 12},
		{"20 a minute passed", r.settle * perMin(20), 0.485, 24},
		{"a rung within 2% of what passed is no step", perMin(9.7), 0.485, 12},
		{"6 a minute passed, 9.7 pushed back: none between", r.settle * perMin(6), perMin(9.7), 0},
		{"one a minute passed, 9.7 pushed back: the middle's", perMin(1), perMin(9.7), 3},
		{"2 per second passed", r.settle * 2, 4, 2.5 * 60},
	} {
		got := r.pairRung(c.base, c.hi)
		if want := r.settle * perMin(c.want); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %.4g/s (%.3g a minute), want %.4g/s", c.name, got, got*60/r.settle, want)
		}
	}
}

// TestQuickRecoveryBound: nginx 1r/s with a burst of 5, no Retry-After. The
// ramp's run let 11 through in 7 s, the last 4 at 3.88/s; the retry 1.03 s
// after the 429 passed: a bucket, emptied by the run, refilled a request
// in 1.03 s, so its rate is at least one per 1.03 s, and the search starts
// there. The count over the run and its recovery, 11 in 8 s (1.38/s), held
// the burst: every follower took it, above the rate, and was pushed back
// within a few seconds of the others (14 learning 429s, 1.30%; now 5 and
// 0.60%, twin).
func TestQuickRecoveryBound(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e, c := h.lanes["e"], &h.cap
	c.pass = 1.94 // the ramp's step before the one pushed back
	r.endRamp(h, e, 3.88, series{at: sec(0), ok: 11, run: 4}, 0, sec(7))
	r.cooldown(h, e, 3.88, 0, false, sec(7), 0.5)
	retry := r.laneReady(e)
	r.exploreOK(h, e, retry, retry+int64(time.Millisecond))
	lo := 1 / secs(retry-sec(7))
	if c.extra < burstMin {
		t.Fatalf("burst %.1f, want the run's last step read as one", c.extra)
	}
	if c.pass > lo*(1+1e-9) || c.follow > c.pass*(1+1e-9) {
		t.Errorf("after the quick retry passed: passed %.3g/s, followers at %.3g/s; want at most one request per the recovery, %.3g/s", c.pass, c.follow, lo)
	}
	if c.pass < lo*(1-1e-9) {
		t.Errorf("passed %.3g/s, want the recovery's %.3g/s (under the count, 11 in 8 s)", c.pass, lo)
	}

	// Told 1 s: a bucket's refill; the retry waits at least that, and
	// its recovery is read the same way.
	h = hostWith(r, "e", "f")
	e, c = h.lanes["e"], &h.cap
	c.pass = 1.94
	r.endRamp(h, e, 3.88, series{at: sec(0), ok: 11, run: 4}, time.Second, sec(7))
	r.cooldown(h, e, 3.88, time.Second, false, sec(7), 0.5)
	retry = r.laneReady(e)
	if retry < sec(8) {
		t.Fatalf("told 1 s: the retry %.2fs after the 429, want the Retry-After honoured", secs(retry-sec(7)))
	}
	r.exploreOK(h, e, retry, retry+int64(time.Millisecond))
	if lo := 1 / secs(retry-sec(7)); math.Abs(c.pass/lo-1) > 1e-9 || c.follow > c.pass*(1+1e-9) {
		t.Errorf("told 1 s, the retry passed: passed %.3g/s, followers at %.3g/s; want one request per the recovery, %.3g/s", c.pass, c.follow, lo)
	}
}

// TestRereadWindow: flask-limiter's fixed 50 per 10 s without headers, its
// window opened by the ramp's first request. The ramp ran the window out
// just before it ended; the retry a second on passed (a new window) and
// read as a bucket's quick recovery; the search from the count (3.88/s)
// ran the new window out in 3.6 s, and its retries inside that window,
// each read as the pace pushed back, bisected from 12/s to 4.8/s (36% of
// the limit, 25 learning 429s). A retry pushed back later than such a
// bucket refills three requests reads the run as a window's first run:
// its recovery is measured again, and the window it fits is read (50 per
// 10 s). A bucket whose counted rate would not have refilled them is read
// as before.
func TestRereadWindow(t *testing.T) {
	r := testRules(t, Config{})
	setup := func(lo float64) (*host, *lane) {
		h := hostWith(r, "e", "f")
		e := h.lanes["e"]
		h.exp.exit, h.exp.phase = "e", expBisect
		c := &h.cap
		c.lo, c.pass, c.sent, c.safe, c.extra = lo, 4.67, 4.67, 4.67, 6
		h.exp.cAt = sec(10.15)
		h.exp.okN, h.exp.okFirst, h.exp.okExit = 50, sec(11.2), "e" // the run since the quick recovery
		r.setPace(h, e, 12)
		r.throttled(h, e, ticketRec{at: sec(14.79), laneIv: int64(time.Second) / 12}, &Outcome{}, sec(14.79), sec(14.79), 0.5)
		return h, e
	}
	retry := func(h *host, e *lane, at float64) {
		r.throttled(h, e, ticketRec{at: sec(at), laneIv: int64(float64(time.Second) / e.pace), first: true}, &Outcome{}, sec(at), sec(at), 0.5)
	}
	h, e := setup(3.88)
	retry(h, e, 15.27) // 0.48 s on: a bucket of 3.88/s refilled under two
	if h.exp.awaitAt != 0 {
		t.Fatalf("a retry 0.48 s after the 429 reread the host as a window")
	}
	retry(h, e, 16.09) // 1.3 s on: five refilled
	if h.exp.awaitAt != sec(14.79) || h.exp.n1 != 50 || h.exp.phase != expRefine {
		t.Fatalf("a retry 1.3 s after the 429: await %v, n1 %d, phase %d; want the run of 50 read as a first run, its recovery measured from its 429",
			time.Duration(h.exp.awaitAt-at0), h.exp.n1, h.exp.phase)
	}
	if f := h.cap.follow; f > 4.67 {
		t.Errorf("followers at %.3g/s while the recovery is measured, want the cautious reading", f)
	}
	r.exploreOK(h, e, sec(21.3), sec(21.31)) // the window opened at 11.2 s ended
	if c := &h.cap; c.quotaN != 50 || c.quotaW != int64(10*time.Second) || h.exp.phase != expSettled {
		t.Errorf("recovered 6.5 s after the run's 429: quota %v per %v, phase %d; want 50 per 10 s, settled", c.quotaN, time.Duration(c.quotaW), h.exp.phase)
	}

	// Settled on an exact count (60 per 10 s: 60 in 3.4 s between two
	// 429s, read as 17.1/s): a quick retry pushed back is no budget of
	// the explorer's own (its lane was handed on, and every follower
	// pushed back at 17.1/s: 13.6% of the limit), and one a second on
	// reads the window.
	h, e = setup(17.1)
	h.exp.phase, h.exp.settledAt, h.exp.exactAt = expSettled, sec(14.79), sec(14.79)
	retry(h, e, 14.89)
	if h.exp.exit != "e" || e.own() > 0 || h.exp.awaitAt != 0 {
		t.Fatalf("settled on a count, a retry 0.1 s on: explorer %q, own budget %v, await %v; want nothing read", h.exp.exit, e.own(), h.exp.awaitAt)
	}
	retry(h, e, 15.85)
	if h.exp.awaitAt != sec(14.79) || h.exp.phase != expRefine {
		t.Errorf("settled on a count, a retry 1.06 s on: await %v, phase %d; want the window read again", time.Duration(h.exp.awaitAt-at0), h.exp.phase)
	}

	// A bucket counted at 0.5/s: a retry 2 s on is under its refill of
	// three requests, and reads as before.
	h, e = setup(0.5)
	retry(h, e, 16.79)
	if h.exp.awaitAt != 0 {
		t.Errorf("a bucket of 0.5/s pushed back 2 s on: reread as a window")
	}
}

// TestRereadWindowHistory: flask-limiter's "3 per second;40 per minute"
// without headers on three exits. The explorer's ramp was pushed back by
// the second's limit after 9 (recovered a second on), its next run by the
// minute's after 31 more; its retry 2 s on is pushed back again and the
// host is read as a window. Read from the last run alone, 31 per minute
// held the lanes at 77% of the limit; the window holds the run before it
// too: 40 per minute.
func TestRereadWindowHistory(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f", "g")
	e := h.lanes["e"]
	h.exp.exit, h.exp.phase = "e", expBisect
	c := &h.cap
	c.lo, c.pass, c.sent, c.safe, c.extra = 1.82, 1.82, 1.82, 1.82, 2
	h.exp.okN, h.exp.okFirst, h.exp.okExit = 9, sec(0.5), "e"
	h.exp.runEnded("e", sec(6.4)) // the ramp's run, cut by the second's limit
	h.exp.okN, h.exp.okFirst = 31, sec(7.4)
	h.exp.cAt = sec(6.4)
	r.setPace(h, e, 1.94)
	r.throttled(h, e, ticketRec{at: sec(22.4), laneIv: interval(1.94)}, &Outcome{}, sec(22.4), sec(22.4), 0.5)
	r.throttled(h, e, ticketRec{at: sec(24.5), laneIv: interval(e.pace), first: true}, &Outcome{}, sec(24.5), sec(24.5), 0.5)
	if h.exp.awaitAt != sec(22.4) || h.exp.n1 != 31 || h.exp.headN != 9 {
		t.Fatalf("pushed back 2.1 s after the run's 429: await %v, n1 %d, head %d; want the run of 31 read as a first run, the 9 before it as its head",
			time.Duration(h.exp.awaitAt-at0), h.exp.n1, h.exp.headN)
	}
	r.exploreOK(h, e, sec(61), sec(61.01)) // the ramp's first request a minute old
	if c.quotaN != 40 || c.quotaW != int64(time.Minute) {
		t.Errorf("recovered 38.6 s after the run's 429: quota %v per %v, want 40 per minute", c.quotaN, time.Duration(c.quotaW))
	}
}

// TestAwaitPushed: flask-limiter's fixed 80 per 10 s without headers. The
// ramp's run crossed a window's end without a 429 (134 in 8.3 s at up to 50/s), and
// the followers held the ramp's 25/s while the explorer measured its
// recovery (awaitHolds: a window holds the first run's count); each ran its
// own window out, one at a time, and each 429 read as that lane's own
// smaller budget (37% of the limit, 56 learning 429s). A follower pushed
// back while the recovery is measured reads nothing: every follower takes
// the cautious reading, and none holds its pace any longer.
func TestAwaitPushed(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f", "g")
	e := h.lanes["e"]
	for _, l := range h.lanes {
		r.setPace(h, l, 25)
	}
	r.endRamp(h, e, 50, series{at: sec(4), ok: 134, run: 30}, 0, sec(12.3))
	r.cooldown(h, e, 50, 0, false, sec(12.3), 0.5)
	f, g := h.lanes["f"], h.lanes["g"]
	if !h.awaitHolds(f) || f.pace != 25 {
		t.Fatalf("before any follower's 429: follower at %v, holds %v; want the ramp's pace held", f.pace, h.awaitHolds(f))
	}
	f.hot = true
	r.throttled(h, f, ticketRec{at: sec(14.3), laneIv: int64(time.Second) / 25}, &Outcome{}, sec(14.3), sec(14.3), 0.5)
	if f.own() > 0 || h.exp.phase != expRefine || h.exp.awaitAt == 0 {
		t.Errorf("a follower pushed back while the recovery is measured: own budget %v, phase %d, await %v; want nothing read", f.own(), h.exp.phase, h.exp.awaitAt)
	}
	if h.awaitHolds(g) || g.pace > h.followPace(r)*(1+1e-9) {
		t.Errorf("the other follower at %v (holds %v), want the cautious %v", g.pace, h.awaitHolds(g), h.followPace(r))
	}
}

// TestAgain: on a host that counts over a window, a follower pushed back at
// its first request since its last 429, sent slower than that one, before
// the window could end (rule again): its window still holds what it sent
// before, so nothing is read (flask-limiter's bare 40 per 15 s, read as 40
// per 10 s: each such retry cut the host again, from 3.9/s to 0.2/s in
// three seconds), and it waits the rest of the window. Sent at the pace of
// its last 429, or a window after it, the 429 is read as any other.
func TestAgain(t *testing.T) {
	r := testRules(t, Config{})
	setup := func() (*host, *lane) {
		h := hostWith(r, "e", "f", "g")
		c := &h.cap
		c.windowed, c.careful, c.quotaN, c.quotaW = true, true, 40, int64(10*time.Second)
		c.safe, c.pass, c.sent, c.follow = 3.88, 3.88, 3.88, 3.88
		h.exp.phase, h.exp.exit = expSettled, "e"
		for _, l := range h.lanes {
			r.setPace(h, l, 3.88)
			l.hot = true
		}
		f := h.lanes["f"]
		r.throttled(h, f, ticketRec{at: sec(27), laneIv: interval(3.88)}, &Outcome{}, sec(27), sec(27), 0.5)
		return h, f
	}
	h, f := setup()
	r.setPace(h, f, 2.6) // the host fell since (its other lanes)
	safe, follow, ev := h.cap.safe, h.cap.follow, h.ev.n
	at := f.cool
	r.throttled(h, f, ticketRec{at: at, laneIv: interval(2.6), first: true}, &Outcome{}, at, at, 0.5)
	if h.cap.safe != safe || h.cap.follow != follow || h.ev.n != ev {
		t.Errorf("pushed back again, slower, within the window: safe %v follow %v evidence %d, want %v %v %d: nothing read", h.cap.safe, h.cap.follow, h.ev.n, safe, follow, ev)
	}
	if want := sec(27) + int64(10*time.Second); f.cool != want {
		t.Errorf("waits until %v, want the window's end from its last 429 (%v)", time.Duration(f.cool-at0), time.Duration(want-at0))
	}

	// At the pace of its last 429: read.
	h, f = setup()
	ev = h.ev.n
	at = f.cool
	r.throttled(h, f, ticketRec{at: at, laneIv: interval(3.88), first: true}, &Outcome{}, at, at, 0.5)
	if h.ev.n == ev {
		t.Errorf("pushed back again at the pace of its last 429: nothing read, want it read")
	}
	// A window after it: read.
	h, f = setup()
	r.setPace(h, f, 2.6)
	ev = h.ev.n
	at = sec(37.5)
	r.throttled(h, f, ticketRec{at: at, laneIv: interval(2.6), first: true}, &Outcome{}, at, at, 0.5)
	if h.ev.n == ev {
		t.Errorf("pushed back a window after its last 429: nothing read, want it read")
	}
}

// TestSlowed: on a host that counts over a window, the explorer pushed back
// at 1.84/s within that window of slowing from 3.88/s, with no 429 of its
// own since (rule slowed): the window still holds what it sent faster, so
// nothing is read, and it waits until the window holds only its slower
// requests. flask-limiter's bare 40 per 15 s, read as 40 per 10 s: a
// follower took the search over from 3.88/s, was pushed back at 1.84/s a
// second on, and the host settled at 1.73/s, 65% of the limit. Where the
// lane did not send at the faster pace (it waited out a cooldown), or the
// window has passed since, or it slowed by a margin that puts no request
// more into the window, the 429 is read as any other.
func TestSlowed(t *testing.T) {
	r := testRules(t, Config{})
	setup := func(slowFrom float64, serAt int64, serSent int32) (*host, *lane) {
		h := hostWith(r, "e", "f", "g")
		c := &h.cap
		c.windowed, c.careful, c.quotaN, c.quotaW = true, true, 40, int64(10*time.Second)
		c.safe, c.pass, c.sent, c.follow, c.hi = 1.8, 1.7, 1.7, 1.75, slowFrom
		h.exp.phase, h.exp.exit = expBisect, "e"
		for _, l := range h.lanes {
			r.setPace(h, l, slowFrom)
			l.hot = true
		}
		e := h.lanes["e"]
		e.serAt, e.serSent, e.serOK = serAt, serSent, serSent
		r.setExplorerPace(h, e, 1.844, sec(31.6), "bisect", "the search goes on, slower")
		return h, e
	}
	read := func(h *host, e *lane, at float64) bool {
		hi := h.cap.hi
		r.throttled(h, e, ticketRec{at: sec(at), laneIv: interval(1.844)}, &Outcome{}, sec(at), sec(at), 0.5)
		return h.cap.hi != hi
	}

	h, e := setup(3.88, sec(1), 100)
	if read(h, e, 32.5) {
		t.Errorf("pushed back at 1.84/s 0.9 s after slowing from 3.88/s: ceiling %v, want nothing read", h.cap.hi)
	}
	if want := sec(31.6) + int64(10*time.Second); e.cool != want {
		t.Errorf("waits until %v, want a window from the slowing (%v)", time.Duration(e.cool-at0), time.Duration(want-at0))
	}

	// The followers slowed, and a follower took the search over.
	h, e = setup(1.9, sec(1), 100)
	h.exp.fslow = slowing{at: sec(31.5), from: 3.88}
	if read(h, e, 32.5) {
		t.Errorf("pushed back at 1.84/s a second after the followers slowed from 3.88/s: ceiling %v, want nothing read", h.cap.hi)
	}

	for _, c := range []struct {
		why     string
		from    float64
		serAt   int64
		serSent int32
		at      float64
	}{
		{"after waiting out a cooldown: one request since its last 429", 3.88, sec(25), 1, 32.5},
		{"after its own 429 at 25 s: the 13 of its series sent at 1.84/s since the slowing", 3.88, sec(25), 13, 37.6},
		{"a window after slowing", 3.88, sec(1), 100, 42},
		{"slowed by 3%: no request more in the window", 1.9, sec(1), 100, 32.5},
	} {
		h, e := setup(c.from, c.serAt, c.serSent)
		if !read(h, e, c.at) {
			t.Errorf("%s: nothing read, want the 429 read", c.why)
		}
	}
}

// TestBareQuotaProof: a careful proof on a host that read a window's quota
// without a header (40 per 10 s) runs until quotaN+1 requests at the pace
// have passed, whatever the window it read: flask-limiter's bare 40 per 15
// s, read as 40 per 10 s, passed 3.1/s over the careful span (39 requests)
// and every lane was pushed back a minute on. A quota its headers told is
// proven over the careful span alone.
func TestBareQuotaProof(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	c := &h.cap
	c.windowed, c.careful, c.quotaN, c.quotaW, c.span = true, true, 40, int64(10*time.Second), int64(12500*time.Millisecond)
	h.exp.phase, h.exp.exit = expBisect, "e"
	if got, want := h.proofSpan(3.1), 40*interval(3.1); got < want {
		t.Errorf("bare: proof of 3.1/s over %v, want at least 40 intervals (%v)", time.Duration(got), time.Duration(want))
	}
	h.lanes["e"].q = &quota{limit: 40, window: int64(10 * time.Second)}
	if got := h.proofSpan(3.1); got != c.span {
		t.Errorf("told by headers: proof of 3.1/s over %v, want the careful span %v", time.Duration(got), time.Duration(c.span))
	}
}

// TestAwaitHold: a follower pushed back without a Retry-After while the
// explorer waits to retry its first 429 waits for that retry and a
// longest usual window more, longer as the explorer is pushed back again,
// and goes as soon as the explorer recovers; the time it was held past
// that is not counted as throttled. A bare 30 per 5 minutes: the
// followers, their windows spent, each retried every 5 s for four minutes
// (30% of 429s).
func TestAwaitHold(t *testing.T) {
	r := testRules(t, Config{})
	h, e := bareFirst429(r, 15.52, 30, 9, 8.8)
	for e.cool < sec(60) {
		r.cooldown(h, e, 15.52, 0, false, e.cool, 0.5) // the explorer's retries, pushed back
	}
	f, g := h.lanes["f"], h.newLane(r, "g", 0, sec(0))
	now := e.cool - int64(time.Second)
	f.hot = true
	r.throttled(h, f, ticketRec{at: now, laneIv: interval(0.42)}, &Outcome{}, now, now, 0.5)
	if want := e.cool + maxRecovery; f.cool != want || f.x == nil || !f.x.held {
		t.Fatalf("follower pushed back at %v: waits until %v, want the explorer's retry and a window more (%v)", time.Duration(now-at0), time.Duration(f.cool-at0), time.Duration(want-at0))
	}
	retry := e.cool
	r.cooldown(h, e, 15.52, 0, false, retry, 0.5) // pushed back again
	if want := e.cool + maxRecovery; f.cool != want {
		t.Errorf("the explorer pushed back again: follower until %v, want its next retry and a window more (%v)", time.Duration(f.cool-at0), time.Duration(want-at0))
	}
	rec := e.cool
	r.exploreOK(h, e, rec, rec)
	if f.cool > rec+int64(heldStagger) || f.x.held {
		t.Errorf("the explorer recovered at %v: follower until %v (held %v), want it let go", time.Duration(rec-at0), time.Duration(f.cool-at0), f.x.held)
	}
	if got, want := int64(f.c.coolMs)*1e6, rec-now; got > want+int64(heldStagger)+1e6 || got < want-1e6 {
		t.Errorf("throttled %v counted for the follower, want the %v it waited", time.Duration(got), time.Duration(want))
	}
	if g.x != nil && g.x.held {
		t.Errorf("a follower never pushed back held")
	}
}

// TestTryShorter: settled on a window read between two retries (the first
// recovery's shortest common window in there, half a minute), the explorer
// tries the next usual window under it that the retries did not rule out
// (haproxy's 15 per 20 s without a header, read as 15 per 30 s: 58% of the
// limit for the rest of the run). Passed over the try's span, the shorter
// window is read; pushed back, the host settles on the longer one again and
// the lane waits it.
func TestTryShorter(t *testing.T) {
	r := testRules(t, Config{})
	start := func() (*host, *lane, *lane) {
		h, e := bareFirst429(r, 3.88, 15, 3, 7.5)
		r.cooldown(h, e, 3.88, 0, false, e.cool, 0.5) // a retry pushed back 8.5 s after the 429 (16 s after the run's start)
		for secs(e.cool-at0) < 16 {
			r.cooldown(h, e, 3.88, 0, false, e.cool, 0.5)
		}
		h.exp.recLo, h.exp.thirdTry = int64(8.5e9), false
		r.exploreOK(h, e, sec(38.4), sec(38.4)) // recovered 30.9 s after the 429
		if !h.exp.qtry || h.exp.quotaW != 20*time.Second || h.exp.longW != 30*time.Second || !near(e.pace, r.settle*15/20) {
			t.Fatalf("15 in 7.5 s, recovered between 16 s and 38.4 s: try %v of %v (long %v), explorer at %v; want a try of 15 per 20 s", h.exp.qtry, h.exp.quotaW, h.exp.longW, e.pace)
		}
		f := h.lanes["f"]
		if !near(f.pace, r.settle*15/30) {
			t.Fatalf("follower at %v during the try, want 15 per 30 s", f.pace)
		}
		return h, e, f
	}
	h, e, f := start()
	at := 38.5
	for ; h.exp.qtry && at < 120; at += 1 / e.pace {
		r.exploreOK(h, e, sec(at), sec(at))
	}
	if h.exp.quotaW != 15*time.Second && !(h.exp.phase == expSettled && h.cap.quotaW == int64(20*time.Second)) {
		t.Fatalf("the try passed at %.0f s: window %v (settled on %v), want 20 s read, or 15 s tried next", at, h.exp.quotaW, time.Duration(h.cap.quotaW))
	}
	if h.cap.quotaW != int64(20*time.Second) || !near(f.pace, r.settle*15/20) {
		t.Errorf("the try passed: settled on %v, follower at %v; want 15 per 20 s", time.Duration(h.cap.quotaW), f.pace)
	}

	h, e, f = start()
	try := e.pace
	r.throttled(h, e, ticketRec{at: sec(58), laneIv: interval(try)}, &Outcome{}, sec(58), sec(58), 0.5)
	if h.exp.qtry || h.exp.phase != expSettled || h.cap.quotaW != int64(30*time.Second) || !near(f.pace, r.settle*15/30) {
		t.Errorf("the try pushed back: try %v, phase %s, settled on %v, follower at %v; want settled on 15 per 30 s", h.exp.qtry, phaseNames[h.exp.phase], time.Duration(h.cap.quotaW), f.pace)
	}
	if e.cool < sec(58)+int64(30*time.Second) {
		t.Errorf("the try's lane waits until %v, want the window (%v)", time.Duration(e.cool-at0), 30*time.Second)
	}
}

// TestThirdMinuteWindow: after a first run of many under 20 s, a retry a
// third of a minute from its start (and a count's slack) comes before the
// half minute's; passed there, the host settles on the run's quota per 20
// s (haproxy's 15 per 20 s without a header: 58% of the limit as 15 per 30
// s, 90% now).
func TestThirdMinuteWindow(t *testing.T) {
	r := testRules(t, Config{})
	h, e := bareFirst429(r, 3.88, 15, 3, 7.5)
	for e.cool < sec(20) {
		r.cooldown(h, e, 3.88, 0, false, e.cool, 0.5) // a retry, pushed back
	}
	if want := sec(20) + countedSlack(thirdWindow, 15, h.exp.pushed); e.cool != want || !h.exp.thirdTry {
		t.Fatalf("retry at %v, want a third of a minute and a count's slack from the run's start (%v)", time.Duration(e.cool-at0), time.Duration(want-at0))
	}
	r.exploreOK(h, e, e.cool, e.cool)
	passProof(r, h, e, e.cool)
	if f := h.lanes["f"]; h.exp.phase != expSettled || h.cap.quotaW != int64(thirdWindow) || !near(f.pace, r.settle*15/20) {
		t.Errorf("passed a third of a minute on: phase %s, window %v, follower at %v; want settled on 15 per 20 s", phaseNames[h.exp.phase], time.Duration(h.cap.quotaW), f.pace)
	}
}

// passProof passes the proof of a window's quota that the settled explorer
// l reads between two retries (proveQuota): proofRun successes at its pace
// after the one at at.
func passProof(r *rules, h *host, l *lane, at int64) {
	for h.exp.proof > 0 {
		at += interval(l.pace)
		r.exploreOK(h, l, at, at)
	}
}

// TestProveQuota: a window's quota read between two retries of the first
// recovery is proven by the explorer before the followers take it; they go
// half way meanwhile. A bucket's refill reads the same (nginx's 10r/m with
// a burst of 10: 12 in 7.1 s, a retry pushed back 0.5 s after the 429 and
// one passed 8.1 s after it, read as 12 per 10 s, seven times the rate,
// and every follower was pushed back at it), and so does a moving window
// freeing the first run's requests one by one. Pushed back in the proof,
// the explorer tries the ramp's first pace, which a moving window frees at
// least as fast and the bucket's bound is under: pushed back again, a
// bucket, searched between its bounds with its burst off the followers'
// series; passed, a window longer than read.
func TestProveQuota(t *testing.T) {
	r := testRules(t, Config{})
	quota := r.settle * 0.5 // Settle under 5 per 10 s

	h := readOnQuota(t, r)
	a, b := h.lanes["a"], h.lanes["b"]
	held := b.pace
	if h.exp.proof != proofRun || !near(a.pace, quota) || held >= quota*(1-tolerance) || held <= h.exp.proofFollow {
		t.Fatalf("read: proof %d, explorer at %v, follower at %v; want the explorer at %v and the follower half way from %v", h.exp.proof, a.pace, held, quota, h.exp.proofFollow)
	}
	passProof(r, h, a, sec(17.3))
	if !near(b.pace, quota) {
		t.Errorf("proven: follower at %v, want %v", b.pace, quota)
	}

	// A bucket: pushed back at the proof's first request, and again at
	// the ramp's first pace.
	h = readOnQuota(t, r)
	a, b = h.lanes["a"], h.lanes["b"]
	b.serAt, b.serSent = sec(0), 12 // the follower's series holds the burst it spent
	at := sec(17.3) + interval(a.pace)
	r.throttled(h, a, ticketRec{at: at, laneIv: interval(a.pace)}, &Outcome{}, at, at, 0.5)
	if !h.exp.suspect || !near(a.pace, r.startPace()) || b.pace > held {
		t.Fatalf("proof pushed back: suspect %v, explorer at %v, follower at %v; want the ramp's first pace %v, the follower held", h.exp.suspect, a.pace, b.pace, r.startPace())
	}
	at2 := at + interval(a.pace)
	r.throttled(h, a, ticketRec{at: at2, laneIv: interval(a.pace)}, &Outcome{}, at2, at2, 0.5)
	lo, hi := 0.5/12.1, 2/secs(at2-sec(5.2))
	if h.exp.suspect || h.exp.phase != expBisect || h.cap.quotaN != 0 || h.cap.windowed || h.cap.hi > hi*(1+1e-9) {
		t.Fatalf("pushed back again: suspect %v, phase %s, quota %v, windowed %v, ceiling %v; want a bucket under %v", h.exp.suspect, phaseNames[h.exp.phase], h.cap.quotaN, h.cap.windowed, h.cap.hi, hi)
	}
	if want := r.settle * math.Sqrt(lo*hi); !near(b.pace, want) {
		t.Errorf("bucket: follower at %v, want Settle under the middle of %v and %v (%v)", b.pace, lo, hi, want)
	}
	if h.cap.extra < 4 || b.serSent != 12-int32(h.cap.extra) {
		t.Errorf("bucket: burst %v, follower's series %d; want the first run's burst taken off it", h.cap.extra, b.serSent)
	}

	// A moving window: the ramp's first pace passes.
	h = readOnQuota(t, r)
	a, b = h.lanes["a"], h.lanes["b"]
	r.throttled(h, a, ticketRec{at: at, laneIv: interval(a.pace)}, &Outcome{}, at, at, 0.5)
	passProof(r, h, a, at)
	// (Here the ramp's first pace is the quota's: passed and pushed back
	// within 4%, the search settles at once.)
	if h.exp.suspect || h.exp.proof != 0 || h.cap.quotaN != 0 || !h.cap.windowed || !near(h.cap.pass, r.startPace()) {
		t.Fatalf("the ramp's pace passed: suspect %v, proof %d, quota %v, windowed %v, pass %v; want a window searched from %v", h.exp.suspect, h.exp.proof, h.cap.quotaN, h.cap.windowed, h.cap.pass, r.startPace())
	}
	if b.pace < r.settle*r.startPace()*(1-1e-9) {
		t.Errorf("window: follower at %v, want at least Settle under the ramp's first pace", b.pace)
	}

	// A search that starts again (followers pushed back meanwhile) ends
	// the proof, and the followers' hold with it.
	h = readOnQuota(t, r)
	b = h.lanes["b"]
	r.fallBack(h, b, b.pace, sec(18), "followers pushed back")
	if h.exp.proof != 0 || h.exp.suspect || h.exp.phase == expSettled {
		t.Errorf("a fall in the proof: proof %d, suspect %v, phase %s; want the proof over and the search on", h.exp.proof, h.exp.suspect, phaseNames[h.exp.phase])
	}
}

// TestRampFirstStepOnly: a first 429 after no more than the ramp's first
// step's run of two, and a quick recovery, reads one of them over the run
// and its recovery, not the ramp's pace: a bucket of a burst of two passes
// that run at any pace (nginx's 10r/m with a burst of 1 passed 0.485/s,
// read 2 in 7.2 s, and every follower, at either, was pushed back: 13
// 429s in two minutes, 4 now).
func TestRampFirstStepOnly(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f")
	e, f := h.lanes["e"], h.lanes["f"]
	h.cap.pass = r.startPace() // the ramp's first step passed: two requests
	r.endRamp(h, e, 2*r.startPace(), series{at: sec(0), ok: 2, run: 0}, 0, sec(3.1))
	r.cooldown(h, e, 2*r.startPace(), 0, false, sec(3.1), 0.5)
	at := e.cool
	r.exploreOK(h, e, at, at) // the retry a bucket's refill on passed
	if want := 1 / secs(at-sec(0)); !near(h.cap.safe, want) || !near(f.pace, r.settle*want) {
		t.Errorf("estimate %v, follower at %v; want one of the two over the run and its recovery (%v), the follower Settle under it", h.cap.safe, f.pace, want)
	}
	if f.pace >= r.startPace() {
		t.Errorf("follower at %v: at or above what the ramp's first step passed (%v)", f.pace, r.startPace())
	}
}

// TestAwaitCount: while the first 429's recovery is unknown, the followers
// that have sent what the explorer's first run held are held at that
// count; one goes on past it, and its answer tells them all: passed, their
// windows end within what they sent and they go on; pushed back, they wait
// for the explorer's recovery. flask-limiter's bare 20 per 2 minutes: the
// nine followers, at the cautious reading of a minute's window, each sent a
// 21st request 70 s on, nine 429s at once. A first run under awaitMin holds
// nobody (a count that small is most likely a minute's, and a follower's
// wait for the answer costs an interval at the cautious pace).
func TestAwaitCount(t *testing.T) {
	r := testRules(t, Config{})
	take := func(h *host, pool *exitPool, name string, at int64) (Ticket, int64) {
		t.Helper()
		return takeLane(t, r, h, pool, name, at)
	}
	start := func(n1 int32) (*host, *exitPool, *lane) { return awaitCountHost(r, n1) }
	held := func(l *lane) bool { return l.x != nil && l.x.held && l.x.counted }

	h, pool, e := start(20)
	take(h, pool, "f", sec(63)) // f's 20th: it goes on
	take(h, pool, "g", sec(63)) // g's and k's 20th: held
	take(h, pool, "k", sec(63))
	g, k := h.lanes["g"], h.lanes["k"]
	if held(h.lanes["f"]) || !held(g) || !held(k) || h.exp.over != "f" {
		t.Fatalf("at the first run's count: f held %v, g %v, k %v, over %q; want f to go on, g and k held", held(h.lanes["f"]), held(g), held(k), h.exp.over)
	}
	if want := e.cool + maxRecovery; r.laneReady(g) < want {
		t.Errorf("g held until %v, want the explorer's retry and a window more (%v)", time.Duration(r.laneReady(g)-at0), time.Duration(want-at0))
	}
	if got, most := int64(g.c.coolMs)*1e6, g.cool-sec(63); got > most+1e6 {
		t.Errorf("g counted %v throttled, want at most the %v it is held from now", time.Duration(got), time.Duration(most))
	}
	tk, at := take(h, pool, "f", sec(63)) // f's 21st: past the count
	if rec := h.tickets[tk.Seq]; !rec.over {
		t.Fatalf("f's 21st request not marked as the one past the count")
	}
	// Passed: g and k go on.
	if !r.release(h, tk, relDone, &Outcome{Verdict: verdict.OK}, at+int64(time.Second), 0.5) {
		t.Fatal("release")
	}
	if held(g) || held(k) || !h.exp.overRead || r.laneReady(g) > at+int64(time.Second)+2*int64(heldStagger) {
		t.Errorf("f passed past the count: g held %v until %v, k held %v; want them let go", held(g), time.Duration(r.laneReady(g)-at0), held(k))
	}
	take(h, pool, "g", 0)
	if held(g) {
		t.Errorf("g held again once f passed past the count")
	}

	// Pushed back: g and k wait for the explorer's recovery.
	h, pool, e = start(20)
	for e.cool < sec(63) {
		r.cooldown(h, e, 7.76, 0, false, e.cool, 0.5) // the explorer's retries, pushed back
	}
	take(h, pool, "f", sec(63))
	take(h, pool, "g", sec(63))
	take(h, pool, "k", sec(63))
	tk, at = take(h, pool, "f", sec(63))
	now := at + int64(time.Second)
	if !r.release(h, tk, relDone, &Outcome{Verdict: verdict.Throttled}, now, 0.5) {
		t.Fatal("release")
	}
	g, k = h.lanes["g"], h.lanes["k"]
	if !held(g) || !held(k) || h.exp.overRead {
		t.Fatalf("f pushed back past the count: g held %v, k held %v; want both held", held(g), held(k))
	}
	rec := e.cool
	r.exploreOK(h, e, rec, rec)
	if held(g) || g.cool > rec+2*int64(heldStagger) {
		t.Errorf("the explorer recovered at %v: g held %v until %v, want it let go", time.Duration(rec-at0), held(g), time.Duration(g.cool-at0))
	}

	// A first run under awaitMin: nobody held.
	h, pool, _ = start(awaitMin - 1)
	take(h, pool, "f", sec(63))
	take(h, pool, "g", sec(63))
	if g := h.lanes["g"]; held(g) || h.exp.over != "" {
		t.Errorf("a first run of %d: g held %v, over %q; want nobody held", awaitMin-1, held(g), h.exp.over)
	}
}

// takeLane takes lane name of h at at (or when it is ready, if later).
func takeLane(t *testing.T, r *rules, h *host, pool *exitPool, name string, at int64) (Ticket, int64) {
	t.Helper()
	ready := func(string, int64) (int64, bool) { return 0, false }
	l := h.lanes[name]
	at = max(at, r.laneReady(l))
	res := r.acquire(h, pool, "h", Want{Pin: name}, at, ready)
	if !res.ok {
		t.Fatalf("%s not let go at %v", name, time.Duration(at-at0))
	}
	return res.ticket, at
}

// awaitCountHost is awaitCount's host: explorer e's first run of n1 in
// 8.1 s pushed back without a Retry-After, and followers f, g and k each
// one short of n1 in a series from the start.
func awaitCountHost(r *rules, n1 int32) (*host, *exitPool, *lane) {
	h, e := bareFirst429(r, 7.76, n1, 8, 8.1)
	pool := newPool([]Exit{{ID: "e"}, {ID: "f"}, {ID: "g"}, {ID: "k"}})
	for _, name := range []string{"g", "k"} {
		h.newLane(r, name, 0, sec(0))
	}
	r.paceFollowers(h)
	for _, name := range []string{"f", "g", "k"} {
		l := h.lanes[name]
		l.serAt, l.serSent = sec(0), n1-1
	}
	return h, pool, e
}

// TestBlockGrows: a lane pushed back at its first request after waiting a
// bare block out doubles the host's block, up to maxBlock (a block longer
// than the one read would push every lane back for good), once a block:
// the lanes back from the shorter one meanwhile double nothing more;
// pushed back after it passed, the block stands.
func TestBlockGrows(t *testing.T) {
	r := testRules(t, Config{})
	h := wallHost(r, 0, 10, "e", "f")
	h.cap.block = int64(maxRecovery)
	f := h.lanes["f"]
	pushBare(r, h, f, 10)
	if h.cap.block != int64(maxRecovery) || f.cool < sec(10)+int64(maxRecovery) {
		t.Fatalf("first 429: block %v, f waits until %v; want the block as it was, waited out", time.Duration(h.cap.block), time.Duration(f.cool-at0))
	}
	at := secs(f.cool-at0) + 0.1
	pushBare(r, h, f, at) // its first request after the block
	if h.cap.block != 2*int64(maxRecovery) || f.cool < sec(at)+2*int64(maxRecovery) {
		t.Errorf("pushed back after the block: block %v, f waits until %v; want twice the block, waited out", time.Duration(h.cap.block), time.Duration(f.cool-at0))
	}
	// e, back from the shorter block meanwhile, is pushed back by the
	// same one: nothing more.
	e := h.lanes["e"]
	pushBare(r, h, e, 11)
	pushBare(r, h, e, secs(e.cool-at0)+0.1)
	if h.cap.block != 2*int64(maxRecovery) {
		t.Errorf("a second lane back from the shorter block: block %v, want it as doubled (%v)", time.Duration(h.cap.block), 2*maxRecovery)
	}
	for range 6 {
		pushBare(r, h, f, secs(f.cool-at0)+0.1)
	}
	if h.cap.block != int64(maxBlock) {
		t.Errorf("block %v after six more, want it held at %v", time.Duration(h.cap.block), maxBlock)
	}
	// Through after it, then pushed back: the block stands.
	h.cap.block = int64(maxRecovery)
	ok := f.cool
	r.outcome(h, f, ticketRec{at: ok, laneIv: interval(f.pace), first: true}, &Outcome{Verdict: verdict.OK}, ok, 0.5)
	pushBare(r, h, f, secs(ok-at0)+1)
	if h.cap.block != int64(maxRecovery) {
		t.Errorf("pushed back after a success: block %v, want %v", time.Duration(h.cap.block), maxRecovery)
	}
}

// wallHost is the wall tests' host: settled at 1.94/s with no window read,
// each lane hot with ok successes, as many sent, since at seconds.
func wallHost(r *rules, at float64, ok int32, names ...string) *host {
	h := hostWith(r, names...)
	c := &h.cap
	c.safe, c.pass, c.sent, c.follow = 1.94, 1.94, 1.94, 1.94
	h.exp.phase = expSettled
	for _, l := range h.lanes {
		r.setPace(h, l, 1.94)
		l.hot = true
		l.serAt, l.serOK, l.serSent, l.c.ok = sec(at), ok, ok, uint32(ok)
	}
	return h
}

// pushBare applies a 429 without Retry-After on lane l of h, sent and
// answered at at seconds.
func pushBare(r *rules, h *host, l *lane, at float64) {
	r.throttled(h, l, ticketRec{at: sec(at), laneIv: interval(l.pace), first: l.eps > 0}, &Outcome{}, sec(at), sec(at), 0.5)
}

// TestWall: a host settled at a pace without a window, its lanes pushed
// back together after long runs (40 successes in 27 s, flask-limiter's
// "3 per second;40 per minute", bare) and again a second on with nothing
// between, reads a window's quota spent: the lanes wait, the one with the
// longest run retries alone without cutting the pace, and its recovery
// reads 40 per minute and lets the others go. Lanes through again within
// the second, or whose retries pass (a bucket, a sliding counter's edge),
// open nothing.
func TestWall(t *testing.T) {
	r := testRules(t, Config{})
	setup := func() (*host, *lane, *lane) {
		h := wallHost(r, 0, 40, "e", "f", "g")
		h.lanes["g"].serOK = 38
		return h, h.lanes["f"], h.lanes["g"]
	}
	push := func(h *host, l *lane, at float64) { pushBare(r, h, l, at) }
	stands := func(h *host) bool { return h.wall != nil && h.wall.stands }

	h, f, g := setup()
	push(h, f, 27)
	push(h, g, 27.5)
	if stands(h) {
		t.Fatal("a wall stands on the first 429s")
	}
	push(h, f, 28.1)
	push(h, g, 28.6)
	if !stands(h) || h.wall.exit != "f" || h.wall.n != 40 {
		t.Fatalf("pushed back again a second on: wall %+v, want standing on lane f's run of 40", h.wall)
	}
	if _, ok := lastChange(h, "wall"); !ok {
		t.Error("no wall Change recorded")
	}
	if f.cool > sec(28.6)+wallFirst {
		t.Errorf("the wall's lane retries at %v, want within %v", time.Duration(f.cool-sec(28.6)), time.Duration(wallFirst))
	}
	if g.cool < f.cool+maxRecovery {
		t.Errorf("the other lane goes at %v, before the wall's lane's answer", time.Duration(g.cool-at0))
	}
	follow, safe := h.cap.follow, h.cap.safe
	at := secs(f.cool - at0)
	push(h, f, at)
	if h.cap.follow != follow || h.cap.safe != safe {
		t.Errorf("the probe pushed back cut the host: follow %v -> %v, safe %v -> %v", follow, h.cap.follow, safe, h.cap.safe)
	}
	if f.cool > sec(at)+wallEvery || g.cool < f.cool+maxRecovery {
		t.Errorf("after the probe's 429 at %.1fs: it retries at %v, the other goes at %v", at, time.Duration(f.cool-at0), time.Duration(g.cool-at0))
	}
	r.wallOK(h, f, sec(62), sec(62.2)) // through 35 s after its 429
	if c := &h.cap; c.quotaN != 40 || c.quotaW != int64(time.Minute) {
		t.Errorf("through again 35 s on: quota %v per %v, want 40 per minute", c.quotaN, time.Duration(c.quotaW))
	}
	if g.cool > sec(62.2)+int64(heldStagger) {
		t.Errorf("once the window is read the other lane waits until %v", time.Duration(g.cool-at0))
	}
	// Until the window its run filled ends (a minute from lane f's 429),
	// a lane pushed back meets what is left of that run: it waits for
	// the window's end, and the quota read holds.
	g.serAt, g.serOK = sec(62.2), 3
	follow = h.cap.follow
	push(h, g, 64)
	if g.cool != sec(87) || h.cap.follow != follow || h.cap.quotaN != 40 {
		t.Errorf("pushed back at 64 s, within the window the runs filled: waits until %v (want 87 s), follow %v -> %v, quota %v",
			time.Duration(g.cool-at0), follow, h.cap.follow, h.cap.quotaN)
	}
	if push(h, g, 90); h.wall != nil {
		t.Errorf("after the window the runs filled the wall is still %+v", h.wall)
	}

	// Retries within the second: a bucket's or a leaky bucket's refill.
	h, f, g = setup()
	push(h, f, 27)
	push(h, g, 27.5)
	push(h, f, 27.6)
	push(h, g, 28.1)
	if stands(h) {
		t.Error("retries pushed back within a second raised a wall")
	}
	// One lane through again: the other alone is no wall.
	h, f, g = setup()
	push(h, f, 27)
	push(h, g, 27.5)
	r.wallOK(h, f, sec(28.2), sec(28.3))
	push(h, g, 28.6)
	if stands(h) {
		t.Error("a lane through again and one stuck raised a wall")
	}

	// A direct crawl: one lane, pushed back after its long run and again
	// twice a second or more on, nothing between. Once is no proof (a
	// counter that counts refused requests turns a retry away too).
	h = hostWith(r, "e")
	e := h.lanes["e"]
	h.cap.safe, h.cap.pass, h.cap.sent, h.cap.follow, h.cap.lo = 1.94, 1.94, 1.94, 1.94, 1.82
	h.exp.phase = expSettled
	r.setPace(h, e, 1.94)
	e.hot, e.serAt, e.serOK, e.c.ok = true, sec(0), 40, 40
	push(h, e, 27)
	push(h, e, 28.1)
	if stands(h) {
		t.Fatal("one lane stuck once raised a wall")
	}
	push(h, e, 29.5)
	if !stands(h) || h.wall.exit != "e" {
		t.Fatalf("one lane stuck twice: wall %+v, want standing on it", h.wall)
	}
	r.wallOK(h, e, sec(62), sec(62.2))
	if c := &h.cap; c.quotaN != 40 || c.quotaW != int64(time.Minute) || c.lo != 0 || h.cap.follow > 0.7 {
		t.Errorf("through again 35 s on: quota %v per %v, lo %v, follow %v; want 40 per minute paced under it", c.quotaN, time.Duration(c.quotaW), c.lo, h.cap.follow)
	}
}

// TestWallCount: a lane pushed back after its long run (40 successes since
// 0 s, flask-limiter's bare "3 per second;40 per minute") and again a
// second on, nothing between, holds the other lanes, whose series began
// with its own, at its count: each goes once the wall's lane is through
// again, as long after it was held as that lane took (their windows free
// later), and with half the lanes held the wall stands without their
// 429s. The wall's lane through on its retry (a bucket), or another lane
// past the count already (a re-probe on GCRA), holds nobody.
func TestWallCount(t *testing.T) {
	r := testRules(t, Config{})
	ready := func(string, int64) (int64, bool) { return 0, false }
	pool := newPool([]Exit{{ID: "e"}, {ID: "f"}, {ID: "g"}, {ID: "k"}})
	setup := func(others int32, more ...string) *host {
		h := wallHost(r, 0.5, others, append([]string{"e", "f", "g", "k"}, more...)...)
		e := h.lanes["e"]
		e.serAt, e.serOK, e.serSent, e.c.ok = sec(0), 40, 40, 40
		return h
	}
	push := func(h *host, l *lane, at float64) { pushBare(r, h, l, at) }
	take := func(h *host, name string, at float64) {
		t.Helper()
		l := h.lanes[name]
		if res := r.acquire(h, pool, "h", Want{Pin: name}, max(sec(at), r.laneReady(l)), ready); !res.ok {
			t.Fatalf("%s not let go at %vs", name, at)
		}
	}
	capped := func(h *host, name string) bool {
		if h.wall == nil {
			return false
		}
		i := slices.IndexFunc(h.wall.lanes, func(x wallLane) bool { return x.exit == name })
		return i >= 0 && h.wall.lanes[i].capped && !h.wall.lanes[i].through
	}

	h := setup(38)
	e, f, g := h.lanes["e"], h.lanes["f"], h.lanes["g"]
	push(h, e, 22.9)
	if h.wall == nil || h.wall.capN != 40 {
		t.Fatalf("pushed back after 40 successes: wall %+v, want a count of 40", h.wall)
	}
	take(h, "f", 23.5) // the 39th: under the count
	if capped(h, "f") {
		t.Fatal("f held under the count")
	}
	if h.wall.waiting() {
		t.Error("the host waits on a wall its opener's first 429 opened")
	}
	push(h, e, 24) // stuck once
	if !h.wall.waiting() || r.snapshotHost(h, time.Unix(0, sec(24))).Wall.IsZero() {
		t.Error("its opener stuck with a count: the host's snapshot shows no wall (the monitor reads the opener's 429s as its exit's)")
	}
	take(h, "g", 25)
	take(h, "g", 25) // the 40th
	if capped(h, "f") || !capped(h, "g") {
		t.Fatalf("at 40 sent, held: f (39) %v, g (40) %v; want g only", capped(h, "f"), capped(h, "g"))
	}
	// Its lane stuck and one more of four held at its count: it stands.
	if !h.wall.stands || h.wall.exit != "e" {
		t.Fatalf("stuck with a lane held at the count: wall %+v, want standing on e", h.wall)
	}
	if g.cool < e.cool+maxRecovery {
		t.Errorf("g held until %v, before the wall's lane's answer (%v)", time.Duration(g.cool-at0), time.Duration(e.cool-at0))
	}
	// Its retries meet the end of a common window begun with its run.
	push(h, e, secs(e.cool-at0))
	if want := sec(30) + wallPast; e.cool != want {
		t.Errorf("the wall's lane retries at %v, want at the end of half a minute from its run's start (%v)", time.Duration(e.cool-at0), time.Duration(want-at0))
	}
	take(h, "f", 26) // f's 40th, after it stood
	take(h, "k", 26)
	take(h, "k", 26)
	if !capped(h, "f") || !capped(h, "k") || f.cool < e.cool+maxRecovery {
		t.Fatalf("f and k at the count once it stands: held %v and %v, f until %v", capped(h, "f"), capped(h, "k"), time.Duration(f.cool-at0))
	}
	heldG := g.cool
	gAt := h.wall.lanes[slices.IndexFunc(h.wall.lanes, func(x wallLane) bool { return x.exit == "g" })].at
	r.wallOK(h, e, sec(61), sec(61.2)) // through 38.1 s after its 429
	if c := &h.cap; c.quotaN != 40 || c.quotaW != int64(time.Minute) {
		t.Fatalf("through again: quota %v per %v, want 40 per minute", c.quotaN, time.Duration(c.quotaW))
	}
	if want := gAt + (sec(61) - sec(22.9)); g.cool != want || g.cool >= heldG {
		t.Errorf("g, held at its 40th, goes at %v, want %v (as long after as the wall's lane took)", time.Duration(g.cool-at0), time.Duration(want-at0))
	}

	// A lane pushed back before the ramp's head has left the window waits
	// for that (headEnd); after it, for the window's end (grace).
	h.wall.headEnd = sec(67)
	g.serAt, g.serOK = g.cool, 1
	push(h, g, 64)
	if g.cool != sec(67) {
		t.Errorf("pushed back at 64 s, before the head left the window at 67 s: waits until %v", time.Duration(g.cool-at0))
	}
	g.serAt, g.serOK = sec(67), 1
	push(h, g, 70)
	if want := h.wall.grace; g.cool != want {
		t.Errorf("pushed back at 70 s, after the head left: waits until %v, want the grace's end %v", time.Duration(g.cool-at0), time.Duration(want-at0))
	}

	// The wall's lane through on its retry, before half the lanes reached
	// its count: nobody stays held.
	h = setup(38, "m", "n")
	e, g = h.lanes["e"], h.lanes["g"]
	push(h, e, 22.9)
	push(h, e, 24)
	take(h, "g", 25)
	take(h, "g", 25)
	if !capped(h, "g") || h.wall.stands {
		t.Fatalf("g held at the count %v, the wall stands %v; want held, not standing on six lanes", capped(h, "g"), h.wall.stands)
	}
	r.wallOK(h, e, sec(26), sec(26.1))
	if capped(h, "g") || g.cool > sec(26.1) || h.wall.capN != 0 {
		t.Errorf("the wall's lane through: g held %v until %v, count %d", capped(h, "g"), time.Duration(g.cool-at0), h.wall.capN)
	}

	// Stuck with the others ten requests short of the count: the wall's
	// lane waits until one of them will have reached it (capWait), its
	// retries before then proving nothing more.
	h = setup(30)
	e = h.lanes["e"]
	push(h, e, 22.9)
	push(h, e, 24)
	if lo, hi := sec(24)+10*interval(1.94), sec(24)+11*interval(1.94)+wallPast; e.cool < lo || e.cool > hi {
		t.Errorf("stuck, the others at 30 of 40: retries at %v, want when the first of them reaches 40 (%v to %v)", time.Duration(e.cool-at0), time.Duration(lo-at0), time.Duration(hi-at0))
	}

	// Not yet stuck: the count holds nobody (a bucket lets the retry through).
	h = setup(39)
	push(h, h.lanes["e"], 22.9)
	take(h, "g", 23)
	if capped(h, "g") {
		t.Error("g held at the count before the wall's lane was stuck")
	}
	// Another lane past the count already: no count.
	h = setup(40)
	push(h, h.lanes["e"], 22.9)
	if h.wall == nil || h.wall.capN != 0 {
		t.Errorf("others at 40 already: wall %+v, want no count", h.wall)
	}
}

// TestBareBlock: vsthrottle's 15 per 10 s blocking a lane 30 s, no header.
// The explorer ran 18 out in 8 s; the retry half a minute from the run's
// start would come a moment before a block of half a minute from the 429
// ends, so it waits for that end (blockTry), and passed there the recovery
// fits both: a window of 18 per 30 s from the run's start, or a block. The
// penalty's test, twice the run and two more at twice the window's pace,
// tells them apart: passed, a block (every bare 429 then waits it out, and
// the refinement holds a pace its run proves only in part); pushed back
// within the run's count, the window as read.
func TestBareBlock(t *testing.T) {
	r := testRules(t, Config{})
	const t1 = 8.0
	start := func() (*host, *lane) {
		h, e := bareFirst429(r, 7.76, 18, 6, t1)
		h.c.OK = 9 * 18 // nine followers' runs
		h.exp.ramped = 3.88
		h.exp.startCount(sec(t1)) // the explorer's count from its first 429, as explore429 starts it
		h.cap.extra = 3           // the burst the ramp showed: 6 at 7.76/s before the 429, 3.88/s sustained
		for h.exp.blockTry == 0 && e.cool < sec(60) {
			r.cooldown(h, e, 7.76, 0, false, e.cool, 0.5) // each retry pushed back
		}
		if want := sec(t1) + int64(halfWindow) + windowEndSlack; e.cool != want || h.exp.blockTry != halfWindow {
			t.Fatalf("half-minute retry at %v (block %v), want half a minute from the 429 (%v)", time.Duration(e.cool-at0), h.exp.blockTry, time.Duration(want-at0))
		}
		r.exploreOK(h, e, e.cool, e.cool)
		if !h.exp.ptest || h.exp.wtest != 2*18+2 || !near(e.pace, 2*18.0/30) {
			t.Fatalf("recovered at the block's end: explorer at %.3g/s, test of %d (penalty's %v); want 38 at 1.2/s", e.pace, h.exp.wtest, h.exp.ptest)
		}
		if f := h.lanes["f"]; !atLeast(f.pace, r.settle*18/30) {
			t.Errorf("the follower holds %.3g/s during the test, want the window's reading, %.3g/s", f.pace, r.settle*18/30)
		}
		return h, e
	}

	h, e := start()
	at := e.cool
	for range 2*18 + 2 {
		at += interval(e.pace)
		e.serOK++ // the lane's series since its recovery
		r.exploreOK(h, e, at, at)
	}
	if c := &h.cap; c.block != int64(halfWindow) || c.windowed || c.quotaN != 0 || h.exp.phase != expRefine {
		t.Fatalf("the test passed: block %v, windowed %v, quota %v, phase %s; want a block of 30 s, no window, refining", time.Duration(c.block), c.windowed, c.quotaN, phaseNames[h.exp.phase])
	}
	// A step's run proves little of its pace past a burst as large as the
	// first run: the explorer holds the pace, not a step up from what it
	// proved (which went back under it).
	held, pass := e.pace, h.cap.pass
	for i := 0; h.cap.pass == pass && i < 200; i++ {
		at += interval(e.pace)
		e.serOK++
		r.exploreOK(h, e, at, at)
	}
	if h.cap.pass == pass || h.cap.pass*refineStep >= held || e.pace != held {
		t.Fatalf("a step of the block's bucket proved %.3g/s (from %.3g/s): explorer at %.3g/s, want the %.3g/s it held", h.cap.pass, pass, e.pace, held)
	}
	f := h.lanes["f"]
	r.cooldown(h, f, f.pace, 0, false, at, 0.5)
	if want := int64(halfWindow) + windowEndSlack; f.cool-at != want {
		t.Errorf("a bare 429 on a blocking host: waits %v, want the block (%v)", time.Duration(f.cool-at), time.Duration(want))
	}

	h, e = start()
	r.explore429(h, e, e.pace, 18, e.cool+sec(15)-at0)
	if c := &h.cap; h.exp.phase != expSettled || c.quotaN != 18 || c.quotaW != int64(halfWindow) || c.block != 0 {
		t.Errorf("the test pushed back at the run's count: phase %s, quota %v per %v, block %v; want settled at 18 per 30 s", phaseNames[h.exp.phase], c.quotaN, time.Duration(c.quotaW), time.Duration(c.block))
	}
}
