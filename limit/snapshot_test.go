package limit_test

import (
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// TestSnapshotThrottledTime: the cooldown a 429's Retry-After imposes is
// counted on the lane, a later longer Retry-After from a request already in
// flight adds only the extension, and the host counts the same.
func TestSnapshotThrottledTime(t *testing.T) {
	l := newTestLimiter(t, limit.Config{FirstGuess: limit.PerSecond(10)}, "x")
	now := time.Unix(1_800_000_000, 0)
	t1, ok, _, err := l.Acquire("h", limit.Want{}, now)
	if !ok || err != nil {
		t.Fatalf("first acquire: %v %v", ok, err)
	}
	t2, ok, _, err := l.Acquire("h", limit.Want{}, now.Add(110*time.Millisecond)) // 0.97 x 10/s
	if !ok || err != nil {
		t.Fatalf("second acquire: %v %v", ok, err)
	}
	l.Done(t1, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 2 * time.Second}, now.Add(200*time.Millisecond))
	// Sent before the episode began: only its longer wait is news (3s from
	// 0.5s ends 1.3s after the first cooldown would have).
	l.Done(t2, limit.Outcome{Verdict: verdict.Throttled, RetryAfter: 3 * time.Second, SentAt: t2.At}, now.Add(500*time.Millisecond))
	s := l.Snapshot(now.Add(time.Second))
	if len(s.Hosts) != 1 || len(s.Hosts[0].Lanes) != 1 {
		t.Fatalf("snapshot = %+v, want one host with one lane", s)
	}
	if got := s.Hosts[0].Lanes[0].ThrottledSeconds; got != 3.3 {
		t.Errorf("lane throttled %v s, want 3.3 (2 s, then 1.3 s more)", got)
	}
	if got := s.Hosts[0].Counters.ThrottledNs; got != int64(3300*time.Millisecond) {
		t.Errorf("host throttled %v, want 3.3s", time.Duration(got))
	}
}
