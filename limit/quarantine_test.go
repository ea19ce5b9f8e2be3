package limit_test

import (
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

func TestQuarantine(t *testing.T) {
	l := newLimiter(t, limit.Config{}, 3)
	now := t0
	if l.Quarantine("a.test", "x00", now.Add(time.Minute), "test", now) {
		t.Fatalf("Quarantine of a lane never used = true, want false")
	}
	// Make every lane of a.test.
	for _, x := range []string{"x00", "x01", "x02"} {
		tk, ok, _ := acquire(t, l, "a.test", limit.Want{Pin: x}, now)
		if !ok {
			t.Fatalf("first request on %s refused", x)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, now)
	}
	until := now.Add(10 * time.Minute)
	if !l.Quarantine("a.test", "x01", until, "draws 429s at half its peers' pace", now) {
		t.Fatalf("Quarantine(a.test, x01) = false, want true")
	}
	s := l.Snapshot(now)
	ln, _ := laneOf(s, "a.test", "x01")
	if !ln.BannedUntil.Equal(until.UTC()) {
		t.Errorf("x01 BannedUntil = %v, want %v", ln.BannedUntil, until.UTC())
	}
	h := hostOf(s, "a.test")
	last := h.Changes[len(h.Changes)-1]
	if last.Rule != "reputation" || last.Lane != "x01" || last.To != 600 {
		t.Errorf("last change = %+v, want rule reputation on x01 to 600 s", last)
	}
	if h.Counters.Banned != 0 || ln.Bans != 0 {
		t.Errorf("a quarantine counted as a ban: host %d, lane %d", h.Counters.Banned, ln.Bans)
	}
	// A shorter quarantine does not shorten it.
	l.Quarantine("a.test", "x01", now.Add(time.Minute), "shorter", now)
	if ln, _ := laneOf(l.Snapshot(now), "a.test", "x01"); !ln.BannedUntil.Equal(until.UTC()) {
		t.Errorf("after a shorter quarantine BannedUntil = %v, want %v", ln.BannedUntil, until.UTC())
	}
	// Pinned to x01, a request waits for the quarantine; unpinned ones go
	// through the other exits.
	later := now.Add(5 * time.Second)
	if _, ok, next := acquire(t, l, "a.test", limit.Want{Pin: "x01"}, later); ok || next.Before(until) {
		t.Errorf("pinned to the quarantined exit: ok=%v next=%v, want refused until %v", ok, next, until)
	}
	for range 6 {
		tk, ok, next := acquire(t, l, "a.test", limit.Want{}, later)
		if !ok {
			later = next
			continue
		}
		if tk.Exit == "x01" {
			t.Fatalf("a request went through the quarantined exit at %v", later)
		}
		l.Done(tk, limit.Outcome{Verdict: verdict.OK}, later)
	}
	// The exit serves other hosts meanwhile.
	tk, ok, _ := acquire(t, l, "b.test", limit.Want{Pin: "x01"}, later)
	if !ok {
		t.Fatalf("x01 refused on b.test while quarantined on a.test only")
	}
	l.Done(tk, limit.Outcome{Verdict: verdict.OK}, later)
	// After the quarantine the lane goes again.
	if _, ok, _ := acquire(t, l, "a.test", limit.Want{Pin: "x01"}, until.Add(time.Millisecond)); !ok {
		t.Errorf("x01 refused on a.test after its quarantine ended")
	}
}
