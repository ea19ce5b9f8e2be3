package fetch

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/limit"
)

// fakeWeb answers by URL from a table, without any network, and records
// every URL asked: a "public" site can then redirect wherever a test wants.
type fakeWeb struct {
	mu     sync.Mutex
	routes map[string]func(h http.Header) int // URL -> set headers, return status
	asked  []string
}

func (f *fakeWeb) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL.String()
	f.mu.Lock()
	f.asked = append(f.asked, u)
	route := f.routes[u]
	f.mu.Unlock()
	h := http.Header{}
	status := http.StatusNotFound
	if route != nil {
		status = route(h)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("page " + u)), Request: req}, nil
}

func (f *fakeWeb) wasAsked(u string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.asked {
		if a == u {
			return true
		}
	}
	return false
}

func redirectTo(loc string) func(http.Header) int {
	return func(h http.Header) int {
		if loc != "" {
			h.Set("Location", loc)
		}
		return http.StatusFound
	}
}

func ok(http.Header) int { return http.StatusOK }

// pushed returns an in-memory frontier holding a job for each of urls,
// closed when the test ends.
func pushed(t *testing.T, urls []string) *memory.Store {
	t.Helper()
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fr.Close() })
	jobs := make([]frontier.NewJob, len(urls))
	for i, u := range urls {
		jobs[i] = frontier.NewJob{URL: u}
	}
	if _, err := fr.Push(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	return fr
}

// crawlFake runs an engine over urls through web and returns each URL's
// final job.
func crawlFake(t *testing.T, web *fakeWeb, cfg CoreConfig, urls []string) map[string]frontier.Job {
	t.Helper()
	ctx := context.Background()
	fr := pushed(t, urls)
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10})
	if err != nil {
		t.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "e1"}})
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": web})}, NewCore(cfg, fr, lim, nil))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := eng.Run(rctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := map[string]frontier.Job{}
	for id := int64(1); id <= int64(len(urls)); id++ {
		j, err := fr.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out[j.URL] = j
	}
	return out
}

// TestRedirectsThatCannotBeFollowed: a redirect to a scheme that is not
// http(s) (file:, javascript:) or without a Location is abandoned with the
// reason; it used to be recorded done, with the redirect's status as if it
// were the page.
func TestRedirectsThatCannotBeFollowed(t *testing.T) {
	const site = "http://site.example"
	web := &fakeWeb{routes: map[string]func(http.Header) int{
		site + "/file":   redirectTo("file:///etc/passwd"),
		site + "/js":     redirectTo("javascript:alert(1)"),
		site + "/empty":  redirectTo(""),
		site + "/moved":  redirectTo("/target"),
		site + "/target": ok,
	}}
	got := crawlFake(t, web, CoreConfig{Concurrency: 2}, []string{site + "/file", site + "/js", site + "/empty", site + "/moved"})
	for u, want := range map[string]struct {
		state  frontier.State
		reason string
	}{
		site + "/file":  {frontier.Abandoned, `unfollowable redirect: scheme "file"`},
		site + "/js":    {frontier.Abandoned, `unfollowable redirect: scheme "javascript"`},
		site + "/empty": {frontier.Abandoned, "redirect without Location"},
		site + "/moved": {frontier.Done, ""},
	} {
		if j := got[u]; j.State != want.state || j.Reason != want.reason {
			t.Errorf("%s: %v %q (status %d), want %v %q", u, j.State, j.Reason, j.Status, want.state, want.reason)
		}
	}
	if j := got[site+"/moved"]; j.Result.Status != 200 {
		t.Errorf("followed redirect: status %d, want the target's 200", j.Result.Status)
	}
	if !web.wasAsked(site + "/target") {
		t.Errorf("the good redirect was not followed: asked %v", web.asked)
	}
}

// TestRedirectsToPrivateAddresses: a public URL redirecting to loopback, a
// private network, link-local (cloud metadata) or localhost is abandoned
// without asking the target, unless AllowPrivateRedirects; a URL that is
// itself on a private address may redirect within private networks. Such
// redirects used to be followed by default.
func TestRedirectsToPrivateAddresses(t *testing.T) {
	const pub = "http://public.example"
	targets := map[string]string{
		"/meta":  "http://169.254.169.254/latest/meta-data/",
		"/lo":    "http://127.0.0.1:8080/admin",
		"/lan":   "http://10.1.2.3/",
		"/v6":    "http://[::1]:9000/",
		"/local": "http://localhost:6379/",
		"/cgnat": "http://100.100.100.200/latest/meta-data",
	}
	routes := map[string]func(http.Header) int{
		"http://10.0.0.5/a": redirectTo("http://10.0.0.6/b"), // a crawl of a private network
		"http://10.0.0.6/b": ok,
	}
	var urls []string
	for path, to := range targets {
		routes[pub+path] = redirectTo(to)
		routes[to] = ok
		urls = append(urls, pub+path)
	}
	urls = append(urls, "http://10.0.0.5/a")

	web := &fakeWeb{routes: routes}
	got := crawlFake(t, web, CoreConfig{Concurrency: 2}, urls)
	for path, to := range targets {
		j := got[pub+path]
		if j.State != frontier.Abandoned || !strings.HasPrefix(j.Reason, "redirect to a private address refused: ") {
			t.Errorf("%s -> %s: %v %q, want abandoned as a redirect to a private address", path, to, j.State, j.Reason)
		}
		if web.wasAsked(to) {
			t.Errorf("%s was asked", to)
		}
	}
	if j := got["http://10.0.0.5/a"]; j.State != frontier.Done {
		t.Errorf("private URL redirecting within private networks: %v %q, want done", j.State, j.Reason)
	}

	web = &fakeWeb{routes: routes}
	got = crawlFake(t, web, CoreConfig{Concurrency: 2, AllowPrivateRedirects: true}, urls)
	for path, to := range targets {
		if j := got[pub+path]; j.State != frontier.Done || !web.wasAsked(to) {
			t.Errorf("AllowPrivateRedirects: %s -> %s: %v %q, want followed and done", path, to, j.State, j.Reason)
		}
	}
}

func TestIsPrivateHost(t *testing.T) {
	for h, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.0.0.1": true, "172.16.5.4": true, "192.168.1.1": true,
		"169.254.169.254": true, "fe80::1": true, "fd00::1": true, "0.0.0.0": true, "::": true,
		"100.64.0.1": true, "::ffff:127.0.0.1": true, "localhost": true, "LocalHost.": true, "db.localhost": true,
		"8.8.8.8": false, "2001:db8::1": false, "example.com": false, "localhost.example": false, "": false,
		// Numeric forms a resolver reads as addresses (inet_aton).
		"2130706433": true, "0x7f000001": true, "127.1": true, "0177.0.0.1": true, "127.0.1": true,
		"2852039166": true, "0xA9FEA9FE": true, "10.1": true, "134744072": false, "8.8.2056": false,
		"1.2.3.4.5": false, "0x1g": false, "127.0.0.256": false, "256.1": false, "08.0.0.1": false, "1e3": false,
		// IPv6 addresses carrying an IPv4 address (NAT64, 6to4,
		// IPv4-compatible), tested as it; and the IPv4 blocks no public
		// host is in (a gateway dialled all of these).
		"64:ff9b::a9fe:a9fe": true, "64:ff9b::808:808": false, "64:ff9b:1::a00:1": true, "2002:a9fe:a9fe::": true,
		"2002:808:808::1": false, "::127.0.3.1": true, "::10.0.0.1": true, "::8.8.8.8": false,
		"198.18.0.1": true, "198.19.255.255": true, "192.0.0.170": true, "240.0.0.1": true, "255.255.255.255": true,
		"0.1.2.3": true, "198.20.0.1": false, "192.0.1.1": false,
	} {
		if got := isPrivateHost(h); got != want {
			t.Errorf("isPrivateHost(%q) = %v, want %v", h, got, want)
		}
	}
}

// TestDefaultHostKeyIDN: a redirect hop's host key is the frontier's (an
// internationalised name in punycode, lower case, the port kept unless the
// scheme's), so a hop to "bücher.example" shares the budget of jobs queued
// as "xn--bcher-kva.example".
func TestDefaultHostKeyIDN(t *testing.T) {
	for in, want := range map[string]string{
		"http://Bücher.example/a":            "xn--bcher-kva.example",
		"https://xn--BCHER-kva.example:443/": "xn--bcher-kva.example",
		"http://bücher.example:8080/":        "xn--bcher-kva.example:8080",
		"http://Example.COM/":                "example.com",
		"http://127.1/":                      "127.0.0.1",
		"http://2130706433:8080/":            "127.0.0.1:8080",
		"http://[::ffff:127.0.0.1]/":         "127.0.0.1",
		"http://[::1]:8080/":                 "[::1]:8080",
		"http://[::1]/":                      "[::1]",
		"http://example.com:080/":            "example.com",
		"http://example.com.:8080/":          "example.com:8080",
		"http://Example.COM./":               "example.com",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		j, err := frontier.Prepare(frontier.NewJob{URL: in})
		if err != nil {
			t.Fatal(err)
		}
		if got := DefaultHostKey(u); got != want || got != j.Host {
			t.Errorf("DefaultHostKey(%s) = %q, frontier %q; want %q", in, got, j.Host, want)
		}
	}
}
