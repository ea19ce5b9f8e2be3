package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
)

// TestCollyLosesNoURL is the README's case scaled down to run in seconds:
// more URLs queued than the lanes can send within Colly's request timeout
// (120 URLs at 60/s against a 1 s timeout). Without the retry the tail is
// lost to the wait; with it every URL is fetched exactly once, because a
// wait given up before the deadline sent nothing.
func TestCollyLosesNoURL(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		fmt.Fprintln(w, "<html><body>page</body></html>")
	}))
	t.Cleanup(site.Close)
	exits, err := pool.Parse(strings.NewReader("bind:127.0.0.111-127.0.0.112"), "exits")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{
		URLs:    demoURLs(site.URL, 120),
		Exits:   exits,
		Limit:   limit.Config{FirstGuess: limit.PerSecond(30), HostCeiling: limit.PerSecond(60)},
		Timeout: time.Second,
	}

	res, err := crawl(cfg) // no retry
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lost) == 0 || res.WaitErrors != len(res.Lost) || res.OK+len(res.Lost) != 120 {
		t.Errorf("without retry: %d ok, %d lost, %d WaitErrors; want some lost, all to the wait", res.OK, len(res.Lost), res.WaitErrors)
	}
	t.Logf("without retry: %d ok, %d lost in %v", res.OK, len(res.Lost), res.Elapsed)

	mu.Lock()
	clear(seen)
	mu.Unlock()
	cfg.Retries = 20
	res, err = crawl(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with retry: %d ok, %d lost, %d retries in %v", res.OK, len(res.Lost), res.Retries, res.Elapsed)
	if res.OK != 120 || len(res.Lost) != 0 {
		t.Errorf("with retry: %d ok, lost %v; want all 120 ok", res.OK, res.Lost)
	}
	if res.Retries == 0 {
		t.Errorf("no retry happened: the case did not make the limiter wait")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 120 {
		t.Errorf("the site saw %d distinct URLs, want 120", len(seen))
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("%s was fetched %d times, want once", p, n)
		}
	}
}

// TestCollyAllExitsDown: with every exit failing as a proxy (two proxy
// addresses nothing listens on), each URL is lost at once and said so,
// rather than retried at the end of each quarantine (30 s and doubling):
// 20 URLs ran over ten minutes without a word.
func TestCollyAllExitsDown(t *testing.T) {
	// (internal/peertest.DeadAddr, written out: importing it would bring
	// the peers' modules into this example's go.mod.)
	var dead []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, "http://"+ln.Addr().String())
		ln.Close()
	}
	exits, err := pool.Parse(strings.NewReader(strings.Join(dead, "\n")), "exits")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{URLs: demoURLs("http://127.0.0.1:9", 20), Exits: exits, Retries: 20, Timeout: 10 * time.Second}
	start := time.Now()
	res, err := crawl(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("every exit down: the crawl took %v, want it over at once", took)
	}
	if res.OK != 0 || len(res.Lost) != 20 || res.Down == 0 {
		t.Errorf("%d ok, %d lost, %d to down exits; want all 20 lost, the down exits said", res.OK, len(res.Lost), res.Down)
	}
}
