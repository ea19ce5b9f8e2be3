package main

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	out, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0")
	for run := 1; run <= 2; run++ {
		if r := crawl(); r.err != nil {
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
	out, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0")
	r := crawl()
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

// TestCrawlResultRows: each row says where redirects led (final_url), when
// the answer came (fetched_at) and its Content-Type, ETag and Last-Modified;
// an abandoned row names the exit of its last attempt. With --format csv the
// same rows go to results.csv, and a rerun leaves each URL there once.
func TestCrawlResultRows(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
		case "/new":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("ETag", `"abc"`)
			w.Header().Set("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")
			fmt.Fprintln(w, "<p>new</p>")
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	urls := []string{srv.URL + "/old", srv.URL + "/broken"}
	urlFile := writeLines(t, dir, "urls.txt", urls)
	start := time.Now()
	for _, format := range []string{"jsonl", "csv"} {
		out := filepath.Join(dir, format)
		args := []string{"crawl", "--out", out, "--format", format, "--max-retries", "0", "--lane-rate", "50/s", "--ignore-robots", "--progress", "0", urlFile}
		for run := 1; run <= 2; run++ {
			if r := runCrawlCmd(t, 30*time.Second, args...); exitCode(r.err) != exitAbandoned {
				t.Fatalf("%s run %d: %v, want exit %d\nstderr:\n%s", format, run, r.err, exitAbandoned, r.stderr)
			}
		}
		rows := readResultRows(t, out, format)
		if len(rows) != 2 {
			t.Fatalf("%s: %d rows, want one per URL: %+v", format, len(rows), rows)
		}
		byURL := map[string]report.Result{}
		for _, r := range rows {
			byURL[r.URL] = r
		}
		moved := byURL[urls[0]]
		if moved.FinalURL != srv.URL+"/new" || moved.ContentType != "text/html; charset=utf-8" || moved.ETag != `"abc"` ||
			moved.LastModified != "Tue, 01 Dec 2026 10:00:00 GMT" || moved.FetchedAt.Before(start.Add(-time.Second)) {
			t.Errorf("%s: row of the redirected URL = %+v, want final_url, content_type, etag, last_modified and fetched_at", format, moved)
		}
		if broken := byURL[urls[1]]; broken.Outcome != "abandoned" || broken.Exit != "direct" {
			t.Errorf("%s: row of the abandoned URL = %+v, want abandoned through exit direct", format, broken)
		}
	}
}

// TestCrawlRebuiltRowsFindBodies: a results row rebuilt from the frontier
// names its body under --out, whatever the working directory or the
// spelling of --out of the run that fetched it, and after the directory
// moved: the frontier kept the body's path as the fetching run wrote it,
// relative to its working directory, and rows rebuilt elsewhere named
// ../o30/bodies/1.
func TestCrawlRebuiltRowsFindBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "body of %s", r.URL.Path)
	}))
	defer srv.Close()
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 5)
	urlFile := writeLines(t, dir, "urls.txt", urls)
	t.Chdir(dir)
	crawl := func(out string, more ...string) {
		t.Helper()
		args := append([]string{"crawl", "--out", out, "--lane-rate", "50/s", "--ignore-robots", "--progress", "0"}, more...)
		if r := runCrawlCmd(t, 30*time.Second, append(args, urlFile)...); r.err != nil {
			t.Fatalf("crawl --out %s %v: %v\nstderr:\n%s", out, more, r.err, r.stderr)
		}
	}
	check := func(out, format, when string) {
		t.Helper()
		f, err := os.Open(filepath.Join(out, "results."+format))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var rows []report.Result
		if format == "jsonl" {
			rows = readResults(t, out)
		} else {
			recs, err := csv.NewReader(f).ReadAll()
			if err != nil || len(recs) < 1 {
				t.Fatalf("results.csv: %v", err)
			}
			for _, rec := range recs[1:] {
				rows = append(rows, report.Result{URL: rec[slices.Index(report.CSVHeader, "url")], Body: rec[slices.Index(report.CSVHeader, "body")]})
			}
		}
		if len(rows) != len(urls) {
			t.Fatalf("%s: %d rows, want %d", when, len(rows), len(urls))
		}
		for _, r := range rows {
			u, _ := url.Parse(r.URL)
			got, err := os.ReadFile(filepath.Join(out, r.Body))
			if want := "body of " + u.Path; err != nil || string(got) != want {
				t.Errorf("%s: row of %s names body %q: %q, %v; want %q", when, r.URL, r.Body, got, err, want)
			}
		}
	}
	crawl("o1")
	check("o1", "jsonl", "fetched")
	// Moved, and its results file lost: rebuilt from the frontier.
	if err := os.Rename("o1", "o2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join("o2", "results.jsonl")); err != nil {
		t.Fatal(err)
	}
	crawl("o2")
	check("o2", "jsonl", "moved, rows rebuilt")
	// From another working directory, --out spelt otherwise, every row
	// written afresh in the other format.
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(dir, "sub"))
	crawl(filepath.Join("..", "o2"), "--format", "csv")
	check(filepath.Join(dir, "o2"), "csv", "another working directory, csv")
}

// TestCrawlContentEncoding: a body is stored decoded, unless -H asks for an
// encoding itself (as curl without --compressed); then it is stored as the
// server sent it, and its row says how it is encoded: it said nothing,
// gzip bytes stored as the page.
func TestCrawlContentEncoding(t *testing.T) {
	const page = "<p>the page</p>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			fmt.Fprint(w, page)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprint(zw, page)
		zw.Close()
	}))
	defer srv.Close()
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", []string{srv.URL + "/p"})
	for _, c := range []struct {
		name     string
		header   []string
		encoding string
	}{{"default", nil, ""}, {"-H Accept-Encoding", []string{"-H", "Accept-Encoding: gzip"}, "gzip"}} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		args := append([]string{"crawl", "--out", out, "--ignore-robots", "--progress", "0"}, c.header...)
		if r := runCrawlCmd(t, 30*time.Second, append(args, urlFile)...); r.err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", c.name, r.err, r.stderr)
		}
		rows := readResults(t, out)
		if len(rows) != 1 || rows[0].ContentEncoding != c.encoding {
			t.Fatalf("%s: rows %+v, want one with content_encoding %q", c.name, rows, c.encoding)
		}
		body, err := os.ReadFile(filepath.Join(out, rows[0].Body))
		if err != nil {
			t.Fatal(err)
		}
		if c.encoding == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: stored body is not gzip: %v", c.name, err)
			}
			body, _ = io.ReadAll(zr)
		}
		if string(body) != page {
			t.Errorf("%s: body %q, want %q", c.name, body, page)
		}
	}
}

// readResultRows reads out's results file in format.
func readResultRows(t *testing.T, out, format string) []report.Result {
	t.Helper()
	if format == "jsonl" {
		return readResults(t, out)
	}
	f, err := os.Open(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(report.CSVHeader, ",") {
		t.Fatalf("results.csv: %v, header %v", err, recs)
	}
	var rows []report.Result
	for _, rec := range recs[1:] {
		col := map[string]string{}
		for i, name := range report.CSVHeader {
			col[name] = rec[i]
		}
		at, _ := time.Parse(time.RFC3339Nano, col["fetched_at"])
		rows = append(rows, report.Result{URL: col["url"], Outcome: col["outcome"], Exit: col["exit"], FinalURL: col["final_url"],
			ContentType: col["content_type"], ETag: col["etag"], LastModified: col["last_modified"], FetchedAt: at})
	}
	return rows
}

// TestSummaryNotWrittenSaid: when summary.json cannot be written, the
// crawl says so and fails, whatever else went wrong; after a full disk
// stopped a crawl, the summary went unwritten without a word.
func TestSummaryNotWrittenSaid(t *testing.T) {
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	out, crawl := crawlList(t, dir, siteURLs(srv.URL, 3), "--ignore-robots", "--progress", "0")
	if r := crawl(); r.err != nil {
		t.Fatalf("first crawl: %v\n%s", r.err, r.stderr)
	}
	// summary.json made a directory with a file in it: no rename lands.
	sum := filepath.Join(out, "summary.json")
	if err := os.Remove(sum); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sum, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := crawl()
	if r.err == nil || exitCode(r.err) == 0 || !strings.Contains(r.stderr, "summary not written") {
		t.Errorf("crawl whose summary cannot be written: err %v, stderr %q; want a failure that says so", r.err, r.stderr)
	}
}
