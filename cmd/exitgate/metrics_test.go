package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/verdict"
)

func TestServeMetrics(t *testing.T) {
	tally := metrics.NewTally(time.Now())
	var log bytes.Buffer
	ln, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := newRegistry(tally, nil, 50, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer serveMetrics(ln, reg, &log)()
	tally.Record(metrics.Event{Host: "a.example", Exit: "e1", Status: 429, Verdict: verdict.Throttled, At: time.Now()})
	addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(log.String()), "metrics at http://"), "/metrics")
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics (log %q): %v", log.String(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`exitgate_requests_total{host="a.example",status="429"} 1`, "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if _, err := listenMetrics("not an address"); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("listenMetrics(bad address) error = %v, want one naming --metrics-addr", err)
	}
}

// lingerCrawl starts a crawl of 3 URLs serving endpoint (--metrics-addr or
// --ui) on a free loopback address, lingering linger after it ends; it
// returns the address and where the run's outcome arrives.
func lingerCrawl(t *testing.T, endpoint, linger string) (string, chan crawlRun) {
	t.Helper()
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 3))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	done := make(chan crawlRun, 1)
	go func() {
		done <- runCrawlCmd(t, 30*time.Second, "crawl", "--out", filepath.Join(dir, "out"), "--ignore-robots", "--progress", "0",
			"--lane-rate", "50/s", endpoint, addr, "--linger", linger, urlFile)
	}()
	return addr, done
}

// TestCrawlLinger: with --linger the metrics endpoint outlives the crawl,
// so a scrape after its end sees the final counts (without it the endpoint
// closed 0.1 s after the last request, before any scrape interval).
func TestCrawlLinger(t *testing.T) {
	addr, done := lingerCrawl(t, "--metrics-addr", "3s")
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `exitgate_jobs{state="done"} 3`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scrape saw the 3 URLs done (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("the crawl returned as its final counts showed, despite --linger 3s: %v\n%s", r.err, r.stderr)
	case <-time.After(time.Second):
	}
	r := <-done
	if r.err != nil || !strings.Contains(r.stderr, "stay up for 3s (--linger)") {
		t.Errorf("crawl --linger: %v\n%s", r.err, r.stderr)
	}
}

// TestCrawlLingerNeedsAnEndpoint: --linger without --ui or --metrics-addr
// is refused (it was taken and did nothing).
func TestCrawlLingerNeedsAnEndpoint(t *testing.T) {
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", []string{"http://127.0.0.1:9/x"})
	r := runCmd(t, "crawl", "--out", filepath.Join(dir, "out"), "--linger", "5s", urlFile)
	if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "--linger") {
		t.Errorf("crawl --linger alone: %v, want exit 2 naming --linger", r.err)
	}
}

// TestCrawlLingerSaysEnded: while --linger keeps the dashboard up after the
// crawl, its state and `exitgate status ADDR` say the crawl ended, with the
// final counts (the page said "live" over them, nothing saying it was over).
func TestCrawlLingerSaysEnded(t *testing.T) {
	addr, done := lingerCrawl(t, "--ui", "4s")
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st struct {
			Ended  time.Time `json:"ended"`
			Totals struct {
				Done int `json:"done"`
			} `json:"totals"`
		}
		resp, err := http.Get("http://" + addr + "/api/state")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if !st.Ended.IsZero() {
				if st.Totals.Done != 3 {
					t.Errorf("ended with %d done, want the final 3", st.Totals.Done)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the state never said the crawl ended (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := runCmd(t, "status", addr); r.err != nil || !strings.Contains(r.stdout, "crawl ended at") {
		t.Errorf("status %s while lingering: %v\n%s", addr, r.err, r.stdout)
	}
	if r := <-done; r.err != nil {
		t.Errorf("crawl: %v\n%s", r.err, r.stderr)
	}
}
