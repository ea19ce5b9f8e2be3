package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// forbiddingSite answers 200, except 403 (a bare one, no block page) for the
// paths in paths and for every request from the client addresses in from. It
// records who asked what.
type forbiddingSite struct {
	paths, from map[string]bool
	mu          sync.Mutex
	asked       map[string][]string // path -> client addresses
}

func newForbiddingSite(t *testing.T, paths, from []string) (*forbiddingSite, *httptest.Server) {
	s := &forbiddingSite{paths: map[string]bool{}, from: map[string]bool{}, asked: map[string][]string{}}
	for _, p := range paths {
		s.paths[p] = true
	}
	for _, a := range from {
		s.from[a] = true
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *forbiddingSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	addr, _, _ := net.SplitHostPort(r.RemoteAddr)
	s.mu.Lock()
	s.asked[r.URL.Path] = append(s.asked[r.URL.Path], addr)
	s.mu.Unlock()
	if s.paths[r.URL.Path] || s.from[addr] {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	fmt.Fprintf(w, "page %s\n", r.URL.Path)
}

func (s *forbiddingSite) askedOf(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked[path]...)
}

// TestCrawlOneForbiddenURLDirect: one forbidden URL first among 20 good ones
// on a direct crawl is abandoned as "forbidden" and the other 20 are done.
// A single 403 used to ban the only lane for 10 minutes (doubling), so none
// of the 20 was done within 90 s.
func TestCrawlOneForbiddenURLDirect(t *testing.T) {
	site, srv := newForbiddingSite(t, []string{"/p/000"}, nil)
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 21)
	out, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--concurrency", "1", "--ignore-robots", "--progress", "0")
	r := crawl()
	if code := exitCode(r.err); code != exitAbandoned {
		t.Fatalf("crawl: %v (exit %d), want exit %d (some URLs abandoned)\nstderr:\n%s", r.err, code, exitAbandoned, r.stderr)
	}
	byURL := checkOutcomes(t, readResults(t, out), urls[1:], map[string]string{urls[0]: "forbidden"})
	if res := byURL[urls[0]]; res.Status != 403 || res.Attempts != 1 {
		t.Errorf("forbidden URL: status %d after %d attempts, want 403 after 1 (a direct crawl has no other exit)", res.Status, res.Attempts)
	}
	if n := len(site.askedOf("/p/000")); n != 1 {
		t.Errorf("the forbidden URL was asked %d times, want once", n)
	}
}

// TestCrawlForbiddenURLTriesOtherExits: through three exits (source
// addresses), a forbidden URL is tried through each of them once, then
// abandoned as forbidden; the lanes are not banned, so every other URL is
// done.
func TestCrawlForbiddenURLTriesOtherExits(t *testing.T) {
	site, srv := newForbiddingSite(t, []string{"/p/003"}, nil)
	dir := t.TempDir()
	proxies := writeLines(t, dir, "proxies.txt", []string{"bind:127.0.0.41-127.0.0.43"})
	urls := siteURLs(srv.URL, 30)
	out, crawl := crawlList(t, dir, urls, "--proxies", proxies, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0")
	r := crawl()
	if code := exitCode(r.err); code != exitAbandoned {
		t.Fatalf("crawl: %v (exit %d), want exit %d (some URLs abandoned)\nstderr:\n%s", r.err, code, exitAbandoned, r.stderr)
	}
	forbidden := srv.URL + "/p/003"
	var good []string
	for _, u := range urls {
		if u != forbidden {
			good = append(good, u)
		}
	}
	byURL := checkOutcomes(t, readResults(t, out), good, map[string]string{forbidden: "forbidden"})
	if res := byURL[forbidden]; res.Status != 403 || res.Attempts != 3 {
		t.Errorf("forbidden URL: status %d after %d attempts, want 403 after 3 (one per exit)", res.Status, res.Attempts)
	}
	asked := site.askedOf("/p/003")
	seen := map[string]bool{}
	for _, a := range asked {
		seen[a] = true
	}
	if len(asked) != 3 || len(seen) != 3 {
		t.Errorf("the forbidden URL was asked from %v, want once from each of the 3 exits", asked)
	}
}

// TestCrawlForbiddenWaveBansLane: a site that forbids everything from one
// exit is a real ban of that lane: after a wave of 403s from distinct URLs
// the lane is quarantined, and the URLs it was refused go through the other
// exits, so every URL is done.
func TestCrawlForbiddenWaveBansLane(t *testing.T) {
	site, srv := newForbiddingSite(t, nil, []string{"127.0.0.52"})
	dir := t.TempDir()
	proxies := writeLines(t, dir, "proxies.txt", []string{"bind:127.0.0.51-127.0.0.53"})
	urls := siteURLs(srv.URL, 40)
	out, crawl := crawlList(t, dir, urls, "--proxies", proxies, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0")
	r := crawl()
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	checkAllDoneOnce(t, readResults(t, out), urls)
	banned := 0
	for _, u := range urls {
		for _, a := range site.askedOf(u[len(srv.URL):]) {
			if a == "127.0.0.52" {
				banned++
			}
		}
	}
	// The wave is 3 distinct URLs; a few more may have been in flight.
	if banned < 3 || banned > 8 {
		t.Errorf("the forbidding exit was sent %d requests, want the 3 of a wave and few more", banned)
	}
}
