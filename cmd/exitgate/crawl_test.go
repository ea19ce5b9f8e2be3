package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/internal/syncbuf"
	"github.com/exitgate/exitgate/internal/urlfile"
	"github.com/exitgate/exitgate/report"
)

// crawlRun is what one in-process run of the command left behind.
type crawlRun struct {
	stdout, stderr string
	err            error
	elapsed        time.Duration
}

// runCrawlCmd runs `exitgate args...` in-process. The context bounds the run:
// a crawl that hangs is aborted (its jobs go back to the frontier) and the
// test's later assertions fail, rather than the test binary timing out.
func runCrawlCmd(t *testing.T, timeout time.Duration, args ...string) crawlRun {
	t.Helper()
	return runCrawlCmdIn(t, timeout, "", args...)
}

// runCrawlCmdIn is runCrawlCmd with stdin as its standard input.
func runCrawlCmdIn(t *testing.T, timeout time.Duration, stdin string, args ...string) crawlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	root := newRootCmd()
	var out, errOut syncbuf.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	start := time.Now()
	err := root.ExecuteContext(ctx)
	r := crawlRun{stdout: out.String(), stderr: errOut.String(), err: err, elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Errorf("exitgate %s: still running after %v (aborted)\nstderr:\n%s", strings.Join(args, " "), timeout, r.stderr)
	}
	return r
}

// writeLines writes lines to dir/name and returns its path.
func writeLines(t *testing.T, dir, name string, lines []string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readResults parses out/results.jsonl.
func readResults(t *testing.T, out string) []report.Result {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatalf("results: %v", err)
	}
	defer f.Close()
	var rs []report.Result
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var r report.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results.jsonl:%d: %v: %q", n, err, sc.Text())
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rs
}

// readSummary parses out/summary.json.
func readSummary(t *testing.T, out string) report.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatalf("summary: %v", err)
	}
	var s report.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	return s
}

// checkAllDoneOnce fails unless results lists exactly the URLs of want, each
// once, all done with status 200. It returns the results by URL.
func checkAllDoneOnce(t *testing.T, results []report.Result, want []string) map[string]report.Result {
	t.Helper()
	byURL := resultsByURL(t, results)
	for _, r := range results {
		if r.Outcome != "done" || r.Status != 200 {
			t.Errorf("result %s = %s %d (%s), want done 200", r.URL, r.Outcome, r.Status, r.Reason)
		}
	}
	missing := 0
	for _, u := range want {
		if _, ok := byURL[u]; !ok {
			if missing++; missing <= 5 {
				t.Errorf("results.jsonl lacks %s", u)
			}
		}
	}
	if len(results) != len(want) || missing > 0 {
		t.Errorf("results.jsonl has %d lines, %d of the %d URLs missing", len(results), missing, len(want))
	}
	return byURL
}

// checkOutcomes fails unless results lists each URL of done (done, 200)
// and of abandoned (abandoned, with the reason given) exactly once, and
// nothing else. It returns the results by URL.
func checkOutcomes(t *testing.T, results []report.Result, done []string, abandoned map[string]string) map[string]report.Result {
	t.Helper()
	byURL := resultsByURL(t, results)
	for _, u := range done {
		if r, ok := byURL[u]; !ok || r.Outcome != "done" || r.Status != 200 {
			t.Errorf("result %s = %+v, want done 200", u, r)
		}
	}
	for u, reason := range abandoned {
		if r, ok := byURL[u]; !ok || r.Outcome != "abandoned" || r.Reason != reason {
			t.Errorf("result %s = %+v, want abandoned with reason %q", u, r, reason)
		}
	}
	if len(results) != len(done)+len(abandoned) {
		t.Errorf("results.jsonl has %d lines, want %d", len(results), len(done)+len(abandoned))
	}
	return byURL
}

// resultsByURL indexes results by URL, failing the test for a URL listed
// twice.
func resultsByURL(t *testing.T, results []report.Result) map[string]report.Result {
	t.Helper()
	byURL := make(map[string]report.Result, len(results))
	for _, r := range results {
		if _, dup := byURL[r.URL]; dup {
			t.Errorf("results.jsonl lists %s twice", r.URL)
		}
		byURL[r.URL] = r
	}
	return byURL
}

// checkStatusSum fails unless the summary's responses add up to its requests.
func checkStatusSum(t *testing.T, s report.Summary) {
	t.Helper()
	var sum int64
	for _, n := range s.ResponsesByStatus {
		sum += n
	}
	if sum+s.TransportErrors != s.Requests {
		t.Errorf("summary: responses_by_status %v sum to %d + %d transport errors, want requests %d",
			s.ResponsesByStatus, sum, s.TransportErrors, s.Requests)
	}
}

// countingSite is a plain target for the tests that need no rate limit. It
// counts requests per path and the most it ever had in flight at once; each
// request takes delay.
type countingSite struct {
	delay time.Duration

	mu       sync.Mutex
	seen     map[string]int
	inflight int
	peak     int
}

func newCountingSite(t *testing.T, delay time.Duration) (*countingSite, *httptest.Server) {
	s := &countingSite{delay: delay, seen: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *countingSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen[r.URL.Path]++
	s.inflight++
	s.peak = max(s.peak, s.inflight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}()
	if s.delay > 0 {
		// Simulated service time, so that requests overlap; not a synchronisation.
		select {
		case <-time.After(s.delay):
		case <-r.Context().Done():
			return
		}
	}
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	fmt.Fprintf(w, "page %s\n", r.URL.Path)
}

func (s *countingSite) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[path]
}

func (s *countingSite) snapshot() (seen map[string]int, peak int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen = make(map[string]int, len(s.seen))
	for k, v := range s.seen {
		seen[k] = v
	}
	return seen, s.peak
}

func siteURLs(base string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/p/%03d", base, i)
	}
	return urls
}

// TestCrawlNginxThroughTinyproxyPool is the end-to-end run: real nginx
// limiting each client address to 5 requests per second, reached through four
// real tinyproxy exits bound to four loopback addresses. Every URL must end
// done exactly once, the 429s the lanes draw while learning must stay few,
// and nginx must have seen all four exits.
func TestCrawlNginxThroughTinyproxyPool(t *testing.T) {
	const nURLs = 160
	files := make(map[string]string, nURLs)
	for i := range nURLs {
		files[fmt.Sprintf("p/%03d.txt", i)] = fmt.Sprintf("page %d\n", i)
	}
	// Burst 1 absorbs the odd pair of requests that loopback and proxy
	// jitter bring closer than 200 ms; the limit is still 5/s per address.
	ngx := peertest.StartNginx(t, peertest.NginxConfig{Rate: "5r/s", Burst: 1, RetryAfter: "1", Files: files})
	binds := []string{"127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14"}
	exitIDs := map[string]bool{}
	var proxyLines []string
	for _, b := range binds {
		p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: b})
		proxyLines = append(proxyLines, p.URL())
		exitIDs[p.Addr()] = true
	}
	dir := t.TempDir()
	proxies := writeLines(t, dir, "proxies.txt", append([]string{"# four tinyproxy exits"}, proxyLines...))
	urls := make([]string, nURLs)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/p/%03d.txt", ngx.URL(), i)
	}
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")

	// Robots are honoured: nginx answers /robots.txt with 404, which allows
	// everything, so the fetch of it is one more (limited) request.
	r := runCrawlCmd(t, 90*time.Second, "crawl", "--proxies", proxies, "--out", out,
		"--lane-rate", "4/s", "--concurrency", "8", "--progress", "0", urlFile)
	t.Logf("crawl of %d URLs through %d exits took %v", nURLs, len(binds), r.elapsed)
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}

	byURL := checkAllDoneOnce(t, readResults(t, out), urls)
	usedExits := map[string]int{}
	for _, res := range byURL {
		if !exitIDs[res.Exit] {
			t.Errorf("result %s: exit %q is not one of the proxies %v", res.URL, res.Exit, exitIDs)
		}
		usedExits[res.Exit]++
		if res.Body == "" {
			t.Errorf("result %s: no body stored", res.URL)
			continue
		}
		if b, err := os.ReadFile(filepath.Join(out, res.Body)); err != nil || !strings.HasPrefix(string(b), "page ") {
			t.Errorf("body of %s = %q, %v; want the page", res.URL, b, err)
		}
	}
	if len(usedExits) != len(binds) {
		t.Errorf("results name exits %v, want all %d", usedExits, len(binds))
	}

	sum := readSummary(t, out)
	t.Logf("summary: requests %d, by status %v, transport errors %d, 429 ratio %.3f, throttled %.1fs, %.1f ok/s",
		sum.Requests, sum.ResponsesByStatus, sum.TransportErrors, sum.Ratio429, sum.ThrottledSeconds, sum.EffectiveRate)
	if sum.URLs != nURLs || sum.Done != nURLs || sum.Queued != 0 || sum.Parked != 0 || sum.Abandoned != 0 {
		t.Errorf("summary counts: urls %d done %d queued %d parked %d abandoned %d, want %d done and nothing else",
			sum.URLs, sum.Done, sum.Queued, sum.Parked, sum.Abandoned, nURLs)
	}
	if sum.Ratio429 > 0.05 {
		t.Errorf("summary ratio_429 = %.3f (%d of %d), want <= 0.05", sum.Ratio429, sum.ResponsesByStatus["429"], sum.Requests)
	}
	if sum.ResponsesByStatus["200"] != nURLs {
		t.Errorf("summary: %d responses 200, want %d (one per URL)", sum.ResponsesByStatus["200"], nURLs)
	}
	checkStatusSum(t, sum)
	// nginx sends Retry-After: 1, so each 429 cost its lane at most a
	// second of cooldown; per-IP limits pause no host, so the exits' time
	// adds up to the run's.
	var exitThrottled float64
	for _, e := range sum.PerExit {
		exitThrottled += e.ThrottledSeconds
	}
	if n429 := float64(sum.ResponsesByStatus["429"]); sum.ThrottledSeconds > n429+0.01 || (n429 > 0) != (sum.ThrottledSeconds > 0) ||
		math.Abs(exitThrottled-sum.ThrottledSeconds) > 0.01 {
		t.Errorf("throttled %.3fs (exits %.3fs) for %v 429s with Retry-After: 1, want up to a second each, and the exits' sum equal to the run's",
			sum.ThrottledSeconds, exitThrottled, n429)
	}
	if len(sum.PerExit) != len(binds) {
		t.Errorf("summary per_exit has %d entries, want %d", len(sum.PerExit), len(binds))
	}
	for _, e := range sum.PerExit {
		if e.Requests == 0 || !exitIDs[e.Name] {
			t.Errorf("summary per_exit %s: %d requests, want a used proxy exit", e.Name, e.Requests)
		}
	}

	// nginx's view: every request the crawl counted arrived, from the four
	// bind addresses, and few were rejected at any of them.
	log := ngx.AccessLog(t, int(sum.Requests-sum.TransportErrors))
	if sum.TransportErrors == 0 && int64(len(log)) != sum.Requests {
		t.Errorf("nginx logged %d requests, the crawl counted %d", len(log), sum.Requests)
	}
	perAddr := map[string]int{}
	rejected := map[string]int{}
	var logged429 int64
	for _, e := range log {
		perAddr[e.RemoteAddr]++
		if e.Limit == "REJECTED" {
			rejected[e.RemoteAddr]++
		}
		if e.Status == 429 {
			logged429++
		}
	}
	for _, b := range binds {
		if perAddr[b] < nURLs/len(binds)/3 {
			t.Errorf("nginx saw %d requests from %s, want a fair share of %d (by address: %v)", perAddr[b], b, nURLs, perAddr)
		}
		if limit := 2 + perAddr[b]/10; rejected[b] > limit {
			t.Errorf("nginx rejected %d of %d requests from %s, want <= %d", rejected[b], perAddr[b], b, limit)
		}
	}
	if len(perAddr) != len(binds) {
		t.Errorf("nginx saw client addresses %v, want exactly %v", perAddr, binds)
	}
	if logged429 != sum.ResponsesByStatus["429"] {
		t.Errorf("nginx logged %d 429s, the summary counts %d", logged429, sum.ResponsesByStatus["429"])
	}
	t.Logf("nginx: requests by address %v, rejected %v", perAddr, rejected)
}

// TestCrawlBadProxyLinesRefused: a proxy list with bad lines is refused
// before any work, naming every bad line; nothing is fetched or written.
func TestCrawlBadProxyLinesRefused(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	proxies := writeLines(t, dir, "proxies.txt", []string{
		"http://127.0.0.1:3128",
		"127.0.0.1:99999",
		"# a comment",
		"ftp://127.0.0.1:21",
		"bind:127.0.0.11",
	})
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 3))
	out := filepath.Join(dir, "out")
	r := runCrawlCmd(t, 30*time.Second, "crawl", "--proxies", proxies, "--out", out, "--progress", "0", urlFile)
	if r.err == nil {
		t.Fatalf("crawl with bad proxy lines succeeded; stdout:\n%s", r.stdout)
	}
	msg := r.err.Error()
	for _, want := range []string{"proxies.txt:2:", "proxies.txt:4:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("crawl error = %q, want it to name %s", msg, want)
		}
	}
	for _, not := range []string{"proxies.txt:1:", "proxies.txt:3:", "proxies.txt:5:"} {
		if strings.Contains(msg, not) {
			t.Errorf("crawl error = %q, names good line %s", msg, not)
		}
	}
	if code := exitCode(r.err); code == 0 {
		t.Errorf("exitCode(%v) = 0, want non-zero", r.err)
	}
	if seen, _ := site.snapshot(); len(seen) != 0 {
		t.Errorf("the target was asked %v before the refusal, want nothing", seen)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output dir %s: stat err %v, want it never created", out, err)
	}
}

// TestCrawlBadURLLineSkipped: bad lines of the URL file are reported on
// stderr with their line numbers and skipped; the rest are crawled.
func TestCrawlBadURLLineSkipped(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	good := siteURLs(srv.URL, 4)
	lines := []string{
		"# seeds",
		good[0],
		"not a url",
		good[1],
		"ftp://127.0.0.1/x",
		"",
		good[2],
		"/relative/path",
		good[3],
	}
	urlFile := writeLines(t, dir, "urls.txt", lines)
	out := filepath.Join(dir, "out")
	r := runCrawlCmd(t, 30*time.Second, "crawl", "--out", out, "--lane-rate", "50/s", "--progress", "0", urlFile)
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	for _, n := range []int{3, 5, 8} {
		if want := fmt.Sprintf("exitgate: skipped %s:%d:", urlFile, n); !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, n := range []int{1, 2, 4, 6, 7, 9} {
		if bad := fmt.Sprintf("urls.txt:%d:", n); strings.Contains(r.stderr, bad) {
			t.Errorf("stderr reports good line %q:\n%s", bad, r.stderr)
		}
	}
	checkAllDoneOnce(t, readResults(t, out), good)
	for i := range good {
		if n := site.count(fmt.Sprintf("/p/%03d", i)); n != 1 {
			t.Errorf("site served /p/%03d %d times, want 1", i, n)
		}
	}
	if n := site.count("/robots.txt"); n != 1 {
		t.Errorf("site served /robots.txt %d times, want 1 (robots honoured by default)", n)
	}
}

// TestCrawlConfigFile: --config keys are flag names; an unknown key is an
// error naming the file and line, a known one is applied, and the command
// line wins over the file.
func TestCrawlConfigFile(t *testing.T) {
	t.Run("unknown key", func(t *testing.T) {
		site, srv := newCountingSite(t, 0)
		dir := t.TempDir()
		cfg := writeLines(t, dir, "crawl.yaml", []string{"# exitgate crawl", "concurrency: 3", "lane_rate: 5/s"})
		urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 2))
		r := runCrawlCmd(t, 30*time.Second, "crawl", "--config", cfg, "--out", filepath.Join(dir, "out"), "--progress", "0", urlFile)
		if r.err == nil {
			t.Fatalf("crawl with unknown config key succeeded")
		}
		if msg := r.err.Error(); !strings.Contains(msg, "crawl.yaml:3:") || !strings.Contains(msg, "lane_rate") || !strings.Contains(msg, "did you mean lane-rate?") {
			t.Errorf("crawl error = %q, want it to name crawl.yaml:3:, the key lane_rate and the flag it meant", msg)
		}
		if seen, _ := site.snapshot(); len(seen) != 0 {
			t.Errorf("the target was asked %v despite the bad config", seen)
		}
	})

	// A key given twice is refused (the first value won unread: format: csv
	// then format: bogus ran as csv), and a value the flag's own check
	// refuses names the file and line, as one from the environment names
	// its variable.
	for _, tc := range []struct{ name, want string }{
		{"format: csv\nformat: bogus", `crawl.yaml:2: "format" given twice (first at line 1)`},
		{"ignore-robots: true\ntimeout: 0s", "--timeout 0s: want above 0 (set at "},
		// A number's bad value says what the flag wants, not strconv's
		// words, and a fault at the end of the file is said on its last
		// line (the parser's count said line 2 of a file of one).
		{"ignore-robots: true\nconcurrency: abc", `crawl.yaml:2: concurrency "abc": want a whole number`},
		{"concurrency: [", "crawl.yaml:1: did not find expected node content (at the end of the file)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeLines(t, dir, "crawl.yaml", strings.Split(tc.name, "\n"))
			urlFile := writeLines(t, dir, "urls.txt", []string{"http://127.0.0.1:9/x"})
			r := runCrawlCmd(t, 30*time.Second, "crawl", "--config", cfg, "--out", filepath.Join(dir, "out"), "--progress", "0", urlFile)
			if code := exitCode(r.err); code != exitUsage || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("crawl: %v (exit %d), want exit %d and %q", r.err, code, exitUsage, tc.want)
			}
			if strings.Contains(tc.want, "set at") && !strings.Contains(r.err.Error(), "crawl.yaml:2)") {
				t.Errorf("crawl: %v, want the line crawl.yaml:2", r.err)
			}
		})
	}

	// A list for a flag given once per value (-H, -x) is one value per
	// item, each checked as on the command line: two headers went out as
	// one, "X-A: 1,X-B: 2", and a bad one unchecked.
	t.Run("lists", func(t *testing.T) {
		var mu sync.Mutex
		var got http.Header
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = r.Header.Clone()
			mu.Unlock()
			io.WriteString(w, "ok")
		}))
		t.Cleanup(srv.Close)
		dir := t.TempDir()
		urlFile := writeLines(t, dir, "urls.txt", []string{srv.URL + "/a"})
		cfg := writeLines(t, dir, "crawl.yaml", []string{"header:", `  - "X-A: 1"`, `  - "X-B: 2"`, "proxy: [direct]", "ignore-robots: true"})
		if r := runCrawlCmd(t, 30*time.Second, "crawl", "--config", cfg, "--out", filepath.Join(dir, "out"), "--progress", "0", urlFile); r.err != nil {
			t.Fatalf("crawl: %v\n%s", r.err, r.stderr)
		}
		mu.Lock()
		if got.Get("X-A") != "1" || got.Get("X-B") != "2" {
			t.Errorf("the server saw X-A %q and X-B %q, want 1 and 2", got.Get("X-A"), got.Get("X-B"))
		}
		mu.Unlock()
		bad := writeLines(t, dir, "bad.yaml", []string{"header:", `  - "X-A: 1"`, `  - "bad header"`, "ignore-robots: true"})
		r := runCrawlCmd(t, 30*time.Second, "crawl", "--config", bad, "-x", "direct", "--out", filepath.Join(dir, "out2"), "--progress", "0", urlFile)
		if code := exitCode(r.err); code != exitUsage || !strings.Contains(r.err.Error(), "-H #2") {
			t.Errorf("crawl with a bad header in the config's list: %v (exit %d), want exit %d naming -H #2", r.err, code, exitUsage)
		}
	})

	t.Run("applied", func(t *testing.T) {
		// Each request takes 40 ms and lanes may send every 5 ms, so without
		// the file's concurrency of 3 about eight requests would overlap.
		site, srv := newCountingSite(t, 40*time.Millisecond)
		dir := t.TempDir()
		cfg := writeLines(t, dir, "crawl.yaml", []string{
			"concurrency: 3",
			"ignore-robots: true",
			"lane-rate: 1/min # the command line's --lane-rate must win",
			"progress: 0s",
		})
		urls := siteURLs(srv.URL, 40)
		urlFile := writeLines(t, dir, "urls.txt", urls)
		out := filepath.Join(dir, "out")
		r := runCrawlCmd(t, 30*time.Second, "crawl", "--config", cfg, "--lane-rate", "200/s", "--out", out, urlFile)
		if r.err != nil {
			t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
		}
		checkAllDoneOnce(t, readResults(t, out), urls)
		seen, peak := site.snapshot()
		if peak > 3 {
			t.Errorf("site had %d requests in flight at once, want <= 3 (concurrency: 3 from the config)", peak)
		}
		if peak < 2 {
			t.Errorf("site had at most %d request in flight, want overlap (is the lane rate from the command line?)", peak)
		}
		if seen["/robots.txt"] != 0 {
			t.Errorf("site served /robots.txt %d times, want 0 (ignore-robots: true from the config)", seen["/robots.txt"])
		}
	})
}

// TestCrawlDurationThenResume: --duration stops with URLs still queued and
// says so; running the same command again picks up where it stopped, until
// every URL is done, each fetched exactly once over all runs.
func TestCrawlDurationThenResume(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	const nURLs = 60
	urls := siteURLs(srv.URL, nURLs)
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")
	// One direct lane at 20/s probing up by 25% per 20 successes cannot do
	// 60 URLs in one second.
	args := []string{"crawl", "--out", out, "--lane-rate", "20/s", "--duration", "1s", "--ignore-robots", "--progress", "0", urlFile}

	var queued []int
	for run := 1; ; run++ {
		if run > 10 {
			t.Fatalf("still %v queued after %d runs", queued, run-1)
		}
		r := runCrawlCmd(t, 30*time.Second, args...)
		sum := readSummary(t, out)
		// Stopped by --duration with URLs left: exit 4 (unfinished), not 0.
		if wantCode := map[bool]int{true: exitUnfinished, false: 0}[sum.Queued > 0]; exitCode(r.err) != wantCode && !(wantCode == 0 && r.err == nil) {
			t.Fatalf("run %d: %v (exit %d), want exit %d\nstderr:\n%s", run, r.err, exitCode(r.err), wantCode, r.stderr)
		}
		if sum.Queued > 0 && !strings.Contains(r.err.Error(), "stopped after --duration 1s") {
			t.Errorf("run %d: error %q does not say --duration stopped it", run, r.err)
		}
		checkStatusSum(t, sum)
		if sum.URLs != nURLs || sum.Done+sum.Queued != nURLs || sum.Abandoned+sum.Parked != 0 {
			t.Fatalf("run %d summary: urls %d done %d queued %d abandoned %d parked %d, want %d in done+queued",
				run, sum.URLs, sum.Done, sum.Queued, sum.Abandoned, sum.Parked, nURLs)
		}
		if n := len(readResults(t, out)); n != sum.Done {
			t.Errorf("run %d: results.jsonl has %d lines, summary %d done", run, n, sum.Done)
		}
		if len(queued) > 0 && sum.Queued >= queued[len(queued)-1] {
			t.Fatalf("run %d left %d queued, the run before %d: no progress", run, sum.Queued, queued[len(queued)-1])
		}
		queued = append(queued, sum.Queued)
		hint := strings.Contains(r.stdout, "Run the same command again to resume")
		if sum.Queued > 0 != hint {
			t.Errorf("run %d: %d queued, resume hint printed %v; stdout:\n%s", run, sum.Queued, hint, r.stdout)
		}
		if sum.Queued == 0 {
			break
		}
	}
	t.Logf("queued after each run: %v", queued)
	if len(queued) < 2 || queued[0] == 0 {
		t.Fatalf("queued after each run = %v, want the first run to stop with URLs left", queued)
	}
	checkAllDoneOnce(t, readResults(t, out), urls)
	seen, _ := site.snapshot()
	var twice []string
	for path, n := range seen {
		if n != 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", path, n))
		}
	}
	sort.Strings(twice)
	if len(seen) != nURLs || len(twice) > 0 {
		t.Errorf("site served %d paths, these more than once: %v; want each of %d exactly once (a stop finishes requests in flight)", len(seen), twice, nURLs)
	}
}

// TestCrawlDurationAbortsSlowRequests: --duration is the run's deadline.
// Requests in flight when it ends get durationGrace to finish, then are
// aborted and stay queued, and the crawl says so: a server that takes a
// minute to answer held a --duration 1s run for all of --timeout, its
// progress line counting on.
func TestCrawlDurationAbortsSlowRequests(t *testing.T) {
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		select { // answers nothing for a minute
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 3)
	out := filepath.Join(dir, "out")
	start := time.Now()
	r := runCrawlCmd(t, 60*time.Second, "crawl", "--out", out, "--lane-rate", "20/s", "--duration", "1s", "--timeout", "50s",
		"--ignore-robots", "--progress", "0", writeLines(t, dir, "urls.txt", urls))
	took := time.Since(start)
	if exitCode(r.err) != exitUnfinished {
		t.Fatalf("crawl: %v (exit %d), want exit %d\nstderr:\n%s", r.err, exitCode(r.err), exitUnfinished, r.stderr)
	}
	if took > 1*time.Second+durationGrace+5*time.Second {
		t.Errorf("crawl took %v with --duration 1s, want about 1s and %v of grace, not --timeout's 50s", took.Round(time.Millisecond), durationGrace)
	}
	if !strings.Contains(r.stderr, "--duration 1s reached: stopping") {
		t.Errorf("stderr does not say the duration ended the run:\n%s", r.stderr)
	}
	sum := readSummary(t, out)
	if sum.Queued != len(urls) || sum.Abandoned != 0 {
		t.Errorf("summary: %d queued, %d abandoned; want all %d queued (aborted at the deadline, not charged)", sum.Queued, sum.Abandoned, len(urls))
	}
	// The requests the stop cut short were sent, and counted: the summary
	// said 0 where the server saw 3.
	if n := seen.Load(); sum.Requests != n || sum.Aborted != n {
		t.Errorf("summary: %d requests, %d aborted; the server saw %d, all cut short", sum.Requests, sum.Aborted, n)
	}
	if !strings.Contains(r.stdout, "cut short by the stop") {
		t.Errorf("the end report does not say requests were cut short:\n%s", r.stdout)
	}
}

// TestCrawlRetriesPerSuccessCountsRetriesOnly: a crawl in which every URL
// succeeds at the first attempt made no retries, whatever else it fetched:
// the robots.txt request is not a retry of any URL.
func TestCrawlRetriesPerSuccessCountsRetriesOnly(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 4)
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")
	r := runCrawlCmd(t, 30*time.Second, "crawl", "--out", out, "--lane-rate", "50/s", "--progress", "0", urlFile)
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	checkAllDoneOnce(t, readResults(t, out), urls)
	if n := site.count("/robots.txt"); n != 1 {
		t.Fatalf("site served /robots.txt %d times, want 1", n)
	}
	sum := readSummary(t, out)
	if sum.Requests != int64(len(urls))+1 {
		t.Errorf("summary requests = %d, want %d (the URLs and robots.txt)", sum.Requests, len(urls)+1)
	}
	if sum.RetriesPerSuccess != 0 {
		t.Errorf("summary retries_per_success = %v, want 0: every URL succeeded at its first attempt", sum.RetriesPerSuccess)
	}
}

// crawlList writes urls to dir/urls.txt and returns dir/out and a function
// that runs `exitgate crawl --out dir/out flags... dir/urls.txt`, bounded
// to 30 s, each time it is called.
func crawlList(t *testing.T, dir string, urls []string, flags ...string) (string, func() crawlRun) {
	t.Helper()
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")
	args := append(append([]string{"crawl", "--out", out}, flags...), urlFile)
	return out, func() crawlRun { t.Helper(); return runCrawlCmd(t, 30*time.Second, args...) }
}

// TestCrawlManyBadLinesCounted: of a list with many bad lines, the first
// urlfile.MaxBadKept are shown with their line numbers and the rest counted
// in one line (each of a million was printed, and all were held).
func TestCrawlManyBadLinesCounted(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	good := siteURLs(srv.URL, 2)
	lines := []string{good[0]}
	for i := range urlfile.MaxBadKept + 7 {
		lines = append(lines, fmt.Sprintf("not a url %d", i))
	}
	lines = append(lines, good[1])
	urlFile := writeLines(t, dir, "urls.txt", lines)
	out := filepath.Join(dir, "out")
	r := runCrawlCmd(t, 30*time.Second, "crawl", "--out", out, "--lane-rate", "50/s", "--progress", "0", urlFile)
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	if n := strings.Count(r.stderr, "exitgate: skipped "+urlFile+":"); n != urlfile.MaxBadKept {
		t.Errorf("%d bad lines shown, want %d:\n%s", n, urlfile.MaxBadKept, r.stderr)
	}
	if want := fmt.Sprintf("exitgate: skipped 7 more bad lines of %s (%d in all; the first %d are shown)", urlFile, urlfile.MaxBadKept+7, urlfile.MaxBadKept); !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	checkAllDoneOnce(t, readResults(t, out), good)
}
