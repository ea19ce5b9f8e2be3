package main

import (
	"fmt"
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

// TestCrawlDiskFullWhileLoading: --out is a real tmpfs too small for the URL
// list (120,000 URLs; the first batch of 50,000 fits). The load stops with an
// error that names the list, how many URLs went in, the frontier file and the
// full disk, and says to run again (it said "frontier/sqlite: push: database
// or disk is full (13)" alone); the frontier is left in WAL mode. Once there
// is room the same command loads the rest: every URL once.
func TestCrawlDiskFullWhileLoading(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	peertest.Tmpfs(t, out, "size=8m")
	urls := siteURLs(srv.URL, 120000)
	_, crawl := crawlList(t, dir, urls, "--ignore-robots", "--progress", "0", "--duration", "1ms")
	db := filepath.Join(out, "frontier.db")

	r := crawl()
	if code := exitCode(r.err); r.err == nil || code != 1 {
		t.Fatalf("crawl of 120,000 URLs into 8 MiB: %v (exit %d), want exit 1\nstderr:\n%s", r.err, code, r.stderr)
	}
	for _, want := range []string{filepath.Join(dir, "urls.txt"), "stopped after 50000 new URLs", db, "no space left on device", "run the same command again"} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("crawl error = %q, want it to say %q", r.err, want)
		}
	}
	if mode := fileJournal(t, db); mode != "WAL" {
		t.Errorf("frontier.db left in %s mode, want WAL", mode)
	}

	if err := syscall.Mount("tmpfs", out, "tmpfs", syscall.MS_REMOUNT, "size=128m"); err != nil {
		t.Fatalf("remount with room: %v", err)
	}
	r = crawl()
	if code := exitCode(r.err); code != exitUnfinished {
		t.Fatalf("crawl with room: %v (exit %d), want exit %d (--duration)\nstderr:\n%s", r.err, code, exitUnfinished, r.stderr)
	}
	if want := "70000 URLs new, 120000 in the frontier"; !strings.Contains(r.stderr, want) {
		t.Errorf("second run does not say %q:\n%s", want, r.stderr)
	}
	if sum := readSummary(t, out); sum.URLs != len(urls) {
		t.Errorf("summary: %d URLs in the frontier, want %d", sum.URLs, len(urls))
	}
	if mode := fileJournal(t, db); mode != "WAL" {
		t.Errorf("frontier.db in %s mode after the second run, want WAL", mode)
	}
}

// fileJournal reads a closed SQLite file's journal mode from its header
// (bytes 18 and 19: 2 for WAL, 1 for a rollback journal).
func fileJournal(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [2]byte
	if _, err := f.ReadAt(b[:], 18); err != nil {
		t.Fatal(err)
	}
	switch b {
	case [2]byte{2, 2}:
		return "WAL"
	case [2]byte{1, 1}:
		return "rollback"
	}
	return fmt.Sprintf("unknown %v", b)
}
