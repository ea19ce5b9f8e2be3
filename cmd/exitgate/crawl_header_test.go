package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/exitgate/exitgate/internal/peertest"
)

// headerSite records the headers and the client address of the last
// request for each path; /go/... redirects to the URL in its query.
type headerSite struct {
	mu      sync.Mutex
	headers map[string]http.Header
	addrs   map[string]bool // client IPs seen
}

func newHeaderSite(t *testing.T) (*headerSite, *httptest.Server) {
	s := &headerSite{headers: map[string]http.Header{}, addrs: map[string]bool{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *headerSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.headers[r.URL.Path] = r.Header.Clone()
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		s.addrs[ip] = true
	}
	s.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/go/") {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *headerSite) last(path string) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[path]
}

func (s *headerSite) clients() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for a := range s.addrs {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// TestCrawlHeaderFlag: -H headers go with every request, robots.txt
// included, repeated names add values, -H User-Agent is --user-agent, and
// a redirect to another host gets the plain headers but not Authorization
// or Cookie, which stay with the job's own host (as curl does).
func TestCrawlHeaderFlag(t *testing.T) {
	home, homeSrv := newHeaderSite(t)
	other, otherSrv := newHeaderSite(t)
	dir := t.TempDir()
	urls := []string{homeSrv.URL + "/p/1", homeSrv.URL + "/go/1?to=" + otherSrv.URL + "/landed"}
	_, crawl := crawlList(t, dir, urls, "--lane-rate", "50/s", "--progress", "0",
		"-H", "Authorization: Bearer s3cret", "-H", "Cookie: session=abc",
		"--header", "X-Team: blue", "-H", "X-Team: green", "-H", "user-agent: mybot/2.0")
	if r := crawl(); r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	for _, path := range []string{"/p/1", "/go/1", "/robots.txt"} {
		h := home.last(path)
		if h == nil {
			t.Errorf("%s was not requested", path)
			continue
		}
		if h.Get("Authorization") != "Bearer s3cret" || h.Get("Cookie") != "session=abc" || !slices.Equal(h.Values("X-Team"), []string{"blue", "green"}) || h.Get("User-Agent") != "mybot/2.0" {
			t.Errorf("home %s got headers %v, want every -H header", path, h)
		}
	}
	h := other.last("/landed")
	switch {
	case h == nil:
		t.Fatalf("the redirect target was not requested")
	case h.Get("Authorization") != "" || h.Get("Cookie") != "":
		t.Errorf("the other host got Authorization %q, Cookie %q; want none", h.Get("Authorization"), h.Get("Cookie"))
	case !slices.Equal(h.Values("X-Team"), []string{"blue", "green"}) || h.Get("User-Agent") != "mybot/2.0":
		t.Errorf("the other host got %v, want X-Team and User-Agent", h)
	}
}

func TestParseHeaders(t *testing.T) {
	h, ua, err := parseHeaders([]string{"x-a: 1", "X-A:2", "Accept:  text/html, */*  ", "Empty:", "User-Agent: bot/1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Values("X-A"), []string{"1", "2"}) || h.Get("Accept") != "text/html, */*" || ua != "bot/1" || h.Get("User-Agent") != "" {
		t.Errorf("parseHeaders = %v, %q", h, ua)
	}
	if v, ok := h["Empty"]; !ok || v[0] != "" {
		t.Errorf("Empty: = %q, want an empty value", v)
	}
	for _, bad := range []string{"NoColon", ": x", "Bad Name: x", "Host: example.com", "Content-Length: 3", "Proxy-Authorization: Basic x", "X: a\nb",
		"X-A: a\x01b", "X-A: a\x7fb", "User-Agent:", "User-Agent: a/1\x00"} {
		if _, _, err := parseHeaders([]string{bad}); err == nil {
			t.Errorf("parseHeaders(%q) accepted it", bad)
		}
	}
	// An error names the -H by its place, never its value: a mistyped
	// -H often holds a token.
	for _, bad := range []string{"Authorization Bearer S3CRETTOKEN", "Authorization: Bearer S3CRET\rTOKEN", "Proxy-Authorization: Basic S3CRETTOKEN", "Auth orization: S3CRETTOKEN"} {
		_, _, err := parseHeaders([]string{"Accept: text/html", bad})
		if err == nil || strings.Contains(err.Error(), "S3CRET") || !strings.Contains(err.Error(), "-H #2") {
			t.Errorf("parseHeaders(%q) = %v, want an error naming -H #2 without the value", bad, err)
		}
	}
}

// TestCrawlUserAgentConflict: -H User-Agent and --user-agent that disagree
// are refused before anything is fetched.
func TestCrawlUserAgentConflict(t *testing.T) {
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", []string{"http://127.0.0.1:9/x"})
	r := runCmd(t, "crawl", "--out", dir+"/out", "--user-agent", "a/1", "-H", "User-Agent: b/2", urlFile)
	if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "disagree") {
		t.Errorf("crawl with two user agents: %v, want exit 2", r.err)
	}
	// A --proxies file that is not there is named as the flag's.
	r = runCmd(t, "crawl", "--out", dir+"/out", "--proxies", filepath.Join(dir, "none.txt"), urlFile)
	if exitCode(r.err) != exitUsage || !strings.HasPrefix(r.err.Error(), "--proxies: open ") {
		t.Errorf("crawl --proxies MISSING: %v, want exit 2 naming --proxies", r.err)
	}
	// A control character (a YAML block scalar's line break, a DEL):
	// every request failed and every URL was abandoned as a "transport
	// error".
	for _, ua := range []string{"MyBot/1.0\n", "a\x7fb", "a\r\nX-Evil: 1"} {
		r = runCmd(t, "crawl", "--out", dir+"/out", "--user-agent", ua, urlFile)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "--user-agent holds a control character") {
			t.Errorf("crawl --user-agent %q: %v, want exit 2 naming the control character", ua, r.err)
		}
	}
	if _, _, err := parseHeaders([]string{"User-Agent: a/1", "User-Agent: b/2"}); err == nil || !strings.Contains(err.Error(), "second User-Agent") {
		t.Errorf("two -H User-Agent: %v, want refused (the first was dropped without a word)", err)
	}
	// An empty one did nothing it said: Go's transport sent its own.
	r = runCmd(t, "crawl", "--out", dir+"/out", "--user-agent", " ", urlFile)
	if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "--user-agent is empty") {
		t.Errorf("crawl --user-agent ' ': %v, want exit 2 saying it is empty", r.err)
	}
}

// TestCrawlProxyFlag: -x URLs (repeatable, credentials in the URL) and a
// --proxies file make one pool: the site sees the addresses of both real
// tinyproxy exits, the exits are named without credentials, and a bad -x
// value is refused naming its position, not its password.
func TestCrawlProxyFlag(t *testing.T) {
	site, srv := newHeaderSite(t)
	withAuth := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.81", User: "u", Password: "pw81"})
	plain := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.82"})
	third := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.83"})
	dir := t.TempDir()
	file := writeLines(t, dir, "proxies.txt", []string{"http://" + third.Addr()})
	urls := siteURLs(srv.URL, 12)
	out, crawl := crawlList(t, dir, urls, "--ignore-robots", "--lane-rate", "50/s", "--progress", "0",
		"-x", "http://u:pw81@"+withAuth.Addr(), "--proxy", plain.Addr(), "--proxies", file)
	r := crawl()
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	checkAllDoneOnce(t, readResults(t, out), urls)
	if got, want := site.clients(), []string{"127.0.0.81", "127.0.0.82", "127.0.0.83"}; !slices.Equal(got, want) {
		t.Errorf("the site saw clients %v, want %v", got, want)
	}
	sum := readSummary(t, out)
	var names []string
	for _, e := range sum.PerExit {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	want := []string{withAuth.Addr(), plain.Addr(), third.Addr()}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("summary exits %v, want %v", names, want)
	}
	if strings.Contains(r.stdout+r.stderr, "pw81") {
		t.Errorf("the password was printed")
	}

	bad := runCmd(t, "crawl", "--out", dir+"/out2", "-x", plain.Addr(), "-x", "ftp://u:pw81@"+withAuth.Addr(), writeLines(t, dir, "u2.txt", urls[:1]))
	if exitCode(bad.err) != exitUsage || !strings.Contains(bad.err.Error(), "--proxy:2:") || strings.Contains(bad.err.Error(), "pw81") {
		t.Errorf("crawl with a bad -x: %v, want exit 2 naming --proxy:2 without the password", bad.err)
	}
}
