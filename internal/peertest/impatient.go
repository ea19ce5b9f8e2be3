package peertest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SlowOrigin starts a loopback server that holds every request for hold
// (or until its client leaves) and answers nothing, and returns it with the
// count of requests it received: what a limiter that gives back an
// abandoned request as never sent overruns.
func SlowOrigin(t testing.TB, hold time.Duration) (*httptest.Server, func() int64) {
	t.Helper()
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select {
		case <-r.Context().Done():
		case <-time.After(hold):
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got.Load
}

// Impatient has n callers GET url through c in a loop until d has passed,
// each giving up at c's timeout, and returns how many answers came (for a
// server slower than the timeout, none should).
func Impatient(c *http.Client, url string, n int, d time.Duration) int {
	end := time.Now().Add(d)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for time.Now().Before(end) {
				if resp, err := c.Get(url); err == nil {
					resp.Body.Close()
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(answered.Load())
}
