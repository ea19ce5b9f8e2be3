package monitor

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/verdict"
)

var t0 = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

// fakeLimiter grants every request and returns a settable snapshot.
type fakeLimiter struct {
	seq  uint64
	snap limit.Snapshot
	done []limit.Outcome
}

func (f *fakeLimiter) Acquire(host string, _ limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	f.seq++
	return limit.Ticket{Host: host, Exit: "e1", At: now, Seq: f.seq}, true, time.Time{}, nil
}
func (f *fakeLimiter) Done(_ limit.Ticket, o limit.Outcome, _ time.Time) { f.done = append(f.done, o) }
func (f *fakeLimiter) Cancel(limit.Ticket, time.Time)                    {}
func (f *fakeLimiter) Snapshot(now time.Time) limit.Snapshot {
	s := f.snap
	s.At = now
	return s
}

type parked struct {
	host  string
	until time.Time
	why   string
}

func newMonitor(t *testing.T, cfg Config) (*Monitor, *fakeLimiter, *[]parked, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lim := &fakeLimiter{}
	var parks []parked
	m.Attach(Sources{
		Limiter: lim,
		Park: func(_ context.Context, host string, until time.Time, why string) (int, error) {
			parks = append(parks, parked{host, until, why})
			return 1, nil
		},
	})
	return m, lim, &parks, &log
}

// traffic records n responses for host spread over the second before at,
// every k-th of them a 429.
func traffic(m *Monitor, host string, at time.Time, n, k int) {
	for i := range n {
		st, v := 200, verdict.OK
		if k > 0 && i%k == 0 {
			st, v = 429, verdict.Throttled
		}
		m.Record(metrics.Event{Host: host, Exit: "e1", Status: st, Verdict: v, At: at.Add(-time.Second + time.Duration(i)*time.Second/time.Duration(n))})
	}
}

func eventsOf(m *Monitor, kind string) []Event {
	var out []Event
	for _, e := range m.Events() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestBudgetAlertBreaker: a host at 10% 429s (budget 1%) alerts after 3
// minutes, opens its breaker after 5, is parked for the 5-minute cool-down,
// then one probe half-opens it: a 429 opens it again for 10 minutes, a
// success closes it; another host goes on throughout.
func TestBudgetAlertBreaker(t *testing.T) {
	ctx := context.Background()
	m, lim, parks, log := newMonitor(t, Config{})
	g := m.Gate(lim)
	now := t0
	var alertAt, openAt time.Time
	for ; now.Before(t0.Add(6 * time.Minute)); now = now.Add(time.Second) {
		traffic(m, "bad.test", now, 10, 10) // 10%
		traffic(m, "good.test", now, 10, 0)
		m.Tick(ctx, now)
		if alertAt.IsZero() && len(eventsOf(m, KindOverBudget)) > 0 {
			alertAt = now
		}
		if openAt.IsZero() && len(eventsOf(m, KindBreakerOpen)) > 0 {
			openAt = now
			break
		}
	}
	// Over budget from the first tick with 3 429s in the window.
	if d := alertAt.Sub(t0); d < 3*time.Minute || d > 3*time.Minute+5*time.Second {
		t.Errorf("alert after %v, want 3m (+ the first 429s)", d)
	}
	if d := openAt.Sub(t0); d < 5*time.Minute || d > 5*time.Minute+5*time.Second {
		t.Errorf("breaker opened after %v, want 5m", d)
	}
	if !strings.Contains(log.String(), "level=WARN msg=\"monitor: 429s over budget for 3m0s") {
		t.Errorf("no WARN line for the alert in the log:\n%s", log.String())
	}
	if len(*parks) != 1 || (*parks)[0].host != "bad.test" || !(*parks)[0].until.Equal(openAt.Add(5*time.Minute)) ||
		!strings.HasPrefix((*parks)[0].why, "circuit breaker open") {
		t.Fatalf("parks = %+v, want bad.test parked until %v", *parks, openAt.Add(5*time.Minute))
	}
	st := m.Status(false)
	if h := hostStatus(st, "bad.test"); h.Breaker != "open" || !h.Alert || len(st.Parked) != 1 {
		t.Errorf("status of bad.test = %+v, parked %+v: want open, alerted, parked", h, st.Parked)
	}
	// Open: bad.test is refused until the cool-down ends; good.test goes.
	if _, ok, next, _ := g.Acquire("bad.test", limit.Want{}, now.Add(time.Minute)); ok || !next.Equal(openAt.Add(5*time.Minute)) {
		t.Errorf("Acquire(bad.test) while open = ok %v next %v, want refused until %v", ok, next, openAt.Add(5*time.Minute))
	}
	if _, ok, _, _ := g.Acquire("good.test", limit.Want{}, now.Add(time.Minute)); !ok {
		t.Errorf("Acquire(good.test) refused while only bad.test's breaker is open")
	}
	// Half-open: one probe, the others wait for it.
	now = openAt.Add(5 * time.Minute)
	probe, ok, _, _ := g.Acquire("bad.test", limit.Want{}, now)
	if !ok {
		t.Fatalf("no probe after the cool-down")
	}
	if _, ok, next, _ := g.Acquire("bad.test", limit.Want{}, now); ok || next.Sub(now) != time.Second {
		t.Errorf("second request while the probe is out: ok %v next %v, want refused for 1s", ok, next.Sub(now))
	}
	// The probe draws a 429: open again, for twice the cool-down.
	g.Done(probe, limit.Outcome{Verdict: verdict.Throttled}, now)
	m.Tick(ctx, now)
	if len(*parks) != 2 || !(*parks)[1].until.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("parks after a failed probe = %+v, want a second park until %v", *parks, now.Add(10*time.Minute))
	}
	now = now.Add(10 * time.Minute)
	probe, ok, _, _ = g.Acquire("bad.test", limit.Want{}, now)
	if !ok {
		t.Fatalf("no second probe")
	}
	g.Done(probe, limit.Outcome{Verdict: verdict.OK}, now)
	if n := len(eventsOf(m, KindBreakerClosed)); n != 1 {
		t.Fatalf("%d breaker_closed events after a good probe, want 1", n)
	}
	for range 3 {
		if _, ok, _, _ := g.Acquire("bad.test", limit.Want{}, now); !ok {
			t.Errorf("Acquire(bad.test) refused after its breaker closed")
		}
	}
	// Judged afresh: a healthy host stays closed.
	for end := now.Add(10 * time.Minute); now.Before(end); now = now.Add(time.Second) {
		traffic(m, "bad.test", now, 10, 0)
		m.Tick(ctx, now)
	}
	if h := hostStatus(m.Status(false), "bad.test"); h.Breaker != "closed" || h.Alert || h.BreakerTrips != 2 {
		t.Errorf("bad.test after recovery = %+v, want closed, no alert, 2 trips", h)
	}
	if len(*parks) != 2 {
		t.Errorf("parks after recovery = %d, want 2", len(*parks))
	}
	for _, h := range m.Status(false).Hosts {
		if h.Host == "good.test" && (h.Alert || h.Breaker != "closed") {
			t.Errorf("good.test = %+v, want untouched", h)
		}
	}
}

func hostStatus(s Status, host string) HostStatus {
	for _, h := range s.Hosts {
		if h.Host == host {
			return h
		}
	}
	return HostStatus{}
}

// TestBudgetEdges: a host under its budget, or with too few 429s, never
// alerts; per-host budgets apply; an episode needs a window within budget
// to end.
func TestBudgetEdges(t *testing.T) {
	ctx := context.Background()
	m, _, _, _ := newMonitor(t, Config{Budgets: map[string]float64{"strict.test": 0.001}, AlertAfter: time.Minute, BreakAfter: -1})
	now := t0
	for ; now.Before(t0.Add(3 * time.Minute)); now = now.Add(time.Second) {
		traffic(m, "ok.test", now, 200, 200)     // 0.5%: within 1%
		traffic(m, "strict.test", now, 200, 200) // 0.5%: over 0.1%
		if now.Sub(t0)%(30*time.Second) == 0 {
			traffic(m, "few.test", now, 4, 4) // 25%, but 2 429s a minute
		}
		m.Tick(ctx, now)
	}
	var alerted []string
	for _, e := range eventsOf(m, KindOverBudget) {
		alerted = append(alerted, e.Host)
	}
	if strings.Join(alerted, ",") != "strict.test" {
		t.Errorf("alerts on %v, want strict.test only", alerted)
	}
	if n := len(eventsOf(m, KindBreakerOpen)); n != 0 {
		t.Errorf("%d breakers opened with BreakAfter < 0", n)
	}
	// Within budget again: the alert clears after a whole window.
	start := now
	for ; len(eventsOf(m, KindBudgetOK)) == 0 && now.Before(start.Add(5*time.Minute)); now = now.Add(time.Second) {
		traffic(m, "strict.test", now, 200, 0)
		m.Tick(ctx, now)
	}
	if d := now.Sub(start); d < time.Minute || d > 2*time.Minute {
		t.Errorf("budget_ok after %v within budget, want a window (1m) to a window and its slots", d)
	}
}

func TestSpike(t *testing.T) {
	ctx := context.Background()
	m, _, _, _ := newMonitor(t, Config{})
	hosts := []string{"a.test", "b.test", "c.test", "d.test"}
	now := t0
	for ; now.Before(t0.Add(30 * time.Second)); now = now.Add(time.Second) {
		for _, h := range hosts {
			traffic(m, h, now, 10, 0)
		}
		m.Tick(ctx, now)
	}
	turned := now
	for ; now.Before(turned.Add(time.Minute)); now = now.Add(time.Second) {
		for _, h := range hosts[:3] {
			traffic(m, h, now, 10, 5)
		}
		traffic(m, "d.test", now, 10, 0)
		m.Tick(ctx, now)
	}
	sp := eventsOf(m, KindSpike)
	if len(sp) != 1 || sp[0].At.Sub(turned) > 5*time.Second || !strings.Contains(sp[0].Message, "3 of 4 hosts") {
		t.Fatalf("spike events %+v, want one within 5s of the turn naming 3 of 4 hosts", sp)
	}
	if !m.Status(false).Spike {
		t.Errorf("Status.Spike = false during the spike")
	}
	for end := now.Add(3 * time.Minute); now.Before(end); now = now.Add(time.Second) {
		for _, h := range hosts {
			traffic(m, h, now, 10, 0)
		}
		m.Tick(ctx, now)
	}
	if len(eventsOf(m, KindSpikeOver)) != 1 || m.Status(false).Spike {
		t.Errorf("spike not over after 3 minutes within budget")
	}
}

func TestRetryAfterJump(t *testing.T) {
	m, _, _, _ := newMonitor(t, Config{})
	at := t0
	ra := func(d time.Duration) {
		at = at.Add(time.Second)
		m.Record(metrics.Event{Host: "q.test", Exit: "e1", Status: 429, Verdict: verdict.Throttled, RetryAfter: d, HasRetryAfter: true, At: at})
	}
	for _, d := range []time.Duration{time.Second, 2 * time.Second, time.Second, 30 * time.Second, time.Second} {
		ra(d)
	}
	if n := len(eventsOf(m, KindRetryAfterJump)); n != 0 {
		t.Fatalf("%d jumps among second-long Retry-Afters", n)
	}
	ra(time.Hour)
	ra(2 * time.Hour) // the same jump
	j := eventsOf(m, KindRetryAfterJump)
	if len(j) != 1 || j[0].Value != 3600 {
		t.Fatalf("jumps = %+v, want one at 3600 s", j)
	}
	ra(time.Second)
	if n := len(eventsOf(m, KindRetryAfterBack)); n != 1 {
		t.Errorf("%d retry_after_back events after a 1s Retry-After, want 1", n)
	}
	// Without a usual value, a long first Retry-After is no jump.
	m.Record(metrics.Event{Host: "new.test", Status: 429, Verdict: verdict.Throttled, RetryAfter: time.Hour, HasRetryAfter: true, At: at})
	if n := len(eventsOf(m, KindRetryAfterJump)); n != 1 {
		t.Errorf("a first Retry-After of an hour made a jump")
	}
}

func lanes(rates ...float64) []limit.LaneSnapshot {
	out := make([]limit.LaneSnapshot, len(rates))
	for i, r := range rates {
		out[i] = limit.LaneSnapshot{Exit: string(rune('a' + i)), Rate: limit.PerSecond(r), Requests: 100}
	}
	return out
}

func TestFallingEquilibrium(t *testing.T) {
	ctx := context.Background()
	m, lim, _, _ := newMonitor(t, Config{})
	now := t0
	phase := "ramp"
	set := func(r float64) {
		lim.snap.Hosts = []limit.HostSnapshot{{Host: "f.test", Phase: phase, Lanes: lanes(r, r, r, r)}}
	}
	run := func(d time.Duration) {
		for end := now.Add(d); now.Before(end); now = now.Add(time.Second) {
			m.Tick(ctx, now)
		}
	}
	set(2) // a slow start overshoots: no equilibrium yet
	run(time.Minute)
	phase = "settled"
	set(1)
	run(5 * time.Minute)
	if n := len(eventsOf(m, KindFalling)); n != 0 {
		t.Fatalf("%d falling warnings after a slow start's overshoot", n)
	}
	set(0.9) // -10%: the learner's usual motion
	run(time.Minute)
	if n := len(eventsOf(m, KindFalling)); n != 0 {
		t.Fatalf("%d falling warnings on a 10%% dip", n)
	}
	turned := now
	phase = "bisect"
	set(0.5)
	run(time.Minute)
	f := eventsOf(m, KindFalling)
	if len(f) != 1 || f[0].At.Sub(turned) > 2*time.Second || f[0].Value != 2 {
		t.Fatalf("falling warnings %+v, want one at once, capacity 2/s", f)
	}
	if w := hostStatus(m.Status(false), "f.test").Warnings; len(w) != 1 {
		t.Errorf("warnings %v, want the falling equilibrium", w)
	}
	set(1)
	run(time.Minute)
	if n := len(eventsOf(m, KindFallingOver)); n != 1 {
		t.Errorf("%d steady events after the capacity came back", n)
	}

	// A wall: the settled pace ran into a window's quota, and the window
	// read paces the lanes at a third of it. Not a fall: the pace before
	// was no equilibrium.
	phase = "settled"
	set(1)
	run(10 * time.Minute)
	was := len(eventsOf(m, KindFalling))
	lim.snap.Hosts[0].Wall = now
	run(30 * time.Second)
	lim.snap.Hosts[0].Wall = time.Time{}
	set(0.33)
	run(time.Minute)
	if n := len(eventsOf(m, KindFalling)); n != was {
		t.Errorf("%d falling warnings after a wall read its window, want %d", n, was)
	}
	set(1)
	run(10 * time.Minute)
	phase = "bisect"

	// A worker of a distributed crawl gives three of its four exits to
	// workers that joined: its capacity falls by three quarters, each
	// lane's not at all. No fall.
	lim.snap.Hosts = []limit.HostSnapshot{{Host: "f.test", Phase: phase, Lanes: lanes(1)}}
	run(time.Minute)
	if n := len(eventsOf(m, KindFalling)); n != 1 {
		t.Errorf("%d falling warnings after three exits of four went to other workers, want the one before", n)
	}
}

// TestReputation: one exit of four drawing 429s at half its peers' pace,
// while they pass, is flagged at once and quarantined for that host after
// 2 minutes if it goes on; the others are untouched.
func TestReputation(t *testing.T) {
	ctx := context.Background()
	m, lim, _, _ := newMonitor(t, Config{})
	type q struct {
		host, exit string
		until      time.Time
	}
	var quars []q
	src := m.src
	src.Quarantine = func(host, exit string, until time.Time, why string, now time.Time) bool {
		quars = append(quars, q{host, exit, until})
		return true
	}
	m.Attach(src)
	ls := lanes(1, 1, 1, 0.45)
	lim.snap.Hosts = []limit.HostSnapshot{{Host: "r.test", Scope: limit.ScopeExit, Lanes: ls}}
	lim.snap.Exits = []limit.ExitSnapshot{{ID: "a", Healthy: true}, {ID: "b", Healthy: true}, {ID: "c", Healthy: true}, {ID: "d", Healthy: true, Requests: 100}}
	now := t0
	for end := now.Add(6 * time.Minute); now.Before(end); now = now.Add(time.Second) {
		for _, x := range []string{"a", "b", "c"} {
			m.Record(metrics.Event{Host: "r.test", Exit: x, Status: 200, Verdict: verdict.OK, At: now})
		}
		if now.Sub(t0)%(20*time.Second) == 0 {
			m.Record(metrics.Event{Host: "r.test", Exit: "d", Status: 429, Verdict: verdict.Throttled, At: now})
		}
		if (now.Sub(t0)+50*time.Second)%(100*time.Second) == 0 {
			m.Record(metrics.Event{Host: "r.test", Exit: "a", Status: 429, Verdict: verdict.Throttled, At: now}) // at its peers' pace: no flag
		}
		m.Tick(ctx, now)
	}
	fl := eventsOf(m, KindExitFlagged)
	if len(fl) != 1 || fl[0].Exit != "d" || fl[0].At != t0 {
		t.Fatalf("flags %+v, want exit d at once", fl)
	}
	qe := eventsOf(m, KindExitQuarantined)
	if len(qe) != 1 || qe[0].At.Sub(t0) != 2*time.Minute || len(quars) != 1 || quars[0].exit != "d" || !quars[0].until.Equal(qe[0].At.Add(30*time.Minute)) {
		t.Fatalf("quarantines %+v / %+v, want d on r.test at 2m, for 30m", qe, quars)
	}
	st := m.Status(false)
	if st.Exits[0].ID != "d" || st.Exits[0].Reputation != "quarantined" || len(st.Exits[0].Hosts) != 1 {
		t.Errorf("exits %+v, want d first, quarantined on r.test", st.Exits)
	}
	// The quarantine ends; the exit paces with its peers again and draws
	// no 429: cleared.
	ls[3].Rate = limit.PerSecond(1)
	for end := quars[0].until.Add(6 * time.Minute); now.Before(end); now = now.Add(time.Second) {
		m.Tick(ctx, now)
	}
	if c := eventsOf(m, KindExitCleared); len(c) == 0 {
		t.Errorf("exit d not cleared after its quarantine and a good pace")
	}
	if st := m.Status(false); st.Exits[0].Reputation != "good" {
		t.Errorf("exit %s reputation %s at the end, want good", st.Exits[0].ID, st.Exits[0].Reputation)
	}
}

// TestReputationAtWall: at a wall (a window's quota spent, one lane
// retrying for all) the retrying lane's 429s are the host's: it is not
// flagged then, nor once the wall has read its window and every lane goes
// on at the same pace (flask-limiter's bare minute: the probe's exit was
// flagged at 21% of its answers).
func TestReputationAtWall(t *testing.T) {
	ctx := context.Background()
	m, lim, _, _ := newMonitor(t, Config{})
	wall := t0
	lim.snap.Hosts = []limit.HostSnapshot{{Host: "w.test", Scope: limit.ScopeExit, Lanes: lanes(0.65, 0.65, 0.65, 0.65), Wall: wall}}
	now := t0
	for end := t0.Add(40 * time.Second); now.Before(end); now = now.Add(time.Second) {
		if now.Sub(t0)%(8*time.Second) == 0 { // d probes; everyone else waits
			m.Record(metrics.Event{Host: "w.test", Exit: "d", Status: 429, Verdict: verdict.Throttled, At: now})
		}
		m.Tick(ctx, now)
	}
	lim.snap.Hosts[0].Wall = time.Time{} // read: all go on at the quota's pace
	for end := now.Add(2 * time.Minute); now.Before(end); now = now.Add(1500 * time.Millisecond) {
		for _, x := range []string{"a", "b", "c", "d"} {
			m.Record(metrics.Event{Host: "w.test", Exit: x, Status: 200, Verdict: verdict.OK, At: now})
		}
		m.Tick(ctx, now)
	}
	if fl := eventsOf(m, KindExitFlagged); len(fl) != 0 {
		t.Fatalf("flags %+v, want none: the probe's 429s at the wall are the host's", fl)
	}
}

// TestReputationPastBlip: every exit draws one 429 at the same moment (the
// server stalled and answered a queue at once), and one exit turns bad just
// then: it is flagged at once, not a window later. Peers that each drew
// fewer 429s than MinThrottled are not "every lane drawing 429s".
func TestReputationPastBlip(t *testing.T) {
	ctx := context.Background()
	m, lim, _, _ := newMonitor(t, Config{Window: 15 * time.Second, FlagWindow: 10 * time.Second})
	lim.snap.Hosts = []limit.HostSnapshot{{Host: "b.test", Scope: limit.ScopeExit, Lanes: lanes(4, 4, 4, 1.8)}}
	const step = 250 * time.Millisecond
	now := t0
	blip := t0.Add(time.Minute)
	for end := blip.Add(20 * time.Second); now.Before(end); now = now.Add(step) {
		for _, x := range []string{"a", "b", "c"} { // 4/s each
			st, v := 200, verdict.OK
			if now.Equal(blip) {
				st, v = 429, verdict.Throttled
			}
			m.Record(metrics.Event{Host: "b.test", Exit: x, Status: st, Verdict: v, At: now})
		}
		if tick := now.Sub(t0) / step; !now.Before(blip) && tick%4 == 0 { // d: 1/s from the blip on, every other one a 429
			st, v := 200, verdict.OK
			if tick%8 == 0 {
				st, v = 429, verdict.Throttled
			}
			m.Record(metrics.Event{Host: "b.test", Exit: "d", Status: st, Verdict: v, At: now})
		}
		m.Tick(ctx, now)
	}
	// A lane is followed from its first 429 on, so the peers' ratios
	// start at 100% and fall under hotRatio within ten answers (2.5 s);
	// before the blip was told from a host limiting everyone, d was
	// flagged when the peers' 429s had decayed to within twice the budget,
	// 11 s on.
	fl := eventsOf(m, KindExitFlagged)
	if len(fl) != 1 || fl[0].Exit != "d" || fl[0].At.Sub(blip) > 3*time.Second {
		t.Fatalf("flags %+v, want exit d within 3s of %v", fl, blip)
	}
}

// TestHeldExitLeavesBudget: a host whose 429s all come from one bad exit
// is over budget until the exit is quarantined, and within it from that
// tick on, not a Window later: no alert for trouble already handled. Its
// other exits' own 429s still count.
func TestHeldExitLeavesBudget(t *testing.T) {
	ctx := context.Background()
	m, lim, _, _ := newMonitor(t, Config{AlertAfter: 2 * time.Minute, QuarantineAfter: 90 * time.Second})
	src := m.src
	src.Quarantine = func(string, string, time.Time, string, time.Time) bool { return true }
	m.Attach(src)
	lim.snap.Hosts = []limit.HostSnapshot{{Host: "h.test", Scope: limit.ScopeExit, Lanes: lanes(1, 1, 1, 0.45)}}
	held := false
	var quarantined time.Time
	now := t0
	run := func(d time.Duration, every429 int) {
		for end := now.Add(d); now.Before(end); now = now.Add(time.Second) {
			sec := int(now.Sub(t0) / time.Second)
			for _, x := range []string{"a", "b", "c"} {
				for range 3 {
					m.Record(metrics.Event{Host: "h.test", Exit: x, Status: 200, Verdict: verdict.OK, At: now})
				}
			}
			if every429 > 0 && sec%every429 == 0 {
				m.Record(metrics.Event{Host: "h.test", Exit: "a", Status: 429, Verdict: verdict.Throttled, At: now})
			}
			if !held { // d draws a 429 every other second at under half its peers' pace
				st, v := 200, verdict.OK
				if sec%2 == 0 {
					st, v = 429, verdict.Throttled
				}
				m.Record(metrics.Event{Host: "h.test", Exit: "d", Status: st, Verdict: v, At: now})
			}
			m.Tick(ctx, now)
			if !quarantined.IsZero() && now.Sub(quarantined) == time.Second {
				if hs := hostStatus(m.Status(false), "h.test"); hs.Ratio429 != 0 || hs.Rate < 9 {
					t.Errorf("the tick after d was quarantined, h.test's ratio is %.2f%% of %.1f/s, want 0 (d's responses left out of the ratio, not the rate)", 100*hs.Ratio429, hs.Rate)
				}
			}
			if q := eventsOf(m, KindExitQuarantined); !held && len(q) > 0 {
				held, quarantined = true, q[0].At
			}
		}
	}
	run(200*time.Second, 0)
	if quarantined.IsZero() {
		t.Fatalf("d never quarantined: events %+v", m.Events())
	}
	if a := eventsOf(m, KindOverBudget); len(a) > 0 {
		t.Errorf("over-budget alert %+v after d was quarantined at %v: its 429s are handled", a, quarantined.Sub(t0))
	}
	// a's own 429s (one every 5 s, 2.2%) are the host's: over budget once
	// the window holds more than 1% (about 25 s), alerted 2 minutes on.
	from := now
	run(150*time.Second, 5)
	if a := eventsOf(m, KindOverBudget); len(a) != 1 || a[0].At.Sub(from) > 2*time.Minute+30*time.Second {
		t.Errorf("alerts %+v, want one about 2m after %v", a, from.Sub(t0))
	}
}

func TestParkReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"circuit breaker open: 429s over budget for 5m0s (12%, budget 1%); parked for a cool-down of 5m0s", "circuit breaker"},
		{"host must wait until 2026-01-02T00:00:00Z, beyond max wait 5m0s (status 429)", "host must wait"},
		{"status 429: Retry-After 2h0m0s over max wait 5m0s", "Retry-After over max wait"},
		{"something else: 42", "something else"},
	} {
		if got := ParkReason(c.in); got != c.want {
			t.Errorf("ParkReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []Config{
		{Budget: 1.5},
		{Budgets: map[string]float64{"a": 0}},
		{Window: -time.Second},
		{Cooldown: time.Hour, CooldownMax: time.Minute},
		{AlertAfter: 5 * time.Minute, BreakAfter: time.Minute},
		{JumpFactor: 0.5},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error, want one", c)
		}
	}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config(); c.Budget != 0.01 || c.AlertAfter != 3*time.Minute || c.BreakAfter != 5*time.Minute || c.Window != time.Minute {
		t.Errorf("defaults %+v", c)
	}
}

// TestCountsEvery: a frontier that keeps its counts at hand is read at
// every tick (read every 5 s, the dashboard's URL counts lagged its request
// counts by up to that); one whose read is costly, every CountsEvery.
func TestCountsEvery(t *testing.T) {
	for _, every := range []time.Duration{0, 5 * time.Second} {
		m, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		reads := 0
		m.Attach(Sources{Counts: func(context.Context) (frontier.Counts, error) {
			reads++
			return frontier.Counts{Done: reads}, nil
		}, CountsEvery: every})
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		for i := range 10 {
			m.Tick(context.Background(), t0.Add(time.Duration(i)*time.Second))
		}
		want := 10
		if every > 0 {
			want = 2 // at 0 s and 5 s
		}
		if reads != want {
			t.Errorf("CountsEvery %v: %d reads in 10 ticks a second apart, want %d", every, reads, want)
		}
		if got := m.Status(false).Totals.Done; got != reads {
			t.Errorf("CountsEvery %v: the status shows the read of %d, want the last, %d", every, got, reads)
		}
	}
}

// TestNotFoundNotAbandoned: 404s and 410s are not found, not abandoned, in
// the status (the dashboard, `exitgate status`) and the metrics' state, as
// in the summary: they said 4 abandoned where the summary said 3 not found,
// 1 abandoned.
func TestNotFoundNotAbandoned(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.Attach(Sources{Counts: func(context.Context) (frontier.Counts, error) {
		return frontier.Counts{Done: 2, Abandoned: 4, AbandonedByReason: map[string]int{"status 404": 2, "status 410": 1, "retries exhausted: status 500": 1}}, nil
	}})
	m.Tick(context.Background(), time.Now())
	tot := m.Status(false).Totals
	if tot.NotFound != 3 || tot.Abandoned != 1 || tot.Done != 2 || tot.URLs != 6 {
		t.Errorf("totals: %d not found, %d abandoned, %d done of %d; want 3, 1, 2 of 6", tot.NotFound, tot.Abandoned, tot.Done, tot.URLs)
	}
	if st := m.MetricsState(); st.NotFound != 3 || st.Abandoned != 1 {
		t.Errorf("metrics state: %d not found, %d abandoned; want 3, 1", st.NotFound, st.Abandoned)
	}
}

// TestNoFallFromAGuess: a host that answers nothing but 429s became
// "shared" at its first ones; its capacity then was the first guess, no
// equilibrium, and its fall no warning (one fired on each of 1,000 hosts
// that only ever refused).
func TestNoFallFromAGuess(t *testing.T) {
	ctx := context.Background()
	m, lim, _, _ := newMonitor(t, Config{})
	now := t0
	for i, r := range []float64{2, 2, 1.5, 1, 0.5, 0.5} {
		lim.snap.Hosts = []limit.HostSnapshot{{Host: "g.test", Phase: "shared", Lanes: lanes(r, r, r, r)}}
		traffic(m, "g.test", now, 4, 1) // every answer a 429
		m.Tick(ctx, now)
		now = now.Add(time.Duration(i+1) * time.Second)
	}
	if f := eventsOf(m, KindFalling); len(f) != 0 {
		t.Errorf("falling warnings %+v on a host that never answered but 429s", f)
	}
}

// TestRateOfAYoungCrawl: the responses per second of a crawl younger than
// the budget window are over the time it has run, not over the whole
// window (a 6-s crawl read 0.6/s where its end report said 5.46/s).
func TestRateOfAYoungCrawl(t *testing.T) {
	m, _, _, _ := newMonitor(t, Config{Window: time.Minute})
	now := t0
	for range 5 {
		now = now.Add(time.Second)
		traffic(m, "h.test", now, 6, 0)
		m.Tick(context.Background(), now)
	}
	st := m.Status(false)
	if r := st.Totals.Rate; r < 5 || r > 8 {
		t.Errorf("a 5-s crawl at 6 responses/s reads %.2f/s, want about 6", r)
	}
	if r := hostStatus(st, "h.test").Rate; r < 5 || r > 8 {
		t.Errorf("its host reads %.2f/s, want about 6", r)
	}
}
