package fetch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
)

// TestWaitingWhileParked: a host told to wait past MaxWait has its URLs
// parked; the log says so once for the wait, however many batches of them
// are parked as they are claimed (each batch said it again), and Waiting
// lists the host, with why, until its parked URLs fall due, not only while
// the wait left is beyond MaxWait (a 10-minute wait was explained for its
// first 5 minutes, then shown as a bare count).
func TestWaitingWhileParked(t *testing.T) {
	ctx := context.Background()
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []frontier.NewJob
	for i := range 400 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("http://w.example/%d", i)})
	}
	if _, err := fr.Push(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10})
	if err != nil {
		t.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "e1"}})
	var log bytes.Buffer
	core := NewCore(CoreConfig{Concurrency: 1, Logger: slog.New(slog.NewTextHandler(&log, nil))}, fr, lim, nil)
	t0 := time.Now()
	atts, _, err := core.Dispatch(ctx, t0)
	if err != nil || len(atts) != 1 {
		t.Fatalf("Dispatch = %d attempts, %v", len(atts), err)
	}
	a := atts[0]
	if err := core.Complete(ctx, a, Response{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"600"}}, At: t0, HeaderAt: t0}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ { // claims and parks the rest, batch by batch
		if _, _, err := core.Dispatch(ctx, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := fr.Counts(ctx); c.Parked < 300 {
		t.Fatalf("%+v: want the host's URLs parked", c)
	}
	if n := strings.Count(log.String(), "its URLs are parked"); n != 1 {
		t.Errorf("the park was said %d times, want once:\n%s", n, log.String())
	}
	for _, after := range []time.Duration{time.Minute, 6 * time.Minute, 9 * time.Minute} {
		w := core.Waiting(t0.Add(after))
		if len(w) != 1 || w[0].Host != a.Host || w[0].Why == "" || w[0].Until.Sub(t0) < 9*time.Minute {
			t.Errorf("Waiting %v on = %+v, want %s until 10 minutes on, with why", after, w, a.Host)
		}
	}
	if w := core.Waiting(t0.Add(11 * time.Minute)); len(w) != 0 {
		t.Errorf("Waiting after the park = %+v, want none", w)
	}
}

// TestRetriesCountedAsSent: a retry is counted when the request goes again,
// not when it is scheduled (a crawl stopped with a retry queued said 1 retry
// of 1 request); a redirect hop is none.
func TestRetriesCountedAsSent(t *testing.T) {
	ctx := context.Background()
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fr.Push(ctx, []frontier.NewJob{{URL: "http://r.example/a"}}); err != nil {
		t.Fatal(err)
	}
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10})
	if err != nil {
		t.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "e1"}, {ID: "e2"}})
	t0 := time.Now()
	tally := metrics.NewTally(t0)
	core := NewCore(CoreConfig{Concurrency: 1}, fr, lim, tally)
	atts, _, err := core.Dispatch(ctx, t0)
	if err != nil || len(atts) != 1 {
		t.Fatalf("Dispatch = %d attempts, %v", len(atts), err)
	}
	if err := core.Complete(ctx, atts[0], Response{Status: http.StatusServiceUnavailable, At: t0, HeaderAt: t0}); err != nil {
		t.Fatal(err)
	}
	if n := tally.Snapshot(t0).Total.Retries; n != 0 {
		t.Errorf("retries after a retry was scheduled, none sent = %d, want 0", n)
	}
	var sent []Attempt
	for i := 1; i <= 100 && len(sent) == 0; i++ {
		if sent, _, err = core.Dispatch(ctx, t0.Add(time.Duration(i)*100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent) != 1 {
		t.Fatalf("the retry was not sent within 10 s")
	}
	if n := tally.Snapshot(t0).Total.Retries; n != 1 {
		t.Errorf("retries once the request went again = %d, want 1", n)
	}
}
