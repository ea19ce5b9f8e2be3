package limit

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// settledHost builds a host settled at 1/s passed (its followers at Settle
// under it) with the named lanes, the first the explorer.
func settledHost(t *testing.T, names ...string) (*rules, *host) {
	t.Helper()
	r := testRules(t, Config{})
	h := hostWith(r, names...)
	h.exp.phase = expSettled
	h.cap.pass, h.cap.sent = 1, 1
	r.updateFollow(h, sec(0), "test", "")
	return r, h
}

// TestOwnRetry: a lane held under an own ceiling that the host's pace has
// left behind tries the host's pace again after ownRetry, and waits twice
// as long once that retry is pushed back alone again.
func TestOwnRetry(t *testing.T) {
	r, h := settledHost(t, "e", "a", "b", "c")
	a := h.lanes["a"]
	a.extra().setOwn(0.25, sec(0))
	r.setPace(h, a, 0.25)
	r.tierOK(h, a, sec(60), sec(60))
	if a.own() == 0 {
		t.Fatal("retried the host's pace a minute after the own ceiling, want to wait ownRetry")
	}
	at := float64(ownRetry) / 1e9
	r.tierOK(h, a, sec(at), sec(at))
	if a.own() != 0 || !near(a.pace, h.cap.follow) {
		t.Fatalf("after ownRetry: own %v pace %v, want the host's pace %v again", a.own(), a.pace, h.cap.follow)
	}
	// Pushed back alone at the host's pace: its own ceiling again, and the
	// next retry waits twice as long.
	r.follow429(h, a, h.cap.follow, series{at: sec(at), ok: 3}, sec(at+5))
	if a.own() == 0 || a.x.fails != 1 {
		t.Fatalf("pushed back after its retry: own %v fails %d, want an own ceiling and one failure", a.own(), a.x.fails)
	}
	r.tierOK(h, a, sec(at+5+at), sec(at+5+at))
	if a.own() == 0 {
		t.Error("retried after ownRetry once a retry failed, want twice as long")
	}
}

// TestFallBackClearsOwn: lanes pushed back one at a time a moment before
// enough of them were to read the host's limit moving took own ceilings;
// the fall back that follows is theirs too, and they follow the host. An
// own ceiling older than the episode, or under the pace that fell, stays.
func TestFallBackClearsOwn(t *testing.T) {
	r, h := settledHost(t, "e", "a", "b", "c")
	f := h.cap.follow
	h.lanes["a"].extra().setOwn(f, sec(95))   // this fall, one lane at a time
	h.lanes["b"].extra().setOwn(f, sec(10))   // long before
	h.lanes["c"].extra().setOwn(f/2, sec(98)) // under the pace that fell
	r.fallBack(h, h.lanes["e"], f, sec(100), "test")
	if got := h.lanes["a"].own(); got != 0 {
		t.Errorf("a, own ceiling taken 5 s before the fall back: %v, want cleared", got)
	}
	if got := h.lanes["b"].own(); got == 0 {
		t.Error("b, own ceiling 90 s old: cleared, want kept")
	}
	if got := h.lanes["c"].own(); got == 0 {
		t.Error("c, own ceiling under the pace that fell: cleared, want kept")
	}
}

// TestSettledExplorerOutlier: the settled explorer pushed back at the pace
// its followers hold untouched is one of the IPs with a smaller budget: it
// takes its own ceiling and another lane paces for the host, which keeps
// what it knows. Followers pushed back with it mean the limit moved down.
func TestSettledExplorerOutlier(t *testing.T) {
	setup := func() (*rules, *host) {
		r, h := settledHost(t, "e", "a", "b", "c", "d")
		r.setExplorerPace(h, h.lanes["e"], h.cap.follow, sec(0), "test", "")
		for _, n := range []string{"a", "b", "c", "d"} {
			h.lanes[n].hot = true
		}
		return r, h
	}
	r, h := setup()
	f := h.cap.follow
	r.throttled(h, h.lanes["e"], ticketRec{l: h.lanes["e"], at: sec(10), laneIv: interval(f)}, &Outcome{}, sec(10), sec(10.1), 0.5)
	if h.lanes["e"].own() == 0 || h.exp.exit == "e" || h.exp.phase != expSettled || h.cap.follow != f {
		t.Fatalf("settled explorer pushed back alone: own %v explorer %q phase %s follow %v; want its own ceiling, another explorer, the host settled at %v",
			h.lanes["e"].own(), h.exp.exit, phaseNames[h.exp.phase], h.cap.follow, f)
	}
	r, h = setup()
	f = h.cap.follow
	h.exp.quietAt = sec(5) // a 429 five seconds before: no hiccup after a long quiet
	for i, n := range []string{"a", "b", "c"} {
		h.addEvidence(r, evEntry{exit: n, at: sec(9 + float64(i)/10), pace: f})
	}
	r.throttled(h, h.lanes["e"], ticketRec{l: h.lanes["e"], at: sec(10), laneIv: interval(f)}, &Outcome{}, sec(10), sec(10.1), 0.5)
	if h.lanes["e"].own() != 0 || h.exp.phase == expSettled {
		t.Errorf("followers pushed back too: explorer's own %v phase %s; want the host to fall back", h.lanes["e"].own(), phaseNames[h.exp.phase])
	}
}

// TestLeaderExplorerOutlier: on the worker that leads a fleet's search, the
// settled explorer pushed back at the pace every worker's lanes hold has
// the smaller budget, as on one limiter: the other workers' lanes count as
// holding it while none of them was pushed back (their 429s reach the
// leader as evidence). Counting only its own follower, the leader read such
// a 429 as the host's limit and cut the whole fleet. Many of the others
// pushed back at that pace is the limit moving: the host falls back.
func TestLeaderExplorerOutlier(t *testing.T) {
	setup := func(workers int) (*rules, *host) {
		r, h := settledHost(t, "e", "a")
		h.workers = workers
		r.setExplorerPace(h, h.lanes["e"], h.cap.follow, sec(0), "test", "")
		h.lanes["a"].hot = true
		return r, h
	}
	push := func(r *rules, h *host) {
		e := h.lanes["e"]
		r.throttled(h, e, ticketRec{l: e, at: sec(10), laneIv: interval(h.cap.follow)}, &Outcome{}, sec(10), sec(10.1), 0.5)
	}
	r, h := setup(8)
	f := h.cap.follow
	push(r, h)
	if h.lanes["e"].own() == 0 || h.exp.exit != "a" || h.exp.phase != expSettled || h.cap.follow != f {
		t.Fatalf("leader of 8 workers, explorer pushed back alone at the settled pace: own %v explorer %q phase %s follow %v; want its own ceiling, a the explorer, the host settled at %v",
			h.lanes["e"].own(), h.exp.exit, phaseNames[h.exp.phase], h.cap.follow, f)
	}

	r, h = setup(8)
	h.exp.quietAt = sec(5)
	for i := range h.manyLanes() {
		h.addEvidence(r, evEntry{exit: fmt.Sprintf("other%d", i), at: sec(9 + float64(i)/20), pace: f})
	}
	push(r, h)
	if h.lanes["e"].own() != 0 || h.exp.phase == expSettled {
		t.Errorf("%d of the other workers' lanes pushed back too: explorer's own %v phase %s; want the host to fall back", h.manyLanes(), h.lanes["e"].own(), phaseNames[h.exp.phase])
	}

	r, h = setup(1)
	push(r, h)
	if h.lanes["e"].own() != 0 {
		t.Errorf("alone with one follower: the explorer took its own ceiling %v; want the host's reading (one follower is no evidence)", h.lanes["e"].own())
	}
}

// TestEvidenceHoldsManyLanes: on a pool of 20 lanes, half of them pushed back
// at the host's pace within a second is the host's limit moving; the ring
// that keeps the evidence must hold that many (sized from ScopeLanes
// alone it held 6, and 20 lanes read as 20 budgets of their own).
func TestEvidenceHoldsManyLanes(t *testing.T) {
	names := []string{"e"}
	for i := range 19 {
		names = append(names, fmt.Sprintf("x%02d", i))
	}
	r, h := settledHost(t, names...)
	for i := range h.manyLanes() {
		h.addEvidence(r, evEntry{exit: names[i+1], at: sec(10) + int64(i)*int64(50*time.Millisecond), pace: h.cap.follow})
	}
	if !h.manyAtFollow(sec(11)) {
		t.Errorf("%d of 20 lanes pushed back at the host's pace within a second: not many (ring of %d)", h.manyLanes(), len(h.ev.ring))
	}
}

// TestSpentBudget: a lane pushed back before it ever succeeded, at its first
// 429, reads nothing of its pace: the IP's budget was spent before it came
// (a crawl stopped a moment ago). The settled host keeps its pace and the
// lane waits as told. Its next 429 is read as usual.
func TestSpentBudget(t *testing.T) {
	r, h := settledHost(t, "e", "a", "b")
	e := h.lanes["e"]
	r.setPace(h, e, h.cap.follow) // the settled explorer paces with the others
	follow := h.cap.follow
	throttle := func(l *lane, at int64, first bool) {
		l.c.req++
		l.c.thr++
		r.throttled(h, l, ticketRec{l: l, at: at, laneIv: interval(l.pace), first: first}, &Outcome{RetryAfter: time.Second}, at, at, 0.5)
	}
	spent := func() bool {
		for _, c := range h.log.recent() {
			if c.Rule == "spent" {
				return true
			}
		}
		return false
	}
	throttle(e, sec(1), true)
	if h.exp.phase != expSettled || h.cap.follow != follow || h.cap.pass != 1 || !spent() {
		t.Errorf("the explorer's first answer a 429: phase %s, follow %v, pass %v, spent noted %v; want settled at %v, pass 1, noted",
			phaseNames[h.exp.phase], h.cap.follow, h.cap.pass, spent(), follow)
	}
	if e.cool != sec(2) {
		t.Errorf("cooling until %v, want the Retry-After (%v)", e.cool, sec(2))
	}
	// On a fixed window paced exactly, a new lane's spent first request
	// says nothing of its resets either.
	h.cap.exact, h.cap.declared = true, follow
	a := h.lanes["a"]
	throttle(a, sec(1.5), true)
	if !h.cap.exact || h.cap.inexact {
		t.Error("a spent first request on an exactly paced fixed window took the margin back")
	}
	h.cap.exact, h.cap.declared = false, 0
	throttle(e, sec(3), false) // not its first request since: no echo either
	if h.exp.phase == expSettled && h.cap.follow == follow {
		t.Error("a second 429 before any success read nothing: want the settled pace questioned")
	}
}

// TestHiccup: a settled host long without a 429 that draws a burst of them,
// one per lane, had a hiccup (a server's pause, a proxy slow to forward):
// the pace holds and no lane takes a budget of its own. A lane pushed back
// twice in the burst, or a burst soon after another, is the limit moving:
// the host falls back.
func TestHiccup(t *testing.T) {
	burst := func(r *rules, h *host, at float64, lanes ...string) {
		f := h.cap.follow
		for i, n := range lanes {
			l := h.lanes[n]
			l.hot = true
			t0 := at + float64(i)*0.005
			r.throttled(h, l, ticketRec{l: l, at: sec(t0), laneIv: interval(f)}, &Outcome{}, sec(t0), sec(t0+0.005), 0.5)
		}
	}
	quiet := func(h *host, ok int32) { h.exp.quietAt, h.exp.okSince = sec(0), ok }
	r, h := settledHost(t, "e", "a", "b", "c", "d")
	quiet(h, 1000)
	f := h.cap.follow
	burst(r, h, 60, "a", "b", "c", "e")
	if h.exp.phase != expSettled || h.cap.follow != f {
		t.Fatalf("one 429 on each of four lanes after 60 s quiet: phase %s follow %v; want settled at %v", phaseNames[h.exp.phase], h.cap.follow, f)
	}
	for _, n := range []string{"a", "b", "c", "e"} {
		if l := h.lanes[n]; l.own() != 0 || n != h.exp.exit && l.pace != f {
			t.Errorf("lane %s after a hiccup: own ceiling %v, pace %v; want none, and the host's %v", n, l.own(), l.pace, f)
		}
	}
	if !slices.ContainsFunc(h.log.recent(), func(c Change) bool { return c.What == "quiet" }) {
		t.Error("no change record says the burst was read as a hiccup")
	}
	// The same burst goes on: lane a pushed back again. The limit moved.
	burst(r, h, 61, "a")
	if h.exp.phase == expSettled || h.cap.follow >= f {
		t.Errorf("lane a pushed back twice in one burst: phase %s follow %v; want the host to fall back under %v", phaseNames[h.exp.phase], h.cap.follow, f)
	}

	// A second burst 5 s after the first: no quiet before it, a fall.
	r, h = settledHost(t, "e", "a", "b", "c", "d")
	quiet(h, 1000)
	f = h.cap.follow
	burst(r, h, 60, "a", "b")
	burst(r, h, 66, "c", "d")
	if h.exp.phase == expSettled || h.cap.follow >= f {
		t.Errorf("a second burst 6 s after the first: phase %s follow %v; want the host to fall back under %v", phaseNames[h.exp.phase], h.cap.follow, f)
	}

	// 30 s between bursts, but lanes resting a long Retry-After between
	// them: few successes, no quiet. A limit that fell, read every half
	// minute as a hiccup, would never fall.
	r, h = settledHost(t, "e", "a", "b", "c", "d")
	quiet(h, 5*5)
	f = h.cap.follow
	burst(r, h, 30, "a", "b", "c")
	if h.exp.phase == expSettled || h.cap.follow >= f {
		t.Errorf("a burst after 30 s with 5 successes per lane: phase %s follow %v; want the host to fall back under %v", phaseNames[h.exp.phase], h.cap.follow, f)
	}

	// A burst a moment after the host settled is the jitter rule's, however
	// long the search was quiet before.
	r, h = settledHost(t, "e", "a", "b", "c", "d")
	quiet(h, 1000)
	h.lanes["e"].hot = true
	r.throttled(h, h.lanes["e"], ticketRec{l: h.lanes["e"], at: sec(30), laneIv: interval(f)}, &Outcome{}, sec(30), sec(30), 0.5) // a first 429 after 30 s
	r.settleHere(h, h.lanes["e"], sec(31), "test")
	h.exp.okSince = 1000
	burst(r, h, 31.5, "a", "b")
	if h.exp.jittered == 0 {
		t.Errorf("followers pushed back 0.5 s after settling: not read as the path's jitter (phase %s)", phaseNames[h.exp.phase])
	}
}

// TestPushedBackAboveFall: a follower pushed back at a pace the host's has
// fallen under since its request went (the explorer's first 429 a moment
// before: nginx's 12 per minute, two lanes pushed back at the start's
// 0.25/s 2 ms after the explorer) read no budget of their own, and hold
// the host's pace as it climbs; one pushed back alone at the host's pace
// still does.
func TestPushedBackAboveFall(t *testing.T) {
	r, h := settledHost(t, "e", "a", "b", "c", "d", "f")
	follow := h.cap.follow
	a, b := h.lanes["a"], h.lanes["b"]
	r.follow429(h, a, 2.5*follow, series{}, sec(10))
	if a.own() > 0 {
		t.Errorf("pushed back at %.3g/s, the host's pace %.3g/s: own ceiling %v, want none", 2.5*follow, follow, a.own())
	}
	r.follow429(h, b, follow, series{}, sec(10))
	if b.own() == 0 {
		t.Error("pushed back alone at the host's pace: no own ceiling")
	}
}
