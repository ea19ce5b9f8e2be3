package limit_test

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/limit/memstore"
	"github.com/exitgate/exitgate/verdict"
)

// base is the virtual epoch of every simulation.
var base = time.Unix(1_800_000_000, 0)

// bucketServer is a per-IP token-bucket server that sends no headers: the
// hardest case for learning, as only 429s and their timing carry information.
type bucketServer struct {
	rate, burst   float64 // tokens per second, bucket size
	countRejected bool    // a rejected request also costs a token (HAProxy-style)
	tokens        map[string]float64
	at            map[string]time.Time
}

func newBucketServer(r limit.Rate, burst float64) *bucketServer {
	return &bucketServer{rate: r.Hz(), burst: burst, tokens: map[string]float64{}, at: map[string]time.Time{}}
}

func (s *bucketServer) hit(ip string, now time.Time) bool {
	tok, ok := s.tokens[ip]
	if !ok {
		tok = s.burst
	} else {
		tok = math.Min(s.burst, tok+now.Sub(s.at[ip]).Seconds()*s.rate)
	}
	s.at[ip] = now
	if tok >= 1 {
		s.tokens[ip] = tok - 1
		return true
	}
	if s.countRejected {
		tok = math.Max(tok-1, -s.burst)
	}
	s.tokens[ip] = tok
	return false
}

// windowServer declares a fixed-window quota in headers (limit, remaining,
// reset) and records every window's count so tests can check it.
type windowServer struct {
	quota  float64
	window time.Duration
	counts map[string]map[int64]float64
}

func (s *windowServer) hit(ip string, now time.Time) (bool, limit.Outcome) {
	w := now.Sub(base).Nanoseconds() / s.window.Nanoseconds()
	if s.counts[ip] == nil {
		s.counts[ip] = map[int64]float64{}
	}
	s.counts[ip][w]++
	n := s.counts[ip][w]
	reset := base.Add(time.Duration(w+1) * s.window).Sub(now)
	o := limit.Outcome{Quota: s.quota, Window: s.window, Remaining: math.Max(0, s.quota-n), HasRemaining: true, ResetIn: reset}
	if n > s.quota {
		o.Verdict = verdict.Throttled
		return false, o
	}
	return true, o
}

type simEvent struct {
	at     time.Time
	arrive bool // else: response reaches the client
	t      limit.Ticket
	sent   time.Time
	out    limit.Outcome
}

type evQueue []*simEvent

func (q evQueue) Len() int           { return len(q) }
func (q evQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q evQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *evQueue) Push(x any)        { *q = append(*q, x.(*simEvent)) }
func (q *evQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simResult struct {
	ok, rejected int // counted after warmup
	util         float64
	ratio429     float64
	lim          *limit.Limiter
}

func (r simResult) String() string {
	return fmt.Sprintf("util=%.1f%% 429=%.2f%% (ok=%d rejected=%d)", 100*r.util, 100*r.ratio429, r.ok, r.rejected)
}

// simulate drives a Limiter with unlimited demand for one host through n
// exits against server, in virtual time, for dur; requests take 20-120 ms to
// arrive (jitter) and 10 ms to answer. It counts outcomes after warmup.
func simulate(t *testing.T, cfg limit.Config, n int, dur, warmup time.Duration, serve func(ip string, at time.Time) (bool, limit.Outcome)) simResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	cfg.Rand = rand.New(rand.NewPCG(3, 4))
	lim, err := limit.New(cfg, memstore.New())
	if err != nil {
		t.Fatal(err)
	}
	exits := make([]limit.Exit, n)
	for i := range exits {
		exits[i].ID = fmt.Sprintf("10.0.0.%d", i+1)
	}
	lim.SetExits(exits)
	var q evQueue
	now, end := base, base.Add(dur)
	var res simResult
	res.lim = lim
	for now.Before(end) {
		for q.Len() > 0 && !q[0].at.After(now) {
			e := heap.Pop(&q).(*simEvent)
			if e.arrive {
				ok, out := serve(e.t.Exit, e.at)
				if !ok {
					out.Verdict = verdict.Throttled
				}
				if e.at.Sub(base) >= warmup {
					if ok {
						res.ok++
					} else {
						res.rejected++
					}
				}
				out.SentAt = e.sent
				heap.Push(&q, &simEvent{at: e.at.Add(10 * time.Millisecond), t: e.t, sent: e.sent, out: out})
				continue
			}
			lim.Done(e.t, e.out, e.at)
		}
		next := end
		for range 10000 {
			tk, ok, nx, err := lim.Acquire("h", limit.Want{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				next = nx
				break
			}
			lat := time.Duration(20+rng.IntN(100)) * time.Millisecond
			heap.Push(&q, &simEvent{at: now.Add(lat), arrive: true, t: tk, sent: now})
		}
		if q.Len() > 0 && q[0].at.Before(next) {
			next = q[0].at
		}
		if !next.After(now) {
			next = now.Add(time.Millisecond)
		}
		now = next
	}
	if total := res.ok + res.rejected; total > 0 {
		res.ratio429 = float64(res.rejected) / float64(total)
	}
	return res
}

func bucketSim(t *testing.T, policy limit.Policy, trueRate limit.Rate, exits int, dur, warmup time.Duration) simResult {
	burst := math.Max(2, trueRate.Hz()*20)
	srv := newBucketServer(trueRate, burst)
	r := simulate(t, limit.Config{Policy: policy}, exits, dur, warmup, func(ip string, at time.Time) (bool, limit.Outcome) {
		return srv.hit(ip, at), limit.Outcome{}
	})
	allowed := trueRate.Hz() * (dur - warmup).Seconds() * float64(exits)
	r.util = float64(r.ok) / allowed
	return r
}

// TestLearnsPerIPLimit is the headline claim: on a per-IP token-bucket server
// that sends no headers, the default policy uses >= 95% of what the server
// allows with <= 1% 429s after the first window, whether the true limit is
// below or above the first guess, and the article's rules do worse.
func TestLearnsPerIPLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates hours of virtual time")
	}
	const dur, warmup, exits = time.Hour, time.Minute, 4
	for _, true_ := range []limit.Rate{limit.PerMinute(10), limit.PerMinute(30), limit.PerMinute(120), limit.PerSecond(5)} {
		t.Run(true_.String(), func(t *testing.T) {
			ad := bucketSim(t, limit.Adaptive, true_, exits, dur, warmup)
			ar := bucketSim(t, limit.ArticlePerExit, true_, exits, dur, warmup)
			t.Logf("true %v: adaptive %v; article %v", true_, ad, ar)
			if ad.util < 0.95 || ad.ratio429 > 0.01 {
				t.Errorf("adaptive at %v: %v, want util >= 95%% and 429s <= 1%%", true_, ad)
			}
			if !(ar.util < ad.util || ar.ratio429 > ad.ratio429) {
				t.Errorf("article at %v: %v, not worse than adaptive %v", true_, ar, ad)
			}
		})
	}
}

// TestLearnsCountingServer: a server that also charges rejected requests
// (HAProxy stick tables) punishes clients that keep sending while limited;
// stopping at the first 429 keeps the default within the same targets.
func TestLearnsCountingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates an hour of virtual time")
	}
	const dur, warmup, exits = time.Hour, time.Minute, 4
	for _, true_ := range []limit.Rate{limit.PerMinute(10), limit.PerMinute(120)} {
		srv := newBucketServer(true_, math.Max(2, true_.Hz()*20))
		srv.countRejected = true
		r := simulate(t, limit.Config{}, exits, dur, warmup, func(ip string, at time.Time) (bool, limit.Outcome) {
			return srv.hit(ip, at), limit.Outcome{}
		})
		r.util = float64(r.ok) / (true_.Hz() * (dur - warmup).Seconds() * exits)
		t.Logf("true %v, rejected requests charged: %v", true_, r)
		if r.util < 0.95 || r.ratio429 > 0.01 {
			t.Errorf("counting server at %v: %v, want util >= 95%% and 429s <= 1%%", true_, r)
		}
	}
}

// TestDeclaredQuotaNeverExceeded: with a declared fixed-window quota
// (limit, remaining, reset), no window ever sees more than the quota, and the
// pool still uses nearly all of it.
func TestDeclaredQuotaNeverExceeded(t *testing.T) {
	for _, tc := range []struct {
		quota  float64
		window time.Duration
	}{{10, time.Minute}, {100, time.Minute}, {5, 10 * time.Second}, {1000, time.Hour}} {
		srv := &windowServer{quota: tc.quota, window: tc.window, counts: map[string]map[int64]float64{}}
		dur := 20 * tc.window
		r := simulate(t, limit.Config{}, 3, dur, 0, srv.hit)
		worst := 0.0
		for _, ws := range srv.counts {
			for _, n := range ws {
				worst = math.Max(worst, n)
			}
		}
		util := float64(r.ok) / (tc.quota * 20 * 3)
		t.Logf("quota %v per %v: worst window %v, util %.1f%%, %v", tc.quota, tc.window, worst, 100*util, r)
		if worst > tc.quota {
			t.Errorf("quota %v/%v: a window saw %v requests", tc.quota, tc.window, worst)
		}
		if util < 0.8 {
			t.Errorf("quota %v/%v: util %.1f%%, want >= 80%%", tc.quota, tc.window, 100*util)
		}
	}
}
