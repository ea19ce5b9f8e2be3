package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exitgate/exitgate/internal/peertest"
)

// TestCrawlOutOfInodes: the bodies directory is a real tmpfs with room for
// a dozen files (peertest.Tmpfs; where a tmpfs cannot be mounted, fetch's
// TestEngineBodyNotStoredIsNotDone covers a failed body write without one). The crawl stops with an error saying why, no URL is done
// without its body, and once there is room the same command finishes every
// URL, each with its body. The error of creating a body file used to be
// ignored: out of inodes, most URLs were recorded done with no body, and a
// resume never fetched them again.
func TestCrawlOutOfInodes(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	bodies := filepath.Join(out, "bodies")
	peertest.Tmpfs(t, bodies, "size=4m,nr_inodes=12")
	urls := siteURLs(srv.URL, 60)
	_, crawl := crawlList(t, dir, urls, "--lane-rate", "200/s", "--ignore-robots", "--progress", "0")

	r := crawl()
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
	r = crawl()
	if r.err != nil {
		t.Fatalf("crawl with room: %v\nstderr:\n%s", r.err, r.stderr)
	}
	for _, res := range checkAllDoneOnce(t, readResults(t, out), urls) {
		if b, err := os.ReadFile(filepath.Join(out, res.Body)); err != nil || !strings.HasPrefix(string(b), "page /p/") {
			t.Errorf("body of %s = %q, %v; want its page", res.URL, b, err)
		}
	}
}
