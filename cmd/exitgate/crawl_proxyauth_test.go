package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exitgate/exitgate/internal/peertest"
)

// TestCrawlWrongProxyCredentials: two real tinyproxy exits that ask for
// credentials, one given the wrong password. tinyproxy answers wrong
// credentials with 401, not 407, and each URL sent through that exit was
// abandoned as the site's fatal 401 with a working exit in the pool. Now a
// 401 through a proxy that holds credentials is the proxy's when a check of
// the proxy says so: the URL goes through the other exit, uncharged. A 401
// that the site itself sends (a login page) is still that URL's answer,
// abandoned, and no password is printed or written.
func TestCrawlWrongProxyCredentials(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			w.Header().Set("WWW-Authenticate", `Basic realm="members"`)
			http.Error(w, "log in first", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "page %s\n", r.URL.Path)
	}))
	t.Cleanup(site.Close)
	wrong := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.86", User: "u", Password: "Right86"})
	right := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.87", User: "u", Password: "Right87"})
	dir := t.TempDir()
	proxies := writeLines(t, dir, "proxies.txt", []string{"http://u:Wrong86@" + wrong.Addr(), "http://u:Right87@" + right.Addr()})
	pages := siteURLs(site.URL, 12)
	login := site.URL + "/login"
	out, crawl := crawlList(t, dir, append(pages, login), "--proxies", proxies, "--ignore-robots",
		"--lane-rate", "20/s", "--progress", "0")
	r := crawl()
	if code := exitCode(r.err); code != exitAbandoned {
		t.Fatalf("crawl: %v (exit %d), want exit %d (the login page abandoned)\nstderr:\n%s", r.err, code, exitAbandoned, r.stderr)
	}
	byURL := map[string]bool{}
	for _, res := range readResults(t, out) {
		byURL[res.URL] = true
		switch {
		case res.URL == login:
			if res.Outcome != "abandoned" || res.Status != http.StatusUnauthorized || res.Exit != right.Addr() {
				t.Errorf("login page: %s, status %d, exit %q (%s); want abandoned with the site's 401 through the working exit", res.Outcome, res.Status, res.Exit, res.Reason)
			}
		case res.Outcome != "done" || res.Exit != right.Addr() || res.Body == "":
			t.Errorf("%s: %s (%s) through %q, body %q; want done through the working exit %s", res.URL, res.Outcome, res.Reason, res.Exit, res.Body, right.Addr())
		default:
			if b, err := os.ReadFile(filepath.Join(out, res.Body)); err != nil || !strings.HasPrefix(string(b), "page ") {
				t.Errorf("body of %s = %q, %v; want the page", res.URL, b, err)
			}
		}
	}
	if len(byURL) != len(pages)+1 {
		t.Errorf("results for %d URLs, want %d", len(byURL), len(pages)+1)
	}
	sum := readSummary(t, out)
	if sum.Done != len(pages) || sum.Abandoned != 1 {
		t.Errorf("summary: done %d abandoned %d, want %d and 1", sum.Done, sum.Abandoned, len(pages))
	}
	checkSecretsKept(t, r, out, "Wrong86", "Right87")
}

// checkSecretsKept fails t if a crawl's output (stdout, stderr) or the
// summary and results it wrote in out hold any of secrets.
func checkSecretsKept(t *testing.T, r crawlRun, out string, secrets ...string) {
	t.Helper()
	sum, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	res, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	for _, secret := range secrets {
		if strings.Contains(r.stdout+r.stderr+string(sum)+string(res), secret) {
			t.Errorf("the password %q was printed or written:\nstderr:\n%s\nresults:\n%s", secret, r.stderr, res)
		}
	}
}
