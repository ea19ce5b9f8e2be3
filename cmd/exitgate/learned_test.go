package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/exitgate/exitgate/limit"
)

// limitedSite allows 4 requests per second, burst 1, and answers the rest
// with 429 and Retry-After: 1; it records when each request came.
type limitedSite struct {
	mu  sync.Mutex
	lim *rate.Limiter
	ok  []time.Time
	all []time.Time // every request, 429s too
}

func (s *limitedSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, time.Now())
	if !s.lim.Allow() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	s.ok = append(s.ok, time.Now())
	w.Write([]byte("ok"))
}

func (s *limitedSite) successesSince(t time.Time, d time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.ok {
		if !at.Before(t) && at.Before(t.Add(d)) {
			n++
		}
	}
	return n
}

// TestCrawlResumesLearned: a crawl saves what it learned about a host in
// --out, and a resumed crawl starts from it instead of the first guess.
func TestCrawlResumesLearned(t *testing.T) {
	site := &limitedSite{lim: rate.NewLimiter(4, 1)}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 400))
	out := filepath.Join(dir, "out")
	args := func(d string) []string {
		return []string{"crawl", "--out", out, "--duration", d, "--ignore-robots", "--progress", "0", urlFile}
	}
	// Stopped by --duration with URLs left: exit 4, unfinished.
	if r := runCrawlCmd(t, time.Minute, args("15s")...); exitCode(r.err) != exitUnfinished {
		t.Fatalf("first run: %v (exit %d), want exit %d\n%s", r.err, exitCode(r.err), exitUnfinished, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, learnedFile))
	if err != nil {
		t.Fatalf("first run left no %s: %v", learnedFile, err)
	}
	var l limit.Learned
	// Learned: past the ramp and well above the first guess (0.5/s), fast
	// enough that the second run's first two requests go under a second
	// apart. (Not a floor on how fast it learns: under the whole suite's
	// load 15 s left the search careful at 1.44/s of 4/s.)
	if err := json.Unmarshal(data, &l); err != nil || len(l.Hosts) != 1 || l.Hosts[0].Phase == "ramp" || l.Hosts[0].LaneRate < 1.2 {
		t.Fatalf("%s = %s (%v), want one host learned past its ramp at 1.2/s or more", learnedFile, data, err)
	}

	// A moment later, as a user runs it again: the site's bucket refills
	// (a first request pushed back because the last run spent it is not
	// what this test is about).
	time.Sleep(time.Second)
	start := time.Now()
	r := runCrawlCmd(t, time.Minute, args("4s")...)
	if exitCode(r.err) != exitUnfinished {
		t.Fatalf("second run: %v (exit %d), want exit %d\n%s", r.err, exitCode(r.err), exitUnfinished, r.stderr)
	}
	if !strings.Contains(r.stderr, "resumed what was learned about 1 host ") {
		t.Errorf("second run's stderr does not say it resumed what was learned:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "trusted") {
		t.Errorf("second run's stderr does not say a moment-old knowledge is trusted:\n%s", r.stderr)
	}
	// From the first guess (30/min) a lane's first two requests are 2 s
	// apart; from what was learned (1.2/s or more), under a second. (Its
	// count of successes says less: a search the first run left unsettled
	// goes on, and each step pushed back costs the one lane a second.)
	site.mu.Lock()
	var second []time.Time
	for _, at := range site.all {
		if !at.Before(start) {
			second = append(second, at)
		}
	}
	site.mu.Unlock()
	if len(second) < 2 || second[1].Sub(second[0]) >= time.Second {
		t.Errorf("second run's requests at %v: want the first two under a second apart (the learned pace, not the first guess)", second)
	}
}

// restoreFromFile restores a fresh limiter from a learned.json holding
// data and returns what restoreLearned said.
func restoreFromFile(t *testing.T, data string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, learnedFile), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	lim, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	restoreLearned(dir, lim, time.Now(), &stderr)
	return stderr.String()
}

// TestRestoreLearnedBadFile: a learned.json that cannot be read is reported
// by name and ignored.
func TestRestoreLearnedBadFile(t *testing.T) {
	if got := restoreFromFile(t, "{not json"); !strings.Contains(got, learnedFile) || !strings.Contains(got, "learning every host again") {
		t.Errorf("stderr = %q, want the file named and the crawl going on", got)
	}
	// Where the file goes wrong, as line and column (it had no place).
	if got, want := restoreFromFile(t, "{\n  \"saved\": 12x\n}\n"), learnedFile+":2:14:"; !strings.Contains(got, want) {
		t.Errorf("stderr = %q, want the place %s", got, want)
	}
}

// TestRestoreLearnedTooOld: state more than a day old is dropped, and that
// is said (it was dropped without a word).
func TestRestoreLearnedTooOld(t *testing.T) {
	saved := time.Now().Add(-49 * time.Hour).UTC().Format(time.RFC3339)
	got := restoreFromFile(t, fmt.Sprintf(`{"saved": %q, "hosts": [{"host": "a.example", "scope": "exit", "phase": "settled", "at": %q, "lane_rate": 2, "pass": 2}]}`, saved, saved))
	if !strings.Contains(got, "more than a day old") || !strings.Contains(got, "learning every host again") {
		t.Errorf("stderr = %q, want the drop said", got)
	}
}

// TestCrawlKeepsRetryAfter: a crawl stopped while a server's Retry-After
// holds its only lane leaves the wait in --out, and the next run honours
// it: it sends nothing until the wait ends, and says why it waits. The
// second run asked again 5 s after a Retry-After: 60.
func TestCrawlKeepsRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, time.Now())
		first := len(seen) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "60")
			http.Error(w, "come back in a minute", http.StatusTooManyRequests)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", []string{srv.URL + "/a"})
	out := filepath.Join(dir, "out")
	args := func(d string) []string {
		return []string{"crawl", "--out", out, "--duration", d, "--ignore-robots", "--progress", "0", urlFile}
	}
	if r := runCrawlCmd(t, time.Minute, args("2s")...); exitCode(r.err) != exitUnfinished {
		t.Fatalf("first run: %v (exit %d), want exit %d\n%s", r.err, exitCode(r.err), exitUnfinished, r.stderr)
	}
	r := runCrawlCmd(t, time.Minute, args("2s")...)
	if exitCode(r.err) != exitUnfinished || !strings.Contains(r.stderr, "1 wait the servers asked for before the last run stopped still holds") {
		t.Errorf("second run: %v (exit %d), want exit %d saying a wait still holds\n%s", r.err, exitCode(r.err), exitUnfinished, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Errorf("the server was asked %d times within the minute its Retry-After asked for, want once", len(seen))
	}
}
