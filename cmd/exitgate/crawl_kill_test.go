package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/report"
)

// crawlHelperEnv carries, JSON-encoded, the arguments with which the test
// binary re-executed as TestCrawlHelperProcess runs the exitgate command.
const crawlHelperEnv = "EXITGATE_CRAWL_HELPER_ARGS"

// crawlHelperSaveEnv, if set, is the helper's learnedEvery (a duration).
const crawlHelperSaveEnv = "EXITGATE_CRAWL_HELPER_SAVE_EVERY"

// TestCrawlHelperProcess is not a test: it is the exitgate command inside a
// re-executed test binary, so that TestCrawlKillResume can kill -9 a real
// crawl process. It exits the way main does.
func TestCrawlHelperProcess(t *testing.T) {
	raw := os.Getenv(crawlHelperEnv)
	if raw == "" {
		t.Skip("helper process of TestCrawlKillResume; runs only when re-executed by it")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad", crawlHelperEnv, err)
		os.Exit(2)
	}
	if d, err := time.ParseDuration(os.Getenv(crawlHelperSaveEnv)); err == nil {
		learnedEvery = d
	}
	root := newRootCmd()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "exitgate:", err)
		os.Exit(exitCode(err))
	}
	os.Exit(0)
}

// helperProc is a running re-executed crawl.
type helperProc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed when Wait returned; err is set then
	err            error
}

func startCrawlHelper(t *testing.T, args ...string) *helperProc {
	t.Helper()
	return startCrawlHelperEnv(t, nil, args...)
}

// startCrawlHelperEnv is startCrawlHelper with env added to the helper's
// environment.
func startCrawlHelperEnv(t *testing.T, env []string, args ...string) *helperProc {
	t.Helper()
	enc, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	p := &helperProc{done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestCrawlHelperProcess$", "-test.count=1")
	p.cmd.Env = append(append(os.Environ(), env...), crawlHelperEnv+"="+string(enc))
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill() // our own child, by its pid
			<-p.done
		}
	})
	return p
}

// wait waits for the helper to exit, killing it after timeout.
func (p *helperProc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("helper still running after %v; killed\nstderr:\n%s", timeout, p.stderr.String())
		return nil
	}
}

// countResultRows counts the complete rows of a results.jsonl that a killed
// crawl may have left with a last row cut short, failing the test on a
// duplicate, a row that is not done, or a broken row before the last.
func countResultRows(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("results after the kill: %v", err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	seen := map[string]bool{}
	n := 0
	for i, line := range lines {
		if len(line) == 0 || line[len(line)-1] != '\n' {
			continue // the last row, cut short by the kill
		}
		var r report.Result
		if err := json.Unmarshal(line, &r); err != nil {
			t.Errorf("results.jsonl:%d after the kill: %v: %q", i+1, err, line)
			continue
		}
		if seen[r.URL] || r.Outcome != "done" {
			t.Errorf("results.jsonl:%d after the kill: %s %s (twice: %v), want each URL once, done", i+1, r.URL, r.Outcome, seen[r.URL])
		}
		seen[r.URL] = true
		n++
	}
	return n
}

// TestCrawlKillResume: a crawl killed with SIGKILL in the middle loses
// nothing and repeats almost nothing. Running the same command again
// finishes every URL exactly once in results.jsonl; only the URLs whose
// requests were in flight at the kill (at most --concurrency of them) are
// fetched a second time. URLs recorded done before the kill are not fetched
// again, and URLs claimed but not yet sent are simply queued again.
func TestCrawlKillResume(t *testing.T) {
	const (
		nURLs       = 300
		concurrency = 4
		killAfter   = 60 // requests served before the kill
	)
	var (
		mu      sync.Mutex
		seen    = map[string]int{}
		served  int
		reached = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		if served++; served == killAfter {
			close(reached)
		}
		mu.Unlock()
		// Service time, so that the crawl lasts long enough to be killed
		// with requests in flight; not a synchronisation.
		select {
		case <-time.After(20 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "page %s\n", r.URL.Path)
	}))
	defer srv.Close()
	snapshot := func() (map[string]int, int) {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(seen))
		for k, v := range seen {
			out[k] = v
		}
		return out, served
	}

	dir := t.TempDir()
	urls := siteURLs(srv.URL, nURLs)
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")
	args := []string{"crawl", "--out", out, "--concurrency", strconv.Itoa(concurrency),
		"--lane-rate", "100/s", "--ignore-robots", "--progress", "0", urlFile}

	first := startCrawlHelper(t, args...)
	select {
	case <-reached:
	case <-first.done:
		t.Fatalf("first crawl exited (%v) before the server had served %d requests\nstderr:\n%s", first.err, killAfter, first.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server served fewer than %d requests in 60s\nstderr:\n%s", killAfter, first.stderr.String())
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 the first crawl: %v", err)
	}
	err := first.wait(t, 10*time.Second)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first crawl ended with %v, want killed by SIGKILL (did it finish first?)\nstderr:\n%s", err, first.stderr.String())
	}
	atKill, servedAtKill := snapshot()
	if len(atKill) >= nURLs {
		t.Fatalf("the first crawl had fetched all %d URLs before the kill; the test proves nothing", nURLs)
	}
	// Results are written as URLs finish: the killed run leaves the rows of
	// what it finished (the last one perhaps cut short), each once.
	if n := countResultRows(t, filepath.Join(out, "results.jsonl")); n < 1 || n > servedAtKill {
		t.Errorf("results.jsonl after kill -9 holds %d rows, want the URLs finished before the kill (1 to %d)", n, servedAtKill)
	}
	t.Logf("killed after %d requests, %d distinct URLs", servedAtKill, len(atKill))

	second := startCrawlHelper(t, args...)
	if err := second.wait(t, 60*time.Second); err != nil {
		t.Fatalf("resumed crawl: %v\nstderr:\n%s", err, second.stderr.String())
	}
	stderr := second.stderr.String()
	bufferTarget := max(64, 4*concurrency)
	m := regexp.MustCompile(`resumed: (\d+) jobs`).FindStringSubmatch(stderr)
	if m == nil {
		t.Errorf("resumed crawl's stderr does not report the recovered jobs:\n%s", stderr)
	} else if n, _ := strconv.Atoi(m[1]); n < 1 || n > concurrency+bufferTarget {
		// Leased at the kill: those in flight (<= concurrency) and those the
		// engine had claimed ahead (at most its buffer target, max(64,
		// 4*concurrency); see fetch.Core).
		t.Errorf("resumed %d jobs, want between 1 and %d (in flight plus buffered)", n, concurrency+bufferTarget)
	} else {
		t.Logf("the resumed run queued again %d jobs leased at the kill", n)
	}
	if !bytes.Contains(second.stdout.Bytes(), []byte("Results:")) {
		t.Errorf("resumed crawl's stdout lacks the report:\n%s", second.stdout.String())
	}

	checkAllDoneOnce(t, readResults(t, out), urls)
	final, _ := snapshot()
	var twice []string
	for i := range nURLs {
		path := fmt.Sprintf("/p/%03d", i)
		switch n := final[path]; {
		case n == 0:
			t.Errorf("%s was never fetched, yet is done", path)
		case n == 2:
			twice = append(twice, path)
			if atKill[path] != 1 {
				t.Errorf("%s fetched twice but %d times before the kill: the resumed run fetched it twice", path, atKill[path])
			}
		case n > 2:
			t.Errorf("%s fetched %d times, want at most twice", path, n)
		}
	}
	// A request is counted by the server when it arrives, and the engine
	// records its job before dispatching anything new, so only the at most
	// --concurrency requests in flight at the kill may be repeated.
	if len(twice) > concurrency {
		t.Errorf("%d URLs fetched twice (%v), want at most %d (the requests in flight at the kill)", len(twice), twice, concurrency)
	}
	t.Logf("fetched twice: %d %v", len(twice), twice)
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Errorf("summary.json after the resumed run: %v", err)
	}
	sum := readSummary(t, out)
	if sum.Done != nURLs || sum.Queued+sum.Parked+sum.Abandoned != 0 {
		t.Errorf("summary: done %d queued %d parked %d abandoned %d, want all %d done", sum.Done, sum.Queued, sum.Parked, sum.Abandoned, nURLs)
	}
}

// TestCrawlKillKeepsRunCounts: a run killed with -9 leaves its summary as
// of its last checkpoint in runs/, and the next run's summary.json adds it
// up with its own: the requests, and each host's and exit's counts, of
// both runs. The killed run's counts were lost: after a resume, summary.json
// said 2000 done but 596 fetched and 596 requests, and no host or exit row
// held the 1404 URLs the killed run had done.
func TestCrawlKillKeepsRunCounts(t *testing.T) {
	const nURLs = 200
	out, args := slowCrawlArgs(t, nURLs, 10*time.Millisecond)
	first := startCrawlHelperEnv(t, []string{crawlHelperSaveEnv + "=300ms"}, args...)
	checkpoint := killAtCheckpoint(t, first, out, 20, 30*time.Second)
	names, _ := filepath.Glob(filepath.Join(out, report.RunsDir, "*.json"))
	if len(names) != 1 {
		t.Fatalf("runs/ after the kill holds %v, want the killed run's checkpoint", names)
	}
	b, err := os.ReadFile(names[0])
	if err != nil || json.Unmarshal(b, &checkpoint) != nil {
		t.Fatalf("the killed run's checkpoint: %v", err)
	}
	if checkpoint.Done >= nURLs {
		t.Fatalf("the killed run had done all %d URLs; the test proves nothing", nURLs)
	}
	// status DIR reads runs/ afresh: the killed run, which wrote no
	// summary.json, is shown (it said "a directory without summary.json").
	if r := runCmd(t, "status", out); r.err != nil || !strings.Contains(r.stdout, "1 run(s)") || !strings.Contains(r.stdout, fmt.Sprintf("%d done", checkpoint.Done)) {
		t.Errorf("status of the killed crawl's --out: %v\n%s", r.err, r.stdout)
	}

	second := startCrawlHelper(t, args...)
	if err := second.wait(t, 60*time.Second); err != nil {
		t.Fatalf("resumed crawl: %v\nstderr:\n%s", err, second.stderr.String())
	}
	sum := readSummary(t, out)
	if sum.Runs != 2 || sum.Done != nURLs {
		t.Fatalf("summary: %d runs, %d done; want 2 runs, all %d done", sum.Runs, sum.Done, nURLs)
	}
	if sum.Requests < checkpoint.Requests+1 || sum.Fetched < checkpoint.Fetched+1 {
		t.Errorf("summary: %d requests, %d fetched; want the killed run's %d and %d and the second's", sum.Requests, sum.Fetched, checkpoint.Requests, checkpoint.Fetched)
	}
	var hostReq int64
	for _, h := range sum.PerHost {
		hostReq += h.Requests
	}
	if hostReq != sum.Requests {
		t.Errorf("per_host requests add up to %d, the summary counts %d", hostReq, sum.Requests)
	}
}

// TestCrawlKillEarlyKeepsRunCounts: a run killed in its first seconds keeps
// its counts too: the summary is checkpointed every checkpointEarly at
// first. Its first checkpoint came with the first save of what was learned,
// 5 s on: eight runs killed within 2.5 s each, then a ninth, said 110
// requests for 800 URLs done.
func TestCrawlKillEarlyKeepsRunCounts(t *testing.T) {
	const nURLs = 400
	out, args := slowCrawlArgs(t, nURLs, 20*time.Millisecond)
	first := startCrawlHelper(t, args...)
	checkpoint := killAtCheckpoint(t, first, out, 1, 3*time.Second) // under learnedFirst: the early cadence or nothing
	second := startCrawlHelper(t, args...)
	if err := second.wait(t, 60*time.Second); err != nil {
		t.Fatalf("resumed crawl: %v\nstderr:\n%s", err, second.stderr.String())
	}
	sum := readSummary(t, out)
	if sum.Runs != 2 || sum.Done != nURLs || sum.Requests < checkpoint.Requests+1 {
		t.Errorf("summary: %d runs, %d done, %d requests; want 2 runs, all %d done, the killed run's %d requests and the second's", sum.Runs, sum.Done, sum.Requests, nURLs, checkpoint.Requests)
	}
}

// killAtCheckpoint waits, up to within, for the run of p writing to out to
// checkpoint a summary of at least requests requests in runs/, then kills it
// with -9 and returns that checkpoint.
func killAtCheckpoint(t *testing.T, p *helperProc, out string, requests int64, within time.Duration) report.Summary {
	t.Helper()
	var checkpoint report.Summary
	deadline := time.Now().Add(within)
	for checkpoint.Requests < requests {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of %d requests or more in runs/ within %v\nstderr:\n%s", requests, within, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond) // polling for the helper's checkpoint; bounded above
		names, _ := filepath.Glob(filepath.Join(out, report.RunsDir, "*.json"))
		if len(names) == 1 {
			if b, err := os.ReadFile(names[0]); err == nil {
				json.Unmarshal(b, &checkpoint) // (a file being replaced reads as before or after)
			}
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
	return checkpoint
}

// slowCrawlArgs starts a server that answers each of its n pages after
// service (so that a crawl of them lasts past a checkpoint) and returns the
// crawl's --out and its arguments, two at a time at 50/s.
func slowCrawlArgs(t *testing.T, n int, service time.Duration) (out string, args []string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(service):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "page %s\n", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	out = filepath.Join(dir, "out")
	return out, []string{"crawl", "--out", out, "--concurrency", "2", "--lane-rate", "50/s", "--ignore-robots", "--progress", "0",
		writeLines(t, dir, "urls.txt", siteURLs(srv.URL, n))}
}
