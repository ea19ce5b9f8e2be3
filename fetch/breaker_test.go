package fetch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/limit"
)

// TestParkHost parks one host's work for a cool-down, in virtual time: its
// buffered jobs are parked durably with the reason, none is abandoned or
// charged, the other host goes on meanwhile, and the parked host's jobs go
// again once the cool-down is over.
func TestParkHost(t *testing.T) {
	ctx := context.Background()
	var urls []string
	for i := range 20 {
		urls = append(urls, fmt.Sprintf("http://a.test/p/%d", i), fmt.Sprintf("http://b.test/p/%d", i))
	}
	fr := pushed(t, urls)
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(100)})
	if err != nil {
		t.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "e1"}, {ID: "e2"}})
	core := NewCore(CoreConfig{Concurrency: 4}, fr, lim, nil)

	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	sent := map[string]int{}
	step := func(now time.Time) {
		t.Helper()
		atts, _, err := core.Dispatch(ctx, now)
		if err != nil {
			t.Fatalf("Dispatch at %v: %v", now, err)
		}
		for _, a := range atts {
			sent[a.Host]++
			if err := core.Complete(ctx, a, Response{Status: 200, At: now.Add(time.Millisecond)}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
		}
	}
	step(t0)
	if sent["a.test"] == 0 {
		t.Fatalf("a.test got no request before the breaker")
	}
	until := t0.Add(5 * time.Minute)
	why := "circuit breaker open: 429s over budget"
	n, err := core.ParkHost(ctx, "a.test", until, why)
	if err != nil || n == 0 {
		t.Fatalf("ParkHost = %d, %v; want some buffered jobs parked", n, err)
	}
	before := sent["a.test"]
	for now := t0.Add(time.Second); now.Before(until); now = now.Add(10 * time.Second) {
		step(now)
	}
	if sent["a.test"] != before {
		t.Errorf("a.test got %d requests during its cool-down, want none", sent["a.test"]-before)
	}
	if sent["b.test"] != 20 {
		t.Errorf("b.test got %d requests during a.test's cool-down, want all 20", sent["b.test"])
	}
	c, err := fr.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Parked != n || c.Abandoned != 0 {
		t.Errorf("counts %+v: want %d parked, none abandoned", c, n)
	}
	parked := 0
	for id := int64(1); id <= 40; id++ {
		j, err := fr.Get(ctx, id)
		if err != nil || j.State != frontier.Parked {
			continue
		}
		parked++
		if !j.Due.Equal(until) || j.Reason != why || j.Attempts != 0 {
			t.Errorf("parked job %+v: want due %v, reason %q, no attempt charged", j, until, why)
		}
	}
	if parked != n {
		t.Errorf("%d jobs parked in the frontier, ParkHost said %d", parked, n)
	}
	for now := until; now.Before(until.Add(time.Minute)); now = now.Add(time.Second) {
		step(now)
	}
	if sent["a.test"] != 20 {
		t.Errorf("after the cool-down a.test got %d requests in all, want 20", sent["a.test"])
	}
	if c, _ := fr.Counts(ctx); c.Done != 40 {
		t.Errorf("counts at the end %+v, want 40 done", c)
	}
}

// lossy is a frontier whose last claimed job's lease is reported lost, as
// the Redis store's keep-alive reports a lease another worker claimed; it
// reaches the Core through a wrapper, as the crawl's frontier does.
type lossy struct {
	frontier.Frontier
	lost    map[int64]bool
	lostURL string
}

func (l *lossy) Claim(ctx context.Context, now time.Time, max int, hostOK func(string) bool) ([]frontier.Job, error) {
	js, err := l.Frontier.Claim(ctx, now, max, hostOK)
	if len(js) > 1 && l.lostURL == "" {
		last := js[len(js)-1]
		l.lost[last.ID], l.lostURL = true, last.URL
	}
	return js, err
}

func (l *lossy) LeaseLost(le frontier.Lease) bool { return l.lost[le.ID] }

type wrapped struct{ frontier.Frontier }

func (w wrapped) Unwrap() frontier.Frontier { return w.Frontier }

// TestLeaseLostDropped: a buffered job whose lease was lost is dropped, not
// fetched (another worker holds it and fetches it), and the Core is not
// left busy with it; the other jobs go as usual.
func TestLeaseLostDropped(t *testing.T) {
	ctx := context.Background()
	var urls []string
	for i := range 10 {
		urls = append(urls, fmt.Sprintf("http://a.test/p/%d", i))
	}
	mem := pushed(t, urls)
	fr := &lossy{Frontier: mem, lost: map[int64]bool{}}
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1000)})
	if err != nil {
		t.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "e1"}})
	core := NewCore(CoreConfig{Concurrency: 1}, wrapped{fr}, lim, nil)
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	fetched := map[string]bool{}
	for i := 0; i < 200 && (i == 0 || core.Busy()); i++ {
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		atts, _, err := core.Dispatch(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range atts {
			fetched[a.URL] = true
			if err := core.Complete(ctx, a, Response{Status: 200, At: now.Add(time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if core.Busy() {
		t.Fatal("the Core is still busy: the lost job left buffered")
	}
	if fr.lostURL == "" || fetched[fr.lostURL] {
		t.Errorf("lost job %q fetched: %v", fr.lostURL, fetched[fr.lostURL])
	}
	if len(fetched) != 9 {
		t.Errorf("fetched %d jobs, want the 9 whose leases held", len(fetched))
	}
}
