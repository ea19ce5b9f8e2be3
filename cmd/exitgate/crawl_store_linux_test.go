package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTinyTmpfs mounts a tmpfs with room for inodes files and directories
// (its root included) at dir, unmounted at the end of the test. It skips
// the test where mounting is not allowed (not root).
func mountTinyTmpfs(t *testing.T, dir string, inodes int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m,nr_inodes="+strconv.Itoa(inodes)); err != nil {
		t.Skipf("cannot mount a tmpfs at %s (needs root): %v; fetch's TestEngineBodyNotStoredIsNotDone covers a failed body write without one", dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

// TestCrawlOutOfInodes: the bodies directory is a real tmpfs with room for
// a dozen files. The crawl stops with an error saying why, no URL is done
// without its body, and once there is room the same command finishes every
// URL, each with its body. The error of creating a body file used to be
// ignored: out of inodes, most URLs were recorded done with no body, and a
// resume never fetched them again.
func TestCrawlOutOfInodes(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	bodies := filepath.Join(out, "bodies")
	mountTinyTmpfs(t, bodies, 12)
	urls := siteURLs(srv.URL, 60)
	urlFile := writeLines(t, dir, "urls.txt", urls)
	args := []string{"crawl", "--out", out, "--lane-rate", "200/s", "--ignore-robots", "--progress", "0", urlFile}

	r := runCrawlCmd(t, 30*time.Second, args...)
	if r.err == nil || !strings.Contains(r.err.Error(), "no space left on device") {
		t.Fatalf("crawl with 12 inodes for 60 bodies: err = %v, want one saying no space left on device\nstderr:\n%s", r.err, r.stderr)
	}
	if code := exitCode(r.err); code == 0 {
		t.Errorf("exit code 0 after a failed body write")
	}
	done := 0
	for _, res := range readResults(t, out) {
		if res.Outcome != "done" {
			t.Errorf("result %s = %s (%s), want only done URLs (the rest queued)", res.URL, res.Outcome, res.Reason)
			continue
		}
		done++
		if _, err := os.Stat(filepath.Join(out, res.Body)); res.Body == "" || err != nil {
			t.Errorf("result %s is done without its body (%q: %v)", res.URL, res.Body, err)
		}
	}
	if sum := readSummary(t, out); sum.Done != done || sum.Queued != len(urls)-done {
		t.Errorf("summary: done %d queued %d, want %d done and the other %d queued", sum.Done, sum.Queued, done, len(urls)-done)
	}
	t.Logf("first run: %d of %d done before the file system was full", done, len(urls))

	if err := syscall.Mount("tmpfs", bodies, "tmpfs", syscall.MS_REMOUNT, "size=4m,nr_inodes=1000"); err != nil {
		t.Fatalf("remount with room: %v", err)
	}
	r = runCrawlCmd(t, 30*time.Second, args...)
	if r.err != nil {
		t.Fatalf("crawl with room: %v\nstderr:\n%s", r.err, r.stderr)
	}
	for _, res := range checkAllDoneOnce(t, readResults(t, out), urls) {
		if b, err := os.ReadFile(filepath.Join(out, res.Body)); err != nil || !strings.HasPrefix(string(b), "page /p/") {
			t.Errorf("body of %s = %q, %v; want its page", res.URL, b, err)
		}
	}
}
