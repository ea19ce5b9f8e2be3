package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/exitgate/exitgate/ca"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/pool"
)

// fast is a limiter that never holds a request back on its own: the tests
// that need pacing say so.
func fast(t testing.TB) *limit.Limiter {
	t.Helper()
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(10000), MaxInFlight: 4096, HostConcurrency: 4096})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// serve starts g on a loopback port until the test ends and returns the
// proxy URL.
func serve(t testing.TB, g *Gateway) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(ln) }()
	t.Cleanup(func() {
		g.Close()
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func newGateway(t testing.TB, cfg Config) (*Gateway, *url.URL) {
	t.Helper()
	if cfg.Limiter == nil {
		cfg.Limiter = fast(t)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, serve(t, g)
}

// client returns an HTTP client that uses proxy; roots, if set, are the
// only CAs it trusts.
func client(proxy *url.URL, roots *x509.CertPool) *http.Client {
	tr := &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: 64}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t testing.TB, c *http.Client, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("GET %s: body: %v", u, err)
	}
	return resp, string(b)
}

// origin is a target server on loopback that records what it saw.
type origin struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newOrigin(t testing.TB, h http.HandlerFunc) *origin {
	t.Helper()
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r.Clone(context.Background()))
		o.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *origin) requests() []*http.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*http.Request(nil), o.seen...)
}

func clientIP(r *http.Request) string {
	h, _, _ := net.SplitHostPort(r.RemoteAddr)
	return h
}

func bindExits(t testing.TB, addrs ...string) []pool.Exit {
	t.Helper()
	exits, err := pool.Parse(strings.NewReader("bind:"+strings.Join(addrs, "\nbind:")+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	return exits
}

// TestGatewayErrorSaysItsAttempt: the gateway's own 502 after a request it
// sent (a reply that is not HTTP) says through which exit and after how
// many attempts, as the server's answers do; it said neither.
func TestGatewayErrorSaysItsAttempt(t *testing.T) {
	// (Not peertest.BrokenProxy: it answers before the request comes,
	// which net/http reads as a reply on an idle connection.)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Read(make([]byte, 4096))
				io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\n\r\n")
			}()
		}
	}()
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	resp, body := get(t, client(proxy, nil), "http://"+ln.Addr().String()+"/x", HeaderWait, "2s")
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderExit) != "direct" || resp.Header.Get(HeaderAttempts) != "1" ||
		resp.Header.Get(HeaderReason) != "upstream malformed response head (not HTTP)" {
		t.Errorf("the gateway's answer to a reply that is not HTTP: %d, %s %q, %s %q, %s %q (%q); want 502 through direct after 1, its reason named",
			resp.StatusCode, HeaderExit, resp.Header.Get(HeaderExit), HeaderAttempts, resp.Header.Get(HeaderAttempts), HeaderReason, resp.Header.Get(HeaderReason), body)
	}
}

func TestForwardsPlainHTTPAndStripsControlHeaders(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Origin", "yes")
		fmt.Fprintf(w, "hello %s %s", r.Method, r.URL.RequestURI())
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	resp, body := get(t, c, o.URL+"/a/b?q=1", HeaderWait, "5s", HeaderSession, "s1", "X-Exitgate-Other", "x", "X-Keep", "kept")
	if resp.StatusCode != 200 || body != "hello GET /a/b?q=1" || resp.Header.Get("X-Origin") != "yes" {
		t.Fatalf("GET through the gateway = %d %q (X-Origin %q), want 200 from the origin", resp.StatusCode, body, resp.Header.Get("X-Origin"))
	}
	if resp.Header.Get(HeaderExit) != "direct" || resp.Header.Get(HeaderAttempts) != "1" {
		t.Errorf("answer headers %s=%q %s=%q, want direct and 1", HeaderExit, resp.Header.Get(HeaderExit), HeaderAttempts, resp.Header.Get(HeaderAttempts))
	}
	seen := o.requests()
	if len(seen) != 1 {
		t.Fatalf("origin saw %d requests, want 1", len(seen))
	}
	for k := range seen[0].Header {
		if strings.HasPrefix(strings.ToLower(k), "x-exitgate") || strings.HasPrefix(strings.ToLower(k), "proxy-") {
			t.Errorf("origin saw control or proxy header %s", k)
		}
	}
	if seen[0].Header.Get("X-Keep") != "kept" {
		t.Errorf("origin lost the client's own header X-Keep")
	}
}

// A raw client that sends no User-Agent and asks for no compression gets
// the request to the origin as it sent it: Go's defaults are not added.
func TestForwardAddsNothing(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("z", 2000)) })
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	conn, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s/x HTTP/1.1\r\nHost: %s\r\nProxy-Connection: keep-alive\r\n\r\n", o.URL, strings.TrimPrefix(o.URL, "http://"))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || len(b) != 2000 || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("raw GET = %d, %d bytes, encoding %q; want 200, 2000 plain bytes", resp.StatusCode, len(b), resp.Header.Get("Content-Encoding"))
	}
	r := o.requests()[0]
	if ua, ok := r.Header["User-Agent"]; ok {
		t.Errorf("origin saw User-Agent %q, want none (the client sent none)", ua)
	}
	if ae := r.Header.Get("Accept-Encoding"); ae != "" {
		t.Errorf("origin saw Accept-Encoding %q, want none", ae)
	}
	// The connection is kept alive: a second request on it works.
	fmt.Fprintf(conn, "GET %s/y HTTP/1.1\r\nHost: %s\r\n\r\n", o.URL, strings.TrimPrefix(o.URL, "http://"))
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("second request on the kept-alive connection: %v", err)
	}
	resp.Body.Close()
}

// An answer without a Content-Type reaches the client without one: the
// gateway does not guess one from the body (Go's server would sniff
// "text/html" and add it).
func TestAnswerAddsNothing(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // the origin sends none
		io.WriteString(w, "<html><body>hi</body></html>")
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	for _, path := range []string{"/a", "/b"} {
		resp, body := get(t, c, o.URL+path)
		if ct, ok := resp.Header["Content-Type"]; ok {
			t.Errorf("GET %s: Content-Type %q added to an answer that had none", path, ct)
		}
		if resp.StatusCode != 200 || body != "<html><body>hi</body></html>" {
			t.Errorf("GET %s = %d %q", path, resp.StatusCode, body)
		}
	}
}

// A server's X-Exitgate- headers do not reach the client: they would pass
// for the gateway's own word (X-Exitgate-Reason marks an answer the
// gateway made itself; X-Exitgate-Exit names the exit).
func TestServerCannotForgeGatewayHeaders(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Exitgate-Reason", "fake")
		w.Header().Set("X-Exitgate-Exit", "fake-exit")
		w.Header().Set("X-Exitgate-Other", "fake")
		io.WriteString(w, "ok")
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	resp, body := get(t, client(proxy, nil), o.URL+"/x")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("GET = %d %q", resp.StatusCode, body)
	}
	if v := resp.Header.Get("X-Exitgate-Reason") + resp.Header.Get("X-Exitgate-Other"); v != "" {
		t.Errorf("the server's X-Exitgate- headers reached the client: %q", v)
	}
	if v := resp.Header.Get(HeaderExit); v == "" || v == "fake-exit" {
		t.Errorf("%s = %q, want the gateway's exit", HeaderExit, v)
	}
}

// An answer the server cuts short (fewer bytes than its Content-Length,
// then the connection closed) is counted as the server's doing, not as
// the client's leaving ("client left mid-body" before), and reaches the
// client as far as the server sent it, then cut: the client got an empty
// reply, the status and the bytes it was sent kept in the gateway's buffer.
func TestServerCutBodyIsUpstreams(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Type: text/plain\r\n\r\nonly ten b")
		brw.Flush()
	})
	g, proxy := newGateway(t, Config{AllowPrivate: true})
	resp, err := client(proxy, nil).Get(o.URL + "/cut")
	if err != nil {
		t.Fatalf("GET through the gateway: %v, want the server's status and the bytes it sent", err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatal("the client read a whole answer of a body cut short")
	}
	if resp.StatusCode != http.StatusOK || string(got) != "only ten b" {
		t.Errorf("the client got %d %q, want 200 and the ten bytes the server sent, then the cut", resp.StatusCode, got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.Stats().NotDone["upstream truncated response"] == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := g.Stats(); st.NotDone["upstream truncated response"] != 1 || st.NotDone["client left mid-body"] != 0 {
		t.Errorf("outcomes %v, want the server's cut counted as upstream truncated response", st.NotDone)
	}
}

// A chunked answer the server cuts short (a chunk, then the connection
// reset) reaches the client cut short too: its connection is closed with
// no last chunk. The gateway ended the chunked body properly, and the
// client took the cut answer for the whole one.
func TestServerCutChunkedBodyReachesClientCut(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		brw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n")
		brw.WriteString(fmt.Sprintf("%x\r\n%s\r\n", 4096, strings.Repeat("x", 4096)))
		brw.Flush()
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not an orderly close
		}
		conn.Close()
	})
	g, proxy := newGateway(t, Config{AllowPrivate: true})
	resp, err := client(proxy, nil).Get(o.URL + "/cutchunk")
	var n int
	if err == nil {
		var b []byte
		b, err = io.ReadAll(resp.Body)
		n = len(b)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatalf("the client read a whole answer (%d bytes) of a chunked body cut short", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(g.Stats().NotDone) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := g.Stats(); st.NotDone["client left mid-body"] != 0 || len(st.NotDone) != 1 {
		t.Errorf("outcomes %v, want the server's cut counted as the upstream's", st.NotDone)
	}
}

// A 403 or a 503, whose first bytes the gateway reads for a block page,
// reaches the client as soon as the server pauses (peekPause), not when
// 4 KiB or the end of its body came: a 503 trickling its body held its
// headers until the body ended, and a 403 that sent a few bytes and stayed
// open never answered at all. The body arrives whole after.
func TestSniffedAnswerNotHeld(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusServiceUnavailable
		if r.URL.Path == "/forbidden" {
			status = http.StatusForbidden
		}
		w.WriteHeader(status)
		for i := range 4 {
			fmt.Fprintf(w, "part %d\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(300 * time.Millisecond): // a server taking its time
			case <-release:
			}
		}
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	for _, path := range []string{"/unavailable", "/forbidden"} {
		start := time.Now()
		resp, err := c.Get(o.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if d := time.Since(start); d > 250*time.Millisecond {
			t.Errorf("GET %s: headers after %v, want them once the server pauses (under 250 ms)", path, d)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "part 0\npart 1\npart 2\npart 3\n" {
			t.Errorf("GET %s: body %q, %v; want all four parts", path, b, err)
		}
	}
	close(release)
}

// A throttled answer is retried through another exit: the client gets the
// other exit's 200, never the 429. (What the limiter learns from the 429,
// for every lane of the host, is package limit's business.)
func TestRetriesThrottledOnAnotherExit(t *testing.T) {
	var n atomic.Int64
	var ips sync.Map
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		ips.Store(clientIP(r), true)
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, clientIP(r))
	})
	g, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22")})
	resp, body := get(t, client(proxy, nil), o.URL+"/p")
	if resp.StatusCode != 200 || resp.Header.Get(HeaderAttempts) != "2" || body != resp.Header.Get(HeaderExit)[len("bind:"):] {
		t.Fatalf("GET = %d %q (exit %q, attempts %q), want 200 from the second exit on the second attempt",
			resp.StatusCode, body, resp.Header.Get(HeaderExit), resp.Header.Get(HeaderAttempts))
	}
	if len(keys(&ips)) != 2 {
		t.Errorf("the origin saw clients %v, want both exits", keys(&ips))
	}
	st := g.Stats()
	if st.Done != 1 || st.Retries != 1 {
		t.Errorf("stats: done %d, retries %d; want 1 and 1", st.Done, st.Retries)
	}
	snap := g.Tally().Snapshot(time.Now())
	if snap.Total.Throttled429 != 1 || snap.Total.Requests != 2 || snap.Total.Done != 1 || snap.Total.Retries != 1 {
		t.Errorf("tally: %d requests, %d 429s, %d done, %d retries; want 2, 1, 1, 1",
			snap.Total.Requests, snap.Total.Throttled429, snap.Total.Done, snap.Total.Retries)
	}
}

// A block page bans its lane only: the request goes through another exit,
// and later requests avoid the banned one.
func TestRetriesBannedOnAnotherExit(t *testing.T) {
	var banned atomic.Int64
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if clientIP(r) == "127.0.0.21" {
			banned.Add(1)
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<title>Attention Required! | Cloudflare</title>")
			return
		}
		io.WriteString(w, clientIP(r))
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22")})
	c := client(proxy, nil)
	for i := range 6 {
		resp, body := get(t, c, fmt.Sprintf("%s/p%d", o.URL, i))
		if resp.StatusCode != 200 || body != "127.0.0.22" {
			t.Fatalf("GET %d = %d %q, want 200 from 127.0.0.22", i, resp.StatusCode, body)
		}
	}
	if n := banned.Load(); n > 1 {
		t.Errorf("the banned exit was asked %d times, want at most once (its lane is quarantined)", n)
	}
}

// A block page on every exit is said as a block, at once, for the path that
// drew it and every other path of the host: a 403 "banned on every exit"
// with Retry-After until the first ban ends. It was a 429 "wait budget
// spent" ("its lanes are paced or cooling down"), and each other path
// waited its whole budget for the same.
func TestBannedOnEveryExitSaysSo(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "<title>Attention Required! | Cloudflare</title>")
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22")})
	c := client(proxy, nil)
	for _, path := range []string{"/cf", "/other"} {
		start := time.Now()
		resp, body := get(t, c, o.URL+path, HeaderWait, "5s")
		took := time.Since(start)
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get(HeaderReason) != "banned on every exit" || ra < 60 {
			t.Errorf("GET %s = %d (reason %q, Retry-After %q) %q; want 403, banned on every exit, Retry-After until the ban ends",
				path, resp.StatusCode, resp.Header.Get(HeaderReason), resp.Header.Get("Retry-After"), body)
		}
		if took > 2*time.Second {
			t.Errorf("GET %s answered after %v, want at once", path, took)
		}
	}
}

// A request held by the gateway's own per-host concurrency cap (a slow
// answer in flight) gets a 429 that says so when its budget ends, not
// "its lanes are paced or cooling down", which sent the client after a
// pace the server never set.
func TestHostConcurrencyFullSaysSo(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok")
	})
	defer close(release)
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(10000), MaxInFlight: 4096, HostConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim})
	c := client(proxy, nil)
	go c.Get(o.URL + "/slow")
	time.Sleep(200 * time.Millisecond)
	resp, body := get(t, c, o.URL+"/x", HeaderWait, "1s")
	if resp.StatusCode != 429 || resp.Header.Get(HeaderReason) != "host concurrency full" || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, "--per-host-concurrency") {
		t.Errorf("GET behind a full host = %d (reason %q, Retry-After %q) %q; want 429, host concurrency full",
			resp.StatusCode, resp.Header.Get(HeaderReason), resp.Header.Get("Retry-After"), body)
	}
}

// When every lane is cooling past the wait budget, the client gets the
// gateway's own 429 with Retry-After, at once, not after the budget.
func TestWaitBudgetSpentIsAnHonest429(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	g, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22")})
	c := client(proxy, nil)
	start := time.Now()
	resp, body := get(t, c, o.URL+"/x", HeaderWait, "2s")
	took := time.Since(start)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || resp.Header.Get(HeaderReason) != "wait budget spent" || ra < 100 || ra > 121 {
		t.Fatalf("GET = %d (reason %q, Retry-After %q) %q; want the gateway's 429 with Retry-After near 120",
			resp.StatusCode, resp.Header.Get(HeaderReason), resp.Header.Get("Retry-After"), body)
	}
	if took > 10*time.Second {
		t.Errorf("the 429 came after %v; the wait for lanes cooling 120 s should give up at once", took)
	}
	if len(o.requests()) != 2 {
		t.Errorf("origin saw %d requests, want 2 (one per exit, then both cool)", len(o.requests()))
	}
	if a := resp.Header.Get(HeaderAttempts); a != "2" {
		t.Errorf("the gateway's 429 says %s %q, want 2 (what was sent before it gave up)", HeaderAttempts, a)
	}
	if g.Stats().BudgetSpent != 1 {
		t.Errorf("BudgetSpent = %d, want 1", g.Stats().BudgetSpent)
	}
	// Budget 0: no wait at all.
	resp, _ = get(t, c, o.URL+"/y", HeaderWait, "0")
	if resp.StatusCode != 429 || resp.Header.Get(HeaderReason) != "wait budget spent" {
		t.Errorf("GET with budget 0 = %d %q, want the gateway's 429", resp.StatusCode, resp.Header.Get(HeaderReason))
	}
	resp, _ = get(t, c, o.URL+"/z", HeaderWait, "soon")
	if resp.StatusCode != 400 {
		t.Errorf("GET with a bad %s = %d, want 400", HeaderWait, resp.StatusCode)
	}
}

// A POST is sent once: the server's 429 reaches the client as it is.
func TestNonIdempotentSentOnce(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "origin says slow down")
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22")})
	resp, err := client(proxy, nil).Post(o.URL+"/form", "text/plain", strings.NewReader("a=1"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || string(b) != "origin says slow down" || resp.Header.Get(HeaderReason) != "" {
		t.Errorf("POST = %d %q, want the origin's own 429", resp.StatusCode, b)
	}
	if n := len(o.requests()); n != 1 {
		t.Errorf("origin saw %d POSTs, want 1", n)
	}
}

// A small PUT body is kept and sent again through the other exit.
func TestIdempotentBodyReplayed(t *testing.T) {
	var got []string
	var mu sync.Mutex
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, clientIP(r)+" "+string(b))
		if len(got) == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22")})
	req, _ := http.NewRequest(http.MethodPut, o.URL+"/doc", strings.NewReader("payload"))
	resp, err := client(proxy, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(got) != 2 {
		t.Fatalf("PUT = %d after %d attempts, want 200 after 2", resp.StatusCode, len(got))
	}
	a, b, _ := strings.Cut(got[0], " ")
	c, d, _ := strings.Cut(got[1], " ")
	if a == c || b != "payload" || d != "payload" {
		t.Errorf("origin got %q, want the whole body from each exit", got)
	}
}

// Sessions stick to one exit: by header, and by proxy user name.
func TestStickySessions(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, clientIP(r)) })
	g, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22", "127.0.0.23")})
	c := client(proxy, nil)
	for _, sess := range []string{"alpha", "beta", "gamma", "delta"} {
		var ip string
		for i := range 6 {
			_, body := get(t, c, fmt.Sprintf("%s/%s/%d", o.URL, sess, i), HeaderSession, sess)
			if ip == "" {
				ip = body
			} else if body != ip {
				t.Errorf("session %s left through %s, then %s", sess, ip, body)
			}
		}
	}
	u := *proxy
	u.User = url.UserPassword("session-omega", "x")
	c2 := client(&u, nil)
	var ip string
	for i := range 6 {
		_, body := get(t, c2, fmt.Sprintf("%s/omega/%d", o.URL, i))
		if ip == "" {
			ip = body
		} else if body != ip {
			t.Errorf("user-name session left through %s, then %s", ip, body)
		}
	}
	if n := g.Stats().Sessions; n != 5 {
		t.Errorf("%d sessions remembered, want 5", n)
	}
}

// Bodies stream both ways: a large upload reaches the origin whole, and a
// response the origin writes piece by piece reaches the client piece by
// piece (the origin waits for the client to see each piece).
func TestStreamsBothWays(t *testing.T) {
	seenPiece := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			h := sha256.New()
			n, _ := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%d %s", n, hex.EncodeToString(h.Sum(nil)))
			return
		}
		for i := range 3 {
			fmt.Fprintf(w, "piece %d\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-seenPiece:
			case <-time.After(10 * time.Second):
				return // the gateway held the piece back
			}
		}
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)

	const size = 32 << 20
	src := io.LimitReader(rand32{}, size)
	h := sha256.New()
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(io.MultiWriter(pw, h), src)
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest(http.MethodPost, o.URL+"/upload", pr) // unknown length: chunked
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("%d %s", size, hex.EncodeToString(h.Sum(nil))); string(b) != want {
		t.Errorf("upload: origin got %q, want %q", b, want)
	}

	resp, err = c.Get(o.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("piece %d\n", i) {
			t.Fatalf("stream piece %d = %q, %v", i, line, err)
		}
		seenPiece <- struct{}{}
	}
}

// An answer with a Content-Length reaches the client as the server sends
// it: the header at once, then each piece when the server pauses. The
// gateway held both in net/http's 4 KiB buffer until the body ended (a
// 10-byte body sent slowly arrived after 5 s; directly, after 1 ms).
func TestSlowBodyWithLengthFlushed(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "abc")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "defghij")
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := c.Get(o.URL + "/slow")
		got <- result{resp, err}
	}()
	var res result
	select {
	case res = <-got:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the header, sent by the origin at once, had not reached the client after 5 s")
	}
	if res.err != nil {
		close(release)
		t.Fatal(res.err)
	}
	defer res.resp.Body.Close()
	release <- struct{}{}
	piece := make(chan string, 1)
	go func() {
		b := make([]byte, 3)
		n, _ := io.ReadFull(res.resp.Body, b)
		piece <- string(b[:n])
	}()
	select {
	case p := <-piece:
		if p != "abc" {
			t.Errorf("first piece = %q, want abc", p)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the first 3 bytes, sent by the origin before a pause, had not reached the client after 5 s")
	}
	close(release)
	rest, err := io.ReadAll(res.resp.Body)
	if err != nil || string(rest) != "defghij" {
		t.Errorf("rest of the body = %q, %v; want defghij", rest, err)
	}
}

// settled waits, a few seconds at most, until no request is in flight, and
// returns the stats then.
func settled(t testing.TB, g *Gateway) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.Stats().InFlight > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling a counter; bounded above
	}
	st := g.Stats()
	if st.InFlight > 0 {
		t.Fatalf("%d requests still in flight after 5 s", st.InFlight)
	}
	return st
}

// A client that leaves while its request waits for a lane is counted, as
// every client request is: these were in no count at all (8 such GETs, and
// the summary showed only the one done).
func TestLeftWhileWaitingCounted(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerMinute(1)})
	if err != nil {
		t.Fatal(err)
	}
	g, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim})
	c := client(proxy, nil)
	if resp, _ := get(t, c, o.URL+"/first"); resp.StatusCode != 200 {
		t.Fatalf("first GET = %d, want 200", resp.StatusCode)
	}
	const leaving = 3
	for i := range leaving {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/w%d", o.URL, i), nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("GET /w%d = %d, want the client to give up while the lane is paced", i, resp.StatusCode)
		}
		cancel()
	}
	st := settled(t, g)
	if n := st.NotDone["client left before the answer"]; n != leaving || st.Done != 1 {
		t.Errorf("stats: %d done, %d 'client left before the answer' (not done: %v); want 1 and %d", st.Done, n, st.NotDone, leaving)
	}
	if n := g.Tally().Total().Abandoned["client left before the answer"]; n != leaving {
		t.Errorf("tally: %d abandoned as 'client left before the answer', want %d", n, leaving)
	}
}

// A drain cut short counts what the gateway cut as "cut at shutdown": a
// body still coming (it was "client left mid-body") and an answer still
// awaited. A client that leaves during the drain is counted as leaving (it
// was "cut at shutdown" once the drain had begun, while the drain ended in
// time and serve exited 0).
func TestShutdownSaysWhoEnded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	arrived := make(chan string, 8)
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		if r.URL.Path == "/slowbody" {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "x")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	await := func(path string) {
		t.Helper()
		select {
		case p := <-arrived:
			if p != path {
				t.Fatalf("origin got %s, want %s", p, path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never reached the origin", path)
		}
	}

	// The client leaves during a drain that then ends in time.
	g, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.URL+"/leaves", nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	await("/leaves")
	shut := make(chan error, 1)
	go func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		shut <- g.Shutdown(sctx)
	}()
	for !g.closing.Load() {
		time.Sleep(time.Millisecond) // until the drain has begun; Shutdown sets it first
	}
	cancel()
	<-errc
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v, want nil: the only request ended when its client left", err)
	}
	if st := g.Stats(); st.NotDone["client left before the answer"] != 1 || st.NotDone["cut at shutdown"] != 0 {
		t.Errorf("client left during the drain: not done %v, want it counted as 'client left before the answer'", st.NotDone)
	}

	// The drain runs out with a body coming and an answer awaited.
	g, proxy = newGateway(t, Config{AllowPrivate: true})
	c = client(proxy, nil)
	started := make(chan struct{}, 2)
	for _, path := range []string{"/slowbody", "/hang"} {
		go func() {
			resp, err := c.Get(o.URL + path)
			if err == nil {
				started <- struct{}{}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		await(path)
	}
	<-started // the slow body's header and first byte reached the client
	sctx, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer scancel()
	if err := g.Shutdown(sctx); err == nil {
		t.Errorf("Shutdown = nil with two requests held, want the drain cut short")
	}
	st := settled(t, g)
	if st.NotDone["cut at shutdown"] != 2 || len(st.NotDone) != 1 {
		t.Errorf("drain cut short: not done %v, want both requests 'cut at shutdown'", st.NotDone)
	}
}

// rand32 is an endless, cheap, non-constant byte source.
type rand32 struct{}

func (rand32) Read(p []byte) (int, error) {
	x := uint32(2463534242)
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return len(p), nil
}

// tlsOrigin is an HTTPS origin offering HTTP/2, and a pool that trusts it.
func tlsOrigin(t testing.TB, h http.HandlerFunc) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	return s, roots
}

// interceptGateway is a gateway that intercepts HTTPS to the TLS origin o
// (trusted through originRoots) with a CA of its own, and a client that
// trusts that CA.
func interceptGateway(t testing.TB, o *httptest.Server, originRoots *x509.CertPool) (*Gateway, *url.URL, *ca.CA, *http.Client) {
	t.Helper()
	c0, _, err := ca.Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g, proxy := newGateway(t, Config{AllowPrivate: true, CA: c0, ConnectPorts: []int{port(t, o.URL)},
		Transport: pool.TransportConfig{TLSClientConfig: &tls.Config{RootCAs: originRoots}}})
	roots := x509.NewCertPool()
	roots.AddCert(c0.Certificate())
	return g, proxy, c0, client(proxy, roots)
}

func port(t testing.TB, u string) int {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(pu.Port())
	return p
}

// HTTPS through CONNECT is intercepted with the CA: the client verifies the
// gateway's leaf against the CA alone, each request is limited, and the
// gateway speaks HTTP/2 to the origin that offers it.
func TestInterceptsHTTPSWithTheCA(t *testing.T) {
	var protos sync.Map
	o, originRoots := tlsOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		if r.Header.Get(HeaderSession) != "" {
			t.Errorf("origin saw %s", HeaderSession)
		}
		io.WriteString(w, "secure "+r.URL.Path)
	})
	g, proxy, c0, c := interceptGateway(t, o, originRoots)
	for i := range 3 {
		resp, body := get(t, c, fmt.Sprintf("%s/s%d", o.URL, i), HeaderSession, "tls")
		if resp.StatusCode != 200 || body != fmt.Sprintf("secure /s%d", i) {
			t.Fatalf("GET https = %d %q", resp.StatusCode, body)
		}
		if resp.TLS == nil || resp.TLS.PeerCertificates[0].Issuer.CommonName != c0.Certificate().Subject.CommonName {
			t.Errorf("the client did not see the gateway's leaf")
		}
	}
	if _, ok := protos.Load("HTTP/2.0"); !ok {
		t.Errorf("the origin offers HTTP/2 and saw %v", keys(&protos))
	}
	if st := g.Stats(); st.Done != 3 || st.Tunnels != 1 {
		t.Errorf("stats: done %d, tunnels %d; want 3 requests in 1 kept-alive tunnel", st.Done, st.Tunnels)
	}
	// A client that does not trust the CA fails the handshake and gets
	// nothing.
	if _, err := client(proxy, nil).Get(o.URL + "/x"); err == nil {
		t.Errorf("a client that does not trust the CA got an answer")
	}
}

// The CONNECT's X-Exitgate-Wait holds for the requests inside an
// intercepted tunnel, as its session does, unless one sends its own: it was
// ignored, the 60-s default applying. (A value that is no duration shows
// it: a 400 for the requests inside.)
func TestConnectWaitHoldsInside(t *testing.T) {
	o, originRoots := tlsOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	_, _, _, c := interceptGateway(t, o, originRoots)
	c.Transport.(*http.Transport).ProxyConnectHeader = http.Header{HeaderWait: {"soon"}}
	resp, _ := get(t, c, o.URL+"/a")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderReason) != "bad control header" {
		t.Errorf("GET inside a tunnel whose CONNECT said %s: soon = %d (%s), want 400 bad control header", HeaderWait, resp.StatusCode, resp.Header.Get(HeaderReason))
	}
	if resp, body := get(t, c, o.URL+"/b", HeaderWait, "5s"); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("GET with its own %s inside the same tunnel = %d %q, want 200 ok", HeaderWait, resp.StatusCode, body)
	}
}

func keys(m *sync.Map) []any {
	var out []any
	m.Range(func(k, _ any) bool { out = append(out, k); return true })
	return out
}

// Without a CA, tunnels pass through: the client sees the origin's own
// certificate, and one lane is chosen per tunnel.
func TestPassthroughTunnel(t *testing.T) {
	o, originRoots := tlsOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct tls") })
	g, proxy := newGateway(t, Config{AllowPrivate: true, ConnectPorts: []int{port(t, o.URL)}})
	resp, body := get(t, client(proxy, originRoots), o.URL+"/")
	if resp.StatusCode != 200 || body != "direct tls" {
		t.Fatalf("GET through a passed-through tunnel = %d %q", resp.StatusCode, body)
	}
	if resp.Header.Get(HeaderExit) != "" {
		t.Errorf("a passed-through answer carries %s: the gateway saw inside the tunnel", HeaderExit)
	}
	if st := g.Stats(); st.Passthrough != 1 {
		t.Errorf("stats: %d passthrough tunnels, want 1", st.Passthrough)
	}
	snap := g.cfg.Limiter.Snapshot(time.Now())
	if len(snap.Hosts) != 1 {
		t.Errorf("the limiter knows %d hosts, want the tunnel's", len(snap.Hosts))
	}
}

// A session whose exit fails as a proxy moves to another: bound to a dead
// exit by its first request, every request of the session was refused
// (502, then 429 "wait budget spent") for as long as it lived, while
// requests without a session went through the working exit.
func TestSessionMovesOffDeadExit(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	exits, err := pool.Parse(strings.NewReader("http://user:DeadPw43@"+peertest.DeadAddr(t)+"\nbind:127.0.0.23\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: exits})
	c := client(proxy, nil)
	for i := range 6 { // sessions bound to either exit first: half of them to the dead one
		for j := range 2 {
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/%d/%d", o.URL, i, j), nil)
			req.Header.Set(HeaderSession, fmt.Sprintf("s%d", i))
			req.Header.Set(HeaderWait, "5s")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "ok" || resp.Header.Get(HeaderExit) != "bind:127.0.0.23" {
				t.Errorf("session s%d, request %d: %d %q through %q, want 200 through the working exit", i, j, resp.StatusCode, b, resp.Header.Get(HeaderExit))
			}
		}
	}
}

// An exit whose proxy fails is replaced: the request goes through another.
func TestProxyFailureRetriedElsewhere(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	exits, err := pool.Parse(strings.NewReader("http://user:DeadPw42@"+peertest.DeadAddr(t)+"\nbind:127.0.0.22\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: exits, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c := client(proxy, nil)
	for i := range 4 {
		resp, body := get(t, c, fmt.Sprintf("%s/%d", o.URL, i))
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("GET %d = %d %q, want 200 through the working exit", i, resp.StatusCode, body)
		}
	}
	if strings.Contains(logs.String(), "DeadPw42") {
		t.Errorf("the log shows an exit's password")
	}
	// With the working exit gone, the answer says so and shows no password.
	_, proxy2 := newGateway(t, Config{AllowPrivate: true, Exits: exits[:1]})
	resp, body := get(t, client(proxy2, nil), o.URL+"/only-dead", HeaderWait, "1s")
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, "DeadPw42") {
		t.Errorf("GET through a dead exit alone = %d %q, want 502 without the password", resp.StatusCode, body)
	}
}

// Shutdown lets a request in flight finish, refuses new clients, and
// returns once it is done.
func TestShutdownDrainsInFlight(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "finished")
	})
	g, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Get(o.URL + "/slow")
		if err != nil {
			done <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{resp.StatusCode, string(b), err}
	}()
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- g.Shutdown(ctx)
	}()
	// New clients are refused once the listener is closed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", proxy.Host, time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the gateway still accepts connections while shutting down")
		}
		time.Sleep(10 * time.Millisecond) // polling for the listener to close; bounded above
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	close(release)
	r := <-done
	if r.err != nil || r.status != 200 || r.body != "finished" {
		t.Errorf("the request in flight got %d %q %v, want it finished", r.status, r.body, r.err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

// A request still waiting for a lane when the gateway shuts down is
// answered at once, 503 with Retry-After, nothing having been sent: it was
// held until the drain ran out and then cut with no answer, and the
// gateway exited as if it had cut a request in flight.
func TestShutdownAnswersWaiting(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1.0 / 60), MaxLaneRate: limit.PerSecond(1.0 / 60)})
	if err != nil {
		t.Fatal(err)
	}
	g, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim})
	c := client(proxy, nil)
	if resp, body := get(t, c, o.URL+"/first"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("first request: %d %q", resp.StatusCode, body)
	}
	type result struct {
		resp *http.Response
		err  error
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, o.URL+"/second", nil)
		req.Header.Set(HeaderWait, "90s") // the lane is free again in a minute
		resp, err := c.Do(req)
		if err == nil {
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- result{resp, err, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond) // the second request waits for its lane by now; a race only makes it refused at arrival, as asserted
	shutAt := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v, want nil: nothing in flight was cut", err)
	}
	r := <-done
	if r.err != nil || r.resp.StatusCode != http.StatusServiceUnavailable || r.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the waiting request: %v %v, want 503 with Retry-After", r.err, r.resp)
	}
	if d := r.at.Sub(shutAt); d > 2*time.Second {
		t.Errorf("answered %v after the shutdown began, want at once", d)
	}
}

// A protocol upgrade (WebSocket) is forwarded, and the two connections are
// joined: bytes flow both ways after the 101. The upgrade done is counted
// done (it was counted abandoned, "status 101").
func TestUpgradeJoinsConnections(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		buf := make([]byte, 5)
		if _, err := io.ReadFull(brw, buf); err == nil {
			conn.Write(bytes.ToUpper(buf))
		}
	})
	g, proxy := newGateway(t, Config{AllowPrivate: true})
	conn, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	host := strings.TrimPrefix(o.URL, "http://")
	fmt.Fprintf(conn, "GET %s/ws HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", o.URL, host)
	defer func() {
		conn.Close()
		for end := time.Now().Add(5 * time.Second); g.Stats().Done == 0 && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		if st := g.Stats(); st.Done != 1 || len(st.NotDone) != 0 {
			t.Errorf("after the upgrade: %d done, not done %v; want the upgrade done", st.Done, st.NotDone)
		}
	}()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v, want 101", resp, err)
	}
	io.WriteString(conn, "hello")
	got := make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "HELLO" {
		t.Errorf("after the upgrade: %q, %v; want HELLO", got, err)
	}
}

// The gateway's metrics: crawl's, from the same tally, and its own.
func TestMetrics(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "ok")
	})
	g, proxy := newGateway(t, Config{AllowPrivate: true})
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg, g.Tally()); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(g.Collector()); err != nil {
		t.Fatal(err)
	}
	c := client(proxy, nil)
	get(t, c, o.URL+"/a")
	get(t, c, o.URL+"/b")
	get(t, c, o.URL+"/missing")
	rawRequest(t, proxy, "CONNECT 127.0.0.1:25 HTTP/1.1\r\nHost: 127.0.0.1:25\r\n\r\n")
	want := `
# HELP exitgate_gateway_requests_total Client requests the gateway handled, by outcome: done, or why not (status N, wait budget spent, refused: REASON, ...).
# TYPE exitgate_gateway_requests_total counter
exitgate_gateway_requests_total{outcome="done"} 2
exitgate_gateway_requests_total{outcome="refused: connect port"} 1
exitgate_gateway_requests_total{outcome="status 404"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "exitgate_gateway_requests_total"); err != nil {
		t.Error(err)
	}
	host := strings.TrimPrefix(o.URL, "http://")
	wantReq := fmt.Sprintf(`
# HELP exitgate_requests_total Requests sent, by host and response status (0 = transport error; aborted = cut short by the crawl's own stop).
# TYPE exitgate_requests_total counter
exitgate_requests_total{host=%q,status="200"} 2
exitgate_requests_total{host=%q,status="404"} 1
`, host, host)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantReq), "exitgate_requests_total"); err != nil {
		t.Error(err)
	}
}

// An exit's proxy that refuses its credentials (407) is a proxy failure:
// the request goes through another exit, and when none is left the client
// gets a 502, never the proxy's 407 (which would ask it for credentials).
func TestExitProxy407NotPassedOn(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	refuser := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="upstream"`)
		w.WriteHeader(http.StatusProxyAuthRequired)
	}))
	defer refuser.Close()
	exits, err := pool.Parse(strings.NewReader("http://u:BadPw7@"+strings.TrimPrefix(refuser.URL, "http://")+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: exits})
	resp, body := get(t, client(proxy, nil), o.URL+"/x", HeaderWait, "1s")
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Proxy-Authenticate") != "" || strings.Contains(body, "BadPw7") {
		t.Errorf("GET through an exit whose proxy answers 407 = %d (Proxy-Authenticate %q) %q; want 502 without a challenge",
			resp.StatusCode, resp.Header.Get("Proxy-Authenticate"), body)
	}
}

// A 407 that the server itself sends (no proxy between it and the exit:
// direct or bind exits, or HTTPS through a tunnel) is its answer: passed on
// as a 4xx, no exit quarantined. Read as a proxy failure, one such page took
// every exit out of service for every host for 30 s.
func TestOrigin407PassedOn(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/auth" {
			w.Header().Set("Proxy-Authenticate", `Basic realm="origin"`)
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		io.WriteString(w, "ok")
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	resp, _ := get(t, c, o.URL+"/auth", HeaderWait, "2s")
	if resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("GET of a page that answers 407 = %d, want its 407", resp.StatusCode)
	}
	if resp, body := get(t, c, o.URL+"/x", HeaderWait, "2s"); resp.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("the next GET = %d %q, want 200 ok: the direct exit is no failed proxy", resp.StatusCode, body)
	}
}

// The wait budget bounds the retries, whatever the server does with its
// 429s: a 429 whose body stalls is dropped within discardWait, and a retry
// is not started once the budget is spent on slow answers. A stalled body
// held the client until the server dropped the connection (120 s), and
// three 429s that took 4 s each, 12 s against a budget of 2 s.
func TestWaitBudgetBoundsRetries(t *testing.T) {
	release := make(chan struct{})
	stall := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "0123456789")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
	})
	t.Cleanup(func() { close(release) }) // before the origin's own Close, which waits for its handlers
	slow := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1500 * time.Millisecond)
		w.WriteHeader(http.StatusTooManyRequests)
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.41", "127.0.0.42", "127.0.0.43")})
	c := client(proxy, nil)
	// Each on a host of its own: the lanes one cooled do not hold the
	// other. An attempt started within the budget runs to its end: the
	// slow host's answer comes within the budget and one attempt (two
	// sent at most), where three went out over 4.5 s.
	for _, tc := range []struct {
		o       *origin
		within  time.Duration
		maxSent int
	}{{stall, 4 * time.Second, 1 << 10}, {slow, 3800 * time.Millisecond, 2}} {
		start := time.Now()
		resp, _ := get(t, c, tc.o.URL+"/x", HeaderWait, "2s")
		took := time.Since(start)
		sent := len(tc.o.requests())
		if resp.StatusCode != http.StatusTooManyRequests || took > tc.within || sent > tc.maxSent {
			t.Errorf("GET %s with a budget of 2 s = %d after %v, %d requests sent; want a 429 within %v, %d sent at most",
				tc.o.URL, resp.StatusCode, took.Round(time.Millisecond), sent, tc.within, tc.maxSent)
		}
	}
}

// A server's answers never carry X-Exitgate- headers to the client, nor a
// 101 that switches to nothing become a made-up 200: a 101 to a plain GET
// is a 502 that says why, and X-Exitgate-Reason in a 101 or in trailers is
// the server's, dropped.
func TestServerAnswersOddities(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/101":
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nX-Exitgate-Reason: spoofed\r\n\r\n")
			brw.Flush()
		case "/trailer":
			w.Header().Set("Trailer", "X-Exitgate-Reason, X-Sum")
			io.WriteString(w, "body")
			w.Header().Set("X-Exitgate-Reason", "spoofed")
			w.Header().Set("X-Sum", "42")
		}
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	c := client(proxy, nil)
	resp, body := get(t, c, o.URL+"/101")
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderReason) != "bad upstream answer" || !strings.Contains(body, "101") {
		t.Errorf("a 101 to a plain GET = %d (%s) %q; want 502, bad upstream answer, saying 101", resp.StatusCode, resp.Header.Get(HeaderReason), body)
	}
	resp, body = get(t, c, o.URL+"/trailer")
	if body != "body" || resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get(HeaderReason) != "" {
		t.Errorf("trailers = %v (body %q), want X-Sum 42 and no %s", resp.Trailer, body, HeaderReason)
	}
}

// A streamed request's trailers reach the server with their values: the
// gateway's copy of the request was made before the client's trailers came,
// and the server saw X-Req-Sum with nothing in it.
func TestRequestTrailersPassed(t *testing.T) {
	got := make(chan string, 1)
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- r.Trailer.Get("X-Req-Sum")
		io.WriteString(w, "ok")
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true})
	req, err := http.NewRequest(http.MethodPost, o.URL+"/up", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Trailer = http.Header{"X-Req-Sum": nil}
	req.Body = io.NopCloser(&trailerFiller{r: strings.NewReader(strings.Repeat("x", 100<<10)), fill: func() { req.Trailer.Set("X-Req-Sum", "42") }})
	req.ContentLength = -1 // chunked: streamed, not replayed
	resp, err := client(proxy, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := <-got; v != "42" {
		t.Errorf("the server's trailer X-Req-Sum = %q, want 42", v)
	}
}

// trailerFiller reads r and calls fill at its end, as a client fills its
// trailers once the body is sent.
type trailerFiller struct {
	r    io.Reader
	fill func()
}

func (f *trailerFiller) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF && f.fill != nil {
		f.fill()
		f.fill = nil
	}
	return n, err
}

// When every exit is failing as a proxy, a client is told so at once with
// a 502 that names the cause; it was held its whole wait budget for the
// first 502 and then told 429 "paced or cooling down", which sends a
// scraper backing off for the wrong reason.
func TestAllExitsDownSaidAtOnce(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	exits, err := pool.Parse(strings.NewReader("http://"+peertest.DeadAddr(t)+"\nhttp://"+peertest.DeadAddr(t)+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: exits})
	c := client(proxy, nil)
	for i := range 3 {
		start := time.Now()
		resp, body := get(t, c, fmt.Sprintf("%s/%d", o.URL, i), HeaderWait, "20s")
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "no working exit") && !strings.Contains(body, "failed as a proxy") {
			t.Errorf("GET %d with every exit dead = %d %q (%s), want 502 saying no exit works", i, resp.StatusCode, body, resp.Header.Get(HeaderReason))
		}
		if d := time.Since(start); i > 0 && d > 3*time.Second {
			t.Errorf("GET %d with every exit dead answered after %v, want at once", i, d)
		}
		if i > 0 && !strings.Contains(body, "2 of 2 exits are failing as proxies") {
			t.Errorf("GET %d: %q, want the count of exits down", i, body)
		}
	}
}

// The server's own 429 stands when a retry through another exit finds
// that exit dead: the client gets the 429 with its Retry-After, not a 502
// about the exits.
func TestServer429StandsOverDeadExit(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	exits, err := pool.Parse(strings.NewReader("http://"+peertest.DeadAddr(t)+"\nbind:127.0.0.23\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	// A short quarantine: the dead exit's probe comes within the budget,
	// after the server's 429 (the retry that found it dead again once
	// made the answer a 502 about the exits).
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(10000), MaxInFlight: 4096, HostConcurrency: 4096,
		QuarantineBase: 300 * time.Millisecond, QuarantineMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: exits, Limiter: lim})
	resp, body := get(t, client(proxy, nil), o.URL+"/limited", HeaderWait, "3s")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("GET a 429-ing origin with one dead exit = %d %q (%s), Retry-After %q; want the 429 with a Retry-After",
			resp.StatusCode, body, resp.Header.Get(HeaderReason), resp.Header.Get("Retry-After"))
	}
}

// Shutdown with a passed-through tunnel still open after its request was
// answered (clients keep tunnels as a rule) closes it when ctx ends and
// says so (ErrTunnelsClosed), not as a request cut short.
func TestShutdownClosesIdleTunnels(t *testing.T) {
	o, originRoots := tlsOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct tls") })
	g, proxy := newGateway(t, Config{AllowPrivate: true, ConnectPorts: []int{port(t, o.URL)}})
	if resp, body := get(t, client(proxy, originRoots), o.URL+"/"); resp.StatusCode != 200 || body != "direct tls" {
		t.Fatalf("GET through a passed-through tunnel = %d %q", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := g.Shutdown(ctx); !errors.Is(err, ErrTunnelsClosed) {
		t.Errorf("Shutdown with an idle tunnel open = %v, want ErrTunnelsClosed", err)
	}
}

// A request is in flight until its answer is passed on, as the crawl engine
// and fetch.Transport count it: given back at the headers, streaming bodies
// ran past a host's concurrency of 1.
func TestConcurrencyCoversBodies(t *testing.T) {
	var mu sync.Mutex
	cur, peak := 0, 0
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		defer func() { mu.Lock(); cur--; mu.Unlock() }()
		w.(http.Flusher).Flush()
		time.Sleep(200 * time.Millisecond)
		io.WriteString(w, "body")
	})
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(500), LaneBurst: 100, HostConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim})
	c := client(proxy, nil)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			resp, body := get(t, c, fmt.Sprintf("%s/s%d", o.URL, i), HeaderWait, "10s")
			if resp.StatusCode != 200 || body != "body" {
				t.Errorf("GET = %d %q", resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	if peak != 1 {
		t.Errorf("%d requests at the origin at once with HostConcurrency 1, want 1", peak)
	}
}

// TestWaitersServedInOrder: requests waiting for a lane of one host are
// served in the order they came, and one whose budget the line ahead
// cannot fit, by the pace the line has been served at, is answered at once.
// Left to race for each freed lane, one client in twenty spent its whole
// budget behind later ones and got the gateway's 429.
func TestWaitersServedInOrder(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(10), MaxLaneRate: limit.PerSecond(10), LaneBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim, Exits: bindExits(t, "127.0.0.21")})
	c := client(proxy, nil)
	get(t, c, o.URL+"/warm", HeaderWait, "5s")
	const n = 12
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := get(t, c, fmt.Sprintf("%s/%d", o.URL, i), HeaderWait, "5s")
			codes[i] = resp.StatusCode
		}()
		time.Sleep(15 * time.Millisecond) // they come one after the other
	}
	// One more, with a budget the line ahead cannot fit: at once.
	time.Sleep(300 * time.Millisecond) // (the line has been served a few times: its pace is known)
	start := time.Now()
	resp, _ := get(t, c, o.URL+"/hurried", HeaderWait, "200ms")
	if took := time.Since(start); resp.StatusCode != http.StatusTooManyRequests || took > 150*time.Millisecond || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a request whose budget the line ahead cannot fit: %d after %v (Retry-After %q), want the gateway's 429 at once",
			resp.StatusCode, took, resp.Header.Get("Retry-After"))
	}
	wg.Wait()
	var order []int
	for _, r := range o.requests() {
		if i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/")); err == nil {
			order = append(order, i)
		}
	}
	for i, code := range codes {
		if code != http.StatusOK {
			t.Errorf("request %d: %d, want 200 (its turn came within its budget)", i, code)
		}
	}
	if !slices.IsSorted(order) || len(order) != n {
		t.Errorf("served in the order %v, want 0 to %d in turn", order, n-1)
	}
}

// TestTunnelHostMustNameItsTarget: inside an intercepted tunnel, a request
// whose Host names another host or another port is refused with 421, the
// tunnel's target named with its port (another port was sent to the
// tunnel's, its Host rewritten without a word).
func TestTunnelHostMustNameItsTarget(t *testing.T) {
	o, originRoots := tlsOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	_, proxy, c0, _ := interceptGateway(t, o, originRoots)
	target := strings.TrimPrefix(o.URL, "https://")
	conn, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v, %v", resp, err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c0.Certificate())
	tc := tls.Client(conn, &tls.Config{ServerName: "127.0.0.1", RootCAs: roots})
	tr := bufio.NewReader(tc)
	for _, tt := range []struct {
		host string
		want int
	}{{"127.0.0.1:1", http.StatusMisdirectedRequest}, {"other.example", http.StatusMisdirectedRequest}, {target, http.StatusOK}} {
		fmt.Fprintf(tc, "GET /x HTTP/1.1\r\nHost: %s\r\n\r\n", tt.host)
		resp, err := http.ReadResponse(tr, nil)
		if err != nil {
			t.Fatalf("Host %s: %v", tt.host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || (tt.want == http.StatusMisdirectedRequest && !strings.Contains(string(body), target)) {
			t.Errorf("Host %s inside a tunnel to %s: %d %q, want %d naming %s", tt.host, target, resp.StatusCode, body, tt.want, target)
		}
	}
}

// TestExpectContinueBodyAfterLane: a client that waits for "100 Continue"
// is asked for its body only once a lane is taken: refused for want of
// one, it never uploads (a small PUT was read for replay first, uploaded,
// then refused).
func TestExpectContinueBodyAfterLane(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21")})
	get(t, client(proxy, nil), o.URL+"/cool", HeaderWait, "0") // the lane cools for 120 s
	conn, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT %s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\nExpect: 100-continue\r\n%s: 0\r\n\r\n",
		o.URL, strings.TrimPrefix(o.URL, "http://"), HeaderWait)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a PUT waiting for 100 Continue to a cooling host: %d first, want the gateway's 429 before any upload", resp.StatusCode)
	}
	// With a lane: 100 Continue, then the body reaches the server whole.
	o2 := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %q", b)
	})
	conn2, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	fmt.Fprintf(conn2, "PUT %s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n", o2.URL, strings.TrimPrefix(o2.URL, "http://"))
	conn2.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn2)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("a PUT waiting for 100 Continue with a lane free: %v, %v; want 100 first", resp, err)
	}
	io.WriteString(conn2, "0123456789")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != `got "0123456789"` {
		t.Errorf("after 100 Continue: %d %q, want the body passed whole", resp.StatusCode, b)
	}
}

// TestSetExitsOwnedOnly: a gateway whose SetExits passes the limiter only
// some exits (a fleet member's share) sends through those alone; a
// session bound to an exit that leaves its share moves; with none, a
// request is answered 503 at once, nothing sent.
func TestSetExitsOwnedOnly(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, clientIP(r)) })
	sh := newShare(fast(t), "bind:127.0.0.22")
	var soon atomic.Bool // exits are on their way (NoExits)
	_, proxy := newGateway(t, Config{Limiter: sh.lim, AllowPrivate: true, Exits: bindExits(t, "127.0.0.21", "127.0.0.22", "127.0.0.23"),
		SetExits: sh.set, NoExits: func() (bool, time.Duration) { return soon.Load(), 6 * time.Second }})
	c := client(proxy, nil)
	for i := range 6 {
		if resp, body := get(t, c, fmt.Sprintf("%s/a/%d", o.URL, i), HeaderSession, "s"); resp.StatusCode != 200 || body != "127.0.0.22" {
			t.Fatalf("owning 127.0.0.22 only: %d through %q", resp.StatusCode, body)
		}
	}
	sh.own("bind:127.0.0.23") // the share moved
	if resp, body := get(t, c, o.URL+"/b", HeaderSession, "s"); resp.StatusCode != 200 || body != "127.0.0.23" {
		t.Errorf("the session's exit left the share: %d through %q, want 127.0.0.23", resp.StatusCode, body)
	}
	sh.own()
	before := len(o.requests())
	start := time.Now()
	resp, body := get(t, c, o.URL+"/c")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(HeaderReason) != "no exit owned" || resp.Header.Get("Retry-After") != "6" ||
		resp.Header.Get(HeaderAttempts) != "0" || !strings.Contains(body, "owns no exit") {
		t.Errorf("owning no exit: %d %q (Retry-After %q, attempts %q) %q, want 503 \"no exit owned\" with Retry-After 6 and 0 attempts", resp.StatusCode,
			resp.Header.Get(HeaderReason), resp.Header.Get("Retry-After"), resp.Header.Get(HeaderAttempts), body)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("owning no exit: answered after %v, want at once", d)
	}
	if n := len(o.requests()) - before; n != 0 {
		t.Errorf("owning no exit: %d requests sent", n)
	}

	// Exits on their way (a join, a handover): the request waits for
	// them within its budget instead of a 503; one with no budget is told
	// they are coming (it was told the fleet had more members than exits).
	soon.Store(true)
	resp, body = get(t, c, o.URL+"/e", HeaderWait, "0")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "on their way") {
		t.Errorf("exits on their way, no budget: %d (Retry-After %q) %q, want 503 saying they are coming, Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		sh.own("bind:127.0.0.21")
	}()
	if resp, body := get(t, c, o.URL+"/d"); resp.StatusCode != 200 || body != "127.0.0.21" {
		t.Errorf("exits on their way: %d through %q, want 200 through 127.0.0.21 once they came", resp.StatusCode, body)
	}
}

// TestPassthroughClosedWhenItsExitLeaves: a passed-through tunnel whose
// exit leaves the limiter's pool (a fleet's handover) is closed: it went
// on through an exit another gateway then sent through (70 requests in
// 14 s beside the new owner's 11).
func TestPassthroughClosedWhenItsExitLeaves(t *testing.T) {
	ln := echoServer(t)
	sh := newShare(fast(t), "bind:127.0.0.21")
	g, proxy := newGateway(t, Config{Limiter: sh.lim, AllowPrivate: true, ConnectPorts: []int{ln.Addr().(*net.TCPAddr).Port},
		Exits: bindExits(t, "127.0.0.21", "127.0.0.22"), SetExits: sh.set})
	c, br := openTunnel(t, proxy, ln.Addr().String())
	io.WriteString(c, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("through the tunnel: %q %v", line, err)
	}
	// A tunnel on an exit that stays is kept.
	sh.own("bind:127.0.0.21")
	g.CloseTunnelsOff()
	io.WriteString(c, "again\n")
	if line, err := br.ReadString('\n'); err != nil || line != "again\n" {
		t.Fatalf("after the same pool again: %q %v, want the tunnel kept", line, err)
	}
	sh.own("bind:127.0.0.22") // the share moved, as a fleet moves it
	g.CloseTunnelsOff()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := br.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Errorf("the tunnel's exit left the pool: read %v, want the tunnel closed (EOF)", err)
	}
}

// TestPassthroughOpeningWhenItsExitLeaves: a tunnel still being opened
// (a slow proxy) when its exit leaves the pool is not left open on it: it
// stayed open for good on an exit another gateway had taken over.
func TestPassthroughOpeningWhenItsExitLeaves(t *testing.T) {
	echo := echoServer(t)
	// A proxy that takes 500 ms to open each tunnel.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond)
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		c, brw, _ := http.NewResponseController(w).Hijack()
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(up, brw); up.Close() }()
		io.Copy(c, up)
		c.Close()
	}))
	t.Cleanup(slow.Close)
	exits, err := pool.Parse(strings.NewReader(slow.URL+"\nbind:127.0.0.22\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	slowID := exits[0].ID()
	sh := newShare(fast(t), slowID)
	g, proxy := newGateway(t, Config{Limiter: sh.lim, AllowPrivate: true, ConnectPorts: []int{echo.Addr().(*net.TCPAddr).Port}, Exits: exits,
		SetExits: sh.set})
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", echo.Addr(), echo.Addr())
	time.Sleep(200 * time.Millisecond) // the slow proxy is opening it
	sh.own("bind:127.0.0.22")          // the share moved meanwhile
	g.CloseTunnelsOff()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err == nil && resp.StatusCode == 200 {
		io.WriteString(c, "ping\n")
		if line, err := br.ReadString('\n'); err == nil {
			t.Fatalf("a tunnel opened through an exit that left the pool meanwhile works (%q)", line)
		}
	} else if err == nil && resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("CONNECT whose exit left while it opened: %d, want 503 (or the connection closed)", resp.StatusCode)
	}
}

// TestExitIPHeaderObserved: with an identity header (serve's
// --exit-ip-header), the IP a provider reports in answers re-keys the exit
// on it: the gateway never read it, and the flag did nothing.
func TestExitIPHeaderObserved(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Exit-IP", "203.0.113.7")
		io.WriteString(w, "ok")
	})
	id, err := pool.NewIdentity(pool.IdentityConfig{Header: "X-Exit-IP"})
	if err != nil {
		t.Fatal(err)
	}
	g, proxy := newGateway(t, Config{AllowPrivate: true, Exits: bindExits(t, "127.0.0.21"), Identity: id})
	if resp, _ := get(t, client(proxy, nil), o.URL+"/"); resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if keys := g.ExitSet().Keys(); len(keys) != 1 || !strings.Contains(keys[0], "203.0.113.7") {
		t.Errorf("exit keys %v, want the exit keyed on the IP its answers reported", keys)
	}
}

// TestPassthroughKeptWhenItsExitIsRekeyed: an exit re-keyed on the IP its
// answers report (--exit-ip-header) is still the gateway's: its
// passed-through tunnels stay open (they were closed as if the exit had
// left the pool, on each exit's first answer and every IP change).
func TestPassthroughKeptWhenItsExitIsRekeyed(t *testing.T) {
	ln := echoServer(t)
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Exit-IP", "203.0.113.9")
		io.WriteString(w, "ok")
	})
	id, err := pool.NewIdentity(pool.IdentityConfig{Header: "X-Exit-IP"})
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, ConnectPorts: []int{ln.Addr().(*net.TCPAddr).Port},
		Exits: bindExits(t, "127.0.0.21"), Identity: id})
	c, br := openTunnel(t, proxy, ln.Addr().String())
	if resp, _ := get(t, client(proxy, nil), o.URL+"/"); resp.StatusCode != 200 { // re-keys the exit
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	io.WriteString(c, "still\n")
	if line, err := br.ReadString('\n'); err != nil || line != "still\n" {
		t.Errorf("the tunnel after its exit was re-keyed: %q %v, want it open", line, err)
	}
}

// echoServer starts a TCP server on loopback that echoes what each client
// sends, until the test ends.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln
}

// share is a fleet member's share of the exits, by hand (Config.SetExits):
// the limiter gets those of the ExitSet's exits that own names.
type share struct {
	lim   *limit.Limiter
	mu    sync.Mutex
	all   []limit.Exit
	owned []string
}

func newShare(lim *limit.Limiter, owned ...string) *share { return &share{lim: lim, owned: owned} }

// set is Config.SetExits: the ExitSet's exits.
func (s *share) set(exits []limit.Exit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = exits
	s.applyLocked()
}

// own moves the share to the exits named.
func (s *share) own(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owned = ids
	s.applyLocked()
}

func (s *share) applyLocked() {
	var mine []limit.Exit
	for _, e := range s.all {
		if slices.Contains(s.owned, e.ID) {
			mine = append(mine, e)
		}
	}
	s.lim.SetExits(mine)
}

// openTunnel opens a CONNECT tunnel to target through the gateway at
// proxy, failing the test unless it is established; it is closed when the
// test ends.
func openTunnel(t *testing.T, proxy *url.URL, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	return c, br
}

// TestBurstOnFreshHostToldEarly: a burst of 40 at once, budget 2 s, on a
// host the gateway has no reading of its line's pace for (new, or idle
// past lineKept) and that is served at 10 a second: those whose place the
// line cannot reach in time get the gateway's 429 once the line has a
// reading, not at the budget's end. With no reading on entering, all of
// them were held the whole budget (a burst after a minute idle: 10 of 80
// clients held 2 s of their 2, 28 of 150 held 3 s of their 3).
func TestBurstOnFreshHostToldEarly(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(10), HostCeiling: limit.PerSecond(10)})
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim})
	c := client(proxy, nil)
	var mu sync.Mutex
	var late, early, ok int
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			resp, _ := get(t, c, fmt.Sprintf("%s/b/%d", o.URL, i), HeaderWait, "2s")
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resp.StatusCode == 200:
				ok++
			case resp.StatusCode == 429 && took < 1500*time.Millisecond:
				early++
			default:
				late++
			}
		})
	}
	wg.Wait()
	if ok == 0 || early == 0 || early < late {
		t.Errorf("40 at once, budget 2 s, at 10/s: %d served, %d told early, %d at the budget's end; want most of those refused told early", ok, early, late)
	}
}

// TestBurstWhileRampingNotRefusedEarly: a burst at a host whose lanes are
// still in slow start is not refused early by the line's pace: served twice
// as fast each second, a line read from the last second's gaps refused 31
// of 100 requests at 2.5 s of a 10-s budget that all the others met by 5 s
// (a helper's blind run through ten tinyproxy exits; here ten bound
// addresses).
func TestBurstWhileRampingNotRefusedEarly(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(2)})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for i := range 10 {
		addrs = append(addrs, fmt.Sprintf("127.0.0.%d", 61+i))
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim, Exits: bindExits(t, addrs...)})
	c := client(proxy, nil)
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			resp, _ := get(t, c, fmt.Sprintf("%s/r/%d", o.URL, i), HeaderWait, "10s")
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[200] != 100 {
		t.Errorf("100 at once, budget 10 s, lanes ramping from 2/s: %v, want all 200", codes)
	}
}

// TestBlackHoledExitBesideAWorkingOne: an exit whose proxy accepts and
// never answers, beside one that works, is no "no working exit": a request
// whose budget ran out after its attempt through the black hole failed as a
// proxy gets the gateway's 429 (a helper's blind run: 502 "no working exit"
// while the other exit served the requests before and after).
func TestBlackHoledExitBesideAWorkingOne(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	exits, err := pool.Parse(strings.NewReader("http://"+hole.Addr().String()+"\nbind:127.0.0.71\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Exits: exits})
	c := client(proxy, nil)
	for i := range 4 {
		resp, _ := get(t, c, fmt.Sprintf("%s/bh/%d", o.URL, i), HeaderWait, "1s")
		if resp.StatusCode == http.StatusBadGateway {
			t.Errorf("request %d: 502 %q, want 200 or the gateway's 429: one exit works", i, resp.Header.Get(HeaderReason))
		}
	}
}

// TestClientLeftAfterSendingAbandons: a client that gives up on a request
// the gateway had sent on leaves its token spent (abandoned): given back as
// never sent, the next waiter went at once, and a slow host held to 2/s
// was sent more than its pace allows.
func TestClientLeftAfterSendingAbandons(t *testing.T) {
	srv, got := peertest.SlowOrigin(t, 2*time.Second)
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(2), HostCeiling: limit.PerSecond(2)})
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{AllowPrivate: true, Limiter: lim})
	c := client(proxy, nil)
	c.Timeout = 400 * time.Millisecond
	peertest.Impatient(c, srv.URL+"/slow", 4, 2*time.Second)
	time.Sleep(300 * time.Millisecond) // the gateway hears the last client leave
	n := got()
	var abandoned uint64
	for _, h := range lim.Snapshot(time.Now()).Hosts {
		abandoned += h.Counters.Abandoned
	}
	if n > 6 || abandoned == 0 {
		t.Errorf("the origin got %d requests in 2 s at 2/s (want at most 6), %d abandoned (want some): clients that left were given back as never sent", n, abandoned)
	}
}
