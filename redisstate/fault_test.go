package redisstate

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/limit"
)

// onPublish runs fn once, just before the next publish script goes out.
type onPublish struct {
	armed atomic.Bool
	fn    func()
}

func (h *onPublish) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *onPublish) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if n := strings.ToLower(cmd.Name()); (n == "evalsha" || n == "eval") && h.armed.CompareAndSwap(true, false) {
			h.fn()
		}
		return next(ctx, cmd)
	}
}

func (h *onPublish) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// TestPublishedWhileSendingUnsent: what a worker publishes while its
// views published during an outage are being sent (Redis answers, the
// Share is still down) is sent too. sendUnsent cleared the host's unsent
// mark once its older view went out, and the newer change, with its 429
// evidence, never reached Redis.
func TestPublishedWhileSendingUnsent(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	const host = "u.example"
	s, err := New(rdb, Config{Crawl: "unsent"})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.down = true // Redis away: what is published waits
	s.mu.Unlock()
	now := time.Now()
	s.Publish(host, limit.HostView{Pause: now.Add(time.Minute), Evidence: []limit.Evidence{{Exit: "e1", At: now, Pace: 2}}}, now)
	h := &onPublish{fn: func() {
		s.Publish(host, limit.HostView{Evidence: []limit.Evidence{{Exit: "e2", At: now.Add(time.Second), Pace: 2}}}, now.Add(time.Second))
	}}
	rdb.AddHook(h)
	h.armed.Store(true)
	s.refresh(ctx) // Redis answers: the unsent view goes out, e2 is published meanwhile
	if h.armed.Load() {
		t.Fatal("no publish script ran: the test did not test the window")
	}
	s.refresh(ctx) // anything still unsent goes out now
	evs, err := rdb.LRange(ctx, s.keys(host)[1], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(evs, " ")
	for _, exit := range []string{`"exit":"e1"`, `"exit":"e2"`} {
		if !strings.Contains(got, exit) {
			t.Errorf("Redis's evidence for %s lacks %s: %s", host, exit, got)
		}
	}
}
