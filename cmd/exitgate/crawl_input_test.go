package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCrawlURLTheFrontierRefusesIsSkipped: a line that parses as a URL but
// that the frontier refuses (port 0, port 99999, a byte no host has) is
// reported as file:line and skipped like any bad line; it used to abort the
// push of its whole batch ("push job N"), on every rerun, with the rest of
// the file never queued.
func TestCrawlURLTheFrontierRefusesIsSkipped(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	good := siteURLs(srv.URL, 3)
	urlFile := writeLines(t, dir, "urls.txt", []string{
		good[0],
		"http://127.0.0.1:0/x",
		good[1],
		"http://127.0.0.1:99999/x",
		"http://exa!mple.com/",
		good[2],
	})
	out := filepath.Join(dir, "out")
	for run := 1; run <= 2; run++ {
		r := runCrawlCmd(t, 30*time.Second, "crawl", "--out", out, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0", urlFile)
		if r.err != nil {
			t.Fatalf("run %d: %v\nstderr:\n%s", run, r.err, r.stderr)
		}
		for _, want := range []string{`urls.txt:2: "http://127.0.0.1:0/x": invalid port "0"`, `urls.txt:4: "http://127.0.0.1:99999/x": invalid port "99999"`, `urls.txt:5:`} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("run %d: stderr lacks %q:\n%s", run, want, r.stderr)
			}
		}
		checkAllDoneOnce(t, readResults(t, out), good)
	}
	for i := range good {
		if n := site.count(fmt.Sprintf("/p/%03d", i)); n != 1 {
			t.Errorf("site served /p/%03d %d times, want 1", i, n)
		}
	}
}
