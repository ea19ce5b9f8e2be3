package redis_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/frontier"
	fr "github.com/exitgate/exitgate/frontier/redis"
)

// duringReplay runs fn once, just before the first forced settle (a journal
// replay's) goes to Redis: in the window between the keep-alive seeing
// Redis back and the Store leaving its outage.
type duringReplay struct {
	armed atomic.Bool
	fn    func()
}

func (h *duringReplay) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *duringReplay) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		// evalsha|eval, script, 6, six host keys, op, id, seq, force, ...
		if a := cmd.Args(); len(a) > 12 && fmt.Sprint(a[12]) == "1" && h.armed.CompareAndSwap(true, false) {
			h.fn()
		}
		return next(ctx, cmd)
	}
}

func (h *duringReplay) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// TestJournaledDuringReplay: a job finished while the keep-alive replays
// the journal after an outage (Redis answers, the Store is still down) is
// journaled behind the replay; it must reach Redis too. It stayed in the
// journal until the next outage, its lease no longer kept alive, and
// another worker fetched the URL again once the lease ran out (a 12-s
// SIGSTOP of Redis under 3 workers: 1-2 of 400 URLs fetched twice).
func TestJournaledDuringReplay(t *testing.T) {
	r, rdb := outageRedis(t)
	ctx := context.Background()
	// Long enough that the journal is replayed before job 0's lease
	// (journaled, no longer kept) runs out; the keep-alive ticks each second.
	ttl := 3 * time.Second
	s := newStore(t, rdb, fr.Config{Crawl: "replaywin", LeaseTTL: ttl, KeepAlive: true,
		Journal: filepath.Join(t.TempDir(), "journal")})
	if _, err := s.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}}); err != nil {
		t.Fatal(err)
	}
	js, err := s.Claim(ctx, time.Now(), 2, nil)
	if err != nil || len(js) != 2 {
		t.Fatalf("Claim = %d, %v", len(js), err)
	}
	hook := &duringReplay{fn: func() {
		if err := s.Complete(ctx, js[1].Lease(), frontier.Result{Status: 200}); err != nil {
			t.Errorf("Complete during the replay: %v", err)
		}
	}}
	rdb.AddHook(hook)
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, js[0].Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatalf("Complete while Redis is down = %v, want nil (journaled)", err)
	}
	hook.armed.Store(true)
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	other := newStore(t, rdb, fr.Config{Crawl: "replaywin", LeaseTTL: ttl})
	deadline := time.Now().Add(2 * ttl)
	for {
		j0, err0 := s.Get(ctx, js[0].ID)
		j1, err1 := s.Get(ctx, js[1].ID)
		if err0 == nil && err1 == nil && j0.State == frontier.Done && j1.State == frontier.Done {
			break
		}
		// A second worker claims what ran out, as the fleet does.
		if got, _ := other.Claim(ctx, time.Now(), 2, nil); len(got) > 0 {
			t.Fatalf("job %d (%s) claimed again after Redis came back: its completion, journaled during the replay, was not replayed", got[0].ID, got[0].URL)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the outage: job %d %v (%v), job %d %v (%v); want both done (the second finished during the replay)",
				js[0].ID, j0.State, err0, js[1].ID, j1.State, err1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hook.armed.Load() {
		t.Fatal("the replay never ran a forced settle: the test did not test the window")
	}
}
