package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrawlURLUserinfo: a URL with a user and password in it is fetched
// with them as Basic auth, as curl fetches it (the transport alone dropped
// them: the page was fetched without them and recorded done), and the
// password is never printed or written: not in a refused line's message,
// not in results.jsonl.
func TestCrawlURLUserinfo(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "s3cretpw" {
			w.Header().Set("WWW-Authenticate", `Basic realm="members"`)
			http.Error(w, "log in first", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "members' page %s\n", r.URL.Path)
	}))
	t.Cleanup(site.Close)
	dir := t.TempDir()
	good := strings.Replace(site.URL, "http://", "http://user:s3cretpw@", 1) + "/private"
	bad := "http://user:s3cretpw2@127.0.0.1:0/bad"
	out, crawl := crawlList(t, dir, []string{good, bad}, "--ignore-robots", "--lane-rate", "20/s", "--progress", "0")
	r := crawl()
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	results := readResults(t, out)
	if len(results) != 1 || results[0].Outcome != "done" || results[0].Status != 200 {
		t.Fatalf("results %+v, want the members' page done", results)
	}
	if b, err := os.ReadFile(filepath.Join(out, results[0].Body)); err != nil || !strings.HasPrefix(string(b), "members' page") {
		t.Errorf("body %q, %v; want the members' page (sent with the URL's credentials)", b, err)
	}
	if want := strings.Replace(good, "s3cretpw", "xxxxx", 1); results[0].URL != want {
		t.Errorf("results url %q, want %q", results[0].URL, want)
	}
	if !strings.Contains(r.stderr, "urls.txt:2") {
		t.Errorf("the refused line is not reported with its file and line:\n%s", r.stderr)
	}
	checkSecretsKept(t, r, out, "s3cretpw") // (s3cretpw2 too)
}
