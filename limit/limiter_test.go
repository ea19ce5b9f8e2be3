package limit_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

var t0 = time.Unix(1_800_000_000, 0)

// startInterval is a lane's first interval on the defaults: the explorer
// starts at Settle (0.97) under the first guess of 30/min.
var startPace = 0.97 * 0.5

var startInterval = time.Duration(1e9 / startPace)

func exits(n int) []limit.Exit {
	es := make([]limit.Exit, n)
	for i := range es {
		es[i].ID = fmt.Sprintf("x%02d", i)
	}
	return es
}

func newLimiter(t *testing.T, cfg limit.Config, n int) *limit.Limiter {
	t.Helper()
	cfg.Rand = rand.New(rand.NewPCG(7, 7))
	l, err := limit.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	l.SetExits(exits(n))
	return l
}

func acquire(t *testing.T, l *limit.Limiter, host string, w limit.Want, now time.Time) (limit.Ticket, bool, time.Time) {
	t.Helper()
	tk, ok, next, err := l.Acquire(host, w, now)
	if err != nil {
		t.Fatalf("Acquire(%q, %+v, %v) error %v", host, w, now, err)
	}
	return tk, ok, next
}

func laneOf(s limit.Snapshot, host, exit string) (limit.LaneSnapshot, bool) {
	for _, h := range s.Hosts {
		if h.Host != host {
			continue
		}
		for _, ln := range h.Lanes {
			if ln.Exit == exit {
				return ln, true
			}
		}
	}
	return limit.LaneSnapshot{}, false
}

func hostOf(s limit.Snapshot, host string) limit.HostSnapshot {
	for _, h := range s.Hosts {
		if h.Host == host {
			return h
		}
	}
	return limit.HostSnapshot{}
}

// saturate sends ok requests on (host, exit) at its pace, each answered at
// once, then one that draws a 429; it returns the time of the 429.
func saturate(t *testing.T, l *limit.Limiter, host, exit string, now time.Time, ok int) time.Time {
	t.Helper()
	for i := 0; i <= ok; i++ {
		tk, got, next := acquire(t, l, host, limit.Want{Pin: exit}, now)
		if !got {
			now = next
			if tk, got, _ = acquire(t, l, host, limit.Want{Pin: exit}, now); !got {
				t.Fatalf("Acquire(%s, %s) at its reported next %v not ok", host, exit, next)
			}
		}
		o := limit.Outcome{}
		if i == ok {
			o.Verdict = verdict.Throttled
		}
		l.Done(tk, o, now)
	}
	return now
}

// TestLimiter is the limiter's behaviour at explicit instants: exit choice,
// gates, slots, feedback; each subtest gets a fresh limiter.
func TestLimiter(t *testing.T) {
	t.Run("SpreadsOverExits", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 5)
		seen := map[string]int{}
		for i := range 5 {
			tk, ok, _ := acquire(t, l, "h", limit.Want{}, t0)
			if !ok {
				t.Fatalf("Acquire #%d at t0 not ok; 5 fresh exits should each go once", i)
			}
			seen[tk.Exit]++
		}
		if len(seen) != 5 {
			t.Errorf("5 acquires used exits %v, want all 5 once", seen)
		}
		_, ok, next := acquire(t, l, "h", limit.Want{}, t0)
		if ok {
			t.Fatalf("sixth Acquire at t0 ok; every lane is paced at 30/min")
		}
		// One interval at 0.97 x 30/min, less the up-to-2ms slop a pacer
		// allows.
		if d := next.Sub(t0); d < startInterval-2*time.Millisecond || d > startInterval {
			t.Errorf("next = %v, want about %v (one interval at 0.97 x 30/min)", d, startInterval)
		}
		if _, ok, _ := acquire(t, l, "h", limit.Want{}, next); !ok {
			t.Errorf("Acquire at next=%v not ok", next.Sub(t0))
		}
	})
	t.Run("LeastRecentlyUsedFirst", func(t *testing.T) {
		// A declared quota gives every lane the same pace: they take turns.
		l := newLimiter(t, limit.Config{}, 3)
		tk, _, _ := acquire(t, l, "h", limit.Want{}, t0)
		l.Done(tk, limit.Outcome{Quota: 60, Window: time.Minute}, t0)
		var order []string
		now := t0
		for range 9 {
			tk, ok, next := acquire(t, l, "h", limit.Want{}, now)
			if !ok {
				now = next
				tk, ok, _ = acquire(t, l, "h", limit.Want{}, now)
				if !ok {
					t.Fatalf("Acquire at reported next %v not ok", next)
				}
			}
			order = append(order, tk.Exit)
			l.Done(tk, limit.Outcome{}, now)
		}
		for i := 3; i < len(order); i++ {
			if order[i] != order[i-3] {
				t.Fatalf("exit order %v, want round robin (idle longest first)", order)
			}
		}
	})
	t.Run("PinWaits", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 3)
		pin := limit.Want{Pin: "x01"}
		tk, ok, _ := acquire(t, l, "h", pin, t0)
		if !ok || tk.Exit != "x01" {
			t.Fatalf("pinned Acquire = %v %v, want x01", tk.Exit, ok)
		}
		_, ok, next := acquire(t, l, "h", pin, t0.Add(time.Second))
		// 0.97 x 30/min paces every 2.06s; a pacer may let a request go
		// up to 2ms early to absorb timer lateness.
		if d := next.Sub(t0); ok || d < startInterval-2*time.Millisecond || d > startInterval {
			t.Errorf("second pinned Acquire ok=%v next=%v, want wait until about +%v, never switch", ok, d, startInterval)
		}
		if _, _, _, err := l.Acquire("h", limit.Want{Pin: "nope"}, t0); err == nil {
			t.Errorf("Acquire pinned to unknown exit: nil error, want ErrUnknownExit")
		}
	})
	t.Run("Avoid", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 3)
		for range 2 {
			tk, ok, _ := acquire(t, l, "h", limit.Want{Avoid: []string{"x00"}}, t0)
			if !ok || tk.Exit == "x00" {
				t.Fatalf("Acquire avoiding x00 = %q ok=%v", tk.Exit, ok)
			}
		}
		if _, ok, _ := acquire(t, l, "h", limit.Want{Avoid: []string{"x00"}}, t0); ok {
			t.Errorf("third Acquire avoiding x00 ok; only x00 is ready")
		}
	})
	t.Run("CancelGivesBackExactly", func(t *testing.T) {
		l := newLimiter(t, limit.Config{HostCeiling: limit.PerSecond(1)}, 1)
		for i := range 50 {
			tk, ok, _ := acquire(t, l, "h", limit.Want{}, t0)
			if !ok {
				t.Fatalf("Acquire #%d after %d cancels not ok: a cancel leaked a token", i, i)
			}
			l.Cancel(tk, t0)
			l.Cancel(tk, t0) // twice: must be ignored
		}
		s := l.Snapshot(t0)
		if s.InFlight != 0 || hostOf(s, "h").InFlight != 0 {
			t.Errorf("in flight after cancels: limiter %d host %d, want 0", s.InFlight, hostOf(s, "h").InFlight)
		}
		tk, ok, _ := acquire(t, l, "h", limit.Want{}, t0)
		if !ok {
			t.Fatal("Acquire after cancels not ok")
		}
		l.Done(tk, limit.Outcome{}, t0)
		l.Done(tk, limit.Outcome{}, t0)
		if c := hostOf(l.Snapshot(t0), "h").Counters; c.Requests != 1 || c.Canceled != 50 {
			t.Errorf("counters %+v, want 1 request and 50 cancels", c)
		}
	})
	t.Run("HostConcurrency", func(t *testing.T) {
		l := newLimiter(t, limit.Config{HostConcurrency: 2, MaxInFlight: 3}, 10)
		a, _, _ := acquire(t, l, "a", limit.Want{}, t0)
		acquire(t, l, "a", limit.Want{}, t0)
		if _, ok, next := acquire(t, l, "a", limit.Want{}, t0); ok || !next.After(t0) {
			t.Errorf("third in-flight Acquire on host a ok=%v next=%v, want refused with a recheck time", ok, next)
		}
		acquire(t, l, "b", limit.Want{}, t0)
		if _, ok, _ := acquire(t, l, "c", limit.Want{}, t0); ok {
			t.Errorf("fourth in-flight Acquire overall ok, MaxInFlight is 3")
		}
		l.Done(a, limit.Outcome{}, t0)
		if _, ok, _ := acquire(t, l, "a", limit.Want{}, t0); !ok {
			t.Errorf("Acquire after Done not ok")
		}
	})
	t.Run("HostCeiling", func(t *testing.T) {
		l := newLimiter(t, limit.Config{HostCeiling: limit.PerSecond(2)}, 100)
		n := 0
		for ms := 0; ms < 10_000; ms += 10 {
			now := t0.Add(time.Duration(ms) * time.Millisecond)
			for {
				tk, ok, _ := acquire(t, l, "h", limit.Want{}, now)
				if !ok {
					break
				}
				n++
				l.Done(tk, limit.Outcome{}, now)
			}
		}
		if n < 19 || n > 21 {
			t.Errorf("%d requests in 10s under a 2/s ceiling over 100 exits, want 20", n)
		}
	})
	t.Run("ThrottleCooldownAndFold", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 1)
		var tks []limit.Ticket
		now := t0
		for range 3 {
			tk, ok, next := acquire(t, l, "h", limit.Want{}, now)
			if !ok {
				now = next
				tk, _, _ = acquire(t, l, "h", limit.Want{}, now)
			}
			tks = append(tks, tk)
		}
		resp := now.Add(100 * time.Millisecond)
		for _, tk := range tks {
			l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 30 * time.Second}, resp)
		}
		ln, _ := laneOf(l.Snapshot(resp), "h", "x00")
		if ln.Throttled != 3 {
			t.Errorf("lane throttled count %d, want 3", ln.Throttled)
		}
		ceilings := 0
		for _, c := range hostOf(l.Snapshot(resp), "h").Changes {
			if c.What == "ceiling" {
				ceilings++
			}
		}
		if ceilings != 1 {
			t.Errorf("%d ceiling changes after one 429 burst, want 1 (one episode)", ceilings)
		}
		// Not before the Retry-After; a quarter more at most (the lane was
		// slowed to less than half the pace that drew the 429s: the wait
		// ends where the new pace puts its next request).
		if until := ln.CooldownUntil; until.Before(resp.Add(30*time.Second)) || until.After(resp.Add(30*time.Second+30*time.Second/4)) {
			t.Errorf("cooldown until %v, want 30 to 37.5 s after %v", until, resp)
		}
		if _, ok, next := acquire(t, l, "h", limit.Want{}, resp.Add(time.Second)); ok || next.Before(resp.Add(30*time.Second)) {
			t.Errorf("Acquire during cooldown ok=%v next=%v", ok, next)
		}
	})
	t.Run("ProxyFailureQuarantinesExit", func(t *testing.T) {
		l := newLimiter(t, limit.Config{QuarantineBase: 10 * time.Second}, 2)
		tk, _, _ := acquire(t, l, "a", limit.Want{Pin: "x00"}, t0)
		l.Done(tk, limit.Outcome{Verdict: verdict.ProxyFailure}, t0)
		for _, host := range []string{"a", "b"} {
			tk, ok, _ := acquire(t, l, host, limit.Want{}, t0.Add(time.Second))
			if !ok || tk.Exit != "x01" {
				t.Errorf("Acquire on %s during quarantine = %q ok=%v, want x01", host, tk.Exit, ok)
			}
		}
		_, ok, next := acquire(t, l, "b", limit.Want{Pin: "x00"}, t0.Add(time.Second))
		if ok || !next.Equal(t0.Add(10*time.Second)) {
			t.Errorf("pinned to quarantined exit ok=%v next=%v, want wait until +10s", ok, next.Sub(t0))
		}
		at := t0.Add(10 * time.Second)
		probe, ok, _ := acquire(t, l, "b", limit.Want{Pin: "x00"}, at)
		if !ok || !probe.Probe {
			t.Fatalf("after quarantine: ok=%v probe=%v, want one probe", ok, probe.Probe)
		}
		if _, ok, _ := acquire(t, l, "c", limit.Want{Pin: "x00"}, at); ok {
			t.Errorf("second request while the probe is out ok, want only one probe")
		}
		l.Done(probe, limit.Outcome{Verdict: verdict.ProxyFailure}, at)
		var ex limit.ExitSnapshot
		for _, e := range l.Snapshot(at).Exits {
			if e.ID == "x00" {
				ex = e
			}
		}
		if ex.Healthy || !ex.QuarantinedUntil.Equal(at.Add(20*time.Second).UTC()) {
			t.Errorf("after failed probe: %+v, want quarantine doubled to 20s", ex)
		}
		at = at.Add(20 * time.Second)
		probe, ok, _ = acquire(t, l, "a", limit.Want{Pin: "x00"}, at)
		if !ok || !probe.Probe {
			t.Fatalf("second probe ok=%v probe=%v", ok, probe.Probe)
		}
		l.Done(probe, limit.Outcome{}, at)
		if tk, ok, _ := acquire(t, l, "c", limit.Want{Pin: "x00"}, at); !ok || tk.Probe {
			t.Errorf("after good probe ok=%v probe=%v, want healthy", ok, tk.Probe)
		}
	})
	t.Run("BannedLaneOnly", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 2)
		tk, _, _ := acquire(t, l, "a", limit.Want{Pin: "x00"}, t0)
		l.Done(tk, limit.Outcome{Verdict: verdict.Banned}, t0)
		at := t0.Add(time.Minute)
		if _, ok, _ := acquire(t, l, "a", limit.Want{Pin: "x00"}, at); ok {
			t.Errorf("banned lane (a, x00) went a minute later")
		}
		if _, ok, _ := acquire(t, l, "b", limit.Want{Pin: "x00"}, at); !ok {
			t.Errorf("exit x00 refused on host b: a ban is per lane")
		}
	})
	t.Run("ForbiddenWave", func(t *testing.T) {
		// One forbidden URL, however often, is no wave; three URLs of the
		// lane forbidden within a minute, with no success between, are.
		// After a success of the lane's it is the limit refusing its
		// pace (rule wave): the lane waits 12 s, twice as long when
		// refused again with nothing let through between, and a later
		// wave at once as long as the hold that let a lane through. On a
		// lane with no success it is a ban. (x02 explores: x00 follows,
		// whose successes end a run of refusals.)
		l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(100)}, 3)
		at := t0
		tk, _, _ := acquire(t, l, "a", limit.Want{Pin: "x02"}, at)
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
		send := func(exit string, url uint64) {
			t.Helper()
			tk, ok, _ := acquire(t, l, "a", limit.Want{Pin: exit}, at)
			if !ok {
				t.Fatalf("lane (a, %s) refused at %v after Forbidden answers", exit, at.Sub(t0))
			}
			l.Done(tk, limit.Outcome{Verdict: verdict.Forbidden, URLHash: url}, at)
			at = at.Add(time.Second)
		}
		goes := func(exit string, after time.Duration) bool {
			tk, ok, _ := acquire(t, l, "a", limit.Want{Pin: exit}, at.Add(after))
			if ok {
				l.Cancel(tk, at.Add(after)) // (never sent: nothing spent)
			}
			return ok
		}
		tk, _, _ = acquire(t, l, "a", limit.Want{Pin: "x00"}, at)
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
		at = at.Add(time.Second)
		for range 4 {
			send("x00", 1)
		}
		send("x00", 2)
		tk, _, _ = acquire(t, l, "a", limit.Want{Pin: "x00"}, at)
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at) // a success ends the run
		at = at.Add(time.Second)
		send("x00", 3)
		send("x00", 4)
		if s := l.Snapshot(at); len(s.Hosts) != 1 || s.Hosts[0].Counters.Forbidden != 7 {
			t.Errorf("Snapshot counters = %+v, want 7 forbidden", s.Hosts)
		}
		send("x00", 5) // the third distinct URL since the success: a wave, after successes
		// (at is a second past the wave)
		if goes("x00", 10*time.Second) || !goes("x00", 12*time.Second) {
			t.Errorf("lane (a, x00) after a wave of refusals following its successes: want held 12 s, then let go")
		}
		if s := l.Snapshot(at); !hasChange(s.Hosts[0].Changes, "wave") || !s.Hosts[0].Lanes[0].BannedUntil.IsZero() {
			t.Errorf("after the wave: changes %+v, lanes %+v; want a change of rule wave and no ban", s.Hosts[0].Changes, s.Hosts[0].Lanes)
		} else if got := s.Hosts[0].Lanes[0].ThrottledSeconds; got != 12 {
			t.Errorf("after the wave: %.1f s throttled, want the 12 s hold (not the reading's 61)", got)
		}
		at = at.Add(13 * time.Second)
		send("x00", 10) // refused again, nothing let through: one answer tells
		if goes("x00", 22*time.Second) || !goes("x00", 24*time.Second) {
			t.Errorf("lane (a, x00) refused again after its hold: want held twice as long, 24 s")
		}
		at = at.Add(25 * time.Second)
		tk, _, _ = acquire(t, l, "a", limit.Want{Pin: "x00"}, at)
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at) // let through: 24 s was enough
		at = at.Add(time.Second)
		for url := range uint64(3) {
			send("x00", 30+url)
		}
		if goes("x00", 22*time.Second) || !goes("x00", 24*time.Second) {
			t.Errorf("lane (a, x00) in a wave after a hold of 24 s let it through: want held 24 s at once")
		}
		for url := range uint64(3) {
			send("x01", 20+url) // a lane that never had a success
		}
		if goes("x01", time.Minute) {
			t.Errorf("lane (a, x01) went a minute after a wave of Forbidden answers on its first requests: want a ban")
		}
	})
	t.Run("ForbiddenURLsAmongSuccesses", func(t *testing.T) {
		// A site where some URLs answer a bare 403 to everyone: 403s
		// between successes are those URLs' own, on the explorer and on
		// a follower alike. (Read as refusals when mixed with successes,
		// as nginx's limit_req_status 403 mixes them, a site with one URL
		// in five forbidden fell to a tenth of its pace in a reviewer's
		// scratch test of the limiter.)
		l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(100)}, 2)
		at := t0
		answer := func(exit string, v verdict.Verdict, url uint64) bool {
			t.Helper()
			tk, ok, _ := acquire(t, l, "a", limit.Want{Pin: exit}, at)
			if ok {
				l.Done(tk, limit.Outcome{Verdict: v, URLHash: url}, at)
			}
			at = at.Add(100 * time.Millisecond)
			return ok
		}
		answer("x00", verdict.OK, 0) // x00 explores
		for url := uint64(1); url <= 6; url++ {
			for _, exit := range []string{"x00", "x01"} {
				if !answer(exit, verdict.Forbidden, 10*url+uint64(len(exit))) || !answer(exit, verdict.OK, 0) {
					t.Fatalf("lane (a, %s) held at %v by 403s between successes", exit, at.Sub(t0))
				}
			}
		}
		if s := l.Snapshot(at); hasChange(s.Hosts[0].Changes, "wave") || hasChange(s.Hosts[0].Changes, "ban") {
			t.Errorf("403s between successes read as refusals or a ban: %+v", s.Hosts[0].Changes)
		}
	})
	t.Run("ForbiddenForGood", func(t *testing.T) {
		// A site that 403s an IP for good after some successes: read
		// as refusals first, the lane is held 12, 24, 48 and 96 s, and
		// refused after that it is banned (7 refusals, not 9 over 12.7
		// minutes); the ban's end and another wave is a ban again, no
		// refusal. A lone 403 long after a hold ran out is a URL's own.
		l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(100)}, 2)
		at := t0
		forbidden, sends := 0, 0
		tk, _, _ := acquire(t, l, "a", limit.Want{Pin: "x00"}, at)
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
		for url := uint64(1); at.Before(t0.Add(10 * time.Minute)); url++ {
			at = at.Add(time.Second)
			tk, ok, _ := acquire(t, l, "a", limit.Want{Pin: "x00"}, at)
			if !ok {
				continue
			}
			sends++
			l.Done(tk, limit.Outcome{Verdict: verdict.Forbidden, URLHash: url}, at)
			forbidden++
			if s := l.Snapshot(at); !s.Hosts[0].Lanes[0].BannedUntil.IsZero() {
				break
			}
		}
		if got := at.Sub(t0); forbidden != 7 || got > 4*time.Minute {
			t.Errorf("banned after %d refusals, %v on; want 7, within 4 minutes (12+24+48+96 s of holds)", forbidden, got)
		}
		// The ban's end: a wave again is a ban again.
		at = at.Add(11 * time.Minute)
		for url := uint64(100); url < 103; url++ {
			tk, ok, _ := acquire(t, l, "a", limit.Want{Pin: "x00"}, at)
			if !ok {
				t.Fatalf("lane (a, x00) refused at %v, after its ban", at.Sub(t0))
			}
			l.Done(tk, limit.Outcome{Verdict: verdict.Forbidden, URLHash: url}, at)
			at = at.Add(time.Second)
		}
		if s := l.Snapshot(at); s.Hosts[0].Lanes[0].BannedUntil.Before(at.Add(10 * time.Minute)) {
			t.Errorf("a wave after the ban's end: banned until %v, want a ban (doubled: 20 minutes)", s.Hosts[0].Lanes[0].BannedUntil.Sub(at))
		}

		// x01: a success, a wave (held 12 s), then, idle half an hour
		// since, a lone 403: a URL's own, no block still running.
		at = t0
		send := func(v verdict.Verdict, url uint64) {
			t.Helper()
			tk, ok, _ := acquire(t, l, "b", limit.Want{Pin: "x01"}, at)
			if !ok {
				t.Fatalf("lane (b, x01) refused at %v", at.Sub(t0))
			}
			l.Done(tk, limit.Outcome{Verdict: v, URLHash: url}, at)
			at = at.Add(time.Second)
		}
		send(verdict.OK, 0)
		for url := uint64(1); url <= 3; url++ {
			send(verdict.Forbidden, url)
		}
		at = at.Add(30 * time.Minute)
		send(verdict.Forbidden, 4)
		send(verdict.OK, 0) // not held: the lone 403 read nothing
	})
	t.Run("ProviderLimits", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 0)
		l.SetExits([]limit.Exit{{ID: "p", Rate: limit.PerSecond(1), Concurrency: 1}})
		tk, ok, _ := acquire(t, l, "a", limit.Want{}, t0)
		if !ok || !tk.ExitHeld {
			t.Fatalf("first Acquire ok=%v held=%v", ok, tk.ExitHeld)
		}
		if _, ok, _ := acquire(t, l, "b", limit.Want{}, t0.Add(2*time.Second)); ok {
			t.Errorf("second host went while the exit's one slot is held")
		}
		l.Done(tk, limit.Outcome{}, t0.Add(2*time.Second))
		// A lane blocked by a concurrency cap is rechecked after Recheck (20ms).
		if _, ok, _ := acquire(t, l, "b", limit.Want{}, t0.Add(2050*time.Millisecond)); !ok {
			t.Errorf("other host refused after the slot was released")
		}
		if _, ok, _ := acquire(t, l, "c", limit.Want{}, t0.Add(2100*time.Millisecond)); ok {
			t.Errorf("exit rate 1/s across hosts exceeded")
		}
	})
	t.Run("ScopeInference", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 6)
		now := t0
		for i := range 3 {
			tk, ok, _ := acquire(t, l, "site", limit.Want{}, now)
			if !ok {
				t.Fatalf("Acquire %d not ok", i)
			}
			l.Done(tk, limit.Outcome{Verdict: verdict.Throttled}, now.Add(50*time.Millisecond))
			now = now.Add(time.Second)
		}
		h := hostOf(l.Snapshot(now), "site")
		if h.Scope != limit.ScopeHost || h.Rate.IsZero() {
			t.Errorf("after 429s on 3 idle lanes: scope %v rate %v, want host with an AIMD rate", h.Scope, h.Rate)
		}
		if h.Phase != "shared" {
			t.Errorf("phase %q, want shared: the host's rate governs, not the lanes'", h.Phase)
		}
		// A per-IP host: 429s stay on one saturated lane.
		l2 := newLimiter(t, limit.Config{}, 1)
		saturate(t, l2, "ip", "x00", t0, 3)
		if s := hostOf(l2.Snapshot(t0), "ip").Scope; s != limit.ScopeExit {
			t.Errorf("429 on one saturated lane: scope %v, want exit", s)
		}
		// A header hint decides at once.
		tk, _, _ := acquire(t, l2, "api", limit.Want{}, t0)
		l2.Done(tk, limit.Outcome{Scope: limit.ScopeCredential}, t0)
		if s := hostOf(l2.Snapshot(t0), "api"); s.Scope != limit.ScopeCredential || !s.ScopeHinted {
			t.Errorf("hinted scope %v hinted=%v, want credential", s.Scope, s.ScopeHinted)
		}
	})
	t.Run("ScopeInferenceManyLanes", func(t *testing.T) {
		// A threshold above any fixed ring size still works: the evidence
		// ring is sized from the config.
		l := newLimiter(t, limit.Config{ScopeLanes: 12}, 14)
		now := t0
		for i := range 12 {
			tk, ok, _ := acquire(t, l, "site", limit.Want{}, now)
			if !ok {
				t.Fatalf("Acquire %d not ok", i)
			}
			l.Done(tk, limit.Outcome{Verdict: verdict.Throttled}, now.Add(50*time.Millisecond))
			now = now.Add(500 * time.Millisecond)
			if i < 11 && hostOf(l.Snapshot(now), "site").Scope == limit.ScopeHost {
				t.Fatalf("host-scoped after %d lanes, want 12", i+1)
			}
		}
		if s := hostOf(l.Snapshot(now), "site").Scope; s != limit.ScopeHost {
			t.Errorf("after 429s on 12 idle lanes with ScopeLanes 12: scope %v, want host", s)
		}
	})
	t.Run("OverloadRatesHost", func(t *testing.T) {
		// A 503 overload pauses the host and puts it under a host rate,
		// cut from what it was sent: one capacity for all exits. Said at
		// a warning, whatever the log level's debug (a flaky URL's 503s
		// held a host at 2/s of 40 with nothing said but the ETA).
		var logged strings.Builder
		l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(10),
			Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))}, 4)
		at := t0
		for i := range 8 {
			tk, ok, next := acquire(t, l, "h", limit.Want{}, at)
			if !ok {
				at = next
				tk, ok, _ = acquire(t, l, "h", limit.Want{}, at)
				if !ok {
					t.Fatalf("acquire %d refused at its next time", i)
				}
			}
			l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
		}
		if r := l.Snapshot(at).Hosts[0].Rate; !r.IsZero() {
			t.Fatalf("host rate %v before any overload, want none", r)
		}
		tk, _, _ := acquire(t, l, "h", limit.Want{}, at.Add(time.Second))
		l.Done(tk, limit.Outcome{Verdict: verdict.Busy, RetryAfter: 2 * time.Second}, at.Add(time.Second))
		hs := l.Snapshot(at.Add(time.Second)).Hosts[0]
		if hs.Rate.IsZero() || !hs.PausedUntil.Equal(at.Add(3*time.Second)) {
			t.Errorf("after a 503 with Retry-After 2s: rate %v paused until %v, want a host rate and a pause until +3s", hs.Rate, hs.PausedUntil.Sub(t0))
		}
		if got := logged.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "503 overload") || !strings.Contains(got, "the whole host held to") || !strings.Contains(got, "host=h") {
			t.Errorf("logged at warn:\n%s\nwant one warning that the host is held to one rate for its 503s", got)
		}
		if _, ok, _ := acquire(t, l, "h", limit.Want{}, at.Add(2*time.Second)); ok {
			t.Errorf("Acquire during the pause ok")
		}
		// Ten years' Retry-After is honoured as a day, as a 429's is (it
		// paused the host for the month a pause is bounded by).
		at = at.Add(4 * time.Second)
		tk, _, _ = acquire(t, l, "h", limit.Want{}, at)
		l.Done(tk, limit.Outcome{Verdict: verdict.Busy, RetryAfter: 10 * 365 * 24 * time.Hour}, at)
		if got := l.Snapshot(at).Hosts[0].PausedUntil.Sub(at); got != 24*time.Hour {
			t.Errorf("after a 503 with Retry-After of ten years: paused for %v, want 24h", got)
		}
	})
	t.Run("LoneBusy", func(t *testing.T) {
		// A 503 without Retry-After, alone among successes, is its URL's
		// own transient error: no host rate (every tenth URL of a direct
		// crawl answering 503 half the time held the host at 2/s of 40).
		// A second within 5 s is an overload, as before.
		l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(10)}, 1)
		at := t0
		step := func(v verdict.Verdict) {
			t.Helper()
			tk, ok, next := acquire(t, l, "h", limit.Want{}, at)
			if !ok {
				at = next
				if tk, ok, _ = acquire(t, l, "h", limit.Want{}, at); !ok {
					t.Fatalf("acquire refused at its next time")
				}
			}
			l.Done(tk, limit.Outcome{Verdict: v}, at)
			at = at.Add(200 * time.Millisecond)
		}
		for range 5 {
			step(verdict.OK)
		}
		step(verdict.Busy)
		if r := l.Snapshot(at).Hosts[0].Rate; !r.IsZero() {
			t.Fatalf("host rate %v after one 503 among successes, want none", r)
		}
		for range 3 {
			step(verdict.OK)
		}
		step(verdict.Busy)
		if r := l.Snapshot(at).Hosts[0].Rate; r.IsZero() {
			t.Errorf("no host rate after a second 503 within 5 s, want the overload's")
		}
	})
	t.Run("LaneBusy", func(t *testing.T) {
		// A 503 without Retry-After while another lane succeeds is a
		// per-IP limit's (nginx's limit_req answers 503 by default): the
		// lane's 429, no host rate, no pause. Alone, or with Retry-After,
		// it is an overload; right after the lane's own success, a lone
		// one is its URL's transient error (LoneBusy).
		for _, tc := range []struct {
			name    string
			peerOK  bool
			ownLast bool // the lane's own success came after the peer's
			ra      time.Duration
			rated   bool
			spent   bool // its headers say nothing remains of this client's quota
		}{
			{"another lane succeeds, no Retry-After", true, false, 0, false, false},
			{"another lane succeeds, then this one, no Retry-After", true, true, 0, false, false},
			{"another lane succeeds, Retry-After", true, false, 2 * time.Second, true, false},
			{"no other lane succeeds", false, false, 0, true, false},
			{"only this lane succeeds: the URL's own, once", false, true, 0, false, false},
			// connect-ratelimit's 503 with X-RateLimit-Remaining: -1: the
			// quota's refusal, with or without a peer's success.
			{"no other lane succeeds, nothing remaining", false, false, 0, false, true},
			{"Retry-After, nothing remaining", false, false, 2 * time.Second, false, true},
		} {
			l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(10)}, 4)
			at := t0
			tk, _, _ := acquire(t, l, "h", limit.Want{Pin: "x00"}, at)
			l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
			at = at.Add(5 * time.Second)
			if tc.peerOK {
				tk, _, _ := acquire(t, l, "h", limit.Want{Pin: "x02"}, at)
				l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
			}
			if tc.ownLast {
				at = at.Add(200 * time.Millisecond)
				tk, _, _ := acquire(t, l, "h", limit.Want{Pin: "x01"}, at)
				l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
			}
			at = at.Add(500 * time.Millisecond)
			tk, _, _ = acquire(t, l, "h", limit.Want{Pin: "x01"}, at)
			l.Done(tk, limit.Outcome{Verdict: verdict.Busy, RetryAfter: tc.ra, HasRemaining: tc.spent}, at)
			hs := hostOf(l.Snapshot(at), "h")
			if rated := !hs.Rate.IsZero(); rated != tc.rated {
				t.Errorf("%s: host rate %v, want one: %v", tc.name, hs.Rate, tc.rated)
			}
			if !tc.rated && !hs.PausedUntil.IsZero() {
				t.Errorf("%s: host paused until %v, want no pause", tc.name, hs.PausedUntil.Sub(t0))
			}
		}
	})
	t.Run("EarlyWarning", func(t *testing.T) {
		l := newLimiter(t, limit.Config{}, 4)
		now := t0
		for i := range 4 {
			tk, _, _ := acquire(t, l, "h", limit.Want{Pin: fmt.Sprintf("x%02d", i)}, now)
			l.Done(tk, limit.Outcome{}, now)
		}
		// x03 alone is pushed back, episode after episode: its own budget
		// is smaller, and its pace falls under half its peers' median.
		for range 10 {
			now = saturate(t, l, "h", "x03", now, 2)
			if ln, _ := laneOf(l.Snapshot(now), "h", "x03"); ln.Rate.Hz() < 0.5*0.25 {
				break
			}
		}
		s := l.Snapshot(now)
		var warned []string
		for _, e := range s.Exits {
			if len(e.Warnings) > 0 {
				warned = append(warned, e.ID)
			}
		}
		if !slices.Equal(warned, []string{"x03"}) {
			t.Errorf("exits with early warnings %v, want [x03]", warned)
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		l := newLimiter(t, limit.Config{IdleTTL: time.Minute}, 2)
		tk, _, _ := acquire(t, l, "old", limit.Want{}, t0)
		l.Done(tk, limit.Outcome{}, t0)
		later := t0.Add(10 * time.Minute)
		acquire(t, l, "new", limit.Want{}, later)
		for _, h := range l.Snapshot(later).Hosts {
			if h.Host == "old" {
				t.Errorf("host idle for 10x IdleTTL still held")
			}
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		l := newLimiter(t, limit.Config{HostConcurrency: 8, MaxInFlight: 16}, 50)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 500 {
					now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
					host := fmt.Sprintf("h%d", (g+i)%3)
					tk, ok, _, err := l.Acquire(host, limit.Want{}, now)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						continue
					}
					switch i % 3 {
					case 0:
						l.Cancel(tk, now)
					case 1:
						l.Done(tk, limit.Outcome{Verdict: verdict.Throttled}, now)
					default:
						l.Done(tk, limit.Outcome{}, now)
					}
				}
			})
		}
		wg.Wait()
		s := l.Snapshot(t0)
		if s.InFlight != 0 {
			t.Errorf("in flight after all settled: %d, want 0", s.InFlight)
		}
		for _, h := range s.Hosts {
			if h.InFlight != 0 {
				t.Errorf("host %s in flight %d, want 0", h.Host, h.InFlight)
			}
		}
	})
}

// TestResumedOnSpentBudgets: a crawl resumed a moment after another spent
// every exit's budget is pushed back at each lane's first request. The host
// was restored knowing its limit per IP: neither the pace nor the scope is
// read from those 429s, and once the Retry-After is over every lane sends
// at the learned pace (it had read as a site-wide limit, 15/min for all
// exits, for the half hour scope takes to revert).
func TestResumedOnSpentBudgets(t *testing.T) {
	l := newLimiter(t, limit.Config{}, 10)
	now := t0
	n, err := l.Restore(limit.Learned{Saved: now, Hosts: []limit.LearnedHost{{
		Host: "h", Scope: limit.ScopeExit, Phase: "settled", At: now.Add(-8 * time.Second),
		LaneRate: 0.3, Pass: 0.31, Ceiling: 0.35, Estimate: 0.3, Sent: 0.31,
	}}}, now)
	if n != 1 || err != nil {
		t.Fatalf("Restore = %d, %v", n, err)
	}
	at := now.Add(100 * time.Millisecond)
	for i := range 10 {
		tk, ok, _ := acquire(t, l, "h", limit.Want{}, at)
		if !ok {
			t.Fatalf("lane %d: not admitted at once", i)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 10 * time.Second}, at.Add(5*time.Millisecond))
		at = at.Add(10 * time.Millisecond)
	}
	h := hostOf(l.Snapshot(at), "h")
	if h.Scope != limit.ScopeExit {
		t.Errorf("after each lane's first request was pushed back: scope %v, want per exit", h.Scope)
	}
	if h.LaneRate.Hz() < 0.29 {
		t.Errorf("lane rate %v, want the learned 0.3/s kept", h.LaneRate)
	}
}

// TestExplorerExitFails: the explorer's exit fails as a proxy (the pool
// quarantines it for every host): the next lane taken explores, and the
// search goes on. It once waited on the dead exit for good, every
// follower at the first guess's pace (one dead proxy of four: 0.9
// successes a second where three good ones gave 51).
func TestExplorerExitFails(t *testing.T) {
	const host = "a.example"
	l := newLimiter(t, limit.Config{}, 4)
	now := t0
	tk, ok, _ := acquire(t, l, host, limit.Want{}, now)
	if !ok {
		t.Fatal("first Acquire not ok")
	}
	dead := tk.Exit
	if hs := hostOf(l.Snapshot(now), host); hs.Explorer != dead {
		t.Fatalf("explorer %q, want the first lane taken, %q", hs.Explorer, dead)
	}
	l.Done(tk, limit.Outcome{Verdict: verdict.ProxyFailure}, now)
	if hs := hostOf(l.Snapshot(now), host); hs.Explorer == dead {
		t.Fatalf("explorer still %q after its exit failed as a proxy; changes %+v", dead, hs.Changes)
	}
	// Every other lane answers at once for 30 s, the dead exit never.
	for end := now.Add(30 * time.Second); now.Before(end); {
		tk, ok, next := acquire(t, l, host, limit.Want{Avoid: []string{dead}}, now)
		if !ok {
			now = next
			continue
		}
		if tk.Exit == dead {
			t.Fatalf("the dead exit %q was taken at %v", dead, now.Sub(t0))
		}
		l.Done(tk, limit.Outcome{}, now)
	}
	hs := hostOf(l.Snapshot(now), host)
	if hs.Explorer == "" || hs.Explorer == dead {
		t.Fatalf("explorer %q after 30 s, want one of the live lanes", hs.Explorer)
	}
	if got := hs.LaneRate.Hz(); got < 4*startPace {
		t.Errorf("the followers hold %.3g/s after 30 s of successes, want the search to have gone on past %.3g/s; changes %+v",
			got, 4*startPace, hs.Changes)
	}
}

// TestRampAfterIdle: a host sent a few requests, then left idle, ramps up
// when load comes back as a fresh host does. It once stayed at the first
// guess: the explorer's run spanned the idle time and read as unsaturated
// for minutes (a gateway warmed with 3 requests, then 30 clients after 10 s
// idle: 54 answers and 246 "wait budget spent" in 41 s, the server never
// pushing back).
func TestRampAfterIdle(t *testing.T) {
	for _, idle := range []time.Duration{0, 10 * time.Second, 30 * time.Second} {
		t.Run(idle.String(), func(t *testing.T) {
			const host = "a.example"
			l := newLimiter(t, limit.Config{}, 4)
			now := t0
			for range 3 { // warm: three requests 0.7 s apart
				tk, ok, next := acquire(t, l, host, limit.Want{}, now)
				if !ok {
					now = next
					tk, ok, _ = acquire(t, l, host, limit.Want{}, now)
					if !ok {
						t.Fatal("not admitted at its time")
					}
				}
				l.Done(tk, limit.Outcome{}, now.Add(5*time.Millisecond))
				now = now.Add(700 * time.Millisecond)
			}
			now = now.Add(idle)
			n := 0
			for end := now.Add(30 * time.Second); now.Before(end); {
				tk, ok, next := acquire(t, l, host, limit.Want{}, now)
				if !ok {
					now = next
					continue
				}
				l.Done(tk, limit.Outcome{}, now.Add(5*time.Millisecond))
				n++
			}
			hs := hostOf(l.Snapshot(now), host)
			t.Logf("idle %v: %d in 30 s; lane rate %v explorer %q phase %s", idle, n, hs.LaneRate, hs.Explorer, hs.Phase)
			if n < 300 {
				t.Errorf("idle %v: %d requests in the 30 s of load, want the ramp to go on (>= 300); changes %+v", idle, n, hs.Changes)
			}
		})
	}
}

// A wait the server asked for outlives the run: saved with what was learned
// (a host that learned nothing else kept for it alone) and honoured by the
// next run's limiter. A crawl stopped within a Retry-After: 60 asked the
// server again 5 s later on its next run.
func TestLearnedKeepsWaits(t *testing.T) {
	l, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l.SetExits([]limit.Exit{{ID: "e"}, {ID: "f"}})
	tk, ok, _, err := l.Acquire("h", limit.Want{Pin: "e"}, t0)
	if !ok || err != nil {
		t.Fatalf("first Acquire = %v, %v", ok, err)
	}
	l.Done(tk, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: time.Minute, SentAt: t0}, t0.Add(100*time.Millisecond))
	saved := l.Learned(t0.Add(5 * time.Second))
	if len(saved.Hosts) != 1 || len(saved.Hosts[0].Waits) != 1 || saved.Hosts[0].Waits[0].Exit != "e" {
		t.Fatalf("Learned = %+v, want host h kept for lane e's wait", saved.Hosts)
	}
	raw, err := json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	var back limit.Learned
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	next, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	next.SetExits([]limit.Exit{{ID: "e"}, {ID: "f"}})
	now := t0.Add(5 * time.Second)
	if _, err := next.Restore(back, now); err != nil {
		t.Fatal(err)
	}
	if _, ok, at, _ := next.Acquire("h", limit.Want{Pin: "e"}, now); ok || at.Before(t0.Add(time.Minute)) {
		t.Errorf("lane e after the restore: ok %v, next %v; want it held to the Retry-After's end, %v", ok, at.Sub(t0), time.Minute)
	}
	if _, ok, _, _ := next.Acquire("h", limit.Want{Pin: "f"}, now); !ok {
		t.Errorf("lane f after the restore: held, want it free (the server asked nothing of it)")
	}
	// What the restored wait holds of this run is its time throttled (a
	// resumed crawl held by one said 0 s).
	hs := next.Snapshot(now).Hosts[0]
	var until time.Time
	for _, ln := range hs.Lanes {
		if ln.Exit == "e" {
			until = ln.CooldownUntil
		}
	}
	if got, want := time.Duration(hs.Counters.ThrottledNs), until.Sub(now); got != want || want < 55*time.Second {
		t.Errorf("throttled after the restore = %v, want the wait ahead, %v", got, want)
	}
}

// TestLearnedDeclaredRoundTrip: a host whose server declares its quota is
// saved with the time it learned it, and restored: it was saved as learned
// in 1970 and dropped by Restore as 56 years old. A quota the server calls
// unlimited is saved so that Restore takes it back.
func TestLearnedDeclaredRoundTrip(t *testing.T) {
	for _, quota := range []float64{600, 2147483647} {
		l, err := limit.New(limit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		l.SetExits(exits(2))
		now := t0
		for i := range 5 {
			tk, ok, _, _ := l.Acquire("h", limit.Want{}, now)
			if !ok {
				now = now.Add(time.Second)
				continue
			}
			l.Done(tk, limit.Outcome{Verdict: verdict.OK, SentAt: now, Quota: quota, Window: time.Second,
				Remaining: quota - float64(i) - 1, HasRemaining: true, ResetIn: time.Second, HasReset: true}, now)
			now = now.Add(100 * time.Millisecond)
		}
		saved := l.Learned(now)
		if len(saved.Hosts) != 1 || saved.Hosts[0].At.Before(t0) {
			t.Fatalf("quota %v: Learned = %+v, want host h learned at %v or after", quota, saved.Hosts, t0)
		}
		raw, _ := json.Marshal(saved)
		var back limit.Learned
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		next, _ := limit.New(limit.Config{})
		next.SetExits(exits(2))
		if n, err := next.Restore(back, now.Add(time.Second)); n != 1 || err != nil {
			t.Errorf("quota %v: Restore a second later = %d, %v; want the host restored", quota, n, err)
		}
	}
}

// TestRestoreSkipsLanesOfOtherExits: lanes saved for exits the pool does not
// have (a resume with another proxy list, a hostile file) are not restored:
// they sat in the host's heap, each Acquire cleared a few and answered a
// "next" in 1970, and 10,000 of them held the first request 6 s.
func TestRestoreSkipsLanesOfOtherExits(t *testing.T) {
	l, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l.SetExits([]limit.Exit{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	lh := limit.LearnedHost{Host: "h", Phase: "settled", LaneRate: 1, At: t0}
	for i := range 10000 {
		lh.Lanes = append(lh.Lanes, limit.LearnedLane{Exit: fmt.Sprintf("ghost%d", i), Own: 0.1})
	}
	lh.Lanes = append(lh.Lanes, limit.LearnedLane{Exit: "b", Own: 0.5})
	if _, err := l.Restore(limit.Learned{Saved: t0, Hosts: []limit.LearnedHost{lh}}, t0); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Snapshot(t0).Hosts[0].Lanes); n > 3 {
		t.Errorf("%d lanes after the restore, want the pool's 3 at most", n)
	}
	_, ok, next, err := l.Acquire("h", limit.Want{}, t0)
	if err != nil || (!ok && !next.After(t0)) {
		t.Errorf("first Acquire after the restore: ok %v, next %v, %v; want a lane, or a next time ahead", ok, next, err)
	}
}

// TestZeroTimeIsNow: a now the limiter's nanoseconds cannot hold (a zero
// time.Time, the year 3000) is read as the clock's: a Done at the zero time
// poisoned its host, whose next Acquire panicked.
func TestZeroTimeIsNow(t *testing.T) {
	for _, bad := range []time.Time{{}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		l, err := limit.New(limit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		l.SetExits([]limit.Exit{{ID: "a"}, {ID: "b"}})
		now := time.Unix(1.9e9, 0)
		for range 5 {
			tk, ok, next, _ := l.Acquire("h", limit.Want{}, now)
			if !ok {
				now = next
				tk, ok, _, _ = l.Acquire("h", limit.Want{}, now)
			}
			if ok {
				l.Done(tk, limit.Outcome{Verdict: verdict.OK}, now)
			}
		}
		tk, ok, _, _ := l.Acquire("h", limit.Want{}, now)
		if !ok {
			now = now.Add(10 * time.Second)
			tk, _, _, _ = l.Acquire("h", limit.Want{}, now)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.Throttled}, bad)
		for _, d := range []time.Duration{time.Second, time.Minute, time.Hour, 25 * time.Hour} {
			l.Acquire("h", limit.Want{}, now.Add(d)) // it panicked here
		}
		l.Snapshot(bad)
	}
}

// TestOutcomeNaNLeftOut: a NaN or infinite number in an Outcome built by
// hand is left out: it made every later Snapshot fail to encode as JSON.
func TestOutcomeNaNLeftOut(t *testing.T) {
	l, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l.SetExits([]limit.Exit{{ID: "a"}, {ID: "b"}})
	now := time.Unix(1.9e9, 0)
	for i := range 40 {
		tk, ok, next, _ := l.Acquire("h", limit.Want{}, now)
		if !ok {
			now = next
			continue
		}
		o := limit.Outcome{Verdict: verdict.OK, Quota: math.NaN(), Window: time.Minute, Remaining: math.NaN(), HasRemaining: true, ResetIn: time.Minute}
		if i%7 == 6 {
			o.Verdict, o.Quota = verdict.Throttled, math.Inf(1)
		}
		l.Done(tk, o, now)
	}
	if _, err := json.Marshal(l.Snapshot(now)); err != nil {
		t.Errorf("Snapshot after NaN outcomes: %v", err)
	}
	if _, err := json.Marshal(l.Learned(now)); err != nil {
		t.Errorf("Learned after NaN outcomes: %v", err)
	}
}

// TestTicketOfAnotherLimiterIgnored: a ticket is released only by the
// Limiter that granted it. Seq starts at 1 per host in every Limiter: b's
// Done with a's ticket released b's own and taught its lane an hour's
// cooldown.
func TestTicketOfAnotherLimiterIgnored(t *testing.T) {
	mk := func() *limit.Limiter {
		l, err := limit.New(limit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		l.SetExits([]limit.Exit{{ID: "a"}})
		return l
	}
	a, b := mk(), mk()
	now := time.Now()
	ta, ok1, _, _ := a.Acquire("h", limit.Want{}, now)
	tb, ok2, _, _ := b.Acquire("h", limit.Want{}, now)
	if !ok1 || !ok2 || ta.Seq != tb.Seq {
		t.Fatalf("tickets %+v %+v, want one each with the same Seq", ta, tb)
	}
	b.Done(ta, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: time.Hour}, now)
	hs := b.Snapshot(now).Hosts[0]
	if hs.InFlight != 1 || hs.Lanes[0].CooldownUntil.After(now) {
		t.Errorf("b after a's ticket: %d in flight, cooling until %v; want its own still out, no cooldown", hs.InFlight, hs.Lanes[0].CooldownUntil)
	}
	b.Done(tb, limit.Outcome{Verdict: verdict.OK}, now)
	if n := b.Snapshot(now).Hosts[0].InFlight; n != 0 {
		t.Errorf("b after its own ticket: %d in flight", n)
	}
}

// TestLaneShareOfHost: a lane holding its share of a host's requests in
// flight (twice the even share of HostConcurrency over the pool) is passed
// over while other lanes may go: a server that slowed one address held all
// 16 of a host's requests on its lane, the other nine lanes idle.
func TestLaneShareOfHost(t *testing.T) {
	l := newLimiter(t, limit.Config{FirstGuess: limit.PerSecond(100), HostConcurrency: 16}, 10)
	at := t0
	for range 4 { // x00's share: 2 × 16/10 rounded up, held by slow answers
		_, ok, next := acquire(t, l, "h", limit.Want{Pin: "x00"}, at)
		if !ok {
			at = next
			if _, ok, _ = acquire(t, l, "h", limit.Want{Pin: "x00"}, at); !ok {
				t.Fatal("pinned acquire refused at its next time")
			}
		}
	}
	at = at.Add(10 * time.Second) // x00's lane is the one due longest ago now
	on := map[string]int{}
	var others []limit.Ticket
	for range 12 {
		at = at.Add(20 * time.Millisecond) // every lane may go again (100/s)
		tk, ok, next := acquire(t, l, "h", limit.Want{}, at)
		if !ok {
			at = next
			if tk, ok, _ = acquire(t, l, "h", limit.Want{}, at); !ok {
				t.Fatal("acquire refused at its next time under the host's concurrency")
			}
		}
		on[tk.Exit]++
		others = append(others, tk)
	}
	if on["x00"] != 0 {
		t.Errorf("the lane at its share took %d more requests, want none while others may go (%v)", on["x00"], on)
	}
	// With every other lane banned, it still takes the host's requests:
	// the share holds only while another lane can go.
	for _, tk := range others {
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, at)
	}
	for i := 1; i < 10; i++ {
		l.Quarantine("h", fmt.Sprintf("x%02d", i), at.Add(time.Hour), "test", at)
	}
	at = at.Add(time.Second)
	if tk, ok, _ := acquire(t, l, "h", limit.Want{}, at); !ok || tk.Exit != "x00" {
		t.Errorf("with the other lanes banned: %v %v, want x00 over its share", tk.Exit, ok)
	}
}

// hasChange reports whether changes hold one made by rule.
func hasChange(changes []limit.Change, rule string) bool {
	return slices.ContainsFunc(changes, func(c limit.Change) bool { return c.Rule == rule })
}
