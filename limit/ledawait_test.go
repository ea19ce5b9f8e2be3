package limit

import (
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// TestLedAwait: the leader's first 429 without Retry-After ends a run of
// n1; while it measures the recovery, its own followers hold their pace
// until they have sent nearly n1 (awaitHolds), and it publishes n1 with the
// cautious pace (HostView.Await) so that the other workers' lanes do the
// same. haproxy's 20 per 10 s with three workers: the other workers' lanes
// took the cautious 0.29/s at once, held back for what they had sent, and
// sat out 9 s the leader's own followers spent (84% of the limit over the
// run, one worker 90%). A led lane pushed back meanwhile lets go of the
// count for every lane of its worker, as a follower of the leader's does.
func TestLedAwait(t *testing.T) {
	r := testRules(t, Config{})
	lead, _ := bareFirst429(r, 7.76, 20, 8, 8.2)
	v, ok := lead.followChanged(sec(8.2))
	if !ok || v.Await != lead.exp.n1 || v.Await < awaitMin {
		t.Fatalf("the leader's first 429 (a run of %d): published %v await %d; want the run's count with the cautious pace", lead.exp.n1, ok, v.Await)
	}

	h := hostWith(r, "a", "b")
	h.exp.exit, h.led = "", true
	for _, l := range h.lanes {
		r.setPace(h, l, 1.94)
		l.serSent = 8
	}
	h.ledPace, h.ledAt, h.ledAwait = v.Follow, sec(8.2), v.Await
	r.updateFollow(h, sec(8.2), "lead", "test")
	a, b := h.lanes["a"], h.lanes["b"]
	if a.pace != 1.94 || !h.awaitHolds(a) {
		t.Fatalf("led lane after the leader's first 429 at %v (holds %v); want 1.94/s held while it has sent 8 of the run's %d", a.pace, h.awaitHolds(a), v.Await)
	}
	a.serSent = v.Await - 2
	r.awaitSpent(h, a)
	if a.pace != v.Follow {
		t.Errorf("led lane that sent %d of %d: %v/s, want the leader's cautious %v/s", a.serSent, v.Await, a.pace, v.Follow)
	}

	// b pushed back while it held the count: every lane takes the
	// cautious pace, nothing read as b's own budget.
	b.hot = true
	r.throttled(h, b, ticketRec{at: sec(9), laneIv: interval(1.94)}, &Outcome{Verdict: verdict.Throttled}, sec(9), sec(9), 0.5)
	if h.ledAwait != 0 || b.own() > 0 {
		t.Errorf("led lane pushed back while the leader awaits: await %d, own budget %v; want the count let go and nothing read", h.ledAwait, b.own())
	}
	if h.awaitHolds(b) {
		t.Errorf("after a led lane's 429 a lane still holds the count")
	}

	// The leader's own follower pushed back meanwhile: the count goes
	// from what it publishes.
	f := lead.lanes["f"]
	f.hot = true
	now := sec(9)
	r.throttled(lead, f, ticketRec{at: now, laneIv: interval(1.94)}, &Outcome{Verdict: verdict.Throttled}, now, now, 0.5)
	if v, ok := lead.followChanged(now); !ok || v.Await != 0 {
		t.Errorf("after a follower's 429 while the recovery is measured: published %v await %d; want 0", ok, v.Await)
	}
}

// TestOthersAtEdge: the leader settled on a window's quota read without a
// header hears that several lanes of other workers were pushed back at the
// followers' pace at once: the edge of a sliding-window counter, as when
// its own followers meet it (quotaEdge): the quota's headroom, published
// as an edge at which every worker's lanes skip a request, not a fall. The
// same lanes pushed back again within the edge's span read nothing more;
// past it, a newer edge or a fall.
func TestOthersAtEdge(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "e", "f", "g")
	c := &h.cap
	c.windowed, c.careful, c.quotaN, c.quotaW = true, true, 10, int64(10*time.Second)
	c.safe, c.pass, c.sent, c.follow = 0.97, 0.97, 0.97, 0.97
	h.exp.phase, h.exp.exit = expSettled, "e"
	for _, l := range h.lanes {
		r.setPace(h, l, 0.97)
		l.tat = sec(29)
	}
	push := func(at float64, exits ...string) {
		for _, x := range exits {
			h.addEvidence(r, evEntry{exit: x, at: sec(at), pace: 0.97})
		}
		r.othersPushedBack(h, sec(at))
	}
	push(29.4, "o1", "o2", "o3")
	if c.edges != 1 || h.exp.phase != expSettled || c.follow >= 0.97 {
		t.Fatalf("other workers' lanes at the edge: edges %d, phase %d, follow %.3g; want the headroom read, still settled", c.edges, h.exp.phase, c.follow)
	}
	if v, ok := h.followChanged(sec(29.4)); !ok || v.Edge.UnixNano() != c.edgeAt {
		t.Errorf("published %v with edge %v, want the edge at %v", ok, v.Edge, time.Duration(c.edgeAt-at0))
	}
	if f := h.lanes["f"]; f.tat <= sec(29) {
		t.Errorf("a follower here did not skip a request at the edge (ready %v)", time.Duration(f.tat-at0))
	}
	push(29.6, "o4", "o5") // in step, a moment later: the same edge
	if h.exp.phase != expSettled {
		t.Fatalf("more lanes at the same edge: phase %d, want settled", h.exp.phase)
	}
	push(35, "o1", "o2") // within the edge's span: the same edge still
	if h.exp.phase != expSettled || c.edges != 1 {
		t.Errorf("other workers' lanes pushed back within the edge's span: phase %d, edges %d; want settled, one edge", h.exp.phase, c.edges)
	}
	push(52, "o1", "o2", "o3") // past it: a newer edge, under the last
	if c.edges != 2 || c.follow >= 0.94 {
		t.Errorf("other workers' lanes pushed back two windows after the edge: edges %d, follow %.3g; want a second edge, slower", c.edges, c.follow)
	}
	for range maxEdges {
		push(secs(c.edgeAt-at0)+25, "o1", "o2", "o3")
	}
	fell := false
	for _, ch := range h.log.ring {
		fell = fell || strings.Contains(ch.Why, "followers of other workers pushed back")
	}
	if !fell {
		t.Errorf("other workers' lanes pushed back past every edge the quota allows: no fall read")
	}
}

// TestLedAgain: a lane of a worker that another leads, pushed back again
// before the window the leader read could end, sent slower than at its last
// 429 (rule again): its window still holds what it sent before; nothing is
// read, no budget of its own, and it waits the rest of the window. Without
// the leader's window each such 429 was the lane's own smaller budget,
// published, and the leader fell on them.
func TestLedAgain(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "a", "b")
	h.exp.exit, h.led, h.ledPace, h.ledWindow = "", true, 3.88, int64(15*time.Second)
	r.updateFollow(h, sec(27), "lead", "test")
	a := h.lanes["a"]
	a.hot = true
	r.throttled(h, a, ticketRec{at: sec(28), laneIv: interval(3.88)}, &Outcome{Verdict: verdict.Throttled}, sec(28), sec(28), 0.5)
	own := a.own()
	at := a.cool
	r.throttled(h, a, ticketRec{at: at, laneIv: interval(2.6), first: true}, &Outcome{Verdict: verdict.Throttled}, at, at, 0.5)
	if a.own() != own {
		t.Errorf("led lane pushed back again, slower, inside the leader's window: own budget %v → %v, want nothing read", own, a.own())
	}
	if want := sec(28) + int64(15*time.Second); a.cool != want {
		t.Errorf("waits until %v, want the window's end from its last 429 (%v)", time.Duration(a.cool-at0), time.Duration(want-at0))
	}
}

// TestLedBucket: a worker that another leads reads a declared quota as a
// bucket's capacity (Remaining stays high): it does not explore above it,
// the leader does; its lanes hold the leader's pace. Each led worker that
// read it explored on its own, above the bucket's rate for the whole run
// (throttled's 5/s with a burst of 3, three workers: 146 429s, 2.66%).
func TestLedBucket(t *testing.T) {
	r := testRules(t, Config{})
	h := hostWith(r, "a", "b")
	h.exp.exit, h.led, h.ledPace = "", true, 3.4
	h.cap.declared = 4
	r.updateFollow(h, sec(1), "lead", "test")
	r.bucketQuota(h, h.lanes["a"], sec(3))
	if h.exp.exit != "" || h.exploring() && h.exp.phase != expRamp {
		t.Errorf("led worker read a bucket: explorer %q, phase %d; want none, the leader explores", h.exp.exit, h.exp.phase)
	}
	for _, l := range h.lanes {
		if l.pace != 3.4 {
			t.Errorf("lane %s at %.3g/s, want the leader's 3.4/s", l.exit, l.pace)
		}
	}
}
