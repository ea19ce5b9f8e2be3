package limit_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// leadShare is a HostShare held in memory, for the lead rules: whether this
// Limiter leads, the view the leader published, and what this one
// publishes. (A real one is redisstate's, tested on a real redis-server.)
type leadShare struct {
	mu        sync.Mutex
	leads     bool
	view      limit.HostView
	published []limit.HostView
}

func (s *leadShare) Admit(string, float64, float64, time.Time) (bool, time.Time) {
	return true, time.Time{}
}

func (s *leadShare) Publish(_ string, v limit.HostView, _ time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.published = append(s.published, v)
}

func (s *leadShare) View(string) (limit.HostView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view, true
}

func (s *leadShare) Workers() int { return 2 }

func (s *leadShare) Leads(string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leads
}

func (s *leadShare) set(f func(s *leadShare)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// TestSharedLead: one worker of a fleet searches a host's per-IP limit; the
// others have no explorer and hold the pace its followers hold; a worker
// that comes to lead starts from that pace; the leader publishes its
// followers' pace when it changes.
func TestSharedLead(t *testing.T) {
	const host = "a.example"
	sh := &leadShare{}
	l := newLimiter(t, limit.Config{Shared: sh}, 4)
	now := t0
	for _, x := range []string{"x00", "x01", "x02", "x03"} {
		tk, ok, _ := acquire(t, l, host, limit.Want{Pin: x}, now)
		if !ok {
			t.Fatalf("Acquire on %s not ok", x)
		}
		l.Done(tk, limit.Outcome{}, now)
	}
	hs := hostOf(l.Snapshot(now), host)
	if hs.Explorer != "" {
		t.Fatalf("led: explorer %q, want none (another worker leads)", hs.Explorer)
	}
	if got := hs.LaneRate.Hz(); math.Abs(got-0.25) > 1e-9 {
		t.Fatalf("led, nothing published: lane rate %.3g/s, want the followers' start, 0.25/s", got)
	}
	if len(sh.published) != 0 {
		t.Fatalf("led: published %+v, want nothing", sh.published)
	}

	// The leader publishes its followers' pace: every lane here takes it.
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 2, FollowAt: t0} })
	now = now.Add(5 * time.Second)
	tk, ok, _ := acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if !ok {
		t.Fatal("Acquire after the leader's pace not ok")
	}
	l.Done(tk, limit.Outcome{}, now)
	hs = hostOf(l.Snapshot(now), host)
	if got := hs.LaneRate.Hz(); math.Abs(got-2) > 1e-9 {
		t.Fatalf("led: lane rate %.3g/s, want the leader's 2/s", got)
	}
	for _, ln := range hs.Lanes {
		if got := ln.Rate.Hz(); math.Abs(got-2) > 1e-9 {
			t.Fatalf("led: lane %s at %.3g/s, want 2/s", ln.Exit, got)
		}
	}
	// An older view changes nothing.
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 1, FollowAt: t0.Add(-time.Second)} })
	now = now.Add(time.Second)
	tk, _, _ = acquire(t, l, host, limit.Want{Pin: "x01"}, now)
	l.Done(tk, limit.Outcome{}, now)
	if got := hostOf(l.Snapshot(now), host).LaneRate.Hz(); math.Abs(got-2) > 1e-9 {
		t.Fatalf("an older view moved the lanes to %.3g/s, want 2/s", got)
	}

	// This worker comes to lead: its explorer starts from what the lanes
	// held, a step above it, not from the first guess.
	sh.set(func(s *leadShare) { s.leads = true })
	now = now.Add(time.Second)
	tk, ok, _ = acquire(t, l, host, limit.Want{Pin: "x02"}, now)
	if !ok {
		t.Fatal("Acquire as the leader not ok")
	}
	hs = hostOf(l.Snapshot(now), host)
	if hs.Explorer != "x02" {
		t.Fatalf("leading: explorer %q, want x02", hs.Explorer)
	}
	floor := 0.0
	for _, c := range hs.Changes {
		if c.Rule == "lead" && c.What == "floor" {
			floor = c.To
		}
	}
	if math.Abs(floor-2) > 1e-9 {
		t.Fatalf("leading: passed %.3g/s, want the pace held, 2/s (changes %+v)", floor, hs.Changes)
	}
	ln, _ := laneOf(l.Snapshot(now), host, "x02")
	if got := ln.Rate.Hz(); math.Abs(got-4) > 1e-9 {
		t.Fatalf("leading: explorer at %.3g/s, want a ramp step above 2/s", got)
	}
	// Taking the lead (in an Acquire) changed the followers' pace: the
	// others are told in that Acquire, before any answer.
	published := false
	sh.set(func(s *leadShare) {
		for _, v := range s.published {
			published = published || v.Follow > 0
		}
	})
	if !published {
		t.Fatal("the new leader did not publish its followers' pace")
	}
	l.Done(tk, limit.Outcome{}, now)

	// The leader's followers' pace changes with what its explorer learns:
	// it is published for the others.
	sh.set(func(s *leadShare) { s.published = nil })
	now = saturate(t, l, host, "x02", now.Add(time.Second), 3)
	var follow float64
	sh.set(func(s *leadShare) {
		for _, v := range s.published {
			if v.Follow > 0 && !v.FollowAt.IsZero() {
				follow = v.Follow
			}
		}
	})
	if want := hostOf(l.Snapshot(now), host).LaneRate.Hz(); follow == 0 || math.Abs(follow/want-1) > 1e-3 {
		t.Fatalf("leader after a 429: published follow %.3g/s, want its lanes' %.3g/s", follow, want)
	}

	// Another worker takes the lead: this one's explorer follows.
	sh.set(func(s *leadShare) { s.leads = false })
	now = now.Add(time.Minute)
	tk, _, _ = acquire(t, l, host, limit.Want{Pin: "x03"}, now)
	l.Done(tk, limit.Outcome{}, now)
	if hs := hostOf(l.Snapshot(now), host); hs.Explorer != "" {
		t.Fatalf("led again: explorer %q, want none", hs.Explorer)
	}
}

// TestSharedLeadHandOver: the lead moves here with a settled search
// (the old leader's learned record, restored by the fleet): this worker
// takes it whole instead of searching again from the lanes' pace; while
// another worker leads, this one saves nothing of the host.
func TestSharedLeadHandOver(t *testing.T) {
	const host = "b.example"
	sh := &leadShare{view: limit.HostView{Follow: 1, FollowAt: t0}}
	l := newLimiter(t, limit.Config{Shared: sh}, 4)
	now := t0.Add(time.Second)
	for _, x := range []string{"x00", "x01"} {
		tk, ok, _ := acquire(t, l, host, limit.Want{Pin: x}, now)
		if !ok {
			t.Fatalf("Acquire on %s not ok", x)
		}
		l.Done(tk, limit.Outcome{}, now)
	}
	for _, lh := range l.Learned(now).Hosts {
		if lh.Host == host {
			t.Fatalf("a led host is saved: %+v", lh)
		}
	}
	n, err := l.Restore(limit.Learned{Saved: now, Hosts: []limit.LearnedHost{{
		Host: host, Phase: "settled", At: now, LaneRate: 3, Pass: 3.1, Ceiling: 3.15, Sent: 3.1, SpanSeconds: 2,
	}}}, now)
	if err != nil || n != 1 {
		t.Fatalf("Restore = %d, %v; want the led host restored", n, err)
	}
	sh.set(func(s *leadShare) { s.leads = true })
	now = now.Add(time.Second)
	tk, ok, _ := acquire(t, l, host, limit.Want{Pin: "x02"}, now)
	if !ok {
		t.Fatal("Acquire as the new leader not ok")
	}
	l.Done(tk, limit.Outcome{}, now)
	hs := hostOf(l.Snapshot(now), host)
	if hs.Phase != "settled" {
		t.Fatalf("new leader's phase %q, want the handed-over search settled; changes %+v", hs.Phase, hs.Changes)
	}
	if got := hs.LaneRate.Hz(); got < 2.9 || got > 3.2 {
		t.Fatalf("new leader's lanes at %.3g/s, want the settled search's ~3/s", got)
	}
}

// TestLedLanes: on a host another worker leads, a lane held back for what
// it sent at a faster pace keeps that debt (a window counts it), but the
// worker asks again within a second, so a faster pace the leader publishes
// meanwhile is taken at once; a lane pushed back alone at the leader's
// pace is marked as its own smaller budget until the leader slows the host
// to it: then it was the limit moving, fleet-wide, and the lane takes the
// leader's paces again, up as well as down.
func TestLedLanes(t *testing.T) {
	const host = "a.example"
	sh := &leadShare{view: limit.HostView{Follow: 2, FollowAt: t0}}
	l := newLimiter(t, limit.Config{Shared: sh}, 2)
	now := t0
	for range 8 { // x00 sends at 2/s for 4 s
		tk, ok, next := acquire(t, l, host, limit.Want{Pin: "x00"}, now)
		for !ok {
			now = next
			tk, ok, next = acquire(t, l, host, limit.Want{Pin: "x00"}, now)
		}
		l.Done(tk, limit.Outcome{}, now)
	}
	// The leader slows its followers to 0.1/s: 8 sent in 4 s hold x00
	// back for 80 s, but Acquire says to ask again within a second.
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 0.1, FollowAt: t0.Add(time.Second)} })
	now = now.Add(500 * time.Millisecond)
	_, ok, next := acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if ok || next.Sub(now) > time.Second {
		t.Fatalf("held back at 0.1/s: ok %v, ask again in %v; want not ok, within a second", ok, next.Sub(now))
	}
	ln, _ := laneOf(l.Snapshot(now), host, "x00")
	if ln.ReadyAt.Sub(t0) < 70*time.Second {
		t.Fatalf("x00 ready at %v after the start, want its 8 requests spread at 0.1/s (80 s)", ln.ReadyAt.Sub(t0))
	}
	// x01, sent at the leader's 0.1/s, is pushed back alone: its own
	// budget.
	var tk limit.Ticket
	for i := range 3 {
		for {
			var ok bool
			tk, ok, next = acquire(t, l, host, limit.Want{Pin: "x01"}, now)
			if ok {
				break
			}
			now = next
		}
		o := limit.Outcome{}
		if i == 2 {
			o = limit.Outcome{Verdict: verdict.Throttled, RetryAfter: time.Second}
		}
		l.Done(tk, o, now)
	}
	if ln, _ := laneOf(l.Snapshot(now), host, "x01"); ln.Ceiling.Hz() == 0 {
		t.Fatal("x01 pushed back alone: no ceiling of its own")
	}
	// The leader slows the host to 0.08/s: x01's ceiling was the limit
	// moving. Then it raises the pace to 1/s: both lanes take it.
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 0.08, FollowAt: t0.Add(2 * time.Second)} })
	now = now.Add(time.Second)
	acquire(t, l, host, limit.Want{Pin: "x01"}, now)
	if ln, _ := laneOf(l.Snapshot(now), host, "x01"); ln.Ceiling.Hz() != 0 {
		t.Fatalf("the leader slowed the host under x01's ceiling: ceiling %v, want none", ln.Ceiling)
	}
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 1, FollowAt: t0.Add(3 * time.Second)} })
	now = now.Add(time.Second)
	acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	for _, x := range []string{"x00", "x01"} {
		if ln, _ := laneOf(l.Snapshot(now), host, x); math.Abs(ln.Rate.Hz()-1) > 1e-9 {
			t.Errorf("%s at %v after the leader's 1/s, want 1/s", x, ln.Rate)
		}
	}
	if ln, _ := laneOf(l.Snapshot(now), host, "x00"); ln.ReadyAt.Sub(now) > time.Second {
		t.Errorf("x00 ready in %v at 1/s, want its hold-back lifted to what 1/s allows", ln.ReadyAt.Sub(now))
	}
}

// TestSharedDeclared: the leader publishes a declared quota's pace as such
// (HostView.Declared), and a led worker holds it over its own reading of
// the quota: the leader alone checks the quota's headroom, and a worker
// whose lanes are too slow to read the window has no reading at all
// (go-limiter's 3 per second: a worker that joined after the leader read
// it held the followers' start, 0.25/s, for the whole run). A leader's
// pace that is no declared quota's does not replace the worker's reading.
func TestSharedDeclared(t *testing.T) {
	const host = "a.example"
	declared := limit.Outcome{Quota: 3, Window: time.Second, Remaining: 2, HasRemaining: true, HasReset: true, ResetIn: time.Second}

	lead := &leadShare{leads: true}
	a := newLimiter(t, limit.Config{Shared: lead}, 1)
	tk, ok, _ := acquire(t, a, host, limit.Want{Pin: "x00"}, t0)
	if !ok {
		t.Fatal("leader's first Acquire not ok")
	}
	a.Done(tk, declared, t0)
	pace := hostOf(a.Snapshot(t0), host).LaneRate.Hz()
	var pub limit.HostView
	for _, v := range lead.published {
		if v.Follow > 0 {
			pub = v
		}
	}
	if !pub.Declared || math.Abs(pub.Follow-pace) > 1e-9 {
		t.Fatalf("leader read a declared quota, its lanes at %.3g/s: published %+v; want that pace, declared", pace, pub)
	}

	sh := &leadShare{}
	b := newLimiter(t, limit.Config{Shared: sh}, 1)
	tk, ok, _ = acquire(t, b, host, limit.Want{Pin: "x00"}, t0)
	if !ok {
		t.Fatal("led worker's first Acquire not ok")
	}
	b.Done(tk, declared, t0)
	own := hostOf(b.Snapshot(t0), host).LaneRate.Hz()
	now := t0.Add(time.Second)
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: own * 1.5, FollowAt: now} })
	acquire(t, b, host, limit.Want{Pin: "x00"}, now)
	if got := hostOf(b.Snapshot(now), host).LaneRate.Hz(); math.Abs(got-own) > 1e-9 {
		t.Fatalf("the leader's %.3g/s, no declared quota's: lanes at %.3g/s, want their own reading %.3g/s", own*1.5, got, own)
	}
	now = now.Add(time.Second)
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 2.91, FollowAt: now, Declared: true} })
	acquire(t, b, host, limit.Want{Pin: "x00"}, now)
	if got := hostOf(b.Snapshot(now), host).LaneRate.Hz(); math.Abs(got-2.91) > 1e-9 {
		t.Errorf("the leader's declared quota at 2.91/s (its headroom checked): lanes at %.3g/s, want 2.91/s", got)
	}
}

// TestFreshLeaderFromFleetPace: a worker that leads a host new to it, on
// which the fleet's lanes hold a published pace (it led the host in a
// process that died, and was run again with its id), starts its search
// from that pace, not from the first guess.
func TestFreshLeaderFromFleetPace(t *testing.T) {
	const host = "a.example"
	sh := &leadShare{leads: true, view: limit.HostView{Follow: 4, FollowAt: t0.Add(-time.Minute)}}
	l := newLimiter(t, limit.Config{Shared: sh}, 2)
	tk, ok, _ := acquire(t, l, host, limit.Want{Pin: "x00"}, t0)
	if !ok {
		t.Fatal("first Acquire not ok")
	}
	l.Done(tk, limit.Outcome{}, t0)
	hs := hostOf(l.Snapshot(t0), host)
	var explorer float64
	for _, ln := range hs.Lanes {
		if ln.Exit == hs.Explorer {
			explorer = ln.Rate.Hz()
		}
	}
	if explorer < 4 {
		t.Fatalf("explorer %q at %.3g/s, want the search above the fleet's 4/s", hs.Explorer, explorer)
	}

	// Declared, or nothing published: the first guess.
	sh = &leadShare{leads: true, view: limit.HostView{Follow: 4, FollowAt: t0, Declared: true}}
	l = newLimiter(t, limit.Config{Shared: sh}, 2)
	acquire(t, l, host, limit.Want{Pin: "x00"}, t0)
	for _, ln := range hostOf(l.Snapshot(t0), host).Lanes {
		if ln.Rate.Hz() >= 4 {
			t.Errorf("a declared pace published: lane %s at %v, want the first guess's", ln.Exit, ln.Rate)
		}
	}
}

// TestExplorerExitGone: the explorer's exit leaves the pool (a worker that
// joined the fleet took it) before its next request: the search goes on
// at once on the lane due first, at the explorer's pace, not when that
// lane's follower pace lets it go with every other follower.
func TestExplorerExitGone(t *testing.T) {
	const host = "a.example"
	l := newLimiter(t, limit.Config{}, 4)
	for _, x := range []string{"x00", "x01", "x02", "x03"} {
		tk, ok, _ := acquire(t, l, host, limit.Want{Pin: x}, t0)
		if !ok {
			t.Fatalf("%s not ok at the start", x)
		}
		l.Done(tk, limit.Outcome{}, t0)
	}
	if e := hostOf(l.Snapshot(t0), host).Explorer; e != "x00" {
		t.Fatalf("explorer %q, want x00", e)
	}
	var ex []limit.Exit
	for _, x := range []string{"x01", "x02", "x03"} {
		ex = append(ex, limit.Exit{ID: x})
	}
	l.SetExits(ex)
	now := t0.Add(2100 * time.Millisecond) // the explorer's next, at 0.485/s, was due at 2.06 s
	tk, ok, next := acquire(t, l, host, limit.Want{}, now)
	if !ok {
		t.Fatalf("the explorer's exit gone: nothing goes at 2.1 s (next %v after the start); want the search on another lane at once", next.Sub(t0))
	}
	if e := hostOf(l.Snapshot(now), host).Explorer; e != tk.Exit {
		t.Errorf("sent on %s, explorer %q: want the request the search's", tk.Exit, e)
	}
}

// TestLedOwnBeforeFirstWord: a lane of a led worker pushed back alone at
// the followers' start pace, before the leader had published any, reads
// its IP's own budget; the leader's first pace, under the start, says the
// host's limit was under it everywhere, and the lane takes the leader's
// paces again, down and back up.
func TestLedOwnBeforeFirstWord(t *testing.T) {
	const host = "a.example"
	sh := &leadShare{}
	l := newLimiter(t, limit.Config{Shared: sh}, 2)
	now := t0
	for i := range 2 {
		tk, ok, next := acquire(t, l, host, limit.Want{Pin: "x01"}, now)
		for !ok {
			now = next
			tk, ok, next = acquire(t, l, host, limit.Want{Pin: "x01"}, now)
		}
		o := limit.Outcome{}
		if i == 1 {
			o = limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 5 * time.Second}
		}
		l.Done(tk, o, now)
	}
	if ln, _ := laneOf(l.Snapshot(now), host, "x01"); ln.Ceiling.Hz() == 0 {
		t.Fatal("x01 pushed back alone at the start pace: no ceiling of its own")
	}
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 0.108, FollowAt: now} })
	now = now.Add(time.Second)
	acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if ln, _ := laneOf(l.Snapshot(now), host, "x01"); ln.Ceiling.Hz() != 0 {
		t.Fatalf("the leader's first pace is under the start: x01's ceiling %v, want none", ln.Ceiling)
	}
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 0.188, FollowAt: now} })
	now = now.Add(time.Second)
	acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if ln, _ := laneOf(l.Snapshot(now), host, "x01"); math.Abs(ln.Rate.Hz()-0.188) > 1e-9 {
		t.Errorf("x01 at %v after the leader's 0.188/s, want 0.188/s", ln.Rate)
	}
}

// TestLedSeriesFromFirstSend: a worker that joins a fleet gets exits
// another worker used a moment ago (Exit.Since), and a lane made on one
// sends nothing until an interval at its pace after Since. A lane's series
// begins with its first request: a fall spreads what the lane sent since
// then, not since the lane was made (haproxy's 10 per 30 s: lanes made a
// second before their first request sent their 11th inside 30 s of it,
// and the leader read their 429s as the host's limit moving).
func TestLedSeriesFromFirstSend(t *testing.T) {
	const host = "a.example"
	sh := &leadShare{view: limit.HostView{Follow: 0.25, FollowAt: t0}}
	l := newLimiter(t, limit.Config{Shared: sh}, 0)
	l.SetExits([]limit.Exit{{ID: "x00", Since: t0}})
	if _, ok, _ := acquire(t, l, host, limit.Want{Pin: "x00"}, t0); ok {
		t.Fatal("a lane on an exit moved here at t0 sent at once; want it held an interval")
	}
	start := t0.Add(4 * time.Second) // its first request, an interval at 0.25/s on
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 1, FollowAt: start} })
	now := start
	for range 3 { // at 4, 5 and 6 s
		tk, ok, next := acquire(t, l, host, limit.Want{Pin: "x00"}, now)
		for !ok {
			now = next
			tk, ok, next = acquire(t, l, host, limit.Want{Pin: "x00"}, now)
		}
		if now.Sub(start) > 2100*time.Millisecond {
			t.Fatalf("at 1/s: a request %v after the first, want three within 2 s", now.Sub(start))
		}
		l.Done(tk, limit.Outcome{}, now)
	}
	// The leader falls to a request per 3 s: the three sent from 4 s on
	// hold the lane to 13 s, less the pace's tolerance.
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 1.0 / 3, FollowAt: now} })
	now = now.Add(100 * time.Millisecond)
	acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	ln, _ := laneOf(l.Snapshot(now), host, "x00")
	if got := ln.ReadyAt.Sub(start); got < 7*time.Second {
		t.Fatalf("after a fall to 1 per 3 s, ready %v after the first request; want about 9 s (its three requests spread from the first)", got)
	}
}

// TestMovedExits: exits that came from another worker a moment ago
// (Exit.Since) carry what it sent through them: a new lane on one goes
// first one interval at its pace after Since, and the first 429s of such
// lanes, several at once, are no evidence that the host limits site-wide.
func TestMovedExits(t *testing.T) {
	const host = "a.example"
	l := newLimiter(t, limit.Config{}, 0)
	since := t0
	var ex []limit.Exit
	for _, id := range []string{"x00", "x01", "x02", "x03"} {
		ex = append(ex, limit.Exit{ID: id, Since: since})
	}
	l.SetExits(ex)
	_, ok, next := acquire(t, l, host, limit.Want{Pin: "x00"}, t0.Add(time.Second))
	if ok || next.Before(t0.Add(3*time.Second)) {
		t.Fatalf("a lane on an exit moved here at t0: ok %v at t0+1s, next %v after t0; want held about an interval at 0.25/s", ok, next.Sub(t0))
	}
	now := t0.Add(20 * time.Second)
	for _, x := range []string{"x00", "x01", "x02", "x03"} {
		tk, ok, _ := acquire(t, l, host, limit.Want{Pin: x}, now)
		if !ok {
			t.Fatalf("%s not ok at t0+20s", x)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 10 * time.Second}, now)
	}
	if s := hostOf(l.Snapshot(now), host).Scope; s != limit.ScopeExit && s != limit.ScopeUnknown {
		t.Errorf("4 moved lanes pushed back at their first request: scope %v, want per exit (or unknown)", s)
	}

	// The same on exits this Limiter always had: fresh IPs pushed back at
	// their first request are a site-wide limit.
	l = newLimiter(t, limit.Config{}, 4)
	for _, x := range []string{"x00", "x01", "x02"} { // ScopeLanes
		tk, ok, _ := acquire(t, l, host, limit.Want{Pin: x}, t0)
		if !ok {
			t.Fatalf("%s not ok", x)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 10 * time.Second}, t0)
	}
	if s := hostOf(l.Snapshot(t0), host).Scope; s != limit.ScopeHost {
		t.Errorf("3 fresh lanes pushed back at their first request: scope %v, want site-wide", s)
	}
}

// TestSharedCutSameEpisode: two workers cut a host's rate for one overload
// (their cuts a moment apart) halve the fleet's rate once, not twice: this
// worker keeps the milder of the two readings. A cut seconds later is a new
// episode and is taken as it comes.
func TestSharedCutSameEpisode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		same  bool
	}{
		{"a moment after this worker's cut", 500 * time.Millisecond, true},
		{"seconds later", 10 * time.Second, false},
	} {
		const host = "h"
		sh := &leadShare{leads: true}
		l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(10), Shared: sh}, 4)
		at := t0
		for i := range 8 {
			tk, ok, next := acquire(t, l, host, limit.Want{}, at)
			if !ok {
				at = next
				if tk, ok, _ = acquire(t, l, host, limit.Want{}, at); !ok {
					t.Fatalf("acquire %d refused at its next time", i)
				}
			}
			l.Done(tk, limit.Outcome{}, at)
		}
		cut := at.Add(time.Second)
		tk, _, _ := acquire(t, l, host, limit.Want{}, cut)
		l.Done(tk, limit.Outcome{Verdict: verdict.Busy, RetryAfter: 2 * time.Second}, cut)
		mine := hostOf(l.Snapshot(cut), host).Rate.Hz()
		if mine == 0 {
			t.Fatalf("%s: no host rate after a 503 overload", tc.name)
		}
		sh.set(func(s *leadShare) {
			s.view = limit.HostView{Rate: mine / 2, Cut: cut.Add(tc.after)}
		})
		later := cut.Add(tc.after + 3*time.Second)
		acquire(t, l, host, limit.Want{}, later)
		got := hostOf(l.Snapshot(later), host).Rate.Hz()
		want := mine / 2
		if tc.same {
			want = mine
		}
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("%s: host rate %.3g/s after another worker cut to %.3g/s (this one %.3g/s), want %.3g/s", tc.name, got, mine/2, mine, want)
		}
	}
}

// downShare is a leadShare that can be down (Down), as redisstate's is
// while Redis is away.
type downShare struct {
	leadShare
	down bool
}

func (s *downShare) Down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// TestLedRaiseWhileDown: while the share is down, its view is a cache from
// before the outage, and a raise of the leader's pace read from it may be
// one the leader has taken back since: the led lanes do not take it until
// the share is back. A fall they take at once.
func TestLedRaiseWhileDown(t *testing.T) {
	const host = "a.example"
	sh := &downShare{leadShare: leadShare{view: limit.HostView{Follow: 0.5, FollowAt: t0}}}
	l := newLimiter(t, limit.Config{Shared: sh}, 2)
	now := t0
	tk, ok, _ := acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if !ok {
		t.Fatal("first request held back")
	}
	l.Done(tk, limit.Outcome{}, now)
	rate := func() float64 {
		ln, _ := laneOf(l.Snapshot(now), host, "x00")
		return ln.Rate.Hz()
	}
	if r := rate(); math.Abs(r-0.5) > 1e-9 {
		t.Fatalf("x00 at %v/s, want the leader's 0.5/s", r)
	}
	sh.mu.Lock()
	sh.down = true
	sh.view = limit.HostView{Follow: 7.5, FollowAt: t0.Add(time.Second)}
	sh.mu.Unlock()
	now = now.Add(2 * time.Second)
	acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if r := rate(); math.Abs(r-0.5) > 1e-9 {
		t.Fatalf("x00 at %v/s with the share down, want 0.5/s kept (no raise from a cache)", r)
	}
	sh.set(func(s *leadShare) { s.view = limit.HostView{Follow: 0.25, FollowAt: t0.Add(2 * time.Second)} })
	now = now.Add(time.Second)
	acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if r := rate(); math.Abs(r-0.25) > 1e-9 {
		t.Fatalf("x00 at %v/s after the leader's fall with the share down, want 0.25/s", r)
	}
	sh.mu.Lock()
	sh.down = false
	sh.view = limit.HostView{Follow: 2, FollowAt: t0.Add(3 * time.Second)}
	sh.mu.Unlock()
	now = now.Add(time.Second)
	acquire(t, l, host, limit.Want{Pin: "x00"}, now)
	if r := rate(); math.Abs(r-2) > 1e-9 {
		t.Fatalf("x00 at %v/s with the share back, want the leader's 2/s", r)
	}
}

// TestLedEdge: the leader reads a sliding-window counter's edge and
// publishes it with the pace it slowed to (HostView.Edge): a led worker's
// lanes skip one request, as the leader's own do, since their counters
// still hold what they sent at the pace pushed back. Without an edge the
// same slower pace moves the lane by the pace alone.
func TestLedEdge(t *testing.T) {
	const host = "a.example"
	ready := func(edge bool) time.Duration {
		sh := &leadShare{view: limit.HostView{Follow: 1, FollowAt: t0}}
		l := newLimiter(t, limit.Config{Shared: sh}, 1)
		now := t0
		for range 3 {
			tk, ok, next := acquire(t, l, host, limit.Want{Pin: "x00"}, now)
			for !ok {
				now = next
				tk, ok, next = acquire(t, l, host, limit.Want{Pin: "x00"}, now)
			}
			l.Done(tk, limit.Outcome{}, now)
		}
		v := limit.HostView{Follow: 0.94, FollowAt: now}
		if edge {
			v.Edge = now
		}
		sh.set(func(s *leadShare) { s.view = v })
		now = now.Add(10 * time.Millisecond)
		acquire(t, l, host, limit.Want{Pin: "x00"}, now)
		ln, _ := laneOf(l.Snapshot(now), host, "x00")
		return ln.ReadyAt.Sub(t0)
	}
	plain, skip := ready(false), ready(true)
	if skip-plain < 800*time.Millisecond {
		t.Errorf("led lane ready %v after the leader's edge, %v after the same pace without one; want about a request (1 s) later", skip, plain)
	}
}
