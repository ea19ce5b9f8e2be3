package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCrawlSIGINTStopsCleanly: the first SIGINT stops taking work, lets the
// requests in flight finish, writes the report and exits 4 (unfinished; it
// used to exit 0 with URLs left); a resumed run then finishes the rest, every
// URL once, and exits 0.
//
// SIGHUP too (a terminal closed under it): the process died of it, exit
// 129, with no summary and nothing said.
func TestCrawlSIGINTStopsCleanly(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGINT, "interrupt"}, {syscall.SIGHUP, "hangup"}} {
		t.Run(tc.name, func(t *testing.T) { crawlStopsCleanly(t, tc.sig, tc.name) })
	}
}

func crawlStopsCleanly(t *testing.T, sig syscall.Signal, name string) {
	const nURLs, concurrency, signalAfter = 200, 4, 40
	var (
		mu      sync.Mutex
		served  int
		reached = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if served++; served == signalAfter {
			close(reached)
		}
		mu.Unlock()
		select { // service time so that requests are in flight at the signal
		case <-time.After(20 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintln(w, "page")
	}))
	defer srv.Close()

	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, nURLs))
	out := filepath.Join(dir, "out")
	args := []string{"crawl", "--out", out, "--concurrency", strconv.Itoa(concurrency),
		"--lane-rate", "100/s", "--ignore-robots", "--progress", "0", urlFile}

	first := startCrawlHelper(t, args...)
	select {
	case <-reached:
	case <-first.done:
		t.Fatalf("crawl exited (%v) before the signal\nstderr:\n%s", first.err, first.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server served fewer than %d requests in 60s", signalAfter)
	}
	if err := first.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	var exitErr *exec.ExitError
	if err := first.wait(t, 30*time.Second); !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUnfinished {
		t.Fatalf("crawl after %s: %v, want exit status %d (unfinished)\nstderr:\n%s", name, err, exitUnfinished, first.stderr.String())
	}
	if !bytes.Contains(first.stderr.Bytes(), []byte("unfinished: ")) || !bytes.Contains(first.stderr.Bytes(), []byte("stopped by "+name)) {
		t.Errorf("stderr does not say the crawl is unfinished, stopped by the signal:\n%s", first.stderr.String())
	}
	if !bytes.Contains(first.stderr.Bytes(), []byte("stopping")) {
		t.Errorf("stderr does not say it is stopping:\n%s", first.stderr.String())
	}
	var sum struct {
		Done, Queued, Abandoned int
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatalf("no summary after SIGINT: %v", err)
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Done == 0 || sum.Queued == 0 || sum.Done+sum.Queued != nURLs || sum.Abandoned != 0 {
		t.Errorf("summary after SIGINT: %+v, want some done, the rest queued, none abandoned", sum)
	}
	if !bytes.Contains(first.stdout.Bytes(), []byte("Run the same command again")) {
		t.Errorf("stdout lacks the resume hint:\n%s", first.stdout.String())
	}

	second := startCrawlHelper(t, args...)
	if err := second.wait(t, 60*time.Second); err != nil {
		t.Fatalf("resumed crawl: %v\nstderr:\n%s", err, second.stderr.String())
	}
	f, err := os.Open(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ URL, Outcome string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Outcome != "done" {
			t.Errorf("%s: outcome %s, want done", r.URL, r.Outcome)
		}
		count[r.URL]++
	}
	if len(count) != nURLs {
		t.Errorf("results.jsonl lists %d URLs, want %d", len(count), nURLs)
	}
	for u, n := range count {
		if n != 1 {
			t.Errorf("%s appears %d times in results.jsonl", u, n)
		}
	}
}

// TestCrawlSignalWhileLoading: a signal while a long URL list is loading
// stops the loading at a batch and exits 4 with a word (the process had
// died of the signal, without one); the list was recorded before its URLs
// went in, so another list is refused for the part loaded (it had been
// merged into it, and the rest of the first list refused as another's),
// and the same command again loads the rest.
func TestCrawlSignalWhileLoading(t *testing.T) {
	const nURLs = 400_000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "page") }))
	defer srv.Close()
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, nURLs))
	other := writeLines(t, dir, "other.txt", siteURLs(srv.URL+"/other", 3))
	out := filepath.Join(dir, "out")
	args := func(list string, more ...string) []string {
		return append([]string{"crawl", "--out", out, "--ignore-robots", "--progress", "0", "--duration", "1s", list}, more...)
	}

	first := startCrawlHelper(t, args(urlFile)...)
	deadline := time.Now().Add(30 * time.Second)
	for { // loading has begun once the frontier holds a batch or so (the load writes the file itself, not the log: BulkLoad)
		if st, err := os.Stat(filepath.Join(out, "frontier.db")); err == nil && st.Size() > 1<<20 {
			break
		}
		select {
		case <-first.done:
			t.Fatalf("crawl exited (%v) before the signal\nstderr:\n%s", first.err, first.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no URL loaded in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exitErr *exec.ExitError
	if err := first.wait(t, 30*time.Second); !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUnfinished {
		t.Fatalf("crawl after SIGTERM while loading: %v, want exit status %d\nstderr:\n%s", err, exitUnfinished, first.stderr.String())
	}
	if !bytes.Contains(first.stderr.Bytes(), []byte("while loading")) {
		t.Errorf("stderr does not say the loading was stopped:\n%s", first.stderr.String())
	}

	refused := startCrawlHelper(t, args(other)...)
	if err := refused.wait(t, 60*time.Second); !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUsage {
		t.Fatalf("another list after a stopped load: %v, want exit status %d (refused)\nstderr:\n%s", err, exitUsage, refused.stderr.String())
	}

	again := startCrawlHelper(t, args(urlFile)...)
	if err := again.wait(t, 120*time.Second); !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUnfinished {
		t.Fatalf("the same command again: %v, want exit status %d (--duration 1s)\nstderr:\n%s", err, exitUnfinished, again.stderr.String())
	}
	if !bytes.Contains(again.stderr.Bytes(), []byte(fmt.Sprintf(" %d in the frontier", nURLs))) {
		t.Errorf("the same command again did not load the rest (want %d in the frontier):\n%s", nURLs, again.stderr.String())
	}
}
