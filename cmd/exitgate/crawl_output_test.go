package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/exitgate/exitgate/report"
)

// TestCrawlRerunKeepsSummary: running a finished crawl again adds an empty
// run to runs/ and leaves summary.json adding up to the work done; it used
// to overwrite summary.json with the empty run's zero requests.
func TestCrawlRerunKeepsSummary(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 5)
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")
	args := []string{"crawl", "--out", out, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0", urlFile}
	for run := 1; run <= 2; run++ {
		if r := runCrawlCmd(t, 30*time.Second, args...); r.err != nil {
			t.Fatalf("run %d: %v\nstderr:\n%s", run, r.err, r.stderr)
		}
	}
	sum := readSummary(t, out)
	if sum.Runs != 2 || sum.Requests != int64(len(urls)) || sum.Fetched != int64(len(urls)) || sum.Done != len(urls) {
		t.Errorf("summary.json after a rerun: %d runs, %d requests, %d fetched, %d done; want 2 runs and the first run's %d requests, all fetched and done",
			sum.Runs, sum.Requests, sum.Fetched, sum.Done, len(urls))
	}
	files, _ := filepath.Glob(filepath.Join(out, report.RunsDir, "*.json"))
	if len(files) != 2 {
		t.Errorf("%s holds %v, want one summary per run", report.RunsDir, files)
	}
	checkAllDoneOnce(t, readResults(t, out), urls)
}

// TestCrawlNotFoundIsItsOwnOutcome: a 404 is the server's answer about the
// URL, reported as outcome "not_found" and counted as not_found in the
// summary, apart from the URLs given up on; a crawl whose only misses are
// 404s exits 0. It used to be lumped with the abandoned URLs.
func TestCrawlNotFoundIsItsOwnOutcome(t *testing.T) {
	_, srv := newCountingSite(t, 0) // serves everything but /robots.txt
	dir := t.TempDir()
	urls := append(siteURLs(srv.URL, 2), srv.URL+"/robots.txt")
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")
	r := runCrawlCmd(t, 30*time.Second, "crawl", "--out", out, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0", urlFile)
	if r.err != nil {
		t.Fatalf("crawl: %v (exit %d), want exit 0\nstderr:\n%s", r.err, exitCode(r.err), r.stderr)
	}
	byURL := map[string]report.Result{}
	for _, res := range readResults(t, out) {
		byURL[res.URL] = res
	}
	if res := byURL[urls[2]]; res.Outcome != "not_found" || res.Status != 404 {
		t.Errorf("result of the 404 = %+v, want outcome not_found, status 404", res)
	}
	sum := readSummary(t, out)
	if sum.NotFound != 1 || sum.Abandoned != 0 || len(sum.AbandonedByReason) != 0 || sum.Done != 2 {
		t.Errorf("summary: not_found %d abandoned %d %v done %d; want 1 not found, none abandoned, 2 done", sum.NotFound, sum.Abandoned, sum.AbandonedByReason, sum.Done)
	}
}
