package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// robotsOutageSite answers /robots.txt with status for its first down
// requests (all of them when down < 0), then with 404 (no rules); pages with
// 200.
func robotsOutageSite(t *testing.T, status int, down int64) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	var robots, pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			if n := robots.Add(1); down < 0 || n <= down {
				http.Error(w, "temporarily unavailable", status)
				return
			}
			http.NotFound(w, r)
			return
		}
		pages.Add(1)
		fmt.Fprintln(w, "page")
	}))
	t.Cleanup(srv.Close)
	return srv, &robots, &pages
}

// TestCrawlRobotsOutageRetried: robots.txt answering 500 three times is
// asked again until it answers, and the wait is said at once; no URL is
// abandoned meanwhile. Three
// failures used to make the site "disallowed by robots.txt" for good: every
// URL abandoned.
func TestCrawlRobotsOutageRetried(t *testing.T) {
	srv, robots, _ := robotsOutageSite(t, http.StatusInternalServerError, 3)
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 5)
	out, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--progress", "0")
	r := crawl()
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	checkAllDoneOnce(t, readResults(t, out), urls)
	if n := robots.Load(); n != 4 {
		t.Errorf("robots.txt asked %d times, want 4 (three 503s, then the answer)", n)
	}
	// Said at the first failure, once: the wait used to go unsaid until
	// the host was parked, --max-wait (5 min by default) later.
	if n := strings.Count(r.stderr, "robots.txt unreachable: the host's URLs wait while it is asked again"); n != 1 {
		t.Errorf("the outage was said %d times, want once at its start:\n%s", n, r.stderr)
	}
}

// TestCrawlRobotsLongOutageParksHost: robots.txt that stays unreachable (503)
// past --max-wait keeps the host's URLs waiting, parked for later (exit 4),
// not abandoned, and no page is fetched without robots.txt's answer. A 503
// used to be asked again forever, the run never ending.
func TestCrawlRobotsLongOutageParksHost(t *testing.T) {
	srv, _, pages := robotsOutageSite(t, http.StatusServiceUnavailable, -1)
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 5)
	out, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--max-wait", "2s", "--progress", "0")
	r := crawl()
	if code := exitCode(r.err); code != exitUnfinished {
		t.Fatalf("crawl: %v (exit %d), want exit %d (unfinished)\nstderr:\n%s", r.err, code, exitUnfinished, r.stderr)
	}
	if sum := readSummary(t, out); sum.Parked != len(urls) || sum.Abandoned != 0 {
		t.Errorf("summary: parked %d abandoned %d, want all %d parked and none abandoned", sum.Parked, sum.Abandoned, len(urls))
	}
	if !strings.Contains(r.stdout, "robots.txt unreachable: status 503") {
		t.Errorf("stdout does not say the host waits for robots.txt:\n%s", r.stdout)
	}
	if n := pages.Load(); n != 0 {
		t.Errorf("%d pages fetched without robots.txt's answer, want none", n)
	}
}

// TestCrawlRobotsRedirects: a robots.txt that redirects is followed (RFC
// 9309: five redirects at least) and what it reaches is read for the
// first host; a loop, or a redirect that cannot be followed, leaves
// robots.txt unavailable, which allows everything. Each redirect was read
// as robots.txt unreachable: the host's URLs waited, then were parked.
func TestCrawlRobotsRedirects(t *testing.T) {
	for _, tc := range []struct {
		name     string
		robots   func(w http.ResponseWriter, r *http.Request)
		disallow bool // /p/000 is disallowed
	}{
		{"moved twice", func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/robots.txt":
				http.Redirect(w, r, "/moved/robots.txt", http.StatusMovedPermanently)
			case "/moved/robots.txt":
				http.Redirect(w, r, "/again/robots.txt", http.StatusFound)
			default:
				fmt.Fprintln(w, "User-agent: *\nDisallow: /p/000")
			}
		}, true},
		{"a loop", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/robots.txt", http.StatusFound)
		}, false},
		{"to file:", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "file:///etc/robots.txt", http.StatusFound)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var robotsAsked atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "robots.txt") {
					robotsAsked.Add(1)
					tc.robots(w, r)
					return
				}
				fmt.Fprintln(w, "page")
			}))
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			urls := siteURLs(srv.URL, 4)
			out, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--progress", "0")
			r := crawl()
			if tc.disallow && exitCode(r.err) != exitAbandoned || !tc.disallow && r.err != nil {
				t.Fatalf("crawl: %v (disallowing %v)\nstderr:\n%s", r.err, tc.disallow, r.stderr)
			}
			for _, res := range readResults(t, out) {
				disallowed := strings.HasSuffix(res.URL, "/p/000") && tc.disallow
				if got := res.Outcome == "done"; got == disallowed {
					t.Errorf("%s: %s (%s), want done %v", res.URL, res.Outcome, res.Reason, !disallowed)
				}
			}
			if n := robotsAsked.Load(); n > 6 {
				t.Errorf("robots.txt asked %d times, want at most 6 (the first and five redirects)", n)
			}
		})
	}
}

// TestCrawlRobotsFailsForGood: a host whose robots.txt fails for good
// before any answer (here a certificate the client refuses; a name that
// does not exist alike) has no robots.txt to wait for: its URL is
// abandoned at once for that failure, beside a host that works. Read as a
// robots.txt outage, it was held --max-wait and then parked for an hour,
// in every run (exit 4 for good).
func TestCrawlRobotsFailsForGood(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "page") }))
	t.Cleanup(untrusted.Close)
	dir := t.TempDir()
	urls := []string{untrusted.URL + "/x", srv.URL + "/ok"}
	out, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--max-wait", "20s", "--progress", "0")
	start := time.Now()
	r := crawl()
	if code := exitCode(r.err); code != exitAbandoned {
		t.Fatalf("crawl: %v (exit %d), want exit %d (abandoned)\nstderr:\n%s", r.err, code, exitAbandoned, r.stderr)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the crawl took %v: the host that fails for good was waited for", took)
	}
	rows := readResults(t, out)
	for _, row := range rows {
		switch {
		case row.URL == urls[0] && (row.Outcome != "abandoned" || !strings.Contains(row.Reason, "certificate")):
			t.Errorf("%s: %s %q, want abandoned for its certificate", row.URL, row.Outcome, row.Reason)
		case row.URL == urls[1] && row.Outcome != "done":
			t.Errorf("%s: %s %q, want done", row.URL, row.Outcome, row.Reason)
		}
	}
	if len(rows) != 2 {
		t.Errorf("%d results, want 2", len(rows))
	}
}

// TestCrawlLongCrawlDelaySaysWhy: a host parked for its robots.txt's
// Crawl-delay says so, in the log and in the end report; it said "the
// limiter holds it".
func TestCrawlLongCrawlDelaySaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprintln(w, "User-agent: *\nCrawl-delay: 100000")
			return
		}
		fmt.Fprintln(w, "page")
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	_, crawl := crawlList(t, dir, siteURLs(srv.URL, 3), "--lane-rate", "50/s", "--max-wait", "2s", "--progress", "0")
	r := crawl()
	if code := exitCode(r.err); code != exitUnfinished {
		t.Fatalf("crawl: %v (exit %d), want exit %d (parked)\nstderr:\n%s", r.err, code, exitUnfinished, r.stderr)
	}
	if !strings.Contains(r.stderr+r.stdout, "robots.txt Crawl-delay 24h0m0s") || strings.Contains(r.stderr+r.stdout, "the limiter holds it") {
		t.Errorf("the park does not say its Crawl-delay:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}
