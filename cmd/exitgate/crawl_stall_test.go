package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/metrics"
)

// TestCrawlNoWorkingExitStops: every exit fails as a proxy (a real tinyproxy
// that demands credentials the list does not have: 407; a proxy address where
// nothing listens): the crawl stops within seconds with an error that names
// each exit and why, and every URL stays queued, none charged. It used to
// wait on the exits' quarantines (30 s, doubling) at "ETA ?", for hours.
func TestCrawlNoWorkingExitStops(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	auth := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.71", User: "u", Password: "secret"})
	dead := peertest.DeadAddr(t)
	dir := t.TempDir()
	proxies := writeLines(t, dir, "proxies.txt", []string{"http://" + auth.Addr(), "http://" + dead})
	urls := siteURLs(srv.URL, 10)
	out, crawl := crawlList(t, dir, urls, "--proxies", proxies, "--progress", "0")
	r := crawl()
	if r.err == nil {
		t.Fatalf("crawl through no working exit succeeded\nstdout:\n%s", r.stdout)
	}
	msg := r.err.Error()
	for _, want := range []string{"no working exit", auth.Addr() + ": status 407", dead + ": proxy_failure: connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("crawl error = %q, want it to say %q", msg, want)
		}
	}
	if r.elapsed > 15*time.Second {
		t.Errorf("the crawl took %v to give up, want seconds", r.elapsed)
	}
	if code := exitCode(r.err); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	sum := readSummary(t, out)
	if sum.Queued != len(urls) || sum.Abandoned != 0 || sum.Done != 0 {
		t.Errorf("summary: queued %d abandoned %d done %d, want all %d queued", sum.Queued, sum.Abandoned, sum.Done, len(urls))
	}
	if seen, _ := site.snapshot(); len(seen) != 0 {
		t.Errorf("the site was reached (%v) through exits that do not work", seen)
	}
}

// TestCrawlNamesFailingExit: one exit of two fails as a proxy for the whole
// run (a proxy address where nothing listens, beside a real tinyproxy). The
// crawl finishes through the other, and the summary names the dead one, on
// stdout and in summary.json: its row alone (a few requests, none ok, a
// learned rate) read like a slow exit.
func TestCrawlNamesFailingExit(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	good := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.72"})
	dead := peertest.DeadAddr(t)
	dir := t.TempDir()
	proxies := writeLines(t, dir, "proxies.txt", []string{"http://" + good.Addr(), "http://" + dead})
	urls := siteURLs(srv.URL, 10)
	out, crawl := crawlList(t, dir, urls, "--proxies", proxies, "--progress", "0", "--ignore-robots")
	r := crawl()
	if r.err != nil {
		t.Fatalf("crawl: %v\nstdout:\n%s", r.err, r.stdout)
	}
	if want := "1 of 2 exits failing as proxies at the end"; !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, dead+": ") {
		t.Errorf("stdout does not say %q naming %s:\n%s", want, dead, r.stdout)
	}
	sum := readSummary(t, out)
	if sum.Done != len(urls) {
		t.Errorf("done %d, want %d", sum.Done, len(urls))
	}
	for _, x := range sum.PerExit {
		switch failing := x.Failing != ""; {
		case x.Name == dead && !strings.Contains(x.Failing, "proxy failures in a row"):
			t.Errorf("summary.json per_exit %s: failing %q, want its proxy failures", x.Name, x.Failing)
		case x.Name != dead && failing:
			t.Errorf("summary.json per_exit %s: failing %q, want none (it worked)", x.Name, x.Failing)
		}
	}
}

// TestCrawlDeclaredResetFarAwayParksHost: the site declares its quota spent
// (remaining 0) until a reset an hour away. The host's URLs are parked
// durably until then, the progress line and the log say so, and the run
// ends at once with a message saying when they are due and to run again; so
// does a rerun before then. The crawl used to sit at "ETA ?" for the hour.
func TestCrawlDeclaredResetFarAwayParksHost(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "3600")
		fmt.Fprintln(w, "page")
	}))
	defer srv.Close()
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 8)
	out, crawl := crawlList(t, dir, urls, "--ignore-robots", "--concurrency", "1", "--progress", "0")
	for run := 1; run <= 2; run++ {
		r := crawl()
		if code := exitCode(r.err); r.err == nil || code != exitUnfinished {
			t.Fatalf("run %d: %v (exit %d), want exit %d (unfinished)\nstderr:\n%s", run, r.err, code, exitUnfinished, r.stderr)
		}
		if r.elapsed > 10*time.Second {
			t.Errorf("run %d took %v, want it to end once only parked work is left", run, r.elapsed)
		}
		sum := readSummary(t, out)
		if sum.Done != 1 || sum.Parked != len(urls)-1 || sum.Queued != 0 {
			t.Errorf("run %d summary: done %d parked %d queued %d, want 1 done and %d parked", run, sum.Done, sum.Parked, sum.Queued, len(urls)-1)
		}
		wants := []string{"The first parked URL is due at", "): run the same command again then"}
		// Due an hour after run 1's answer: run 2, a moment later, says
		// a second or so less (59m59s on a loaded machine).
		if !dueInAnHour.MatchString(r.stdout) {
			t.Errorf("run %d stdout does not say the first parked URL is due in about an hour:\n%s", run, r.stdout)
		}
		if run == 1 {
			// The run that found out says why, in the log and at the end
			// (and on the progress line: TestProgressLineNamesParkedHost).
			wants = append(wants, "must wait until", "rate-limit remaining 0, reset in 1h0m0s")
			if !strings.Contains(r.stderr, "its URLs are parked") {
				t.Errorf("run 1 log does not say the host's URLs are parked:\n%s", r.stderr)
			}
		}
		for _, want := range wants {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("run %d stdout lacks %q:\n%s", run, want, r.stdout)
			}
		}
	}
	if n := served.Load(); n != 1 {
		t.Errorf("the site was asked %d times, want once: its quota was spent", n)
	}
}

// dueInAnHour matches the end of a run whose first parked URL is due an
// hour on, less the seconds since it was parked.
var dueInAnHour = regexp.MustCompile(`\(in (1h0m0s|59m[0-9]+s)\): run the same command again then`)

// TestCrawlHugeRetryAfterParksHost: a 503 with a Retry-After of two hours
// pauses the whole host: all its URLs are parked until then and the run
// ends, saying when they are due.
func TestCrawlHugeRetryAfterParksHost(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Retry-After", "7200")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 6)
	out, crawl := crawlList(t, dir, urls, "--ignore-robots", "--progress", "0")
	r := crawl()
	if code := exitCode(r.err); r.err == nil || code != exitUnfinished {
		t.Fatalf("crawl: %v (exit %d), want exit %d (unfinished)\nstderr:\n%s", r.err, code, exitUnfinished, r.stderr)
	}
	if r.elapsed > 10*time.Second {
		t.Errorf("the crawl took %v, want it to end once only parked work is left", r.elapsed)
	}
	if sum := readSummary(t, out); sum.Parked != len(urls) || sum.Done+sum.Queued+sum.Abandoned != 0 {
		t.Errorf("summary: parked %d done %d queued %d abandoned %d, want all %d parked", sum.Parked, sum.Done, sum.Queued, sum.Abandoned, len(urls))
	}
	for _, want := range []string{"status 503, Retry-After 2h0m0s", "run the same command again then"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := served.Load(); n < 1 || n > 2 {
		t.Errorf("the site was asked %d times, want once or twice (requests already in flight)", n)
	}
}

// TestProgressLineNamesParkedHost: while a host must wait beyond --max-wait,
// the progress line says which, until when and why.
func TestProgressLineNamesParkedHost(t *testing.T) {
	until := time.Date(2026, 12, 1, 15, 4, 5, 0, time.Local)
	now := until.Add(-2 * time.Hour)
	line := statusText(reading{s: metrics.NewTally(now).Snapshot(now), waiting: []fetch.HostWait{
		{Host: "api.example", Until: until, Why: "status 503, Retry-After 2h0m0s"},
		{Host: "b.example", Until: until.Add(time.Hour)},
	}})
	if want := "parked: api.example until 15:04:05 (status 503, Retry-After 2h0m0s) and 1 more hosts"; !strings.Contains(line, want) {
		t.Errorf("progressLine = %q, want it to contain %q", line, want)
	}
	// A day away: with its date, not a time of day already past today.
	now = until.Add(-24*time.Hour + 5*time.Second)
	line = statusText(reading{s: metrics.NewTally(now).Snapshot(now), waiting: []fetch.HostWait{{Host: "api.example", Until: until}}})
	if want := "parked: api.example until 2026-12-01 15:04:05"; !strings.Contains(line, want) {
		t.Errorf("progressLine a day ahead = %q, want it to contain %q", line, want)
	}
}

// TestProgressLineNotFound: the progress line counts a 404 or 410 as not
// found, as the summary does, not among the abandoned (it read
// "abandoned 11" where the summary said 10 abandoned and 1 not found).
func TestProgressLineNotFound(t *testing.T) {
	now := time.Now()
	c := frontier.Counts{Abandoned: 11, AbandonedByReason: map[string]int{"status 404": 1, "retries exhausted: status 500": 10}}
	line := statusText(reading{c: c, s: metrics.NewTally(now).Snapshot(now)})
	if !strings.Contains(line, "not found 1  abandoned 10 ") {
		t.Errorf("progress line %q, want not found 1 and abandoned 10", line)
	}
}

// TestCrawlStallingServers: beside a site that answers, one server accepts
// and never answers, one sends its headers and then a byte a second, one
// sends a body without end. The crawl finishes the answered URLs, gives up
// the stalled ones as timeouts after their retries (--timeout 1s), keeps
// the endless body cut at --max-body, says in the log which hosts stall and
// how, and ends within seconds. The stalls were said nowhere: the progress
// line counted their URLs queued at "ETA ?" for --timeout an attempt.
func TestCrawlStallingServers(t *testing.T) {
	_, site := newCountingSite(t, 0)
	serve := func(h http.HandlerFunc) *httptest.Server {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	hang := serve(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	trickle := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		for {
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second): // the trickle's pace, not a synchronisation
			}
		}
	})
	endless := serve(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("y", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	urls := append(siteURLs(site.URL, 10), hang.URL+"/page", trickle.URL+"/page", endless.URL+"/page")
	dir := t.TempDir()
	out, crawl := crawlList(t, dir, urls, "--ignore-robots", "--progress", "0", "--timeout", "1s",
		"--max-retries", "1", "--max-body", "256KiB", "--lane-rate", "100/s")
	r := crawl()
	if code := exitCode(r.err); code != exitAbandoned {
		t.Fatalf("crawl: %v (exit %d), want exit %d (the stalled URLs abandoned)\nstderr:\n%s", r.err, code, exitAbandoned, r.stderr)
	}
	if r.elapsed > 20*time.Second {
		t.Errorf("the crawl took %v with --timeout 1s and one retry", r.elapsed)
	}
	res := checkOutcomes(t, readResults(t, out), append(siteURLs(site.URL, 10), endless.URL+"/page"), map[string]string{
		hang.URL + "/page": "retries exhausted: retryable: timeout", trickle.URL + "/page": "retries exhausted: retryable: timeout",
	})
	if e := res[endless.URL+"/page"]; !e.Truncated || e.Bytes != 256<<10 {
		t.Errorf("endless body: %d bytes, truncated %v; want cut at 256 KiB", e.Bytes, e.Truncated)
	}
	for srv, how := range map[*httptest.Server]string{hang: "no response headers", trickle: "body still arriving"} {
		host := strings.TrimPrefix(srv.URL, "http://")
		if !regexp.MustCompile(`level=WARN msg="host does not answer in time[^\n]*host=` + regexp.QuoteMeta(host) + `[^\n]*` + how).MatchString(r.stderr) {
			t.Errorf("the log does not say %s stalls (%s):\n%s", host, how, r.stderr)
		}
	}
}

// TestProgressETAParked: the ETA reads "parked" when all that is left is
// parked, or held by this worker for a host that must wait beyond
// --max-wait (it read "ETA 1s", then "ETA ?", for five minutes), and the
// estimate otherwise.
func TestProgressETAParked(t *testing.T) {
	held := []fetch.HostWait{{Host: "a.example", Held: 3}}
	for _, tc := range []struct {
		c       frontier.Counts
		waiting []fetch.HostWait
		want    string
	}{
		{frontier.Counts{Parked: 4}, nil, "parked"},
		{frontier.Counts{Leased: 3}, held, "parked"},
		{frontier.Counts{Leased: 3, Parked: 2}, held, "parked"},
		{frontier.Counts{Leased: 3, Queued: 1}, held, "12s"},
		{frontier.Counts{Queued: 5}, nil, "12s"},
		{frontier.Counts{}, nil, "12s"},
	} {
		if got := etaText(tc.c, tc.waiting, "12s"); got != tc.want {
			t.Errorf("etaText(%+v, %v) = %q, want %q", tc.c, tc.waiting, got, tc.want)
		}
	}
}

// TestCrawlDurationSaysParkedHosts: a run stopped by --duration with URLs
// both queued and parked names the hosts that wait and until when (it said
// only how many were parked).
func TestCrawlDurationSaysParkedHosts(t *testing.T) {
	parked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer parked.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		fmt.Fprintln(w, "page")
	}))
	defer slow.Close()
	dir := t.TempDir()
	urls := append(siteURLs(parked.URL, 2), siteURLs(slow.URL, 40)...)
	_, crawl := crawlList(t, dir, urls, "--ignore-robots", "--max-wait", "2s", "--duration", "3s", "--lane-rate", "2/s", "--progress", "0")
	r := crawl()
	if code := exitCode(r.err); code != exitUnfinished {
		t.Fatalf("crawl: %v (exit %d), want exit %d\nstderr:\n%s", r.err, code, exitUnfinished, r.stderr)
	}
	host := strings.TrimPrefix(parked.URL, "http://")
	if !strings.Contains(r.stdout, "Host "+host+" must wait until") || strings.Contains(r.stdout, "The first parked URL is due") {
		t.Errorf("the end report with URLs queued and parked does not name the parked host (or names a due time that is the queued URLs'):\n%s", r.stdout)
	}
}
