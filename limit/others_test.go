package limit

import (
	"testing"
	"time"
)

// othersShare is a HostShare in memory for one Limiter that leads its
// hosts' search in a fleet of three: the view the other workers' lanes
// left (their 429s as evidence) and what this one publishes. (The real one
// is redisstate's, tested on a real redis-server.)
type othersShare struct {
	view      HostView
	published []HostView
}

func (s *othersShare) Admit(string, float64, float64, time.Time) (bool, time.Time) {
	return true, time.Time{}
}
func (s *othersShare) Publish(_ string, v HostView, _ time.Time) {
	s.published = append(s.published, v)
}
func (s *othersShare) View(string) (HostView, bool) { return s.view, true }
func (s *othersShare) Workers() int                 { return 3 }
func (s *othersShare) Leads(string) bool            { return true }

// TestOthersFollowersFall: the followers of other workers pushed back at
// the pace the leader published, several at once: the leader falls back
// and publishes the lower pace in that Acquire, whether or not any answer
// of its own comes; their 429s at the old pace that arrive before they
// hear of it are the same fall, not one each; a 429 at the new pace is
// news again. (After a Redis restart the leader, its lanes held back by
// the fall, published nothing for 18 s, and cut its pace five times on the
// old pace's 429s: nginx saw 27 429s in 427 requests.)
func TestOthersFollowersFall(t *testing.T) {
	const name = "o.example"
	sh := &othersShare{}
	l, err := New(Config{Shared: sh})
	if err != nil {
		t.Fatal(err)
	}
	l.SetExits([]Exit{{ID: "x0"}, {ID: "x1"}})
	at := func(s float64) time.Time { return time.Unix(0, sec(s)) }
	acquireAt := func(s float64) {
		t.Helper()
		if _, _, _, err := l.Acquire(name, Want{}, at(s)); err != nil {
			t.Fatal(err)
		}
	}
	acquireAt(0)
	// The search is past its ramp, its followers at 7.5/s: what the
	// leader published before the outage.
	h := l.tab.shard(name).hosts[name] // one goroutine: no lock needed
	r := l.rules
	h.exp.phase = expRefine
	h.cap.pass, h.cap.sent, h.cap.safe, h.cap.at = 7.76, 7.76, 7.76, sec(0)
	r.updateFollow(h, sec(0), "test", "")
	old := h.cap.follow
	h.pubFollow = old
	if old < 7 {
		t.Fatalf("followers at %.3g/s, want about 7.5/s", old)
	}
	others := func(s, pace float64, lanes ...string) {
		for _, x := range lanes {
			sh.view.Evidence = append(sh.view.Evidence, Evidence{Exit: x, At: at(s), Pace: pace})
		}
	}
	others(1, old, "o1", "o2")
	sh.published = nil
	acquireAt(1)
	fell := h.cap.follow
	if fell >= old*0.9 {
		t.Fatalf("two followers of other workers pushed back at %.3g/s: the followers at %.3g/s, want a fall", old, fell)
	}
	if len(sh.published) == 0 || sh.published[len(sh.published)-1].Follow != fell {
		t.Fatalf("after the fall, published %+v in the Acquire; want the followers' %.3g/s", sh.published, fell)
	}
	// Their lanes go on at the old pace until they hear: the same fall.
	for i, s := range []float64{1.5, 2.2, 3, 4.1} {
		others(s, old, "o1", "o2", "o3", "o4")
		acquireAt(s)
		if h.cap.follow != fell {
			t.Fatalf("429s at the old %.3g/s, %d of them after the fall: the followers at %.3g/s, want %.3g/s held", old, i+1, h.cap.follow, fell)
		}
	}
	// Pushed back at the new pace, several at once: news.
	others(6, fell, "o1", "o2")
	acquireAt(6)
	if h.cap.follow >= fell {
		t.Fatalf("two followers pushed back at the new %.3g/s: the followers at %.3g/s, want a fall", fell, h.cap.follow)
	}
}

// sizedShare is othersShare that knows the fleet's pool (HostShare.Exits).
type sizedShare struct {
	othersShare
	exits int
}

func (s *sizedShare) Exits() int { return s.exits }

// TestOthersLanes: the other workers' lanes are the pool less this
// Limiter's exits where the HostShare knows the pool, whatever this one
// holds (the leader holds three of ten in a fleet of eight, rendezvous.Share:
// counted as a fair share each, 3 x 8 = 24 lanes made manyLanes 12 of the
// ten there are, every lane pushed back read as its own budget, and the
// simulated fleet drew 4.6% 429s over a run whose limit halves at 60 s,
// where one limiter draws 1.9%); and this one's lanes times the others'
// number where it does not.
func TestOthersLanes(t *testing.T) {
	for _, c := range []struct {
		pool, many, others int
	}{{0, 5, 6}, {6, 3, 3}} {
		var sh HostShare = &othersShare{}
		if c.pool > 0 {
			sh = &sizedShare{exits: c.pool}
		}
		l, err := New(Config{Shared: sh})
		if err != nil {
			t.Fatal(err)
		}
		l.SetExits([]Exit{{ID: "x0"}, {ID: "x1"}, {ID: "x2"}})
		for i := range 3 {
			if _, _, _, err := l.Acquire("h", Want{}, time.Unix(0, sec(float64(i)))); err != nil {
				t.Fatal(err)
			}
		}
		h := l.tab.shard("h").hosts["h"]
		if len(h.lanes) != 3 {
			t.Fatalf("pool %d: %d lanes, want 3", c.pool, len(h.lanes))
		}
		// A fleet of three (othersShare.Workers).
		if got := h.othersLanes(); got != c.others {
			t.Errorf("pool %d: othersLanes %d, want %d", c.pool, got, c.others)
		}
		if got := h.manyLanes(); got != c.many {
			t.Errorf("pool %d: manyLanes %d, want %d", c.pool, got, c.many)
		}
	}
}
