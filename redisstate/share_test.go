package redisstate

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// worker is one limiter with its share of the exits and its own Share.
func worker(t *testing.T, rdb goredis.UniversalClient, crawl string, exits []string, ceil limit.Rate) (*limit.Limiter, *Share) {
	t.Helper()
	sh, err := New(rdb, Config{Crawl: crawl, Workers: func() int { return 2 }})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limit.New(limit.Config{HostCeiling: ceil, FirstGuess: limit.PerSecond(5), Shared: sh})
	if err != nil {
		t.Fatal(err)
	}
	var ex []limit.Exit
	for _, e := range exits {
		ex = append(ex, limit.Exit{ID: e})
	}
	lim.SetExits(ex)
	return lim, sh
}

// drive has every limiter ask for host every 5ms of virtual time over span
// and answers each request OK at once; it returns how many went.
func drive(lims []*limit.Limiter, host string, from time.Time, span time.Duration) int {
	n := 0
	for at := from; at.Before(from.Add(span)); at = at.Add(5 * time.Millisecond) {
		for _, l := range lims {
			if t, ok, _, _ := l.Acquire(host, limit.Want{}, at); ok {
				l.Done(t, limit.Outcome{Verdict: verdict.OK}, at)
				n++
			}
		}
	}
	return n
}

// leaderAndLed returns two workers of crawl: a, which leads every host's
// search, and b, led by it.
func leaderAndLed(t *testing.T, rdb goredis.UniversalClient, crawl string) (a *limit.Limiter, sa *Share, b *limit.Limiter, sb *Share) {
	t.Helper()
	a, sa = worker(t, rdb, crawl, []string{"e1", "e2"}, limit.Rate{})
	b, sb = worker(t, rdb, crawl, []string{"e3", "e4"}, limit.Rate{})
	sa.cfg.Leads = func(string) bool { return true }
	sb.cfg.Leads = func(string) bool { return false }
	return a, sa, b, sb
}

// sendOnEach sends one request to host on each of exits at at, answered OK,
// so that the lanes exist and read the shared view.
func sendOnEach(l *limit.Limiter, host string, exits []string, at time.Time) {
	for _, e := range exits {
		if tk, ok, _, _ := l.Acquire(host, limit.Want{Pin: e}, at); ok {
			l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
		}
	}
}

// lanePace is the pace l's lanes of host hold at at (0: no such host).
func lanePace(l *limit.Limiter, host string, at time.Time) float64 {
	for _, h := range l.Snapshot(at).Hosts {
		if h.Host == host {
			return h.LaneRate.Hz()
		}
	}
	return 0
}

// TestSharedCeiling: two workers with their own exits keep one politeness
// ceiling between them; with Redis gone, each keeps half of it.
func TestSharedCeiling(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	a, sa := worker(t, rdb, "ceil", []string{"e1", "e2", "e3"}, limit.PerSecond(10))
	b, _ := worker(t, rdb, "ceil", []string{"e4", "e5", "e6"}, limit.PerSecond(10))
	got := drive([]*limit.Limiter{a, b}, "h.example", t0, 2*time.Second)
	if got < 18 || got > 22 {
		t.Fatalf("two workers under one 10/s ceiling sent %d requests in 2 s, want about 20", got)
	}
	if st := sa.Stats(); st.Admits == 0 || st.Fallbacks != 0 {
		t.Fatalf("Stats = %+v, want admits and no fallback", st)
	}
	r.Close()
	got = drive([]*limit.Limiter{a, b}, "h.example", t0.Add(time.Minute), 2*time.Second)
	if got > 22 {
		t.Fatalf("with Redis gone the two workers sent %d requests in 2 s, want at most the 20 of the ceiling", got)
	}
	if got < 10 {
		t.Fatalf("with Redis gone the two workers sent %d requests in 2 s, want their shares (about 20)", got)
	}
}

// TestSharedPause: a 503 with Retry-After that one worker draws pauses the
// host for the other once it has refreshed its view.
func TestSharedPause(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	a, _ := worker(t, rdb, "pause", []string{"e1"}, limit.Rate{})
	b, sb := worker(t, rdb, "pause", []string{"e2"}, limit.Rate{})
	const host = "p.example"
	tk, ok, _, _ := a.Acquire(host, limit.Want{}, t0)
	if !ok {
		t.Fatal("first Acquire refused")
	}
	a.Done(tk, limit.Outcome{Verdict: verdict.Busy, RetryAfter: 30 * time.Second}, t0)
	if _, ok := sb.View(host); ok {
		t.Fatal("View before any refresh says something")
	}
	sb.refresh(context.Background())
	_, ok, next, _ := b.Acquire(host, limit.Want{}, t0.Add(time.Second))
	if ok || next.Before(t0.Add(30*time.Second)) {
		t.Fatalf("other worker's Acquire after the 503 = ok %v, next %v, want refused until %v", ok, next, t0.Add(30*time.Second))
	}
}

// TestSharedScope: 429s on lanes of different workers, each under its pace,
// add up to the evidence that the host limits site-wide.
func TestSharedScope(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	const host = "s.example"
	var lims []*limit.Limiter
	var shares []*Share
	for i := range 3 {
		l, s := worker(t, rdb, "scope", []string{fmt.Sprintf("e%d", i)}, limit.Rate{})
		lims, shares = append(lims, l), append(shares, s)
	}
	at := t0
	// Warm each lane up, slowly (under its pace), then one 429 each.
	for i := range 4 {
		for _, l := range lims {
			if tk, ok, _, _ := l.Acquire(host, limit.Want{}, at); ok {
				l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
			}
		}
		at = at.Add(time.Duration(i+1) * time.Second)
	}
	for _, l := range lims {
		tk, ok, _, _ := l.Acquire(host, limit.Want{}, at)
		if !ok {
			t.Fatal("Acquire refused")
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled}, at)
		for _, s := range shares {
			s.refresh(context.Background())
		}
		at = at.Add(100 * time.Millisecond)
	}
	// The last worker's next decision adopts the others' evidence.
	lims[2].Acquire(host, limit.Want{}, at)
	for i, l := range lims {
		snap := l.Snapshot(at)
		for _, h := range snap.Hosts {
			if h.Host == host && h.Scope != limit.ScopeHost && i == 2 {
				t.Fatalf("worker %d: scope %v after 429s on 3 lanes across 3 workers, want host", i, h.Scope)
			}
		}
	}
}

// TestSharedLead: of two workers, the one that leads a host searches its
// per-IP limit; its followers' pace goes through Redis to the other's
// lanes, which do not explore.
func TestSharedLead(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	const host = "l.example"
	a, _, b, sb := leaderAndLed(t, rdb, "lead")
	// a's explorer ramps for a few seconds: its followers' pace climbs
	// and is published.
	drive([]*limit.Limiter{a}, host, t0, 5*time.Second)
	follow := lanePace(a, host, t0.Add(5*time.Second))
	if follow <= 2.5 { // the followers' start: half the first guess of 5/s
		t.Fatalf("leader's followers at %.3g/s after 5 s of ramp, want above their start", follow)
	}
	sb.View(host) // in use: the refresh reads it
	sb.refresh(context.Background())
	at := t0.Add(5 * time.Second)
	sendOnEach(b, host, []string{"e3", "e4"}, at)
	for _, h := range b.Snapshot(at).Hosts {
		if h.Host != host {
			continue
		}
		if h.Explorer != "" {
			t.Fatalf("led worker has explorer %q, want none", h.Explorer)
		}
		if got := h.LaneRate.Hz(); got < follow*0.999 || got > follow*1.001 {
			t.Fatalf("led worker's lanes at %.3g/s, want the leader's followers' %.3g/s", got, follow)
		}
	}
}

// TestSharedDeclaredPace: a declared quota's pace the leader read goes
// through Redis as one (the "fdecl" field), and a led worker whose lanes
// have read nothing of the quota hold it.
func TestSharedDeclaredPace(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	const host = "d.example"
	a, _, b, sb := leaderAndLed(t, rdb, "declared")
	tk, ok, _, _ := a.Acquire(host, limit.Want{Pin: "e1"}, t0)
	if !ok {
		t.Fatal("leader's first Acquire not ok")
	}
	a.Done(tk, limit.Outcome{Verdict: verdict.OK, Quota: 3, Window: time.Second, Remaining: 2, HasRemaining: true, HasReset: true, ResetIn: time.Second}, t0)
	want := lanePace(a, host, t0)
	sb.View(host) // in use: the refresh reads it
	sb.refresh(context.Background())
	if v, _ := sb.View(host); !v.Declared || v.Follow != want {
		t.Fatalf("led worker's view %+v, want the leader's %.3g/s, declared", v, want)
	}
	at := t0.Add(time.Second)
	sendOnEach(b, host, []string{"e3"}, at)
	if got := lanePace(b, host, at); got != want {
		t.Fatalf("led worker's lanes at %.3g/s, want the leader's declared %.3g/s", got, want)
	}
}

// TestSharedAwait: the first run's count the leader's followers hold to
// while it measures its first 429's recovery goes through Redis with the
// cautious pace (the "fawait" field), and goes when a newer pace comes
// without it; so do a sliding counter's edge ("fedge") and the window the
// lanes count over ("fwin").
func TestSharedAwait(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	const host = "w.example"
	_, sa, _, sb := leaderAndLed(t, rdb, "await")
	sb.View(host) // in use: the refresh reads it
	for _, c := range []struct {
		v    limit.HostView
		want int32
	}{
		{limit.HostView{Follow: 0.29, FollowAt: t0, Await: 20}, 20},
		{limit.HostView{Follow: 0.75, FollowAt: t0.Add(9 * time.Second)}, 0},
		{limit.HostView{Follow: 0.7, FollowAt: t0.Add(30 * time.Second), Edge: t0.Add(30 * time.Second), Window: 15 * time.Second}, 0},
	} {
		sa.Publish(host, c.v, c.v.FollowAt)
		sb.refresh(context.Background())
		if v, _ := sb.View(host); v.Await != c.want || v.Follow != c.v.Follow || !v.Edge.Equal(c.v.Edge) || v.Window != c.v.Window {
			t.Fatalf("published %.3g/s with a count of %d, edge %v, window %v: the led worker reads %.3g/s, %d, %v, %v", c.v.Follow, c.v.Await, c.v.Edge, c.v.Window, v.Follow, v.Await, v.Edge, v.Window)
		}
	}
}

// TestLeaderPaceSurvivesOutage: a leader whose followers' pace changes while
// Redis is away (killed with SIGKILL, restarted from its append-only file)
// sends it when Redis is back. Without that, the restarted Redis holds the
// pace from before the outage, which the leader never publishes again
// (once per change), and its followers keep it for good: a distributed
// crawl crept at a first 429's cautious 0.26/s after a Redis restart, with
// the leader settled at 7.5/s.
func TestLeaderPaceSurvivesOutage(t *testing.T) {
	r := peertest.StartRedisWith(t, peers.RedisConfig{AppendOnly: true})
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	const host = "o.example"
	a, sa, b, sb := leaderAndLed(t, rdb, "outage")
	drive([]*limit.Limiter{a}, host, t0, 3*time.Second)
	before := lanePace(a, host, t0.Add(3*time.Second))

	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	// The explorer goes on ramping while Redis is away: the followers'
	// pace changes and cannot be published.
	drive([]*limit.Limiter{a}, host, t0.Add(3*time.Second), 4*time.Second)
	at := t0.Add(7 * time.Second)
	during := lanePace(a, host, at)
	if during <= before*1.001 {
		t.Fatalf("followers' pace %.3g/s before the outage and %.3g/s after 4 s more of ramp, want it to climb", before, during)
	}
	if !sa.Down() {
		t.Fatal("the leader's Share did not notice Redis gone")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	sb.View(host) // in use: the refresh reads it
	sa.refresh(context.Background())
	sb.refresh(context.Background())
	if sa.Down() || sb.Down() {
		t.Fatal("a Share still down after Redis answered a refresh")
	}
	sendOnEach(b, host, []string{"e3", "e4"}, at)
	if got := lanePace(b, host, at); got < during*0.999 || got > during*1.001 {
		t.Fatalf("after the restart the led worker's lanes pace at %.3g/s, want the leader's %.3g/s (before the outage %.3g/s)", got, during, before)
	}
}

// TestLostWriteSentAgain: Redis loses the leader's latest pace for its
// followers without the leader ever seeing it away (a failover to a replica
// that had not received the write; a restart from an append-only file a
// second behind, quicker than a refresh). The leader's next refresh reads
// the older pace back, keeps its own, and the one after sends it again: its
// followers get it.
func TestLostWriteSentAgain(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	const host = "w.example"
	a, sa, b, sb := leaderAndLed(t, rdb, "lost")
	drive([]*limit.Limiter{a}, host, t0, 3*time.Second)
	ctx := context.Background()
	key := sa.keys(host)[0]
	old, err := rdb.HMGet(ctx, key, "follow", "fat").Result()
	if err != nil || old[0] == nil {
		t.Fatalf("no follow pace published after 3 s of ramp: %v %v", old, err)
	}
	drive([]*limit.Limiter{a}, host, t0.Add(3*time.Second), 4*time.Second)
	at := t0.Add(7 * time.Second)
	want := lanePace(a, host, at)
	// The write of the newer pace is lost: Redis holds the older one.
	if err := rdb.HSet(ctx, key, "follow", old[0], "fat", old[1]).Err(); err != nil {
		t.Fatal(err)
	}
	sa.View(host)
	sa.refresh(ctx) // reads the older pace back: keeps its own
	sa.refresh(ctx) // sends it again
	sb.View(host)
	sb.refresh(ctx)
	sendOnEach(b, host, []string{"e3", "e4"}, at)
	if got := lanePace(b, host, at); got < want*0.999 || got > want*1.001 {
		t.Fatalf("after the lost write the led worker's lanes pace at %.3g/s, want the leader's %.3g/s (Redis held %v/s)", got, want, old[0])
	}
}

// TestRecoveredKeepsLocalShare: back from an outage, a worker keeps to its
// local share of the ceiling for a few refreshes, while the others may
// still pace on theirs unseen by the shared schedule: two gateways back a
// second apart sent 12 and 13 requests in a second to a host of 8/s.
func TestRecoveredKeepsLocalShare(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	a, sa := worker(t, rdb, "back", []string{"e1", "e2", "e3"}, limit.PerSecond(10))
	drive([]*limit.Limiter{a}, "h.example", t0, time.Second)
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	sa.refresh(context.Background())
	if !sa.Down() {
		t.Fatal("the Share did not notice Redis gone")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	sa.refresh(context.Background())
	if sa.Down() {
		t.Fatal("the Share still down after Redis answered a refresh")
	}
	// Just back: a alone, its half of the 10/s (the other worker may
	// still send its own half unseen).
	if got := drive([]*limit.Limiter{a}, "h.example", t0.Add(time.Minute), time.Second); got > 6 {
		t.Errorf("just back, a sent %d requests in 1 s, want its local half of 10/s", got)
	}
	sa.upAt = time.Now().Add(-time.Minute) // the grace over
	if got := drive([]*limit.Limiter{a}, "h.example", t0.Add(2*time.Minute), time.Second); got < 9 {
		t.Errorf("after the grace, a sent %d requests in 1 s, want the shared 10/s", got)
	}
}
